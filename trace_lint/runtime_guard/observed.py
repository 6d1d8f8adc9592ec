"""Which project functions ran while a capture was open: call edges for the static analysis.

While a guard records (`guard(record=...)`, or the pytest plugin under `--trace-guard`) and a
capture is open (a ttnn trace or a CUDA graph), every start of a Python function in a file of
the project is noted with the call site that ran it: the nearest frame of a project file
below it (so a call through `torch.nn.Module.__call__` or a library callback counts from
the project line that made it). `sys.monitoring` on Python 3.12+ (calls of code outside the
project are switched off after their first start), `sys.setprofile` on the capturing thread
below. Nothing is watched while no capture is open.

When the recording stops, the edges go into a record in the project's cache folder
(`trace_lint.core.observed` is the format), merged with the records already there.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from pathlib import Path
from typing import Any, Optional

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_MISSING = object()
_TOOL_NAME = "trace-lint observed calls"


class _Open:
    """One open capture and the (caller code, caller instruction, callee code) seen in it."""

    __slots__ = ("capture", "calls", "test")

    def __init__(self, capture: Any, test: Optional[str]) -> None:
        self.capture = capture
        self.calls: set = set()
        self.test = test


class Recorder:
    def __init__(self, root: Path, folder: Path, in_cache: bool = False) -> None:
        self.root = os.path.realpath(root)
        self.folder = Path(folder)
        self.in_cache = in_cache
        self.lock = threading.RLock()
        self.test: Optional[str] = None
        self._files: dict[str, Optional[str]] = {}
        self._open: dict[int, _Open] = {}
        self._sinks: tuple = ()
        self._closed: list[_Open] = []
        self._codes: dict[int, Any] = {}
        self._tool: Optional[int] = None
        self._monitoring = sys.version_info >= (3, 12)
        self._profiled: set[int] = set()
        skipped = [_PACKAGE_DIR]
        for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
            skipped.append(os.path.realpath(prefix) + os.sep)
        self._skipped = tuple(skipped)

    # ----------------------------------------------------------------- files
    def _project_file(self, filename: str) -> Optional[str]:
        """The path relative to the project root of a file of the project, else None."""
        found = self._files.get(filename, _MISSING)
        if found is _MISSING:
            found = None
            if not filename.startswith("<"):
                real = os.path.realpath(filename)
                if real.startswith(self.root + os.sep) and not real.startswith(self._skipped) and os.sep + "site-packages" + os.sep not in real:
                    found = os.path.relpath(real, self.root).replace(os.sep, "/")
            self._files[filename] = found
        return found

    # ----------------------------------------------------------------- captures
    def opened(self, capture: Any) -> None:
        with self.lock:
            self._open[id(capture)] = _Open(capture, self.test)
            self._sinks = tuple(entry.calls for entry in self._open.values())
            if len(self._open) == 1:
                self._watch()
            elif not self._monitoring:
                self._profile_this_thread()

    def closed(self, capture: Any) -> None:
        with self.lock:
            entry = self._open.pop(id(capture), None)
            if entry is None:
                return
            self._sinks = tuple(e.calls for e in self._open.values())
            if entry.calls:
                self._closed.append(entry)
            if not self._open:
                self._unwatch()

    # ----------------------------------------------------------------- watching
    def _watch(self) -> None:
        if self._monitoring:
            monitoring = sys.monitoring
            if self._tool is None:
                for tool in (monitoring.PROFILER_ID, 3, 4):
                    try:
                        monitoring.use_tool_id(tool, _TOOL_NAME)
                    except ValueError:
                        continue
                    self._tool = tool
                    monitoring.register_callback(tool, monitoring.events.PY_START, self._on_start)
                    break
                else:
                    warnings.warn("trace-lint runtime guard: no free sys.monitoring tool id; calls in captures are not recorded", stacklevel=3)
                    self._monitoring = False  # fall back to sys.setprofile
            if self._tool is not None:
                monitoring.set_events(self._tool, monitoring.events.PY_START)
                return
        self._profile_this_thread()

    def _profile_this_thread(self) -> None:
        ident = threading.get_ident()
        if ident in self._profiled:
            return
        if sys.getprofile() is not None:
            warnings.warn("trace-lint runtime guard: a profiler is active on this thread; calls in this capture are not recorded", stacklevel=4)
            return
        self._profiled.add(ident)
        sys.setprofile(self._on_profile)

    def _unwatch(self) -> None:
        if self._tool is not None:
            sys.monitoring.set_events(self._tool, 0)
        ident = threading.get_ident()
        if ident in self._profiled and sys.getprofile() is self._on_profile:
            sys.setprofile(None)
            self._profiled.discard(ident)

    def stop(self) -> None:
        with self.lock:
            for capture in [entry.capture for entry in self._open.values()]:
                self.closed(capture)
            if self._tool is not None:
                sys.monitoring.register_callback(self._tool, sys.monitoring.events.PY_START, None)
                sys.monitoring.free_tool_id(self._tool)
                self._tool = None

    def _note(self, caller: Any, code: Any) -> None:
        """A project function (`code`) started, called from the frame `caller`: note the
        call site that ran it, in the nearest project frame. Keys are ids (hashing a code
        object hashes its whole body); `_codes` keeps the objects alive."""
        files = self._files
        while caller is not None:
            filename = caller.f_code.co_filename
            found = files.get(filename, _MISSING)
            if found is _MISSING:
                found = self._project_file(filename)
            if found is not None:
                break
            caller = caller.f_back
        if caller is None:
            return
        caller_code = caller.f_code
        call = (id(caller_code), caller.f_lasti, id(code))
        for sink in self._sinks:
            if call not in sink:
                sink.add(call)
                self._codes[call[0]] = caller_code
                self._codes[call[2]] = code

    def _on_start(self, code: Any, offset: int) -> Any:
        found = self._files.get(code.co_filename, _MISSING)
        if found is _MISSING:
            found = self._project_file(code.co_filename)
        if found is None:
            return sys.monitoring.DISABLE  # never a project function: no more events from it
        if self._sinks:
            # Frame 1 is the function that started; asking for 2 makes no frame object for it.
            self._note(sys._getframe(2), code)
        return None

    def _on_profile(self, frame: Any, event: str, arg: Any) -> None:
        if event != "call":
            return
        if not self._sinks:
            # Every capture ended (on another thread, maybe): stop profiling this one.
            sys.setprofile(None)
            self._profiled.discard(threading.get_ident())
            return
        filename = frame.f_code.co_filename
        found = self._files.get(filename, _MISSING)
        if found is _MISSING:
            found = self._project_file(filename)
        if found is not None:
            self._note(frame.f_back, frame.f_code)

    # ----------------------------------------------------------------- the record
    def edges(self) -> list:
        from trace_lint.core.observed import Callee, Capture, Edge, Site, file_hash

        hashes: dict[str, Optional[str]] = {}

        def hash_of(rel: str) -> Optional[str]:
            if rel not in hashes:
                try:
                    hashes[rel] = file_hash((Path(self.root) / rel).read_bytes())
                except OSError:
                    hashes[rel] = None
            return hashes[rel]

        with self.lock:
            entries = list(self._closed)
        found = []
        for entry in entries:
            begin = entry.capture.begin_frame
            kind = "cuda-graph" if entry.capture.label == "CUDA graph" else "ttnn"
            capture = Capture(self._project_file(begin.filename) or "<outside the project>", max(1, begin.lineno), begin.function or "?", kind)
            for caller_id, lasti, callee_id in list(entry.calls):
                caller_code, callee_code = self._codes[caller_id], self._codes[callee_id]
                caller_file = self._project_file(caller_code.co_filename)
                callee_file = self._project_file(callee_code.co_filename)
                if caller_file is None or callee_file is None or callee_code.co_name == "<module>":
                    continue
                caller_hash, callee_hash = hash_of(caller_file), hash_of(callee_file)
                if caller_hash is None or callee_hash is None:
                    continue
                line, column = _position(caller_code, lasti)
                if line is None:
                    continue
                site = Site(caller_file, line, column, getattr(caller_code, "co_qualname", caller_code.co_name))
                callee = Callee(callee_file, getattr(callee_code, "co_qualname", callee_code.co_name), max(1, callee_code.co_firstlineno))
                found.append(Edge(capture, site, callee, caller_hash, callee_hash, [entry.test] if entry.test else []))
        return found

    def write(self) -> Optional[Path]:
        from trace_lint import __version__
        from trace_lint.core.observed import write_record

        edges = self.edges()
        if not edges:
            return None
        path = write_record(self.folder, edges, __version__, Path(self.root), self.in_cache)
        with self.lock:
            self._closed = []
        return path


def _position(code: Any, lasti: int) -> tuple[Optional[int], Optional[int]]:
    """(line, 0-based UTF-8 column) of the instruction at byte offset `lasti`."""
    if lasti < 0:
        return None, None
    positions = getattr(code, "co_positions", None)
    if positions is not None:
        for index, (line, _end, column, _end_column) in enumerate(positions()):
            if index == lasti // 2:
                return line, column
        return None, None
    for start, _end, line in code.co_lines():  # 3.10: lines only
        if start <= lasti < _end:
            return line, None
    return None, None


# ------------------------------------------------------------------ the process's recorder
_lock = threading.RLock()
_recorder: Optional[Recorder] = None
_users = 0


def start(folder: Path, root: Path, in_cache: bool = False) -> Recorder:
    """Record calls in captures from now on (counted: each start needs a stop); `in_cache`:
    `folder` is the default one, inside the project's cache folder."""
    global _recorder, _users
    with _lock:
        if _recorder is None:
            _recorder = Recorder(root, folder, in_cache)
        _users += 1
        return _recorder


