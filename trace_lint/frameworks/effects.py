"""What a call does, in the words rules subscribe to: each framework plug-in classifies the
calls it knows into these effects (from its own table section), and rules ask for an effect,
never for a framework's names."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Protocol

if TYPE_CHECKING:
    import libcst as cst

    from ..semantic.project import FunctionInfo, ModuleInfo
    from .torch.tensors import TorchFacts
    from .ttnn.tensors import TensorFacts


class Effect(enum.Enum):
    TRANSFER = "transfer"  # host data written to the device (TRC101)
    READ = "read"  # a device value read back to the host (TRC102)
    SYNC = "sync"  # the host waits on or polls the device (TRC103)
    CREATION = "creation"  # a new tensor made (TRC301)
    ALLOCATION = "allocation"  # a new device buffer (TRC408, the re-allocation idiom of TRC302)
    FREE = "free"  # a buffer freed (TRC302)
    # An op allocating its result, not handed a buffer for it in the effect's `argument` (TRC303).
    OUTPUT_ALLOCATION = "output allocation"
    DATA_DEPENDENT_SHAPE = "data-dependent shape"  # (TRC501)
    BEGIN = "begin"  # a capture begins
    END = "end"  # a capture ends
    EXECUTE = "execute"  # a captured trace is replayed
    RELEASE = "release"  # a captured trace is released
    OPEN_DEVICE = "open device"  # a device opened, with its trace memory (TRC405)
    HOST_RANDOM = "host random"  # a random draw on the host (TRC203)
    CLOCK = "clock"  # a wall-clock read (TRC203)


@dataclass(frozen=True)
class CallEffect:
    """One effect of one call, worded by the plug-in that knows the call."""

    effect: Effect
    # The call as a message names it: "`ttnn.to_torch`", "`.item()`".
    what: str
    # What to do instead, in the framework's own terms ("read it after `execute_trace`").
    advice: str = ""
    # The keyword argument the effect is judged by, where one is (a device open's
    # `trace_region_size`).
    argument: str = ""


class Unit(Protocol):
    """What a plug-in may ask about the unit of code a call is in (`capture.facts.RuleContext`
    is one)."""

    module: "ModuleInfo"
    function: Optional["FunctionInfo"]
    # The kinds of capture the unit is recorded in ("ttnn", "cuda-graph", "declared", ...).
    capture_kinds: frozenset[str]
    facts: Any  # `capture.facts.ProgramFacts`
    tensors: "TensorFacts"

    @property
    def torch(self) -> "TorchFacts": ...

    def qualified_name(self, expr: "cst.BaseExpression") -> Optional[str]: ...

    def is_device_value(self, expr: "cst.BaseExpression") -> bool: ...

