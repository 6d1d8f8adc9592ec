"""The public guard: a context manager (and install/uninstall) around a patched ttnn."""

from __future__ import annotations

import threading
import warnings
from typing import Any, Optional

from trace_lint.runtime_guard.report import (
    CaptureRecord,
    TraceSafetyError,
    TraceSafetyWarning,
    Violation,
    format_report,
)

MODES = ("raise", "warn")

_state_lock = threading.RLock()
_runtime: Any = None
_installed: list["Guard"] = []  # guards started with install(), for uninstall() without an argument


def active_runtime() -> Any:
    return _runtime


class Guard:
    """Wraps ttnn while active and records every capture begun meanwhile.

    Reentrant: entering an active guard again only counts; nested guards share one set of
    patches, and the innermost guard's mode decides what raises.
    """

    def __init__(self, mode: str = "raise", *, ttnn_module: Any = None) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        self.mode = mode
        self._ttnn_module = ttnn_module
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
    def install(self) -> "Guard":
        global _runtime
        with self._lock:
            self._depth += 1
            if self._depth > 1:
                return self
            with _state_lock:
                try:
                    if _runtime is None:
                        from trace_lint.runtime_guard.runtime import Runtime

                        module = self._ttnn_module
                        if module is None:
                            import ttnn as module  # noqa: PLC0415 - only when a guard is used
                        runtime = Runtime(module)
                        runtime.install()
                        _runtime = runtime
                    elif self._ttnn_module is not None and self._ttnn_module is not _runtime.ttnn:
                        raise RuntimeError("another guard is active on a different ttnn module")
                    with _runtime.lock:
                        _runtime.guards.append(self)
                except BaseException:
                    self._depth -= 1
                    raise
        return self

    def uninstall(self, exc: Optional[BaseException] = None) -> list[Violation]:
        """Leave the guard; report captures it saw begin that are still open (TRC401)."""
        global _runtime
        with self._lock:
            if self._depth == 0:
                return []
            self._depth -= 1
            if self._depth > 0:
                return []
            with _state_lock:
                runtime = _runtime
                left: list[Violation] = []
                try:
                    if runtime is not None:
                        left = runtime.close_left_open(self)
                finally:
                    if runtime is not None:
                        with runtime.lock:
                            if self in runtime.guards:
                                runtime.guards.remove(self)
                            last = not runtime.guards
                        if last:
                            _runtime = None
                            runtime.uninstall()
                    if self in _installed:
                        _installed.remove(self)
        if left:
            message = format_report(None, left, "capture left open when the guard exited")
            if self.mode == "raise" and exc is None:
                raise TraceSafetyError(message, left)
            if exc is not None and hasattr(exc, "add_note"):
                exc.add_note(message)
            for violation in left:
                warnings.warn_explicit(
                    violation.format(), TraceSafetyWarning, violation.frame.filename, violation.frame.lineno
                )
        return left

    def __enter__(self) -> "Guard":
        return self.install()

    def __exit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> None:
        self.uninstall(exc)


def guard(mode: str = "raise", *, ttnn_module: Any = None) -> Guard:
    """`with guard(): ...` wraps ttnn for the block; see Guard."""
    return Guard(mode, ttnn_module=ttnn_module)


def install(mode: str = "raise", *, ttnn_module: Any = None) -> Guard:
    """Start a guard until uninstall(); returns it."""
    started = Guard(mode, ttnn_module=ttnn_module).install()
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


def is_installed() -> bool:
    return _runtime is not None


__all__ = ["Guard", "guard", "install", "uninstall", "is_installed", "TraceSafetyError", "TraceSafetyWarning"]
