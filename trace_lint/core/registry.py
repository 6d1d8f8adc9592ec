"""The rule registry: every code with its name, one-line summary and advice, severity
(RULES.md, "Severity"), whether it runs by default and whether it offers a fix. One table that
output, cache, CLI and the language server read without loading the rules (or libcst); each
rule class in `rules/` takes its metadata from here by its code."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

SEVERITIES = ("error", "warning")


@dataclass(frozen=True)
class RuleSpec:
    code: str
    name: str  # kebab-case, as ruff names rules
    summary: str  # one line, for tables and SARIF shortDescription
    help: str  # one line: what to do instead
    severity: str  # "error": replay computes something else or fails; "warning": the letter
    default_enabled: bool = True
    fix_availability: str = "none"  # "always", "sometimes" or "none", as ruff states it
    # Precedence where two rules report the same thing: the codes whose findings inside what
    # this rule's finding covers are not reported ("TRC202 instead, not both"). The capture
    # stage applies it (`capture/precedence.py`), whichever of the codes a run selects.
    wins_over: tuple[str, ...] = ()


RULES: tuple[RuleSpec, ...] = (
    RuleSpec(
        "TRC001", "unparsable-file",
        "File cannot be parsed",
        "fix the syntax error; trace-lint checks the rest of the project meanwhile",
        "error",
    ),
    RuleSpec(
        "TRC002", "unused-suppression",
        "Suppression that suppresses nothing, or names an unknown code",
        "remove the suppression, or correct the code it names",
        "warning", fix_availability="sometimes",
    ),
    RuleSpec(
        "TRC101", "host-to-device-in-capture",
        "Host-to-device write in captured code",
        "create inputs before the capture and copy new data into them before `execute_trace` / `graph.replay()`",
        "error",
    ),
    RuleSpec(
        "TRC102", "device-to-host-in-capture",
        "Device-to-host read in captured code",
        "read outputs after `execute_trace` / `graph.replay()`, outside the capture",
        "error",
    ),
    RuleSpec(
        "TRC103", "sync-in-capture",
        "Synchronization or event in captured code",
        "synchronize before the capture begins or after `execute_trace` / `graph.replay()`",
        "error",
    ),
    RuleSpec(
        "TRC201", "conditional-in-capture",
        "Python conditional inside a capture region",
        "decide before the capture (one trace per branch) or select on the device with `ttnn.where`",
        "warning",
    ),
    RuleSpec(
        "TRC202", "branch-on-device-value",
        "Control flow on a device tensor's value in captured code",
        "compute both outcomes on the device and select with `ttnn.where` / `torch.where`",
        "error",
        # A device read that is the condition of control flow is TRC202, not TRC102 (RULES.md).
        wins_over=("TRC102",),
    ),
    RuleSpec(
        "TRC203", "host-side-effect-in-captured-work",
        "Host side effect in captured work that replay will not repeat",
        "keep changing state in device tensors, or update it on the host outside the trace",
        "warning",
    ),
    RuleSpec(
        "TRC204", "host-arithmetic-in-capture",
        "Shape or index arithmetic inside a capture region",
        "compute shapes and indices before the capture; keep per-step indices in device tensors",
        "warning", default_enabled=False,
    ),
    RuleSpec(
        "TRC301", "tensor-creation-in-capture",
        "Tensor creation in captured code",
        "preallocate the tensor (on the device) before the capture begins",
        "error",
    ),
    RuleSpec(
        "TRC302", "freed-trace-buffer",
        "Deallocation of a buffer the trace still uses",
        "free trace buffers only after `release_trace`",
        "error",
    ),
    RuleSpec(
        "TRC303", "unallocated-trace-output",
        "Region output without a preallocated output_tensor=",
        "preallocate the output and pass it as `output_tensor=`",
        "warning", default_enabled=False,
    ),
    RuleSpec(
        "TRC401", "capture-left-open",
        "Capture that an exception can leave open",
        "wrap the captured work in `try:` ... `finally:` that ends the capture (`ttnn.end_trace_capture`, `g.capture_end()`)",
        "warning", fix_availability="sometimes",
    ),
    RuleSpec(
        "TRC403", "stale-trace-input",
        "Trace input rebound after capture, then replayed",
        "copy new data into the captured input (`ttnn.copy_host_to_device_tensor`) instead of rebinding it",
        "error",
    ),
    RuleSpec(
        "TRC404", "capture-without-warm-up",
        "Capture of work that never ran before (no warm-up)",
        "run the same work once before the capture begins",
        "error",
    ),
    RuleSpec(
        "TRC405", "missing-trace-region",
        "Device opened without trace_region_size, then captured on",
        "pass `trace_region_size=` large enough for your traces to the device open call",
        "error",
    ),
    RuleSpec(
        "TRC406", "nested-capture",
        "Capture begun while another is being recorded",
        "end the first capture before beginning another",
        "error",
    ),
    RuleSpec(
        "TRC408", "allocation-across-replay",
        "Device allocation alive across execute_trace",
        "allocate before the capture, or release the trace before allocating",
        "error",
    ),
    RuleSpec(
        "TRC501", "data-dependent-shape-in-cuda-graph",
        "Op with a data-dependent output shape in a CUDA-graph capture",
        "keep the shape static: `torch.where(mask, x, 0)`, `x * mask`, `torch.nonzero_static`",
        "error",
    ),
)
BY_CODE: dict[str, RuleSpec] = {spec.code: spec for spec in RULES}
# code -> the codes that win over it.
OVERRULED_BY: dict[str, tuple[str, ...]] = {
    code: tuple(spec.code for spec in RULES if code in spec.wins_over) for code in BY_CODE
}
BY_NAME: dict[str, RuleSpec] = {spec.name: spec for spec in RULES}


def spec_for(code_or_name: str) -> Optional[RuleSpec]:
    """A rule by its code (any case) or its name."""
    return BY_CODE.get(code_or_name.upper()) or BY_NAME.get(code_or_name.lower())
