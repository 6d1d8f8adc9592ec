"""The patched ttnn: one per process while any guard is active.

It owns the patches, the per-device capture state machine and the program signatures
seen before each capture. Guards subscribe to it; every capture begun while a guard is
active is recorded on that guard.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Optional

from trace_lint.runtime_guard import api, observed
from trace_lint.runtime_guard.guard_set import GuardSet
from trace_lint.runtime_guard.patching import Patcher, RestoreError
from trace_lint.runtime_guard.report import (
    UNKNOWN_FRAME,
    CaptureRecord,
    Frame,
    FrameFinder,
    OpRecord,
    TraceSafetyError,
    TraceSafetyWarning,
    Violation,
    format_report,
)

_TRACKER_BUFFER = re.compile(r"Buffer (\d+)(?: \[op: ([^\]]*)\])?")
# Op outputs remembered for the allocation tracker's report; bounded so long runs stay flat.
_MAX_ALLOCATIONS = 4096


@dataclass
class InputRecord:
    """A device buffer the trace reads or writes that existed before the capture."""

    uid: int
    address: int
    op: str
    arg: str
    frame: Frame
    freed_at: Optional[Frame] = None
    replaced_by: Optional[str] = None


class _Capture:
    __slots__ = ("record", "device", "trace_id", "cq_id", "inputs", "produced", "guards")

    def __init__(self, record: CaptureRecord, device: Any, trace_id: Any, cq_id: Any) -> None:
        self.record = record
        self.device = device
        self.trace_id = trace_id
        self.cq_id = cq_id
        self.inputs: dict[int, InputRecord] = {}
        self.produced: set[int] = set()
        self.guards: list[Any] = []


def _trace_key(device: Any, trace_id: Any) -> tuple[int, int]:
    try:
        number = int(trace_id)
    except (TypeError, ValueError):
        number = hash(trace_id)
    return (id(device), number)


def _same_queue(a: Any, b: Any) -> bool:
    # None means "the current queue", which is queue 0 unless the caller switched it.
    return (0 if a is None else int(a)) == (0 if b is None else int(b))


class Runtime:
    def __init__(self, ttnn: Any) -> None:
        self.ttnn = ttnn
        self.Tensor = ttnn.Tensor
        self.MeshDevice = getattr(ttnn, "MeshDevice", None) or type("_NoDevice", (), {})
        self.DEVICE_STORAGE = ttnn.StorageType.DEVICE
        self.frames = FrameFinder(_library_paths(ttnn))
        self.lock = threading.RLock()
        self.local = threading.local()
        self.patcher = Patcher()
        self.guards = GuardSet()
        self.seen: dict[int, set] = {}
        self.open: dict[int, list[_Capture]] = {}
        self.traces: dict[tuple[int, int], _Capture] = {}
        self.watch: dict[int, list[InputRecord]] = {}
        self.allocations: dict[int, tuple[str, Frame]] = {}
        self.original: dict[str, Callable] = {}
        self._hashable_types: dict[type, bool] = {}
        tracker = getattr(ttnn, "_trace_allocation_tracker", None)
        self.tracker_on = bool(getattr(tracker, "TRACE_ALLOC_TRACKING", False))
        self.torch_mode: Any = None

    # ----------------------------------------------------------------- install
    def install(self) -> None:
        ttnn = self.ttnn
        try:
            for name, role in api.TTNN_FUNCTIONS.items():
                if not hasattr(ttnn, name):
                    continue
                current = getattr(ttnn, name)
                wrapper = self._make_function_wrapper(name, role, current)
                self.original[name] = self.patcher.patch(ttnn, name, wrapper)
            fast = ttnn
            for part in api.FAST_OPERATION:
                fast = getattr(fast, part)
            self.patcher.patch(fast, "__call__", self._make_op_wrapper(fast.__call__))
            for name in api.TENSOR_READ_METHODS:
                if hasattr(self.Tensor, name):
                    self.patcher.patch(self.Tensor, name, self._make_read_wrapper(name, getattr(self.Tensor, name)))
            for name in api.TENSOR_TRANSFER_METHODS:
                if hasattr(self.Tensor, name):
                    self.patcher.patch(self.Tensor, name, self._make_to_wrapper(name, getattr(self.Tensor, name)))
            for name in api.TENSOR_FREE_METHODS:
                if hasattr(self.Tensor, name):
                    self.patcher.patch(self.Tensor, name, self._make_free_wrapper(name, getattr(self.Tensor, name)))
        except BaseException as error:
            try:
                self.patcher.restore()
            except RestoreError as restore_error:  # keep the install error; say what stays patched
                if hasattr(error, "add_note"):
                    error.add_note(str(restore_error))
            raise

    def uninstall(self) -> None:
        try:
            self.patcher.restore()
        finally:
            mode, self.torch_mode = self.torch_mode, None
            if mode is not None:
                from trace_lint.runtime_guard import torch_guard

                torch_guard.pop_mode(mode)

    @property
    def mode(self) -> str:
        """The mode of the calling thread's innermost guard."""
        return self.guards.mode()

    def mode_for(self, capture: Optional["_Capture"]) -> str:
        return self.guards.mode(capture.guards if capture is not None else ())

    # ----------------------------------------------------------------- helpers
    def _depth_enter(self) -> bool:
        local = self.local
        if getattr(local, "depth", 0):
            return False
        local.depth = 1
        return True

    def _depth_exit(self) -> None:
        self.local.depth = 0

    def _on_device(self, tensor: Any) -> bool:
        try:
            return tensor.storage_type() == self.DEVICE_STORAGE
        except Exception:
            return False

    def _scan(self, args: tuple, kwargs: dict) -> tuple[Any, list]:
        """The device a call works on and its tensors (with their on-device flag), in argument order.

        Plain loops, no recursive closure: a closure that refers to itself is a reference cycle
        that would keep the caller's tensors (and their device buffers) alive until the cyclic GC.
        """
        device = None
        tensors: list = []
        Tensor, MeshDevice, DEVICE = self.Tensor, self.MeshDevice, self.DEVICE_STORAGE
        values = list(args)
        if kwargs:
            values += kwargs.values()
        index = 0
        while index < len(values):
            value = values[index]
            index += 1
            if isinstance(value, Tensor):
                try:
                    on = value.storage_type() == DEVICE
                except Exception:
                    on = False
                tensors.append((value, on))
                if on and device is None:
                    try:
                        device = value.device()
                    except Exception:
                        pass
            elif isinstance(value, MeshDevice):
                if device is None:
                    device = value
            elif isinstance(value, (list, tuple)) and index <= len(args) + len(kwargs):
                values += value  # one level of nesting: concat([a, b]), (x, y) pairs
        return device, tensors

    def _value_key(self, value: Any) -> Any:
        if isinstance(value, self.Tensor):
            try:
                # dtype and layout are enum members (singletons): id() is an exact, cheap key.
                if value.storage_type() == self.DEVICE_STORAGE:
                    return (repr(value.shape), id(value.dtype), id(value.layout), value.memory_config())
                return ("host", repr(value.shape), id(value.dtype), id(value.layout))
            except Exception:
                return "tensor"
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, (int, float)):
            # Scalars are usually runtime arguments of a cached program, not part of its key.
            return type(value).__name__
        if isinstance(value, (list, tuple)):
            return tuple(self._value_key(item) for item in value)
        if isinstance(value, self.MeshDevice):
            return "device"
        kind = type(value)
        by_value = self._hashable_types.get(kind)
        if by_value is None:
            by_value = kind.__hash__ is not object.__hash__ and kind.__eq__ is not object.__eq__
            self._hashable_types[kind] = by_value
        if by_value:
            try:
                hash(value)
                return value
            except Exception:
                pass
        return f"{kind.__name__}:{value!r}"

    def signature(self, name: str, args: tuple, kwargs: dict) -> tuple:
        value_key = self._value_key
        parts = [name]
        parts += [value_key(value) for value in args]
        if kwargs:
            parts += [(key, value_key(kwargs[key])) for key in sorted(kwargs) if key not in api.QUEUE_KWARGS]
        return tuple(parts)

    def describe(self, value: Any) -> str:
        if isinstance(value, self.Tensor):
            try:
                shape = "x".join(str(d) for d in value.shape)
                dtype = getattr(value.dtype, "name", str(value.dtype)).lower()
                layout = getattr(value.layout, "name", str(value.layout))
                if self._on_device(value):
                    buffer = getattr(value.memory_config().buffer_type, "name", "device")
                    return f"Tensor[{shape} {dtype} {layout} {buffer}]"
                return f"Tensor[{shape} {dtype} {layout} host]"
            except Exception:
                return "Tensor"
        if isinstance(value, self.MeshDevice):
            return "MeshDevice"
        if isinstance(value, (list, tuple)):
            inner = ", ".join(self.describe(v) for v in list(value)[:4])
            more = ", ..." if len(value) > 4 else ""
            return f"[{inner}{more}]" if isinstance(value, list) else f"({inner}{more})"
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."

    def summarize(self, args: tuple, kwargs: dict) -> str:
        parts = [self.describe(v) for v in args]
        parts += [f"{k}={self.describe(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    def _capture_for(self, device: Any) -> Optional[_Capture]:
        open_ = self.open
        if not open_:
            return None
        if device is not None:
            stack = open_.get(id(device))
            return stack[-1] if stack else None
        return self._latest_open()

    def _latest_open(self) -> Optional[_Capture]:
        with self.lock:
            latest = None
            for stack in self.open.values():
                if stack and (latest is None or stack[-1].record.begin_order > latest.record.begin_order):
                    latest = stack[-1]
            return latest

    def _uid(self, tensor: Any) -> Optional[int]:
        try:
            return tensor.buffer_unique_id()
        except Exception:
            return None

    def _address(self, tensor: Any) -> Optional[int]:
        try:
            return tensor.buffer_address()
        except Exception:
            return None

    def _device_outputs(self, result: Any) -> list:
        out: list = []
        pending = [(result, 2)]
        while pending:
            value, depth = pending.pop()
            if isinstance(value, self.Tensor):
                if self._on_device(value):
                    out.append(value)
            elif depth and isinstance(value, (list, tuple)):
                pending.extend((item, depth - 1) for item in value)
        return out

    # ----------------------------------------------------------------- violations
    def _violate(self, capture: _Capture, violation: Violation, immediate: Optional[bool] = None) -> None:
        """Record a violation; in mode "raise", stop now if this kind stops at the call."""
        violation.trace = capture.record.name
        with self.lock:
            capture.record.violations.append(violation)
        if immediate is None:
            immediate = api.KINDS[violation.kind].raises_at_call
        if immediate and self.mode_for(capture) == "raise" and capture.record.status == "recording":
            self._abort(capture)
            raise TraceSafetyError(
                format_report(capture.record, capture.record.violations,
                              f"{violation.op or violation.kind} stopped before ttnn ran it; capture ended and released"),
                capture.record.violations,
                capture.record,
            )

    def _abort(self, capture: _Capture) -> None:
        """End and release a capture through the real ttnn, so a failure cannot cascade."""
        self._close(capture, "aborted")
        end = self.original.get("end_trace_capture")
        release = self.original.get("release_trace")
        local = self.local
        saved = getattr(local, "depth", 0)
        local.depth = 1
        try:
            if end is not None:
                try:
                    end(capture.device, capture.trace_id, cq_id=capture.cq_id)
                except Exception as error:
                    capture.record.status = f"aborted (end_trace_capture failed: {str(error).splitlines()[0]})"
            if release is not None:
                try:
                    release(capture.device, capture.trace_id)
                except Exception:
                    pass
        finally:
            local.depth = saved
        if self.torch_mode is not None and not self.open:
            self.torch_mode.capturing = False

    def _close(self, capture: _Capture, status: str) -> None:
        observed.closed(capture.record)
        with self.lock:
            capture.record.status = status
            stack = self.open.get(id(capture.device))
            if stack and capture in stack:
                stack.remove(capture)
                if not stack:
                    del self.open[id(capture.device)]
            if status in ("aborted", "released"):
                self._unwatch(capture)

    def _unwatch(self, capture: _Capture) -> None:
        for record in capture.inputs.values():
            records = self.watch.get(record.address)
            if records and record in records:
                records.remove(record)
                if not records:
                    del self.watch[record.address]

    # ----------------------------------------------------------------- ops
    def _make_op_wrapper(self, original: Callable) -> Callable:
        runtime = self

        def __call__(op: Any, *args: Any, **kwargs: Any) -> Any:
            local = runtime.local
            if getattr(local, "depth", 0):
                return original(op, *args, **kwargs)
            local.depth = 1
            try:
                return runtime._on_op(original, op, args, kwargs)
            finally:
                local.depth = 0

        __call__.__wrapped__ = original  # type: ignore[attr-defined]
        __call__.__trace_lint_guard__ = True  # type: ignore[attr-defined]
        return __call__

    def _on_op(self, original: Callable, op: Any, args: tuple, kwargs: dict) -> Any:
        name = getattr(op, "python_fully_qualified_name", None) or getattr(op, "__name__", "ttnn.<op>")
        device, tensors = self._scan(args, kwargs)
        capture = self._capture_for(device) if self.open else None
        if capture is None:
            return self._op_outside(original, op, name, device, tensors, args, kwargs)
        return self._op_captured(original, op, name, device, tensors, args, kwargs, capture)

    def _op_outside(self, original, op, name, device, tensors, args, kwargs):
        signature = self.signature(name, args, kwargs) if device is not None else None
        if name in api.FREE_OPS and self.watch:
            for tensor, on in tensors:
                if on:
                    self._note_free(tensor)
        result = original(op, *args, **kwargs)
        if signature is not None:
            seen = self.seen.get(id(device))
            if seen is None:
                with self.lock:
                    seen = self.seen.setdefault(id(device), set())
            seen.add(signature)
        if self.watch or (self.tracker_on and self.traces):
            self._note_outputs(name, result)
        return result

    def _classify(self, name: str, device: Any, tensors: list) -> tuple[Optional[str], tuple[str, ...]]:
        kind = api.OP_KINDS.get(name)
        if kind is not None:
            return kind, ()
        if name in api.OPS_TRANSFER_IF_DEVICE:
            if device is not None:
                return api.HOST_TRANSFER, (api.KINDS[api.TENSOR_CREATION].code,)
            return api.TENSOR_CREATION, ()
        if not any(on for _, on in tensors) and device is None:
            return api.HOST_WORK, ()
        return None, ()

    def _op_captured(self, original, op, name, device, tensors, args, kwargs, capture: _Capture):
        frame = self.frames.user_frame()
        summary = self.summarize(args, kwargs)
        kind, also = self._classify(name, device, tensors)
        detail = ""
        if kind is None and name in api.FREE_OPS:
            for tensor, on in tensors:
                uid = self._uid(tensor) if on else None
                if uid is not None and uid in capture.inputs:
                    kind, detail = api.FREED_INPUT, f"trace input first used by {capture.inputs[uid].op}"
        if kind is None and name not in api.NO_PROGRAM_OPS and device is not None:
            signature = self.signature(name, args, kwargs)
            with self.lock:
                warmed = signature in self.seen.get(id(device), ())
            if not warmed:
                kind = api.CACHE_MISS
                detail = "no call with these input specs ran on this device before the capture"
        violation = Violation(kind, name, summary, frame, detail, also) if kind else None
        with self.lock:
            capture.record.ops.append(OpRecord(name, summary, frame, violation))
        if violation is not None:
            self._violate(capture, violation)
        # Buffers that existed before the capture are the trace's inputs.
        for tensor, on in tensors:
            if not on:
                continue
            uid = self._uid(tensor)
            if uid is None or uid in capture.produced or uid in capture.inputs:
                continue
            address = self._address(tensor)
            if address is not None:
                capture.inputs[uid] = InputRecord(uid, address, name, self.describe(tensor), frame)
        result = original(op, *args, **kwargs)
        for tensor in self._device_outputs(result):
            uid = self._uid(tensor)
            if uid is not None and uid not in capture.inputs:
                capture.produced.add(uid)
        return result

    def _note_free(self, tensor: Any) -> None:
        uid = self._uid(tensor)
        if uid is None:
            return
        address = self._address(tensor)
        for record in self.watch.get(address, ()) if address is not None else ():
            if record.uid == uid and record.freed_at is None:
                record.freed_at = self.frames.user_frame()

    def _note_outputs(self, name: str, result: Any) -> None:
        frame = None
        for tensor in self._device_outputs(result):
            uid = self._uid(tensor)
            if uid is None:
                continue
            if self.tracker_on and self.traces:
                frame = frame or self.frames.user_frame()
                with self.lock:
                    self.allocations[uid] = (name, frame)
                    if len(self.allocations) > _MAX_ALLOCATIONS:
                        self.allocations.pop(next(iter(self.allocations)))
            if self.watch:
                address = self._address(tensor)
                for record in self.watch.get(address, ()) if address is not None else ():
                    if record.uid != uid and record.replaced_by is None:
                        frame = frame or self.frames.user_frame()
                        record.replaced_by = f"{name} at {frame}"

    # ----------------------------------------------------------------- Tensor methods
    def _make_read_wrapper(self, method: str, original: Callable) -> Callable:
        runtime = self

        def read(tensor: Any, *args: Any, **kwargs: Any) -> Any:
            if runtime.open and runtime._depth_enter():
                try:
                    if runtime._on_device(tensor):
                        capture = runtime._capture_for(tensor.device())
                        if capture is not None:
                            runtime._tensor_violation(capture, api.DEVICE_READ, f"Tensor.{method}", tensor, args, kwargs)
                finally:
                    runtime._depth_exit()
            return original(tensor, *args, **kwargs)

        read.__name__ = method
        read.__wrapped__ = original  # type: ignore[attr-defined]
        return read

    def _make_to_wrapper(self, method: str, original: Callable) -> Callable:
        runtime = self

        def to(tensor: Any, *args: Any, **kwargs: Any) -> Any:
            if runtime._depth_enter():
                try:
                    device = args[0] if args else kwargs.get("device")
                    if runtime.open and isinstance(device, runtime.MeshDevice) and not runtime._on_device(tensor):
                        capture = runtime._capture_for(device)
                        if capture is not None:
                            runtime._tensor_violation(capture, api.HOST_TRANSFER, f"Tensor.{method}", tensor, args, kwargs)
                    result = original(tensor, *args, **kwargs)
                    if runtime.watch or (runtime.tracker_on and runtime.traces):
                        runtime._note_outputs(f"Tensor.{method}", result)
                    return result
                finally:
                    runtime._depth_exit()
            return original(tensor, *args, **kwargs)

        to.__name__ = method
        to.__wrapped__ = original  # type: ignore[attr-defined]
        return to

    def _make_free_wrapper(self, method: str, original: Callable) -> Callable:
        runtime = self

        def free(tensor: Any, *args: Any, **kwargs: Any) -> Any:
            if (runtime.open or runtime.watch) and runtime._depth_enter():
                try:
                    if runtime._on_device(tensor):
                        capture = runtime._capture_for(tensor.device())
                        uid = runtime._uid(tensor)
                        if capture is not None and uid in capture.inputs:
                            runtime._tensor_violation(
                                capture, api.FREED_INPUT, f"Tensor.{method}", tensor, args, kwargs,
                                f"trace input first used by {capture.inputs[uid].op}",
                            )
                        elif runtime.watch:
                            runtime._note_free(tensor)
                finally:
                    runtime._depth_exit()
            return original(tensor, *args, **kwargs)

        free.__name__ = method
        free.__wrapped__ = original  # type: ignore[attr-defined]
        return free

    def _tensor_violation(self, capture, kind, op, tensor, args, kwargs, detail="") -> None:
        frame = self.frames.user_frame()
        summary = self.summarize((tensor,) + tuple(args), kwargs)
        violation = Violation(kind, op, summary, frame, detail)
        with self.lock:
            capture.record.ops.append(OpRecord(op, summary, frame, violation))
        self._violate(capture, violation)

    # ----------------------------------------------------------------- module functions
    def _make_function_wrapper(self, name: str, role: str, original: Callable) -> Callable:
        runtime = self
        handler = getattr(self, f"_on_{role}")

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            local = runtime.local
            if getattr(local, "depth", 0):
                return original(*args, **kwargs)
            local.depth = 1
            try:
                return handler(name, original, args, kwargs)
            finally:
                local.depth = 0

        wrapper.__name__ = name
        wrapper.__qualname__ = name
        wrapper.__doc__ = getattr(original, "__doc__", None)
        wrapper.__wrapped__ = original  # type: ignore[attr-defined]
        return wrapper

    @staticmethod
    def _arg(args: tuple, kwargs: dict, index: int, *names: str) -> Any:
        if len(args) > index:
            return args[index]
        for key in names:
            if key in kwargs:
                return kwargs[key]
        return None

    def _on_begin(self, name, original, args, kwargs):
        device = self._arg(args, kwargs, 0, "mesh_device", "device")
        cq_id = self._arg(args, kwargs, 1, "cq_id")
        frame = self.frames.user_frame()
        outer = self._capture_for(device) if device is not None else None
        if outer is not None:
            violation = Violation(
                api.NESTED_BEGIN, f"ttnn.{name}", self.summarize(args, kwargs), frame,
                f"{outer.record.name} is still recording, begun at {outer.record.begin_frame}",
            )
            # ttnn itself refuses a second capture on the same queue: stop it first there.
            self._violate(outer, violation, immediate=_same_queue(outer.cq_id, cq_id))
        trace_id = original(*args, **kwargs)
        with self.lock:
            self._begin_order = getattr(self, "_begin_order", 0) + 1
            record = CaptureRecord(
                device=repr(device), trace_id=_trace_key(device, trace_id)[1], cq_id=cq_id, begin_frame=frame,
                begin_order=self._begin_order,
            )
            capture = _Capture(record, device, trace_id, cq_id)
            self.traces[_trace_key(device, trace_id)] = capture
            self.open.setdefault(id(device), []).append(capture)
            capture.guards = self.guards.for_new_capture()
            for guard in capture.guards:
                guard._captures.append(record)
        observed.opened(record)
        if "torch" in sys.modules:
            self._ensure_torch_mode()
        if self.torch_mode is not None:
            self.torch_mode.capturing = True
        return trace_id

    def _on_end(self, name, original, args, kwargs):
        device = self._arg(args, kwargs, 0, "mesh_device", "device")
        trace_id = self._arg(args, kwargs, 1, "trace_id")
        capture = self.traces.get(_trace_key(device, trace_id))
        if capture is None:
            return original(*args, **kwargs)
        status = capture.record.status
        if status == "released" or status.startswith("aborted"):
            # The guard already ended and released it after a violation; a user `finally`
            # that ends it again must not fail on top of the real error.
            return None
        if status != "recording":
            return original(*args, **kwargs)  # ended already, or its end failed: ttnn decides
        try:
            result = original(*args, **kwargs)
        except BaseException as error:
            if self._ttnn_says_recording(capture.device):
                # ttnn refused this end (a wrong cq_id, say) and still records: so does the guard.
                raise
            # ttnn stopped recording: so does the guard. Later ops are not attributed to this
            # capture, and the guard will not end it again at exit.
            first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
            capture.record.end_frame = self.frames.user_frame()
            self._close(capture, f"end failed ({type(error).__name__}: {first_line[:200]})")
            if self.torch_mode is not None and not self.open:
                self.torch_mode.capturing = False
            if capture.record.violations and hasattr(error, "add_note"):
                error.add_note(format_report(capture.record, capture.record.violations, "end_trace_capture failed"))
            raise
        capture.record.end_frame = self.frames.user_frame()
        self._close(capture, "ended")
        if self.torch_mode is not None and not self.open:
            self.torch_mode.capturing = False
        violations = capture.record.violations
        if not violations:
            with self.lock:
                for record in capture.inputs.values():
                    self.watch.setdefault(record.address, []).append(record)
            return result
        if self.mode_for(capture) == "raise":
            self._release_quietly(capture)
            raise TraceSafetyError(
                format_report(capture.record, violations, "capture recorded host work; trace released"),
                violations,
                capture.record,
            )
        for violation in violations:
            warn(capture.record, violation)
        return result

    def _ttnn_says_recording(self, device: Any) -> bool:
        """ttnn's own answer to "is a capture still recording on this device"; False when it
        cannot say."""
        check = getattr(self.ttnn, "is_trace_capture_active", None)
        if check is None or device is None:
            return False
        saved = getattr(self.local, "depth", 0)
        self.local.depth = 1
        try:
            return bool(check(device))
        except Exception:
            return False
        finally:
            self.local.depth = saved

    def _release_quietly(self, capture: _Capture) -> None:
        release = self.original.get("release_trace")
        self._close(capture, "released")
        if release is None:
            return
        saved = getattr(self.local, "depth", 0)
        self.local.depth = 1
        try:
            release(capture.device, capture.trace_id)
        except Exception:
            pass
        finally:
            self.local.depth = saved

    def _on_release(self, name, original, args, kwargs):
        device = self._arg(args, kwargs, 0, "mesh_device", "device")
        trace_id = self._arg(args, kwargs, 1, "trace_id")
        capture = self.traces.get(_trace_key(device, trace_id))
        if capture is not None and (
            capture.record.status == "released" or capture.record.status.startswith("aborted")
        ):
            # Already released by the guard after a violation.
            return None
        result = original(*args, **kwargs)
        if capture is not None:
            self._close(capture, "released")
            with self.lock:
                self.traces.pop(_trace_key(device, trace_id), None)
        return result

    def _on_execute(self, name, original, args, kwargs):
        device = self._arg(args, kwargs, 0, "mesh_device", "device")
        trace_id = self._arg(args, kwargs, 1, "trace_id")
        capture = self.traces.get(_trace_key(device, trace_id))
        if capture is None or capture.record.status == "recording":
            return original(*args, **kwargs)
        record = capture.record
        if record.violations or record.status != "ended":
            record.refused_executions += 1
            why = "the trace broke the contract" if record.violations else f"its capture {record.status}"
            raise TraceSafetyError(
                format_report(record, record.violations, f"execute_trace refused: {why}"),
                record.violations,
                record,
            )
        stale = self._stale_inputs(capture)
        if stale:
            frame = self.frames.user_frame()
            for violation in stale:
                violation.frame = frame if violation.frame is UNKNOWN_FRAME else violation.frame
                violation.trace = record.name
            with self.lock:
                record.violations.extend(stale)
            record.refused_executions += 1
            raise TraceSafetyError(
                format_report(record, stale, "execute_trace refused: stale trace inputs"), stale, record
            )
        try:
            result = original(*args, **kwargs)
        except RuntimeError as error:
            if api.TRACKER_ERROR_MARKER not in str(error):
                raise
            found = self._tracker_violations(str(error), record)
            with self.lock:
                record.violations.extend(found)
            record.refused_executions += 1
            raise TraceSafetyError(
                format_report(record, found, "execute_trace refused by ttnn's allocation tracker")
                + "\n\nttnn's allocation tracker said:\n" + str(error),
                found,
                record,
            ) from error
        record.executions += 1
        return result

    def _live_addresses(self, device: Any) -> Optional[set]:
        reports = getattr(getattr(self.ttnn, "_ttnn", None), "reports", None)
        get_buffers = getattr(reports, "get_buffers", None)
        if get_buffers is None:
            return None
        try:
            return {buffer.address for buffer in get_buffers(device)}
        except Exception:
            return None

    def _stale_inputs(self, capture: _Capture) -> list[Violation]:
        if not capture.inputs:
            return []
        live = self._live_addresses(capture.device)
        found = []
        for record in capture.inputs.values():
            where = f"{record.arg} at 0x{record.address:x}, read by {record.op} at {record.frame}"
            if record.freed_at is not None:
                found.append(Violation(api.FREED_INPUT, "ttnn.execute_trace", where, record.freed_at,
                                       f"deallocated at {record.freed_at}"))
            elif record.replaced_by is not None:
                found.append(Violation(api.STALE_INPUT, "ttnn.execute_trace", where, UNKNOWN_FRAME,
                                       f"its buffer was freed and the address reused by {record.replaced_by}"))
            elif live is not None and record.address not in live:
                found.append(Violation(api.STALE_INPUT, "ttnn.execute_trace", where, UNKNOWN_FRAME,
                                       "its buffer was freed after the capture (the tensor was rebound or dropped)"))
        return found

    def _tracker_violations(self, message: str, record: CaptureRecord) -> list[Violation]:
        found = []
        for match in _TRACKER_BUFFER.finditer(message):
            uid = int(match.group(1))
            context = match.group(2) or ""
            op, frame = self.allocations.get(uid, (context or "<unknown op>", UNKNOWN_FRAME))
            detail = f"buffer {uid}, reported by ttnn's allocation tracker"
            detail += f" (allocation context: {context})" if context else ""
            found.append(Violation(api.ALIVE_ACROSS_REPLAY, op, "", frame, detail, trace=record.name))
        if not found:
            found.append(Violation(api.ALIVE_ACROSS_REPLAY, "ttnn.execute_trace", "", UNKNOWN_FRAME,
                                   "reported by ttnn's allocation tracker", trace=record.name))
        return found

    def _on_sync(self, name, original, args, kwargs):
        if self.open:
            device = self._arg(args, kwargs, 0, "mesh_device", "device")
            if not isinstance(device, self.MeshDevice):
                device = None
            capture = self._capture_for(device)
            if capture is not None:
                frame = self.frames.user_frame()
                summary = self.summarize(args, kwargs)
                violation = Violation(api.SYNC, f"ttnn.{name}", summary, frame)
                with self.lock:
                    capture.record.ops.append(OpRecord(f"ttnn.{name}", summary, frame, violation))
                self._violate(capture, violation)
        return original(*args, **kwargs)

    # ----------------------------------------------------------------- torch
    def _ensure_torch_mode(self) -> None:
        if self.torch_mode is not None:
            return
        from trace_lint.runtime_guard import torch_guard

        mode = torch_guard.push_mode(self._on_torch)
        if mode is not None:
            self.torch_mode = mode
            self.frames.add(*torch_guard.torch_dirs())

    def _on_torch(self, name: str, args: tuple, kwargs: dict) -> None:
        from trace_lint.runtime_guard.torch_guard import classify_torch_call

        if getattr(self.local, "depth", 0) or not self.open:
            return
        kind = classify_torch_call(name, args, kwargs)
        if kind is None:
            return
        capture = self._latest_open()
        if capture is None:
            return
        frame = self.frames.user_frame()
        summary = ", ".join(_torch_describe(v) for v in args)
        violation = Violation(kind, f"torch.{name}", summary, frame, "torch work while a ttnn capture is open")
        with self.lock:
            capture.record.ops.append(OpRecord(f"torch.{name}", summary, frame, violation))
        self._violate(capture, violation, immediate=False)

    # ----------------------------------------------------------------- guard exit
    def close_left_open(self, guard: Any) -> list[Violation]:
        """Captures this guard saw begin that are still recording: report, end and release them."""
        with self.lock:
            left = [c for stack in self.open.values() for c in stack if guard in c.guards]
        return self.close_captures(left, "still recording when the guard exited; the guard ended and released it")

    def recording_records(self) -> list[CaptureRecord]:
        with self.lock:
            return [c.record for stack in self.open.values() for c in stack]

    def close_records(self, records: list[CaptureRecord], why: str) -> list[Violation]:
        """End and release the captures of these records that still record; report them (TRC401)."""
        wanted = {id(r) for r in records}
        with self.lock:
            left = [c for stack in self.open.values() for c in stack if id(c.record) in wanted]
        return self.close_captures(left, why)

    def close_captures(self, left: list, why: str) -> list[Violation]:
        found = []
        for capture in left:
            violation = Violation(
                api.LEFT_OPEN, "ttnn.begin_trace_capture", capture.record.device, capture.record.begin_frame,
                why, trace=capture.record.name,
            )
            with self.lock:
                capture.record.violations.append(violation)
            self._abort(capture)
            found.append(violation)
        return found


def _library_paths(module: Any) -> tuple[str, ...]:
    """Where a module's code lives: a package's directory, or a single module's file."""
    path = getattr(module, "__file__", None)
    if not path:
        return ()
    path = os.path.abspath(path)
    if os.path.basename(path) == "__init__.py":
        return (os.path.dirname(path) + os.sep,)
    return (path,)


def _torch_describe(value: Any) -> str:
    shape = getattr(value, "shape", None)
    if shape is not None and hasattr(value, "dtype"):
        dims = "x".join(str(d) for d in shape) or "scalar"
        return f"tensor[{dims} {str(value.dtype).replace('torch.', '')}]"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def warn(record: CaptureRecord, violation: Violation) -> None:
    warnings.warn_explicit(
        f"{record.name}: {violation.format()}",
        TraceSafetyWarning,
        violation.frame.filename,
        violation.frame.lineno,
    )
