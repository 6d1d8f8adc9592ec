"""The guard for CUDA graphs: a patched torch.cuda.CUDAGraph and sync functions, and two torch
modes that classify every call made on the capturing thread while a graph records.

One CudaRuntime per process while any guard is active and torch is loaded. The classification
functions at the top need no torch: they read only names, `.device.type` and `.dtype`.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
import weakref
from typing import Any, Callable, Optional

from trace_lint.runtime_guard import api, observed
from trace_lint.runtime_guard.guard_set import GuardSet
from trace_lint.runtime_guard.patching import Patcher, RestoreError
from trace_lint.runtime_guard.report import (
    CaptureRecord,
    FrameFinder,
    OpRecord,
    TraceSafetyError,
    TraceSafetyWarning,
    Violation,
    format_report,
)

Classified = tuple[Optional[str], bool]  # (violation kind or None, stop it before torch runs it)


# ------------------------------------------------------------------ classification
def _device_type(value: Any) -> Optional[str]:
    device = getattr(value, "device", None)
    kind = getattr(device, "type", None)
    if kind is None and isinstance(device, str):
        kind = device.split(":")[0]
    return kind


def _is_tensor(value: Any) -> bool:
    return hasattr(value, "dtype") and hasattr(value, "device") and hasattr(value, "shape")


def tensors_in(args: tuple, kwargs: Optional[dict] = None) -> list:
    """Tensors among the arguments, one level of lists and tuples deep."""
    found = []
    values = list(args) + list((kwargs or {}).values())
    for value in values:
        if isinstance(value, (list, tuple)):
            found += [item for item in value if _is_tensor(item)]
        elif _is_tensor(value):
            found.append(value)
    return found


def _off_host(tensors: list) -> bool:
    """Any tensor on a device (CUDA, or meta in tests): CUDA would fail a sync on it."""
    return any(_device_type(t) not in (None, "cpu") for t in tensors)


def _target_type(target: Any) -> Optional[str]:
    if isinstance(target, str):
        return target.split(":")[0]
    kind = getattr(target, "type", None)
    return kind if isinstance(kind, str) else None


def _numel(value: Any) -> int:
    count = 1
    for dim in getattr(value, "shape", ()):
        count *= int(dim)
    return count


def _is_bool_index(index: Any) -> bool:
    items = index if isinstance(index, (list, tuple)) else (index,)
    return any(_is_tensor(i) and str(getattr(i, "dtype", "")) == "torch.bool" for i in items if i is not None)


def classify_function(name: str, args: tuple = (), kwargs: Optional[dict] = None) -> Classified:
    """A torch function or Tensor method called while a CUDA graph records (TorchFunctionMode)."""
    kwargs = kwargs or {}
    tensors = tensors_in(args, kwargs)
    if name in ("cpu", "to"):
        if name == "to":
            targets = [_target_type(a) for a in list(args[1:]) + [kwargs.get("device")]]
            if "cpu" not in targets:
                return None, False  # dtype casts and copies to the GPU: seen at the aten level
        source = tensors[:1]
        # .cpu() of a CPU tensor returns it: nothing is read.
        if not _off_host(source):
            return None, False
        return api.CUDA_HOST_READ, not kwargs.get("non_blocking", False)
    if name in api.TORCH_READ_FUNCTIONS:
        return api.CUDA_HOST_READ, _off_host(tensors)
    if name in api.CUDA_DATA_DEPENDENT_FUNCTIONS:
        if name == "repeat_interleave":
            repeats = args[1] if len(args) > 1 else kwargs.get("repeats", args[0] if len(args) == 1 else None)
            if not _is_tensor(repeats) or kwargs.get("output_size") is not None:
                return None, False
        return api.DATA_DEPENDENT_SHAPE, _off_host(tensors)
    if name == "__getitem__" and len(args) > 1 and _is_bool_index(args[1]):
        return api.DATA_DEPENDENT_SHAPE, _off_host(tensors[:1])
    return None, False


def classify_aten(packet: str, overload: str, args: tuple = (), kwargs: Optional[dict] = None) -> Classified:
    """An aten op (overload packet name and overload) dispatched while a CUDA graph records."""
    kwargs = kwargs or {}
    tensors = tensors_in(args, kwargs)
    if packet in api.ATEN_HOST_READS:
        return api.CUDA_HOST_READ, _off_host(tensors)
    if packet in api.ATEN_COPIES:
        if packet == "_to_copy":
            source = _device_type(args[0]) if args else None
            target = _target_type(kwargs.get("device")) or source
        elif packet == "copy_":
            target, source = (_device_type(args[0]), _device_type(args[1])) if len(args) > 1 else (None, None)
        else:  # _copy_from(self, dst)
            source, target = (_device_type(args[0]), _device_type(args[1])) if len(args) > 1 else (None, None)
        blocking = not kwargs.get("non_blocking", False)
        if source not in (None, "cpu") and target == "cpu":
            # Both directions: a non_blocking copy to or from pinned memory can be captured.
            return api.CUDA_HOST_READ, blocking
        if source == "cpu" and target not in (None, "cpu"):
            return api.CUDA_HOST_TRANSFER, blocking
        return None, False
    if packet in api.ATEN_DATA_DEPENDENT:
        if packet == "repeat_interleave" and (overload == "self_int" or kwargs.get("output_size") is not None):
            return None, False
        return api.DATA_DEPENDENT_SHAPE, _off_host(tensors)
    if packet in api.ATEN_INDEXING and len(args) > 1 and _is_bool_index(args[1]):
        return api.DATA_DEPENDENT_SHAPE, _off_host(tensors[:1])
    if packet in api.ATEN_INDEX_PUTS and len(args) > 2 and _is_bool_index(args[1]):
        # x[mask] = scalar becomes a masked fill (fixed shape); x[mask] = values needs the count.
        if _is_tensor(args[2]) and _numel(args[2]) != 1:
            return api.DATA_DEPENDENT_SHAPE, _off_host(tensors[:1])
    return None, False


def _describe(value: Any) -> str:
    if _is_tensor(value):
        dims = "x".join(str(d) for d in value.shape) or "scalar"
        return f"tensor[{dims} {str(value.dtype).replace('torch.', '')} {_device_type(value)}]"
    if isinstance(value, (list, tuple)) and value:
        inner = ", ".join(_describe(v) for v in list(value)[:3])
        more = ", ..." if len(value) > 3 else ""
        return f"[{inner}{more}]" if isinstance(value, list) else f"({inner}{more})"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def summarize(args: tuple, kwargs: Optional[dict] = None) -> str:
    parts = [_describe(v) for v in args]
    parts += [f"{k}={_describe(v)}" for k, v in (kwargs or {}).items()]
    return ", ".join(parts)


# ------------------------------------------------------------------ the patched torch
class _Capture:
    """One capture of one CUDAGraph object."""

    __slots__ = ("record", "graph", "thread", "modes", "guards", "stopped", "seen")

    def __init__(self, record: CaptureRecord, graph: Any) -> None:
        self.record = record
        try:
            self.graph: Callable[[], Any] = weakref.ref(graph)
        except TypeError:
            self.graph = lambda: None
        self.thread = threading.get_ident()
        self.modes: list = []
        self.guards: list = []
        self.stopped = False  # a call was stopped before torch ran it (mode "raise")
        self.seen: set = set()  # (kind, op, frame): a loop reports a line once


class CudaRuntime:
    def __init__(self, torch: Any) -> None:
        self.torch = torch
        path = getattr(torch, "__file__", None)
        self.frames = FrameFinder((os.path.dirname(os.path.abspath(path)) + os.sep,) if path else ())
        self.lock = threading.RLock()
        self.local = threading.local()
        self.patcher = Patcher()
        self.guards = GuardSet()
        self.recording: list[_Capture] = []
        self.by_graph: Any = weakref.WeakKeyDictionary()
        self.original: dict[str, Callable] = {}
        self._count = 0

    @property
    def mode(self) -> str:
        """The mode of the calling thread's innermost guard."""
        return self.guards.mode()

    def mode_for(self, capture: Optional["_Capture"]) -> str:
        return self.guards.mode(capture.guards if capture is not None else ())

    # ----------------------------------------------------------------- install
    def install(self) -> None:
        torch = self.torch
        cuda = torch.cuda
        try:
            graph_class = getattr(cuda, "CUDAGraph", None)
            for name, role in api.CUDA_GRAPH_METHODS.items():
                if graph_class is not None and hasattr(graph_class, name):
                    wrapper = self._graph_wrapper(name, getattr(self, f"_on_{role}"), getattr(graph_class, name))
                    self.original[name] = self.patcher.patch(graph_class, name, wrapper)
            for module_name, name in api.CUDA_SYNC_FUNCTIONS:
                module = getattr(torch, module_name, None)
                if module is not None and hasattr(module, name):
                    label = f"torch.{module_name}.{name}"
                    self.patcher.patch(module, name, self._sync_wrapper(label, getattr(module, name)))
            for class_name, name in api.CUDA_SYNC_METHODS:
                owner = getattr(cuda, class_name, None)
                if owner is not None and hasattr(owner, name):
                    label = f"torch.cuda.{class_name}.{name}"
                    self.patcher.patch(owner, name, self._sync_wrapper(label, getattr(owner, name)))
        except BaseException as error:
            try:
                self.patcher.restore()
            except RestoreError as restore_error:  # keep the install error; say what stays patched
                if hasattr(error, "add_note"):
                    error.add_note(str(restore_error))
            raise

    def uninstall(self) -> None:
        try:
            for capture in list(self.recording):
                self._stop_recording(capture)
        finally:
            self.patcher.restore()

    # ----------------------------------------------------------------- helpers
    def _current(self) -> Optional[_Capture]:
        """The capture recording on this thread, else the latest on any (CUDA's default "global"
        capture mode fails a sync from any thread)."""
        stack = getattr(self.local, "stack", None)
        if stack:
            return stack[-1]
        recording = self.recording
        return recording[-1] if recording else None

    def _device_name(self) -> str:
        try:
            return f"cuda:{self.torch.cuda.current_device()}"
        except Exception:
            return "cuda"

    def _record(self, capture: _Capture, op: str, args: tuple, kwargs: dict) -> OpRecord:
        record = OpRecord(op, summarize(args, kwargs), self.frames.user_frame())
        with self.lock:
            capture.record.ops.append(record)
        return record

    def _violate(self, capture: _Capture, record: OpRecord, kind: str, stop: bool, detail: str = "") -> None:
        """Attach a violation to `record`; in mode "raise", stop the call when CUDA would fail it."""
        violation = Violation(kind, record.op, record.args, record.frame, detail, trace=capture.record.name)
        if record.violation is None:
            record.violation = violation
        key = (kind, record.op, record.frame)
        with self.lock:
            if key not in capture.seen:
                capture.seen.add(key)
                capture.record.violations.append(violation)
        if stop and self.mode_for(capture) == "raise":
            capture.stopped = True
            raise TraceSafetyError(
                format_report(capture.record, capture.record.violations,
                              f"{record.op} stopped before torch ran it; replay() of this graph will be refused"),
                capture.record.violations,
                capture.record,
            )

    # ----------------------------------------------------------------- modes
    def _push_modes(self, capture: _Capture) -> None:
        torch = self.torch
        from torch.overrides import TorchFunctionMode
        from torch.utils._python_dispatch import TorchDispatchMode

        runtime = self

        class _FunctionMode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                target = self.capture
                if target is None:
                    return func(*args, **kwargs)
                return runtime._on_function(target, func, args, kwargs)

        class _DispatchMode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                target = self.capture
                if target is None:
                    return func(*args, **kwargs)
                return runtime._on_dispatch(target, func, args, kwargs)

        function_mode, dispatch_mode = _FunctionMode(), _DispatchMode()
        function_mode.capture = dispatch_mode.capture = capture
        function_mode.__enter__()
        try:
            dispatch_mode.__enter__()
        except BaseException:
            function_mode.__exit__(None, None, None)
            raise
        capture.modes = [
            (function_mode, torch._C._len_torch_function_stack, torch._C._get_function_stack_at),
            (dispatch_mode, torch._C._len_torch_dispatch_stack, torch._C._get_dispatch_stack_at),
        ]

    def _pop_modes(self, capture: _Capture) -> None:
        """Pop this capture's modes if they are on top of this thread's stacks; otherwise (another
        thread, or a mode pushed above them and left there) disarm them and leave them."""
        same_thread = capture.thread == threading.get_ident()
        for mode, length, at in reversed(capture.modes):
            mode.capture = None
            if not same_thread:
                continue
            try:
                on_top = at(length() - 1) is mode
            except Exception:
                on_top = False
            if on_top:
                mode.__exit__(None, None, None)
        capture.modes = []

    def _on_function(self, capture: _Capture, func: Any, args: tuple, kwargs: dict) -> Any:
        local = self.local
        name = getattr(func, "__name__", "") or ""
        if getattr(local, "busy", False) or getattr(local, "quiet", 0) or name in api.TORCH_METADATA_FUNCTIONS:
            return func(*args, **kwargs)
        local.busy = True
        try:
            kind, stop = classify_function(name, args, kwargs)
            record = self._record(capture, f"torch.{name}", args, kwargs)
            if kind is not None:
                self._violate(capture, record, kind, stop)
        finally:
            local.busy = False
        # Nested aten ops belong to this call: a reported call is not reported again below.
        outer = getattr(local, "current", None)
        local.current = record
        if kind is not None:
            local.quiet = getattr(local, "quiet", 0) + 1
        try:
            return func(*args, **kwargs)
        finally:
            local.current = outer
            if kind is not None:
                local.quiet -= 1

    def _on_dispatch(self, capture: _Capture, func: Any, args: tuple, kwargs: dict) -> Any:
        local = self.local
        if getattr(local, "busy", False) or getattr(local, "quiet", 0):
            return func(*args, **kwargs)
        local.busy = True
        try:
            packet = getattr(getattr(func, "overloadpacket", None), "__name__", "") or str(func)
            kind, stop = classify_aten(packet, getattr(func, "_overloadname", ""), args, kwargs)
            if kind is not None:
                record = self._aten_record(capture, func, args, kwargs)
                self._violate(capture, record, kind, stop, self._via(record, func))
        finally:
            local.busy = False
        result = func(*args, **kwargs)
        if kind is None:
            current = getattr(local, "current", None)
            if current is not None and current.violation is not None:
                return result  # this user call is reported already: one line, one entry
            inputs = tensors_in(args, kwargs)
            outputs = tensors_in(result if isinstance(result, (list, tuple)) else (result,))
            if (inputs or outputs) and all(_device_type(t) == "cpu" for t in inputs + outputs):
                local.busy = True
                try:
                    record = self._aten_record(capture, func, args, kwargs)
                    work = api.CUDA_HOST_WORK if inputs else api.CUDA_TENSOR_CREATION
                    self._violate(capture, record, work, False, self._via(record, func))
                finally:
                    local.busy = False
        return result

    def _aten_record(self, capture: _Capture, func: Any, args: tuple, kwargs: dict) -> OpRecord:
        current = getattr(self.local, "current", None)
        if current is not None and current.violation is None:
            return current  # the user-level call that ran this op
        return self._record(capture, str(func), args, kwargs)

    @staticmethod
    def _via(record: OpRecord, func: Any) -> str:
        return "" if record.op.startswith("aten.") else f"runs {func}"

    # ----------------------------------------------------------------- CUDAGraph methods
    def _graph_wrapper(self, name: str, handler: Callable, original: Callable) -> Callable:
        def method(graph: Any, *args: Any, **kwargs: Any) -> Any:
            return handler(original, graph, args, kwargs)

        method.__name__ = name
        method.__qualname__ = f"CUDAGraph.{name}"
        method.__doc__ = getattr(original, "__doc__", None)
        method.__wrapped__ = original  # type: ignore[attr-defined]
        return method

    def _on_begin(self, original: Callable, graph: Any, args: tuple, kwargs: dict) -> Any:
        frame = self.frames.user_frame()
        result = original(graph, *args, **kwargs)
        with self.lock:
            self._count += 1
            record = CaptureRecord(device=self._device_name(), trace_id=self._count, cq_id=None,
                                   begin_frame=frame, begin_order=self._count, label="CUDA graph")
            capture = _Capture(record, graph)
            capture.guards = self.guards.for_new_capture()
            for guard in capture.guards:
                guard._captures.append(record)
            try:
                self.by_graph[graph] = capture
            except TypeError:  # not weak-referenceable: tracked while recording only
                pass
            self.recording.append(capture)
        observed.opened(record)
        try:
            self._push_modes(capture)
        except BaseException:
            self._stop_recording(capture)
            raise
        stack = getattr(self.local, "stack", None)
        if stack is None:
            stack = self.local.stack = []
        stack.append(capture)
        return result

    def _stop_recording(self, capture: _Capture) -> None:
        observed.closed(capture.record)
        self._pop_modes(capture)
        with self.lock:
            if capture in self.recording:
                self.recording.remove(capture)
        stack = getattr(self.local, "stack", None)
        if stack and capture in stack:
            stack.remove(capture)

    def _find(self, graph: Any) -> Optional[_Capture]:
        try:
            found = self.by_graph.get(graph)
        except TypeError:
            found = None
        if found is None:
            found = next((c for c in self.recording if c.graph() is graph), None)
        return found

    def _on_end(self, original: Callable, graph: Any, args: tuple, kwargs: dict) -> Any:
        capture = self._find(graph)
        if capture is None or capture not in self.recording:
            return original(graph, *args, **kwargs)
        self._stop_recording(capture)
        record = capture.record
        record.end_frame = self.frames.user_frame()
        # The `with torch.cuda.graph` body's exception, seen from __exit__ (a plain finally does
        # not show it here).
        in_flight = sys.exc_info()[1]
        report = format_report(record, record.violations,
                               "capture recorded work a replay will not repeat; replay() will be refused")
        try:
            result = original(graph, *args, **kwargs)
        except BaseException as error:
            record.status = f"failed (capture_end raised {type(error).__name__})"
            if record.violations and hasattr(error, "add_note"):
                error.add_note(report)
            raise
        record.status = "aborted" if capture.stopped else "ended"
        violations = record.violations
        if not violations:
            return result
        if self.mode_for(capture) == "raise":
            if in_flight is None and not capture.stopped:  # a stopped call has raised already
                raise TraceSafetyError(report, violations, record)
            # Do not replace the exception already on its way out; tell it what the guard saw.
            if not isinstance(in_flight, TraceSafetyError) and hasattr(in_flight, "add_note"):
                in_flight.add_note(report)
            return result
        for violation in violations:
            warnings.warn_explicit(f"{record.name}: {violation.format()}", TraceSafetyWarning,
                                   violation.frame.filename, violation.frame.lineno)
        return result

    def _on_replay(self, original: Callable, graph: Any, args: tuple, kwargs: dict) -> Any:
        capture = self._find(graph)
        if capture is not None and capture.record.violations:
            record = capture.record
            record.refused_executions += 1
            raise TraceSafetyError(
                format_report(record, record.violations, "replay() refused: the graph broke the contract"),
                record.violations,
                record,
            )
        result = original(graph, *args, **kwargs)
        if capture is not None:
            capture.record.executions += 1
        return result

    # ----------------------------------------------------------------- syncs
    def _sync_wrapper(self, label: str, original: Callable) -> Callable:
        runtime = self

        def sync(*args: Any, **kwargs: Any) -> Any:
            if runtime.recording and not getattr(runtime.local, "busy", False):
                capture = runtime._current()
                if capture is not None:
                    local = runtime.local
                    local.busy = True
                    try:
                        record = runtime._record(capture, label, args, kwargs)
                        runtime._violate(capture, record, api.CUDA_SYNC, True)
                    finally:
                        local.busy = False
            return original(*args, **kwargs)

        sync.__name__ = getattr(original, "__name__", label.rsplit(".", 1)[-1])
        sync.__qualname__ = getattr(original, "__qualname__", sync.__name__)
        sync.__doc__ = getattr(original, "__doc__", None)
        sync.__wrapped__ = original  # type: ignore[attr-defined]
        return sync

    # ----------------------------------------------------------------- guard exit
    def close_left_open(self, guard: Any) -> list[Violation]:
        """Graphs this guard saw begin that still record: report them and end their capture."""
        with self.lock:
            left = [c for c in self.recording if guard in c.guards]
        return self.close_captures(left, "still recording when the guard exited; the guard ended the capture")

    def recording_records(self) -> list[CaptureRecord]:
        with self.lock:
            return [c.record for c in self.recording]

    def close_records(self, records: list[CaptureRecord], why: str) -> list[Violation]:
        wanted = {id(r) for r in records}
        with self.lock:
            left = [c for c in self.recording if id(c.record) in wanted]
        return self.close_captures(left, why)

    def close_captures(self, left: list, why: str) -> list[Violation]:
        found = []
        end = self.original.get("capture_end")
        for capture in left:
            record = capture.record
            violation = Violation(
                api.CUDA_LEFT_OPEN, "CUDAGraph.capture_begin", record.device, record.begin_frame, why, trace=record.name,
            )
            with self.lock:
                record.violations.append(violation)
            self._stop_recording(capture)
            graph = capture.graph()
            record.status = "aborted"
            if end is not None and graph is not None:
                try:
                    end(graph)
                except Exception as error:
                    record.status = f"aborted (capture_end failed: {str(error).splitlines()[0] if str(error) else error!r})"
            found.append(violation)
        return found
