"""What rules read: `ProgramFacts` about the whole program, `RuleContext` about the unit of
captured code being visited.

Rules see the analysis only through these two classes; they never reach the engine, the call
resolver or the project (`tests/test_facts_interface.py` holds them to it). A question about
what a call means to a framework ("does it begin a capture?") is asked here, and answered by
the plug-ins in `frameworks.FRAMEWORKS`, so a rule need not name ttnn or torch to ask it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, Protocol

import libcst as cst

from .. import frameworks
from ..core.api_tables import tables
from ..frameworks.effects import CallEffect, Effect
from ..frameworks.torch import CUDA_GRAPH_KINDS
from ..frameworks.torch.tensors import TorchFacts
from ..frameworks.ttnn.tensors import TensorFacts

if TYPE_CHECKING:
    from ..semantic.calls import Arguments, Target
    from ..semantic.summaries import Freed
    from .capture_helpers import Helper, HelperSite
    from ..semantic.project import ClassInfo, Definition, FunctionInfo, ModuleInfo
    from ..frameworks.region import Region


class CheckingRule(Protocol):
    """What the engine and the facts need of a rule (`rules.base.Rule` is one); the capture
    stage runs rules without importing them."""

    code: str
    severity: str
    sees_lexical: bool
    sees_work: bool
    silent_in_first_use_cache: bool
    context: Optional["RuleContext"]

    def __init__(self, reporter: Callable[..., None], facts: "ProgramFacts") -> None: ...
    def visitors(self) -> dict[type, Callable]: ...
    def check_region(self, region: "Region") -> None: ...
    def check_project(self) -> None: ...


class AnalysisState(Protocol):
    """What `ProgramFacts` reads of the analysis that built it (`engine.Engine`)."""

    regions: list["Region"]
    # Capture-time parameters on the chains of the unit being visited (None: not visiting one).
    capture_time_now: Optional[dict]
    origins: Any
    resolver: Any
    effects: Any
    project: Any

    def capture_kinds(self, function: Optional["FunctionInfo"], region: Optional["Region"]) -> frozenset[str]: ...
    def candidate_functions(self) -> list["FunctionInfo"]: ...
    candidate_chunks_key: Any
    def candidate_chunks(self, module: "ModuleInfo", probe: Optional["ModuleInfo"] = None) -> Optional[Callable[[str], bool]]: ...
    def report_position(self, rule: CheckingRule, module: "ModuleInfo", line: int, column: int, message: str) -> None: ...


class ProgramFacts:
    """The whole-program facts a rule may ask for: captures, calls, effects, names, modules.

    A read-only view of what the engine found; built once per run, before the rules."""

    def __init__(self, engine: AnalysisState):
        self._engine = engine
        self._tensor_facts: dict[tuple[int, int], TensorFacts] = {}
        self._torch_facts: dict[tuple[int, int], TorchFacts] = {}
        # What calls mean to the frameworks, asked once (the plug-ins are fixed for a run).
        self._capture_begins = frameworks.names_of("capture_begins")
        self._capture_ends = frameworks.names_of("capture_ends")
        self._tensor_methods = frameworks.names_of("tensor_methods")
        self._contexts: dict[tuple[int, int, int], RuleContext] = {}
        # (how many regions the engine had, the ids of their begin calls), kept while the count holds.
        self._begins_of_regions: tuple[int, frozenset[int]] = (-1, frozenset())

    # -- captures ----------------------------------------------------------------------------
    @property
    def regions(self) -> list["Region"]:
        """Every capture region of the run (complete once the rules' hooks run)."""
        return self._engine.regions

    def regions_in(self, function: "FunctionInfo") -> list["Region"]:
        """The capture regions written in one function."""
        return [region for region in self._engine.regions if region.function is function]

    def capture_kinds(self, function: Optional["FunctionInfo"], region: Optional["Region"]) -> frozenset[str]:
        """The kinds of capture a unit is recorded in: its region's, or those of every root reaching it."""
        return self._engine.capture_kinds(function, region)

    def capture_time_parameters(self, function: Optional["FunctionInfo"]) -> frozenset[str]:
        """Parameters of a captured function that hold an object made during the capture
        (`self` of `ch.add()` after `ch = Chains()`): on the chains of the unit being visited,
        else on every call reaching it."""
        now = self._engine.capture_time_now
        if now is not None and function in now:
            return now[function]
        return self._engine.origins.parameters(function)

    def _capture_helpers(self):
        # Found with the roots: none before.
        return getattr(self._engine, "capture_helpers", None)

    def capture_helper(self, function: "FunctionInfo") -> Optional["Helper"]:
        """The capture helper (a function capturing the callable it is given) whose body this is."""
        helpers = self._capture_helpers()
        return helpers.helpers.get(id(function)) if helpers is not None else None

    def callables_stored_by(self, function: "FunctionInfo") -> set[str]:
        """The `self.<attr>` callables a class helper's method captures."""
        helpers = self._capture_helpers()
        return helpers.stored_callables(function) if helpers is not None else set()

    def capture_helper_sites(self) -> list["HelperSite"]:
        """Every call handing a callable to a capture helper."""
        helpers = self._capture_helpers()
        return helpers.sites if helpers is not None else []

    # -- what a call means to the frameworks ---------------------------------------------------
    def begins_capture(self, call: cst.Call, name: Optional[str]) -> bool:
        """The call (qualified `name`) begins a capture: `ttnn.begin_trace_capture`,
        `torch.cuda.graph(g)`, `g.capture_begin()`."""
        if name in self._capture_begins:
            return True
        # A begin method on a receiver (`g.capture_begin()`) begins a capture where the region
        # finder judged the receiver a graph: another library's module function of that name
        # (`recorder.capture_begin(external=True)`) records nothing of ours.
        return any(f.begins_capture_on_receiver(call) for f in frameworks.FRAMEWORKS) and id(call) in self._region_begins()

    def _region_begins(self) -> frozenset[int]:
        regions = self._engine.regions
        if self._begins_of_regions[0] != len(regions):
            self._begins_of_regions = (len(regions), frozenset(id(region.begin) for region in regions))
        return self._begins_of_regions[1]

    def ends_capture(self, call: cst.Call, region: "Region") -> bool:
        """The call ends a capture: this region's graph's `capture_end()`, or an end call by name."""
        if any(f.ends_region(region, call) for f in frameworks.FRAMEWORKS):
            return True
        return self.qualified_name(call.func, region.module, region.function) in self._capture_ends

    def call_effects(self, call: cst.Call, module: "ModuleInfo", function: Optional["FunctionInfo"], region: Optional["Region"] = None) -> tuple[CallEffect, ...]:
        """What a call does, as the frameworks classify it, where it is written (see
        `RuleContext.call_effects`)."""
        key = (id(module), id(function), id(region))
        context = self._contexts.get(key)
        if context is None:
            context = self._contexts[key] = RuleContext(self, module, function, region)
        return context.call_effects(call)

    def names_with(self, effect: Effect) -> frozenset[str]:
        """The dotted names whose calls have this effect, over every framework: where to look
        for such calls (`call_effects` decides what each one does)."""
        return frameworks.names_with(effect)

    def closes_itself(self, region: "Region") -> bool:
        """The region always ends, whatever is raised in it (a `with` block)."""
        return any(region.kind in f.self_closing_kinds for f in frameworks.FRAMEWORKS)

    def warm_up_advice(self, kind: Optional[str]) -> str:
        """What the framework of a capture kind advises for work first run inside it."""
        owner = next((f for f in frameworks.FRAMEWORKS if kind in f.kinds), frameworks.Framework)
        return owner.warm_up_advice

    def is_tensor_method(self, method: str) -> bool:
        """A method of a framework's tensors (`copy_`): work on the tensor, not user code."""
        return method in self._tensor_methods

    # -- calls -------------------------------------------------------------------------------
    def targets(self, call: cst.Call, function: "FunctionInfo", self_class: Optional["ClassInfo"] = None) -> list["Target"]:
        """Every project function the call can run (empty: unknown or not project code)."""
        return self._engine.resolver.resolve_all(call, function, self_class)

    def every_element_runs(self, call: cst.Call, function: "FunctionInfo") -> Optional[list["Target"]]:
        """The targets of a local list of callables known exactly, where the call runs each
        in turn (`for f in fns: f(x)`); None: not such a call."""
        return self._engine.resolver.every_element_runs(call, function)

    def runs_unknown_element(self, call: cst.Call, function: "FunctionInfo") -> bool:
        """The call runs an element of a local list or tuple of callables whose elements the
        analysis does not know exactly (appended to, rebound, handed elsewhere, or holding
        values it cannot resolve): it may run any callable."""
        return self._engine.resolver.runs_unknown_element(call, function)

    def sole_target(self, call: cst.Call, function: "FunctionInfo") -> Optional["FunctionInfo"]:
        """The one project function the call runs, or None (unknown, or several)."""
        return self._engine.resolver.resolve(call, function)

    def arguments_landing(self, call: cst.Call, caller: "FunctionInfo", callee: "FunctionInfo") -> dict[str, cst.BaseExpression]:
        """Where the call's explicit arguments land: the callee's parameter name -> the argument."""
        return self._engine.resolver.arguments(call, caller, callee)[1]

    def bind_arguments(self, call: cst.Call, caller: Optional["FunctionInfo"], callee: "FunctionInfo", module: Optional["ModuleInfo"] = None) -> "Arguments":
        """How the call fills the callee's parameters: the receiver's, and each argument's
        (`module`: where a module-level call, with no caller, is written)."""
        return self._engine.resolver.bind_arguments(call, caller, callee, module)

    def callers(self, function: "FunctionInfo") -> Iterator[tuple[cst.Call, "FunctionInfo"]]:
        """(call, caller) for each call in another project function that can run `function`,
        lazily (module-level calls and recursion are left out)."""
        resolver = self._engine.resolver
        for call, caller, _ in resolver.spelled_calls(function):
            if caller is None or caller is function:
                continue
            if any(t.function is function for t in resolver.resolve_all(call, caller)):
                yield call, caller

    def callers_outside_candidates(self, function: "FunctionInfo") -> Iterator[tuple[cst.Call, "FunctionInfo"]]:
        """`callers`, leaving out the functions some run searches as candidates
        (`candidate_functions`: each is judged by the run whose share holds it); their
        chunks are not read."""
        resolver = self._engine.resolver
        for call, caller, _ in resolver.spelled_calls(function, skipped=self._engine.candidate_chunks, skipped_key=self._engine.candidate_chunks_key):
            if caller is None or caller is function:
                continue
            if any(t.function is function for t in resolver.resolve_all(call, caller)):
                yield call, caller

    def candidate_functions(self) -> list["FunctionInfo"]:
        """The functions this run searches for captured code's start: its share of the
        files the prefilter admits (all files with it off), those parts of them that can hold a
        capture. Every split covers each of them in exactly one run."""
        return self._engine.candidate_functions()

    def handing_sites(self, function: "FunctionInfo") -> list[tuple["FunctionInfo", cst.Call]]:
        """(caller, call) for each call in another project function that hands `function`
        itself as an argument to a project function calling that parameter outside its own
        captures (`timed_replay(record, device)`, whose body runs `record()`): where the
        function runs, though nothing calls it by name."""
        resolver = self._engine.resolver
        name = function.name
        found = []
        # A nested def is named only in its own module.
        modules = [function.module] if function.parent is not None else self._engine.project.modules_mentioning(name.encode())
        for module in modules:
            for call, caller in module.iter_calls((name,)):
                if caller is None or caller is function:
                    continue
                handed = [
                    a.value
                    for a in call.args
                    if not a.star
                    and isinstance(a.value, (cst.Name, cst.Attribute))
                    and (a.value.value if isinstance(a.value, cst.Name) else a.value.attr.value) == name
                    and any(t.function is function for t in resolver.callable_targets(a.value, caller, module))
                ]
                if handed and any(self._calls_handed(call, caller, t.function, handed) for t in resolver.resolve_all(call, caller)):
                    found.append((caller, call))
        return found

    def _calls_handed(self, call: cst.Call, caller: "FunctionInfo", runner: "FunctionInfo", handed: list) -> bool:
        landing = self._engine.resolver.arguments(call, caller, runner)[1]
        params = {param for param, value in landing.items() if any(value is h for h in handed)}
        regions = self.regions_in(runner)
        return bool(params) and any(
            type(node) is cst.Call
            and isinstance(node.func, cst.Name)
            and node.func.value in params
            and not any(region.contains(node) for region in regions)
            for node in runner.nodes
        )

    def callable_targets(self, expr: cst.BaseExpression, function: Optional["FunctionInfo"], module: Optional["ModuleInfo"] = None) -> list["Target"]:
        """What calling the expression runs: a project function it names, a nested def, a
        lambda's body, the function a `functools.partial` wraps (`module`: where module-level
        code, with no function, names it)."""
        return self._engine.resolver.callable_targets(expr, function, module if function is None else function.module)

    def method(self, cls: "ClassInfo", name: str) -> Optional["FunctionInfo"]:
        """The method `name` of a project class, through its bases."""
        return self._engine.resolver.method(cls, name)

    # -- effects -----------------------------------------------------------------------------
    def holds_library_objects(self, function: "FunctionInfo", attribute: str) -> bool:
        """Every tuple or list stored in `self.<attribute>` by the methods of the function's
        class holds framework objects only (`(torch.cuda.Event(), torch.cuda.Event())`)."""
        return self._engine.effects.holds_library_objects(function, attribute)

    def holds_library_elements(self, function: "FunctionInfo", attribute: str) -> bool:
        """Every element stored in the dict or list `self.<attribute>` by the methods of the
        function's class is what a framework call returned (`torch.zeros_like(y)`)."""
        return self._engine.effects.holds_library_elements(function, attribute)

    def reaches_device_work(self, target: "Target") -> bool:
        """Calling the target does device work (a framework op), here or frames down."""
        return self._engine.effects.reaches_device_work(target)

    def unresolved_user_call(self, call: cst.Call, function: "FunctionInfo") -> bool:
        """The call does not resolve but runs user code (its effects are unknown)."""
        return self._engine.effects.unresolved_user_call(call, function)

    def reads_value(self, function: "FunctionInfo", parameter: str) -> bool:
        """The function uses the parameter's value, not only its host metadata."""
        return self._engine.effects.reads_value(function, parameter)

    # -- what a callee does to what it is handed (semantic/summaries.py) ---------------------
    def guarded_by(self, node: cst.If, module: "ModuleInfo", function: Optional["FunctionInfo"]) -> set[int]:
        """What a capture-state guard keeps from running while a capture records."""
        return self._engine.effects.summaries.guarded_by(node, module, function)

    def freed_expression(self, call: cst.Call, function: "FunctionInfo") -> Optional[cst.BaseExpression]:
        """What a `ttnn.deallocate(t)` / `t.deallocate()` call frees, or None."""
        return self._engine.effects.summaries.freed_expression(call, function)

    def call_frees(self, call: cst.Call, function: "FunctionInfo") -> tuple["Freed", ...]:
        """What a call of a project helper frees, any frames down, as paths of the caller's
        frame (`outs[]`, `self.out`), each with the steps down to the free."""
        return self._engine.effects.summaries.call_frees(call, function)

    def call_stores(self, call: cst.Call, function: "FunctionInfo") -> frozenset[str]:
        """Attributes a call assigns, any frames down, as paths of the caller's frame."""
        return self._engine.effects.summaries.call_stores(call, function)

    def call_reads(self, call: cst.Call, function: "FunctionInfo", path: str) -> bool:
        """The call reads the value at a path of the caller's frame (`self.inp`) beyond its
        host metadata, any frames down (a few; past them, and through calls that do not
        resolve, a read is not known)."""
        return self._engine.effects.summaries.call_reads(call, function, path)

    def call_runs(self, call: cst.Call, function: "FunctionInfo") -> frozenset[str]:
        """What a call runs, any frames down: callee paths of the caller's frame and the
        project functions reached."""
        return self._engine.effects.summaries.call_runs(call, function)

    def call_work(self, call: cst.Call, function: "FunctionInfo") -> frozenset[str]:
        """The work a call must have run before to be warm (see `Summaries.work`)."""
        return self._engine.effects.summaries.call_work(call, function)

    def frame_free(self, paths: frozenset[str]) -> frozenset[str]:
        """Work paths as a function that does not call the frame holding them sees them: the
        project functions reached stay, a path of that frame's values cannot be matched."""
        return self._engine.effects.summaries.frame_free(paths)

    def returned_traces(self, function: "FunctionInfo") -> frozenset[int]:
        """Where the function's return value holds a trace id a capture it records made, any
        frames down: -1 the whole value, an index an element of a returned tuple."""
        return self._engine.effects.summaries.returned_traces(function)

    def call_traces(self, call: cst.Call, function: "FunctionInfo") -> frozenset[int]:
        """Where a call's value holds a new trace id (a begin's whole value; a capture
        helper's returned positions)."""
        return self._engine.effects.summaries.call_traces(call, function)

    def call_trace_uses(self, call: cst.Call, function: "FunctionInfo") -> tuple:
        """(role, argument) for what a call does to the trace ids it is handed: "execute",
        "release" (a framework call, or a project function's, any frames down) or "unknown"."""
        return self._engine.effects.summaries.call_trace_uses(call, function)

    def call_allocates(self, call: cst.Call, function: "FunctionInfo") -> bool:
        """The call's value is a new device buffer: a framework allocation, or a project
        helper's that returns one on every path."""
        return self._engine.effects.summaries.call_allocates(call, function)

    def reaches_unknown_effects(self, call: cst.Call, function: "FunctionInfo") -> bool:
        """The call runs, any frames down, an unresolved call whose effects are unknown."""
        return self._engine.effects.summaries.call_reaches_unknown(call, function)

    def move_up(self, paths: frozenset[str], call: cst.Call, caller: "FunctionInfo", callee: "FunctionInfo") -> frozenset[str]:
        """Paths of a callee's frame in the frame of a caller making the call."""
        return self._engine.effects.summaries.move_up(paths, call, caller, callee)

    # -- names and modules -------------------------------------------------------------------
    def qualified_name(self, expr: cst.BaseExpression, module: "ModuleInfo", scope: Optional["FunctionInfo"]) -> Optional[str]:
        """The dotted name an expression refers to through imports, or None if unknown."""
        return self._engine.project.qualified_name(expr, module, scope)

    def definition(self, qualified: str) -> Optional["Definition"]:
        """The project function or class a dotted name names, or None."""
        return self._engine.project.lookup(qualified)

    @property
    def modules(self) -> list["ModuleInfo"]:
        """Every module of the project (loaded or not)."""
        return self._engine.project.modules

    def modules_mentioning(self, *words: bytes) -> list["ModuleInfo"]:
        """The modules whose text holds one of the words."""
        return self._engine.project.modules_mentioning(*words)

    # -- tensors -----------------------------------------------------------------------------
    def tensor_facts(self, module: "ModuleInfo", function: Optional["FunctionInfo"]) -> TensorFacts:
        """Which expressions of a unit are device tensors (shared by every rule visiting it)."""
        key = (id(module), id(function))
        if key not in self._tensor_facts:
            self._tensor_facts[key] = TensorFacts(self._engine.project, function, module, self._engine.resolver)
        return self._tensor_facts[key]

    def unshared_tensor_facts(self, module: "ModuleInfo", function: Optional["FunctionInfo"]) -> TensorFacts:
        """As `tensor_facts`, with a memo of its own: its answers do not depend on what the
        visits asked first (a cycle of names is settled from where the asking starts)."""
        return TensorFacts(self._engine.project, function, module)

    def torch_facts(self, module: "ModuleInfo", function: Optional["FunctionInfo"]) -> TorchFacts:
        """Host and device facts about torch tensors in a unit."""
        key = (id(module), id(function))
        if key not in self._torch_facts:
            self._torch_facts[key] = TorchFacts(self._engine.project, function, module, self._engine.resolver)
        return self._torch_facts[key]

    # -- reporting ---------------------------------------------------------------------------
    def report_at(self, rule: CheckingRule, module: "ModuleInfo", line: int, column: int, message: str) -> None:
        """A finding at a position rather than a node (a file that did not parse)."""
        self._engine.report_position(rule, module, line, column, message)


class RuleContext:
    """What a rule may ask about the unit of captured code it is looking at."""

    def __init__(self, facts: ProgramFacts, module: "ModuleInfo", function: Optional["FunctionInfo"], region: Optional["Region"]):
        self.facts = facts
        self.module = module
        self.function = function
        self.region = region
        self.lexical = region is not None
        self.in_first_use_cache = False
        # The node being visited; rules read its ancestors.
        self.node: Optional[cst.CSTNode] = None
        self.tensors = facts.tensor_facts(module, function)
        self.tables = tables()
        # Which captures this unit runs in (a function can be reached from several).
        self.capture_kinds: frozenset[str] = facts.capture_kinds(function, region)
        # Recorded into a CUDA graph: torch's own contract applies (TRC501).
        self.in_cuda_graph = bool(self.capture_kinds & CUDA_GRAPH_KINDS)
        self._torch: Optional[TorchFacts] = None
        self._effects: dict[int, tuple[cst.Call, tuple[CallEffect, ...]]] = {}

    @property
    def ancestors(self) -> list[cst.CSTNode]:
        """Ancestors of the node being visited, outermost first, inside its function."""
        if self.node is None:
            return []
        return self.module.ancestors(self.node, stop=self.function.node if self.function else None)

    def qualified_name(self, expr: cst.BaseExpression) -> Optional[str]:
        return self.facts.qualified_name(expr, self.module, self.function)

    @property
    def torch(self) -> TorchFacts:
        """Host and device facts about torch tensors in this unit."""
        if self._torch is None:
            self._torch = self.facts.torch_facts(self.module, self.function)
        return self._torch

    def call_effects(self, call: cst.Call) -> tuple[CallEffect, ...]:
        """What the call does (transfer, read, sync, creation, ...), as every framework plug-in
        in `frameworks.FRAMEWORKS` classifies it for this unit's captures; asked once per call."""
        held = self._effects.get(id(call))
        if held is None or held[0] is not call:
            held = self._effects[id(call)] = (call, frameworks.call_effects(call, self.qualified_name(call.func), self))
        return held[1]

    def subscript_effects(self, node: cst.Subscript) -> tuple[CallEffect, ...]:
        """What indexing does (a boolean mask's data-dependent shape), as the plug-ins say."""
        return frameworks.subscript_effects(node, self)

    def effect(self, call: cst.Call, effect: Effect) -> Optional[CallEffect]:
        """The call's effect of one kind, or None."""
        return next((e for e in self.call_effects(call) if e.effect is effect), None)

    def capture_time_parameters(self, function: Optional["FunctionInfo"]) -> frozenset[str]:
        """Parameters of a captured function that hold, on every call reaching it, an object
        made during the capture (`self` of `ch.add()` after `ch = Chains()`)."""
        return self.facts.capture_time_parameters(function)

    def is_device_value(self, expr: cst.BaseExpression) -> bool:
        if self.tensors.is_device_value(expr):
            return True
        # Torch op results count as device tensors only where the capture is a CUDA graph.
        return self.in_cuda_graph and self.torch.is_device(expr)
