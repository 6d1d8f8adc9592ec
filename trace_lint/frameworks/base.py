"""What a framework plug-in answers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Optional

from ..core.api_tables import tables

if TYPE_CHECKING:
    import libcst as cst

    from ..semantic.calls import CallResolver
    from ..semantic.project import FunctionInfo, ModuleInfo, Project
    from .effects import CallEffect, Effect, Unit
    from .region import Region


class Framework:
    # The section of `data/api.toml` that holds this framework's names.
    section: str = ""
    # The kinds of the regions and roots it finds (a finding's capture kind).
    kinds: frozenset[str] = frozenset()
    # The kind of a root that `captured_callables` finds.
    callable_kind: str = "declared"
    # Kinds of region that always end (a `with` block): no exception leaves them open.
    self_closing_kinds: frozenset[str] = frozenset()
    # What to do about work that first runs inside one of its captures (TRC404).
    warm_up_advice: str = "run it once before the capture begins"
    # The top-level modules whose names are this framework's (`ttnn`): their calls are
    # library calls, never user code.
    modules: frozenset[str] = frozenset()

    @property
    def table(self):
        return getattr(tables(), self.section, None)

    # -- prefilter --------------------------------------------------------------------------
    def prefilter_targets(self) -> list[str]:
        """Dotted names whose spelling in a file makes it a candidate."""
        return []

    def prefilter_words(self) -> list[bytes]:
        """Words (method names) whose presence makes a file a candidate."""
        return []

    # -- analysis ---------------------------------------------------------------------------
    def regions(self, project: "Project", function: "FunctionInfo", settings) -> list["Region"]:
        """The capture regions written in one function."""
        return []

    def captured_callables(
        self, project: "Project", resolver: "CallResolver", modules: Iterable["ModuleInfo"]
    ) -> Iterable[tuple["ModuleInfo", "cst.Call", "FunctionInfo", str]]:
        """Functions captured whole by an API call (not a region), with the call and how a
        chain names it."""
        return ()

    def capture_queries(self) -> frozenset[str]:
        """Dotted names of "is a capture being recorded now?" calls."""
        table = self.table
        return frozenset(getattr(table, "capture_queries", ())) if table is not None else frozenset()

    # -- what a call means (asked by rules through `capture.facts`) -------------------------
    def call_effects(self, call: "cst.Call", name: Optional[str], unit: "Unit") -> tuple["CallEffect", ...]:
        """What the call does, in this framework's words: each effect with the call named as a
        message names it and the advice. `name` is the call's dotted name through imports (None
        for a method of a value); `unit` answers what the call's code knows (its capture kinds,
        which values are tensors)."""
        return ()

    def subscript_effects(self, node: "cst.Subscript", unit: "Unit") -> tuple["CallEffect", ...]:
        """What indexing does to this framework (a boolean mask's data-dependent shape)."""
        return ()

    def names_with(self, effect: "Effect") -> frozenset[str]:
        """The dotted names whose calls have this effect: where a rule looks for them."""
        return frozenset()

    def makes_tensor(self, name: str) -> bool:
        """Every call of the dotted name returns a new tensor, never None (a creation or an
        allocation function)."""
        table = self.table
        if table is None:
            return False
        return any(name in getattr(table, field, ()) for field in ("creators", "like_creators", "host_creators", "device_allocators"))

    def in_own_capture(self, unit: "Unit") -> bool:
        """The unit is recorded in one of this framework's captures, or in a declared one (whose
        framework is unknown)."""
        return bool(unit.capture_kinds & self.kinds) or "declared" in unit.capture_kinds

    def capture_begins(self) -> frozenset[str]:
        """Dotted names whose call begins a capture, or makes the context that does."""
        return frozenset()

    def begins_capture_on_receiver(self, call: "cst.Call") -> bool:
        """A method call that begins a capture on its receiver (`g.capture_begin()`)."""
        return False

    def capture_ends(self) -> frozenset[str]:
        """Dotted names whose call ends a capture."""
        return frozenset()

    def ends_region(self, region: "Region", call: "cst.Call") -> bool:
        """A call that ends this region through the region's own object (`g.capture_end()`)."""
        return False

    def owns(self, name: str) -> bool:
        """The dotted name is in one of this framework's modules."""
        head, dot, _ = name.partition(".")
        return bool(dot) and head in self.modules

    def launches_program(self, name: str) -> bool:
        """A call of one of its names (`owns`) launches a device program: not an
        allocation, a copy into a preallocated buffer, a free, an alias or a query."""
        return True

    def freed(self, call: "cst.Call", name: Optional[str]) -> Optional["cst.BaseExpression"]:
        """What the call frees (`Effect.FREE`'s operand: an argument, or the receiver of a
        method of a value when `name` is None), or None."""
        return None

    def returns_receiver(self, method: str) -> bool:
        """A method its base classes give user classes that returns the instance itself."""
        return False

    def trace_call(self, call: "cst.Call", name: Optional[str]) -> Optional[tuple[str, Optional["cst.BaseExpression"]]]:
        """What the call does to a trace kept by an id (ttnn's `begin_trace_capture` returns
        one; `execute_trace` and `release_trace` take one): `("begin", None)`, `("execute",
        id)` or `("release", id)`, where `id` is the trace-id argument (None where the call
        gives none); None for any other call."""
        return None

    def allocates(self, call: "cst.Call", name: Optional[str]) -> bool:
        """The call makes a new device buffer (`Effect.ALLOCATION`)."""
        return False

    def tensor_methods(self) -> frozenset[str]:
        """Methods of the framework's tensors (`copy_`): tensor work, not user code."""
        return frozenset()
