"""Runtime guard for ttnn trace captures and torch CUDA graphs.

`with guard():` (or `@guard()` on a function) wraps ttnn and torch.cuda.CUDAGraph while the
block runs and checks that a capture (`begin_trace_capture` .. `end_trace_capture`,
`torch.cuda.graph` / `capture_begin` .. `capture_end`) records device work only, before the
trace or graph is ever replayed. Warm-ups seen under any guard count for the rest of the
process; `forget_warm_ups()` clears them. Importing this package imports neither ttnn nor torch.
"""

from __future__ import annotations

from trace_lint.runtime_guard.lifecycle import Guard, guard, install, is_installed, uninstall
from trace_lint.runtime_guard.report import (
    CaptureRecord,
    Frame,
    OpRecord,
    TraceSafetyError,
    TraceSafetyWarning,
    Violation,
)
from trace_lint.runtime_guard.warm import forget_warm_ups

__all__ = [
    "CaptureRecord",
    "Frame",
    "Guard",
    "OpRecord",
    "TraceSafetyError",
    "TraceSafetyWarning",
    "Violation",
    "forget_warm_ups",
    "guard",
    "install",
    "is_installed",
    "uninstall",
]