def stop() -> Optional[Path]:
    """End one start; the last one writes the record and stops recording. Never raises on a
    record it cannot write: that is a warning."""
    global _recorder, _users
    with _lock:
        if _recorder is None:
            return None
        _users -= 1
        if _users > 0:
            return None
        recorder, _recorder = _recorder, None
    recorder.stop()
    try:
        return recorder.write()
    except OSError as error:
        warnings.warn(f"trace-lint runtime guard: observed calls not written to {recorder.folder}: {error}", stacklevel=2)
        return None


def opened(capture: Any) -> None:
    """A capture began (a CaptureRecord): the guard's hook."""
    recorder = _recorder
    if recorder is not None:
        recorder.opened(capture)


def closed(capture: Any) -> None:
    """A capture ended, was aborted or released: the guard's hook."""
    recorder = _recorder
    if recorder is not None:
        recorder.closed(capture)


def set_test(name: Optional[str]) -> None:
    """The test now running (pytest's node id), named by the edges it sees."""
    recorder = _recorder
    if recorder is not None:
        recorder.test = name


def default_target(spec: Any) -> Optional[tuple[Path, Path, bool]]:
    """(records folder, project root, in the cache folder) for `guard(record=spec)`: True is the project of the
    working directory (its `observed` setting, by default `<cache-dir>/observed`), a path is
    that folder; None or False records nothing."""
    if spec is None or spec is False:
        return None
    from trace_lint.core.config import load_settings

    settings = load_settings(Path.cwd())
    if spec is True:
        from trace_lint.core.observed import in_cache_folder, records_folder

        folder = records_folder(settings)
        return None if folder is None else (folder, Path(settings.root), in_cache_folder(settings))
    return Path(spec), Path(settings.root), False
