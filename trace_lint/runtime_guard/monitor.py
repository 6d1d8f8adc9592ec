"""Calls no patch can see, watched through `sys.monitoring` (Python 3.12+) while a ttnn capture
records, and only then:

- constructors (`ttnn.Tensor(data, device=dev)`): nanobind calls its constructor without
  looking up a patched `__init__`, and with a device it writes the data into a new device buffer;
- references to a patched Tensor method or ttnn function taken before the guard patched it
  (`read = ttnn.Tensor.cpu`, `read = x.cpu`, `from ttnn import synchronize_device` at import).

A CALL event names the callable and its first argument, not the others, so what cannot be
told from those two (does this call pass a device?) is told by ttnn's own buffer report: the
devices' live buffer counts before and after the call (C_RETURN). Calls made from library code
(ttnn, torch, the guard) are never judged, and their call sites are disabled for good.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable, Optional

# pytest leaves the guard's frames out of a failure's traceback.
__tracebackhide__ = True

AVAILABLE = hasattr(sys, "monitoring")
_TOOL_IDS = (4, 3, 5)  # unassigned by CPython first; 0-2 are the debugger, coverage, profiler


class CallMonitor:
    """Judges calls to `checks` (id of the original callable -> check(arg0)) and `writes`
    (callables that may write to a device: the buffer counts decide) made by user code."""

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime
        self.checks: dict[int, tuple[Any, Callable[[Any], None]]] = {}
        self.writes: dict[int, tuple[Any, str]] = {}
        self.bound_types: set[type] = set()
        self.tool: Optional[int] = None
        self.running = False
        self.local = threading.local()
        self._switch = threading.Lock()  # captures begin and end on several threads

    # ---------------------------------------------------------------- setup
    def check(self, original: Any, check: Callable[[Any], None]) -> None:
        self.checks[id(original)] = (original, check)

    def write(self, original: Any, name: str) -> None:
        self.writes[id(original)] = (original, name)

    def start(self) -> None:
        if not AVAILABLE or self.running:
            return
        with self._switch:
            if not self.running:
                self._start()

    def _start(self) -> None:
        monitoring = sys.monitoring
        if self.tool is None:
            for tool in _TOOL_IDS:
                if monitoring.get_tool(tool) is None:
                    monitoring.use_tool_id(tool, "trace-lint runtime guard")
                    self.tool = tool
                    break
            else:
                return  # every free tool id is taken (debuggers, profilers): limit documented
            events = monitoring.events
            monitoring.register_callback(self.tool, events.CALL, self._on_call)
            monitoring.register_callback(self.tool, events.C_RETURN, self._on_return)
            monitoring.register_callback(self.tool, events.C_RAISE, self._on_raise)
        events = monitoring.events
        monitoring.set_events(self.tool, events.CALL | events.C_RETURN | events.C_RAISE)
        self.running = True

    def stop(self) -> None:
        with self._switch:
            if self.running and self.tool is not None:
                sys.monitoring.set_events(self.tool, 0)
            self.running = False

    def close(self) -> None:
        self.stop()
        with self._switch:
            self._free()

    def _free(self) -> None:
        if self.tool is not None:
            monitoring = sys.monitoring
            events = monitoring.events
            for event in (events.CALL, events.C_RETURN, events.C_RAISE):
                monitoring.register_callback(self.tool, event, None)
            monitoring.free_tool_id(self.tool)
            self.tool = None

    # ---------------------------------------------------------------- events
    def _target(self, callable_: Any, table: dict) -> tuple[Any, Any]:
        """(table entry, self of a bound method or None) for a callable, or (None, None)."""
        entry = table.get(id(callable_))
        if entry is not None and entry[0] is callable_:
            return entry, None
        if type(callable_) in self.bound_types:
            func = getattr(callable_, "__func__", None)
            entry = table.get(id(func))
            if entry is not None and entry[0] is func:
                return entry, callable_.__self__
        return None, None

    def _on_call(self, code: Any, offset: int, callable_: Any, arg0: Any) -> Any:
        runtime = self.runtime
        if runtime.frames._skipped(code.co_filename):
            # ttnn, torch, the guard: never judged, so stop hearing from this call site at all.
            return sys.monitoring.DISABLE
        check, bound_self = self._target(callable_, self.checks)
        write, write_self = (None, None) if check is not None else self._target(callable_, self.writes)
        if check is None and write is None:
            return None
        if getattr(runtime.local, "depth", 0) or not runtime.open:
            return None
        first = bound_self if bound_self is not None else (None if arg0 is sys.monitoring.MISSING else arg0)
        if check is not None:
            runtime.local.depth = 1
            try:
                check[1](first)
            finally:
                runtime.local.depth = 0
            return None
        first = write_self if write_self is not None else first
        pending = getattr(self.local, "pending", None)
        if pending is None:
            pending = self.local.pending = []
        pending.append((callable_, write[1], first, runtime.buffer_counts()))
        return None

    def _on_return(self, code: Any, offset: int, callable_: Any, arg0: Any) -> Any:
        pending = getattr(self.local, "pending", None)
        if not pending or pending[-1][0] is not callable_:
            return None
        _callable, name, first, before = pending.pop()
        runtime = self.runtime
        runtime.local.depth = 1
        try:
            runtime.on_unpatched_write(name, first, before)
        finally:
            runtime.local.depth = 0
        return None

    def _on_raise(self, code: Any, offset: int, callable_: Any, arg0: Any) -> Any:
        pending = getattr(self.local, "pending", None)
        if pending and pending[-1][0] is callable_:
            pending.pop()
        return None

