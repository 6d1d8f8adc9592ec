"""The public guard: a context manager (and install/uninstall) around a patched ttnn and torch."""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
import threading
import warnings
from typing import Any, Optional

from trace_lint.runtime_guard import api, observed
from trace_lint.runtime_guard.patching import RestoreError
from trace_lint.runtime_guard.report import (
    CaptureRecord,
    TraceSafetyError,
    TraceSafetyWarning,
    Violation,
    format_report,
)

MODES = ("raise", "warn")

_state_lock = threading.RLock()
_runtime: Any = None  # ttnn
_cuda: Any = None  # torch CUDA graphs
_waiting: list["Guard"] = []  # active guards that will join the CUDA runtime once torch is imported
_installed: list["Guard"] = []  # guards started with install(), for uninstall() without an argument
# Runtimes whose last guard left but some of whose patches could not be undone: retried on the
# next uninstall, and is_installed() stays true while they hold patches.
_leftover: list[Any] = []


def active_runtime() -> Any:
    return _runtime


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


class _AfterExec(importlib.abc.Loader):
    """Runs the real loader, puts it back on the module, then calls `then(module)`."""

    def __init__(self, loader: Any, then: Any) -> None:
        self._loader = loader
        self._then = then

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        module.__loader__ = self._loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        self._then(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _TorchImportHook(importlib.abc.MetaPathFinder):
    """Joins waiting guards to the CUDA-graph guard when the program imports torch, so that a
    guard started before `import torch` (the pytest session guard) never imports it itself."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != "torch":
            return None
        for finder in list(sys.meta_path):
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _AfterExec(spec.loader, _torch_imported)
                return spec
        return None


_hook = _TorchImportHook()


def _torch_imported(torch: Any) -> None:
    with _state_lock:
        if _hook in sys.meta_path:
            sys.meta_path.remove(_hook)
        waiting = list(_waiting)
        _waiting.clear()
        for guard in waiting:
            try:
                guard._join_cuda(torch)
            except Exception as error:  # never break the program's import of torch
                warnings.warn(f"trace-lint runtime guard: CUDA graphs not guarded: {error}", TraceSafetyWarning, stacklevel=2)


class Guard:
    """Wraps ttnn and torch's CUDA graphs while active and records every capture begun meanwhile.

    Reentrant: entering an active guard again only counts; nested guards share one set of
    patches, and the innermost guard's mode decides what raises.

    ttnn_module: None guards ttnn if it is installed, False never, a module guards that module.
    torch: None guards CUDA graphs if torch is importable (patched once the program imports it,
    never imported by the guard; TRACE_LINT_GUARD_TORCH=0 turns it off), False never, True
    imports torch now.

    record: True writes the project functions that ran in each capture into the project's
    records (`<cache-dir>/observed`, read by `trace-lint check`), a path writes them into
    that folder, None or False records nothing (see runtime_guard/observed.py).
    """

    def __init__(self, mode: str = "raise", *, ttnn_module: Any = None, torch: Optional[bool] = None, record: Any = None) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        self.mode = mode
        self._record = record
        self._recording = False
        self._ttnn_module = ttnn_module
        self._torch = torch
        self._captures: list[CaptureRecord] = []
        self._depth = 0
        self._lock = threading.RLock()

    @property
    def active(self) -> bool:
        return self._depth > 0

    @property
    def captures(self) -> list[CaptureRecord]:
        return list(self._captures)

    @property
    def violations(self) -> list[Violation]:
        return [v for capture in list(self._captures) for v in capture.violations]

    def report(self) -> str:
        if not self._captures:
            return "trace-lint runtime guard: no captures"
        lines = [capture.summary_line() for capture in self._captures]
        for capture in self._captures:
            if capture.violations:
                lines.append(format_report(capture, capture.violations))
        return "\n".join(lines)

    # ------------------------------------------------------------------ lifecycle
    def _wants_torch(self) -> bool:
        if self._torch is not None:
            return bool(self._torch)
        return os.environ.get(api.TORCH_ENV, "1") != "0"

    def _ttnn(self) -> Any:
        module = self._ttnn_module
        if module is False:
            return None
        if module is None:
            if not _importable("ttnn"):
                return None
            try:
                import ttnn as module  # noqa: PLC0415 - only when a guard is used
            except Exception as error:
                raise ImportError(
                    f"trace-lint runtime guard: ttnn is installed but `import ttnn` failed: {type(error).__name__}: {error}"
                ) from error
        return module

    def _nothing_to_guard(self) -> str:
        if self._ttnn_module is False:
            ttnn = "ttnn is off (ttnn_module=False)"
        else:
            ttnn = "ttnn is not importable (pip install ttnn)"
        if self._torch is False:
            torch = "torch is off (torch=False)"
        elif self._torch is None and os.environ.get(api.TORCH_ENV, "1") == "0":
            torch = f"torch is off ({api.TORCH_ENV}=0 in the environment)"
        else:
            torch = "torch is not importable"
        return f"trace-lint runtime guard: nothing to guard: {ttnn} and {torch}"

    def _join_ttnn(self, module: Any) -> None:
        global _runtime
        if _runtime is None:
            from trace_lint.runtime_guard.runtime import Runtime

            runtime = Runtime(module)
            runtime.install()
            _runtime = runtime
        elif module is not _runtime.ttnn and self._ttnn_module is not None:
            raise RuntimeError("another guard is active on a different ttnn module")
        with _runtime.lock:
            _runtime.guards.append(self)

    def _join_cuda(self, torch: Any) -> None:
        global _cuda
        if _cuda is None:
            from trace_lint.runtime_guard.cuda_graphs import CudaRuntime

            runtime = CudaRuntime(torch)
            runtime.install()
            _cuda = runtime
        with _cuda.lock:
            if self not in _cuda.guards:
                _cuda.guards.append(self)

    def install(self) -> "Guard":
        with self._lock:
            self._depth += 1
            if self._depth > 1:
                return self
            with _state_lock:
                try:
                    module = self._ttnn()
                    if module is not None:
                        self._join_ttnn(module)
                    # After ttnn: importing ttnn imports torch.
                    torch_ready = self._wants_torch() and ("torch" in sys.modules or self._torch is True)
                    if torch_ready:
                        try:
                            import torch  # noqa: PLC0415 - loaded already, or asked for
                        except ImportError as error:
                            raise ImportError(
                                "trace-lint runtime guard: guard(torch=True) needs torch, and `import torch` "
                                f"failed: {error} (install torch, or pass torch=None to guard it only when present)"
                            ) from error

                        self._join_cuda(torch)
                    elif self._wants_torch() and _importable("torch"):
                        _waiting.append(self)
                        if _hook not in sys.meta_path:
                            sys.meta_path.insert(0, _hook)
                    elif module is None:
                        raise ImportError(self._nothing_to_guard())
                    target = observed.default_target(self._record)
                    if target is not None:
                        observed.start(*target)
                        self._recording = True
                except BaseException as error:
                    _left, problems = self._leave()
                    self._depth -= 1
                    if problems and hasattr(error, "add_note"):
                        error.add_note("; ".join(problems))
                    raise
        return self

    def _leave(self) -> tuple[list[Violation], list[str]]:
        """Drop out of both runtimes; uninstall a runtime when its last guard leaves. Returns the
        captures this guard saw begin that were still open (now ended by the guard), and what
        went wrong on the way (each step runs whatever failed before it)."""
        global _runtime, _cuda
        left: list[Violation] = []
        problems: list[str] = []
        with _state_lock:
            if self in _waiting:
                _waiting.remove(self)
            if not _waiting and _hook in sys.meta_path:
                sys.meta_path.remove(_hook)
            for runtime in (_runtime, _cuda):
                if runtime is not None and self in runtime.guards:
                    try:
                        left += runtime.close_left_open(self)
                    except Exception as error:
                        problems.append(f"closing captures left open failed: {type(error).__name__}: {error}")
            for name in ("_runtime", "_cuda"):
                runtime = globals()[name]
                if runtime is None:
                    continue
                with runtime.lock:
                    if self in runtime.guards:
                        runtime.guards.remove(self)
                    last = not runtime.guards
                if not last:
                    continue
                globals()[name] = None
                try:
                    runtime.uninstall()
                except RestoreError as error:
                    _leftover.append(runtime)
                    problems.append(str(error))
                except Exception as error:
                    if runtime.patcher.pending():
                        _leftover.append(runtime)
                    problems.append(f"trace-lint runtime guard: uninstall failed: {type(error).__name__}: {error}")
            problems += _retry_leftovers()
            if self in _installed:
                _installed.remove(self)
        return left, problems

    def uninstall(self, exc: Optional[BaseException] = None) -> list[Violation]:
        """Leave the guard; report captures it saw begin that are still open (TRC401).

        With `exc` (the exception leaving the guarded block) nothing here replaces it: what the
        guard found, or failed to undo, is added to it as a note and warned about."""
        with self._lock:
            if self._depth == 0:
                return []
            self._depth -= 1
            if self._depth > 0:
                return []
            left, problems = self._leave()
            if self._recording:
                self._recording = False
                observed.stop()
        message = format_report(None, left, "capture left open when the guard exited") if left else ""
        if exc is not None:
            for note in ([message] if message else []) + problems:
                if hasattr(exc, "add_note"):
                    exc.add_note(note)
            for problem in problems:
                warnings.warn(problem, TraceSafetyWarning, stacklevel=3)
        else:
            if problems:
                raise RestoreError(problems, "\n".join(problems + ([message] if message else [])))
            if left and self.mode == "raise":
                raise TraceSafetyError(message, left)
        for violation in left:
            warnings.warn_explicit(
                violation.format(), TraceSafetyWarning, violation.frame.filename, violation.frame.lineno
            )
        return left

    def __enter__(self) -> "Guard":
        return self.install()

    def __exit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> None:
        self.uninstall(exc)


def guard(mode: str = "raise", *, ttnn_module: Any = None, torch: Optional[bool] = None, record: Any = None) -> Guard:
    """`with guard(): ...` wraps ttnn and CUDA graphs for the block; see Guard."""
    return Guard(mode, ttnn_module=ttnn_module, torch=torch, record=record)


def install(mode: str = "raise", *, ttnn_module: Any = None, torch: Optional[bool] = None, record: Any = None) -> Guard:
    """Start a guard until uninstall(); returns it."""
    started = Guard(mode, ttnn_module=ttnn_module, torch=torch, record=record).install()
    with _state_lock:
        _installed.append(started)
    return started


def uninstall(which: Optional[Guard] = None) -> list[Violation]:
    """Stop `which`, or the guard most recently started with install()."""
    with _state_lock:
        if which is None:
            if not _installed:
                return []
            which = _installed[-1]
    return which.uninstall()


def _retry_leftovers() -> list[str]:
    """Try again to undo patches an earlier uninstall could not; what still fails."""
    problems = []
    for runtime in list(_leftover):
        try:
            runtime.patcher.restore()
        except RestoreError as error:
            problems.append(str(error))
            continue
        _leftover.remove(runtime)
    return problems


def is_installed() -> bool:
    """True while any guard is active, or any patch an uninstall could not undo is still in place."""
    return _runtime is not None or _cuda is not None or bool(_waiting) or any(r.patcher.pending() for r in _leftover)


def stuck_patches() -> list[str]:
    """Patches that an uninstall could not undo (empty normally)."""
    return [name for runtime in _leftover for name in runtime.patcher.pending()]


def open_capture_records() -> list[CaptureRecord]:
    """Captures recording now, on ttnn and CUDA graphs."""
    with _state_lock:
        runtimes = [r for r in (_runtime, _cuda) if r is not None]
    return [record for runtime in runtimes for record in runtime.recording_records()]


def close_captures(records: list[CaptureRecord], why: str) -> list[Violation]:
    """End and release these captures if they still record; their TRC401 violations."""
    with _state_lock:
        runtimes = [r for r in (_runtime, _cuda) if r is not None]
    found: list[Violation] = []
    for runtime in runtimes:
        found += runtime.close_records(records, why)
    return found


def current_mode() -> str:
    """The calling thread's innermost guard's mode ("warn" when none)."""
    with _state_lock:
        runtimes = [r for r in (_runtime, _cuda) if r is not None]
    for runtime in runtimes:
        if runtime.guards:
            return runtime.mode
    return "warn"


__all__ = ["Guard", "guard", "install", "uninstall", "is_installed", "TraceSafetyError", "TraceSafetyWarning"]
