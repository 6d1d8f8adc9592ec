"""What the guard records (captures, ops, violations) and how it reports them."""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Optional

from trace_lint.runtime_guard.api import KINDS

_GUARD_DIR = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True)
class Frame:
    """The innermost user frame of a call: outside ttnn, torch and the guard."""

    filename: str
    lineno: int
    function: str

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno} in {self.function}"


UNKNOWN_FRAME = Frame("<unknown>", 0, "<unknown>")


class FrameFinder:
    """Walks the stack to the first frame not in a library: `skip` holds directories (ending in
    a separator, matched as prefixes) and single files (matched exactly)."""

    def __init__(self, skip: tuple[str, ...] = ()) -> None:
        self.skip: tuple[str, ...] = ()
        self._cache: dict[str, bool] = {}
        self.add(_GUARD_DIR + os.sep, threading.__file__, *skip)

    def add(self, *paths: str) -> None:
        extra = []
        for path in paths:
            if path:
                trailing = path.endswith(os.sep)
                path = os.path.abspath(path)
                extra.append(path + os.sep if trailing or os.path.isdir(path) else path)
        self.skip = self.skip + tuple(extra)
        self._cache.clear()

    def _skipped(self, filename: str) -> bool:
        hit = self._cache.get(filename)
        if hit is None:
            absolute = os.path.abspath(filename)
            hit = filename.startswith("<frozen") or any(
                absolute.startswith(entry) if entry.endswith(os.sep) else absolute == entry for entry in self.skip
            )
            self._cache[filename] = hit
        return hit

    def user_frame(self) -> Frame:
        frame: Any = sys._getframe(1)
        while frame is not None and self._skipped(frame.f_code.co_filename):
            frame = frame.f_back
        if frame is None:
            return UNKNOWN_FRAME
        return Frame(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)


@dataclass
class Violation:
    kind: str
    op: str
    args: str
    frame: Frame
    detail: str = ""
    # Extra codes when one call breaks two rules (from_torch(..., device=d): TRC101 and TRC301).
    also: tuple[str, ...] = ()
    trace: str = ""
    # Why the violation no longer refuses a replay (its cause is gone), or "".
    lifted: str = ""

    @property
    def code(self) -> str:
        return KINDS[self.kind].code

    @property
    def codes(self) -> tuple[str, ...]:
        return (self.code,) + tuple(c for c in self.also if c != self.code)

    @property
    def hint(self) -> str:
        return KINDS[self.kind].hint

    @property
    def title(self) -> str:
        return KINDS[self.kind].title

    def headline(self) -> str:
        call = f"{self.op}({self.args})" if self.op else ""
        text = f"{'/'.join(self.codes)} {self.title}"
        if call:
            text += f": {call}"
        if self.detail:
            text += f" ({self.detail})"
        if self.lifted:
            text += f" [lifted: {self.lifted}]"
        return text

    def format(self, index: Optional[int] = None) -> str:
        prefix = f"{index}. " if index is not None else ""
        pad = " " * len(prefix)
        return (
            f"{prefix}{self.headline()}\n"
            f"{pad}  at {self.frame}\n"
            f"{pad}  fix: {self.hint}"
        )


@dataclass
class OpRecord:
    """One call recorded inside a capture."""

    op: str
    args: str
    frame: Frame
    violation: Optional[Violation] = None


@dataclass
class CaptureRecord:
    """One trace capture (or CUDA graph capture) seen by the guard, from begin to release."""

    device: str
    trace_id: int
    cq_id: Any
    begin_frame: Frame
    status: str = "recording"  # recording, ended, aborted, released
    ops: list[OpRecord] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    executions: int = 0
    refused_executions: int = 0
    end_frame: Optional[Frame] = None
    begin_order: int = 0
    label: str = "trace"  # "CUDA graph" for torch captures

    @property
    def name(self) -> str:
        return f"{self.label} {self.trace_id} on {self.device}"

    @property
    def standing_violations(self) -> list[Violation]:
        """Violations whose cause is still there (not lifted)."""
        return [v for v in self.violations if not v.lifted]

    def summary_line(self) -> str:
        n = len(self.standing_violations)
        lifted = len(self.violations) - n
        verdict = "ok" if not n else f"{n} violation{'s' if n != 1 else ''}"
        if lifted:
            verdict += f" ({lifted} lifted)"
        return (
            f"{self.name}: {len(self.ops)} op{'s' if len(self.ops) != 1 else ''} recorded, {self.status}, "
            f"executed {self.executions}x, {verdict} (begun at {self.begin_frame})"
        )


def format_report(capture: Optional[CaptureRecord], violations: list[Violation], what: str = "") -> str:
    """A traceback-like report: a header, then each violation with its frame and fix."""
    where = capture.name if capture is not None else "guarded code"
    if capture is not None:
        where += f" (begun at {capture.begin_frame})"
    count = f"{len(violations)} violation{'s' if len(violations) != 1 else ''}"
    lines = [f"trace-lint runtime guard: {where}: {what or 'trace contract broken'}; {count}:"]
    for i, violation in enumerate(violations, 1):
        lines.append(violation.format(i))
    return "\n".join(lines)


class TraceSafetyError(RuntimeError):
    """A trace capture or CUDA graph broke the contract; raised before ttnn (or torch) runs the
    offending call, at the end of the capture, or instead of a replay."""

    def __init__(self, message: str, violations: Optional[list[Violation]] = None,
                 capture: Optional[CaptureRecord] = None) -> None:
        super().__init__(message)
        self.violations = list(violations or [])
        self.capture = capture


class TraceSafetyWarning(UserWarning):
    """Mode "warn": a violation, reported at end_trace_capture (CUDAGraph.capture_end)."""
