"""TRC3xx: allocation in captured code, freed trace buffers, unallocated outputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import libcst as cst

from ..core.findings import Location, Related

from ..semantic.dataflow import accesses, chain_key
from ..semantic.bindings import assignment_targets
from ..frameworks.region import Region
from ..semantic.nodes import call_arguments, iter_body_nodes
from ..capture.values import assigned_value, binding_place, executable_after, executed_after, input_names, made_in_region_and_read_after, reaching
from ..semantic.receivers import receiver_parameter
from ..semantic.summaries import container_of
from ..frameworks.effects import Effect
from .base import Invalid, Rule, Valid

if TYPE_CHECKING:
    from ..capture.facts import ProgramFacts


class TensorCreation(Rule):
    """
    ## What it does
    Flags tensor creation in captured code: `ttnn.zeros/ones/full/empty/rand/arange` and
    their `_like` forms, `ttnn.from_torch`, `ttnn.as_tensor`, `ttnn.allocate_tensor_on_device`
    and `ttnn.Tensor(...)`. In CUDA graphs: torch creation functions (`torch.zeros`,
    `torch.arange`, `torch.randn`, `torch.from_numpy`, ...) that make a host tensor (no
    device, or `device="cpu"`). Device allocations are fine in a CUDA graph: they come from
    the graph's private memory pool.

    Blocks that fill a cache on first use (`if self.w is None: self.w = ttnn.zeros(...)`)
    run during the warm-up and are not reported, nor the next input of the re-allocation
    idiom (see TRC302).

    ## Why is this bad?
    Everything a trace touches must be allocated before the capture: replay reuses the
    buffers recorded at capture, and an allocation made inside it is either an error on
    hardware or a buffer that later allocations can overwrite. Preallocate the tensor
    before `begin_trace_capture` and write into it (`output_tensor=`, `copy_`).
    """

    code = "TRC301"
    silent_in_first_use_cache = True

    INVALID = [
        Invalid(
            """
            import ttnn

            def capture(device, x):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                bias = ttnn.zeros([1, 32], device=device)
                y = ttnn.add(x, bias)
                ttnn.end_trace_capture(device, tid, cq_id=0)
                return y
            """,
            lines=(5,),
        ),
        Invalid(
            """
            import numpy as np
            import torch

            def capture(model, static_in):
                model(static_in)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    scale = torch.full((1,), 0.5)
                    idx = torch.arange(8, device="cpu")
                    table = torch.from_numpy(np.ones(8))
                    out = model(static_in, scale, idx, table)
                return graph, out
            """,
            lines=(8, 9, 10),
        ),
    ]
    VALID = [
        Valid(
            """
            import ttnn

            def capture(device, x):
                bias = ttnn.zeros([1, 32], device=device)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    y = ttnn.add(x, bias)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                return y, bias
            """
        ),
        Valid(
            """
            import torch

            def capture(model, static_in):
                model(static_in)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    out = model(static_in)
                    scratch = torch.zeros(8, device="cuda")  # from the graph's private pool
                    like = torch.empty_like(out)  # on `out`'s device
                return graph, out, scratch, like
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        found = self.context.effect(node, Effect.CREATION)
        if found is None:
            return
        region = self.context.region
        if region is not None and id(node) in reallocations(region, self.facts):
            return  # the next trace input, allocated where the freed one was
        self.report(node, f"{found.what} creates a tensor inside a capture; {found.advice}")


def region_accesses(region: Region) -> tuple[set[str], set[str], set[str], set[str]]:
    """Keys (names, attribute chains) bound before, read in, bound in, and read after the
    region; several rules ask, so it is computed once per region."""
    cached = getattr(region, "_accesses", None)
    if cached is not None:
        return cached
    before: set[str] = set()
    read_in: set[str] = set()
    bound_in: set[str] = set()
    read_after: set[str] = set()
    for access in accesses(region.function):
        position = access.position
        inside = region.start <= position < region.stop
        if access.kind == "bind":
            if position < region.start:
                before.add(access.key)
            elif inside:
                bound_in.add(access.key)
        else:
            if inside:
                read_in.add(access.key)
            elif position >= region.stop:
                read_after.add(access.key)
    region._accesses = (before, read_in, bound_in, read_after)  # type: ignore[attr-defined]
    return region._accesses  # type: ignore[attr-defined]


def released_before(region: Region, node: cst.CSTNode) -> bool:
    """Every path from the capture to the node passes a release_trace of this region's trace."""
    module = region.module
    releases = []
    for release in region.release_calls:
        if not region.contains(release) and module.start(release) >= region.stop:
            positional, keywords = call_arguments(release)
            argument = keywords.get("trace_id", positional[1] if len(positional) > 1 else None)
            if region.trace_id is None or argument is None or module.normalized(argument) == region.trace_id:
                releases.append(release)
    return bool(releases) and not region.function.cfg.runs_before(region.begin, node, avoiding=releases)


class FreedTraceBuffer(Rule):
    """
    ## What it does
    Flags `ttnn.deallocate(t)` / `t.deallocate()` of a tensor the trace uses: a trace input
    (made before the region and used in it, also where only the captured work reads it,
    through `self`: `self._work()` whose `ttnn.matmul(self.inp, w)` reads `self.inp`; its
    host metadata alone, `self.inp.shape`, is no read) or a trace output (made in the
    region and read after it: returned, stored, or used after the end; an attribute the
    captured work stores it in, `self.out = model(x)`, included), inside the region or after
    it while the trace can still be executed (before `release_trace`; another capture in
    between does not end that). A call of a project helper that frees what it is handed
    (`deallocate_outputs(outs)`, any number of frames down) is such a free, reported on the
    call with the steps down to the `deallocate`. A trace id kept on `self` and replayed by
    another method of the class (`step()`; also a local id stored there after the end,
    `self.tid = tid`): that method freeing an input or output the capture keeps on `self`,
    or an element of one (`self.rot[0].deallocate()`), before its `execute_trace` is one too.
    Fine: freeing an intermediate made and last used inside the region, a value a loop made
    in the same turn (even where the same name is returned after the region), and the
    re-allocation idiom: a trace input freed during the capture (in the region, or by the
    captured work: a model freeing its input) and a tensor allocated in its place later in
    the region and kept as the next input (neither TRC302 nor TRC301).

    ## Why is this bad?
    Replay reads and writes the exact buffers recorded at capture. Once one is freed, the
    allocator hands its memory to the next tensor, and the next `execute_trace` silently
    overwrites that tensor or reads garbage.
    """

    code = "TRC302"

    INVALID = [
        Invalid(
            """
            import ttnn

            def run(device, x):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                out = ttnn.relu(x)
                ttnn.end_trace_capture(device, tid, cq_id=0)
                ttnn.deallocate(x)
                ttnn.execute_trace(device, tid, cq_id=0)
                return out
            """,
            lines=(7,),
        ),
        Invalid(
            """
            import ttnn

            def deallocate_outputs(outs):
                for t in outs:
                    ttnn.deallocate(t)

            def run(device, model, x, steps):
                model(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    outs = model(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                deallocate_outputs(outs)  # frees the trace outputs through the helper
                for _ in range(steps):
                    ttnn.execute_trace(device, tid, cq_id=0)
            """,
            lines=(14,),
        ),
    ]
    VALID = [
        Valid(
            """
            import ttnn

            def run(device, x, n):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    for _ in range(n):
                        y = ttnn.relu(x)
                        y.deallocate()  # the value made in this turn
                    y = ttnn.relu(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                ttnn.execute_trace(device, tid, cq_id=0)
                return y
            """
        ),
        Valid(
            """
            import ttnn

            class Model:
                def __call__(self, x):
                    y = ttnn.relu(x)
                    ttnn.deallocate(x)  # the model frees its input
                    return y

            def capture(device, model: Model, host, spec):
                model(ttnn.to_device(host, device))
                x = ttnn.to_device(host, device)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    out = model(x)
                    x = ttnn.allocate_tensor_on_device(spec, device)  # the next input, where the freed one was
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                return tid, out, x
            """
        ),
        Valid(
            """
            import ttnn

            def run(device, x):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    hidden = ttnn.relu(x)
                    out = ttnn.softmax(hidden)
                    ttnn.deallocate(hidden)  # an intermediate, last used here
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                ttnn.execute_trace(device, tid, cq_id=0)
                ttnn.release_trace(device, tid)
                ttnn.deallocate(x)
                return out
            """
        )
    ]

    def check_region(self, region: Region) -> None:
        module = region.module
        before, read_in, bound_in, read_after = region_accesses(region)
        # Attribute chains have no value tracking: an input is read and not bound in the
        # region; an output is bound in it, lexically or by the captured work it calls
        # (`self._decode(x)` storing `self.out`).
        chain_inputs = {key for key in read_in if "." in key and key not in bound_in}
        chain_outputs = {key for key in bound_in if "." in key} | work_stores(region, self.facts)
        read_by_work = WorkInputs(region, self.facts)
        reallocated = reallocations(region, self.facts)
        for free in frees(region, self.facts):
            node, key = free.call, free.key
            if id(node) in reallocated:
                continue
            position = module.start(node)
            if position < region.start:
                continue
            after = position >= region.stop
            if after and (released_before(region, node) or not executable_after(region, node, executed_after)):
                continue
            if "." in key:
                # A helper called in the region that frees the chain reads it there too
                # (`self.infra.run()` whose model frees `self.infra.input`).
                read_by_helper = bool(free.steps) and not after and key in before and key not in bound_in
                input_chain = key in chain_inputs or read_by_helper or (key not in chain_outputs and key in read_by_work)
                kind = "input" if input_chain else "output" if key in chain_outputs else None
            else:
                values = reaching(region, key, node)
                places = {binding_place(region, b) for b in values}
                if "before" in places and key in input_names(region):
                    kind = "input"
                elif "inside" in places and made_in_this_iteration(region, node, values):
                    kind = None  # a loop's own value, freed in the turn that made it
                elif "inside" in places and (after or made_in_region_and_read_after(region, key, values)):
                    kind = "output"
                else:
                    kind = None  # an intermediate of the region, or a value made after it
            if kind is not None:
                self.report(node, self._message(free, kind), module=module, chain=self._chain(region, free))
        self._check_executing_methods(region, chain_inputs, chain_outputs, read_by_work)

    def _check_executing_methods(self, region: Region, chain_inputs: set[str], chain_outputs: set[str], read_by_work: "WorkInputs") -> None:
        """A trace id kept on `self` is executed by another method of the class (`step()`):
        that method freeing a trace input or output kept on `self` (or an element of one,
        `self.mats[0].deallocate()`) before it executes the trace is TRC302 there."""
        if not region.method_executes:
            return
        methods: dict[int, tuple] = {}
        for method, call in region.method_executes:
            methods.setdefault(id(method), (method, []))[1].append(call)
        releases: dict[int, list] = {}
        for method, call in region.method_releases:
            releases.setdefault(id(method), []).append(call)
        for method, executes in methods.values():
            graph = method.cfg
            method_accesses = accesses(method)
            # Past a rebinding of the trace id, or a call that stores it anew (a capture
            # again), the execute runs another trace.
            avoiding = [*releases.get(id(method), ())]
            kept = region.kept_as
            avoiding += [a.node for a in method_accesses if a.kind == "bind" and a.key == kept]
            for node in iter_body_nodes(method):
                if isinstance(node, cst.Call) and kept in self.facts.call_stores(node, method):
                    avoiding.append(node)
            for node in iter_body_nodes(method):
                if not isinstance(node, cst.Call):
                    continue
                target = self.facts.freed_expression(node, method)
                if target is None:
                    continue
                element = isinstance(target, cst.Subscript)
                key = chain_key(target.value if element else target)
                if key is None or not key.startswith(f"{receiver_parameter(method)}."):
                    continue
                input_chain = key in chain_inputs or (key not in chain_outputs and key in read_by_work)
                kind = "input" if input_chain else "output" if key in chain_outputs else None
                if kind is None:
                    continue
                if any(a.kind == "bind" and a.key == key and graph.runs_before(a.node, node) for a in method_accesses):
                    continue  # the method freed a value it bound itself, not the trace's
                execute = next((e for e in executes if graph.runs_before(node, e, avoiding=avoiding)), None)
                if execute is None:
                    continue
                shown = method.module.normalized(target)
                what = f"`{shown}`, an element of `{key}`," if element else f"`{key}`"
                begin = region.module.range(region.begin).start
                at = method.module.range(execute).start
                chain = [
                    Related(region.module.display_path, Location(begin.line, begin.column + 1), f"capture begins here, in `{region.function.qualname}`"),
                    Related(method.module.display_path, Location(at.line, at.column + 1), "the trace is executed here"),
                ]
                self.report(
                    node,
                    f"{what} is a trace {kind}; freeing it before `execute_trace` lets replay touch freed memory",
                    module=method.module,
                    chain=chain,
                )

    @staticmethod
    def _message(free: "Free", kind: str) -> str:
        if not free.steps:
            return f"`{free.key}` is a trace {kind}; freeing it while the trace can still be executed lets replay touch freed memory"
        what = f"the elements of `{free.key}`" if free.shown.endswith("[]") else f"`{free.shown}`"
        return f"this call frees {what}, a trace {kind}, while the trace can still be executed; replay touches freed memory"

    @staticmethod
    def _chain(region: Region, free: "Free") -> list[Related]:
        """From the capture down to the free, for a free through a helper."""
        if not free.steps:
            return []
        begin = region.module.range(region.begin).start
        out = [Related(region.module.display_path, Location(begin.line, begin.column + 1), f"capture begins here, in `{region.function.qualname}`")]
        for step in free.steps[1:]:
            start = step.module.range(step.node).start
            out.append(Related(step.module.display_path, Location(start.line, start.column + 1), step.message))
        return out


@dataclass(frozen=True)
class Free:
    """A free in the function holding a region: `ttnn.deallocate(t)`, `t.deallocate()`, or a
    call of a helper that frees what it is handed (`key`: the value freed, `shown`: the path as
    the summary has it, `steps`: from the call down to the free, through a helper)."""

    call: cst.Call
    key: str
    shown: str
    steps: tuple = ()


def frees(region: Region, facts: ProgramFacts) -> list[Free]:
    """The frees of the function holding the region from its begin on, direct and through
    helpers (a free written before the begin is neither TRC302 nor a re-allocation)."""
    cached = getattr(region, "_frees", None)
    if cached is not None:
        return cached
    function = region.function
    out = []
    for node in iter_body_nodes(function):
        if not isinstance(node, cst.Call) or region.module.start(node) < region.start:
            continue
        target = facts.freed_expression(node, function)
        if target is not None:
            key = chain_key(target)
            if key is not None:
                out.append(Free(node, key, key))
            continue
        for freed in facts.call_frees(node, function):
            key = container_of(freed.path)
            if "[" not in key:
                out.append(Free(node, key, freed.path, freed.steps))
    region._frees = out  # type: ignore[attr-defined]
    return out


def work_stores(region: Region, facts: ProgramFacts) -> set[str]:
    """Attributes the captured work called in the region assigns (`self.out`)."""
    found: set[str] = set()
    for node in iter_body_nodes(region.function):
        if isinstance(node, cst.Call) and region.contains(node):
            found |= {p for p in facts.call_stores(node, region.function) if "[" not in p}
    return found


class WorkInputs:
    """Attribute chains the captured work reads where the region never names them: a
    method called in the region whose body, any frames down, reads `self.inp`
    (`ttnn.matmul(self.inp, self.w)`): trace inputs as much as a chain the region reads
    itself. Asked one chain at a time, for the chains something frees (`key in inputs`):
    "does a call in the region read it", never the set of everything the work reads. Reading
    only a chain's host metadata (`self.inp.shape`) is no read of it; neither is a chain the
    region binds, nor one read only through code that does not resolve (not known)."""

    def __init__(self, region: Region, facts: ProgramFacts):
        self._region = region
        self._facts = facts
        self._calls: Optional[list[cst.Call]] = None
        self._answers: dict[str, bool] = {}

    def __contains__(self, key: str) -> bool:
        found = self._answers.get(key)
        if found is None:
            found = self._answers[key] = self._read(key)
        return found

    def _read(self, key: str) -> bool:
        region = self._region
        if "." not in key or key in region_accesses(region)[2]:
            return False
        if self._calls is None:
            self._calls = [n for n in iter_body_nodes(region.function) if isinstance(n, cst.Call) and region.contains(n)]
        return any(self._facts.call_reads(call, region.function, key) for call in self._calls)


def made_in_this_iteration(region: Region, free: cst.Call, values) -> bool:
    """Every value the freed name can hold there was made in a loop of the region holding
    the free, in the same turn (a path from where it binds to the free that does not go
    round the loop; nothing reaches it around the loop or from before it)."""
    graph = region.function.cfg
    for loop in graph.loops_holding(free):
        if not region.contains(loop):
            continue
        if values and all(b.kind != "param" and graph.same_iteration(b.site, free, loop) for b in values):
            return True
    return False


def reallocations(region: Region, facts: ProgramFacts) -> set[int]:
    """The documented re-allocation idiom: a trace input freed during the capture (in the
    region or in the captured work it calls: a model freeing its input) and a tensor
    allocated in its place later in the region, before anything reads it, and kept as the
    next input (stored, or read after the end): ids of both calls (neither TRC302 nor
    TRC301)."""
    cached = getattr(region, "_reallocations", None)
    if cached is not None:
        return cached
    graph = region.function.cfg
    found: set[int] = set()
    inputs = input_names(region)
    before, _, _, read_after = region_accesses(region)
    unpaired = []
    for free in frees(region, facts):
        key = free.key
        if not region.contains(free.call):
            continue
        if "." not in key and key not in inputs:
            continue
        # The next access of the key on a path from the free is a binding to an allocation.
        at_free = graph.statement_of(free.call)
        others = [a for a in accesses(region.function) if a.key == key and a.statement is not at_free and region.contains(a.node)]
        for access in others if ("." in key or key in read_after) else ():
            value = assigned_value(access.statement)
            if access.kind != "bind" or not isinstance(value, cst.Call) or not allocates(facts, value, region):
                continue
            between = [a.node for a in others if a.statement is not access.statement]
            if graph.runs_before(free.call, access.statement, avoiding=between):
                found.update((id(free.call), id(value)))
        if id(free.call) not in found and ("." not in key or key in before):
            unpaired.append(free)
    # The next input may be kept under another name than the freed one (a runner freeing
    # `self.infra.input` through the model and keeping the new buffer as `self.input`):
    # an allocation after the free, bound to a name or attribute that nothing in the region
    # reads before it and that is stored or read after the end (its address checked after
    # it is fine). Each allocation replaces one free.
    for free in unpaired:
        for access in accesses(region.function):
            value = assigned_value(access.statement) if access.kind == "bind" and region.contains(access.node) else None
            if not isinstance(value, cst.Call) or id(value) in found or _read_in_region_before(region, access):
                continue
            if not ("." in access.key or access.key in read_after) or not allocates(facts, value, region):
                continue
            if graph.runs_before(free.call, access.statement):
                found.update((id(free.call), id(value)))
                break
    # Captured work that reaches user code the analyzer cannot resolve (a model made by a
    # factory without a return annotation) has unknown effects: it may free a trace input,
    # so an allocation after it kept as the next input may be the idiom's; no TRC301 on it.
    unknown = [c for c in iter_body_nodes(region.function) if isinstance(c, cst.Call) and region.contains(c) and _reaches_unknown_work(facts, c, region)]
    for access in accesses(region.function) if unknown else ():
        value = assigned_value(access.statement) if access.kind == "bind" and region.contains(access.node) else None
        if not isinstance(value, cst.Call) or id(value) in found or _read_in_region_before(region, access):
            continue
        if ("." in access.key or access.key in read_after) and allocates(facts, value, region):
            if any(graph.runs_before(call, access.statement) for call in unknown):
                found.add(id(value))
    region._reallocations = found  # type: ignore[attr-defined]
    return found


def _reaches_unknown_work(facts: ProgramFacts, call: cst.Call, region: Region) -> bool:
    """A call that runs code that does not resolve, itself (`self.infra.run()` on an object
    from an unannotated factory) or any frames down (its work holds a callee path, not only
    functions that launch programs, or it calls a model built outside the project)."""
    if facts.targets(call, region.function):
        unseen = any(not path.startswith("fn:") for path in facts.call_work(call, region.function))
    else:
        unseen = facts.unresolved_user_call(call, region.function)
    return unseen or facts.reaches_unknown_effects(call, region.function)


def _read_in_region_before(region: Region, binding) -> bool:
    """The bound name or attribute is read in the region before this binding of it: on a
    path from the begin that does not pass the binding (the value it replaces is read)."""
    graph = region.function.cfg
    return any(
        a.kind == "read" and a.key == binding.key and region.contains(a.node) and graph.runs_before(region.begin, a.node, avoiding=(binding.node,))
        for a in accesses(region.function)
    )


def allocates(facts: ProgramFacts, call: cst.Call, region: Region) -> bool:
    """A device allocation: an allocator, or a creator given a device."""
    return any(e.effect is Effect.ALLOCATION for e in facts.call_effects(call, region.module, region.function, region))


class UnallocatedOutput(Rule):
    """
    ## What it does
    Flags a ttnn op written lexically inside a capture region whose result is read after the
    region, called without a preallocated `output_tensor=`. Only ops whose signature in
    ttnn accepts `output_tensor` are considered. Opt-in.

    ## Why is this bad?
    The op allocates its output inside the capture. The trace then owns a buffer that the
    allocator may hand out again after the capture; anything allocated later can be
    overwritten by the next replay. Preallocating the output and passing it as
    `output_tensor=` keeps the buffer's lifetime in your hands.
    """

    code = "TRC303"

    INVALID = [
        Invalid(
            """
            import ttnn

            def capture(device, a, b):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                out = ttnn.add(a, b)
                ttnn.end_trace_capture(device, tid, cq_id=0)
                return tid, out
            """,
            lines=(5,),
        )
    ]
    VALID = [
        Valid(
            """
            import ttnn

            def capture(device, a, b):
                out = ttnn.zeros_like(a)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    ttnn.add(a, b, output_tensor=out)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                return tid, out
            """
        )
    ]

    def check_region(self, region: Region) -> None:
        module = region.module
        _, _, _, read_after = region_accesses(region)
        for node in iter_body_nodes(region.function):
            if not isinstance(node, cst.Assign) or not isinstance(node.value, cst.Call) or not region.contains(node):
                continue
            call = node.value
            found = next((e for e in self.facts.call_effects(call, module, region.function, region) if e.effect is Effect.OUTPUT_ALLOCATION), None)
            if found is None:
                continue
            keys = [chain_key(t) for t in assignment_targets(node)]
            if any(k is not None and (k in read_after or "." in k) for k in keys):
                self.report(call, f"{found.what} allocates the trace output inside the capture; {found.advice}", module=module)


RULES = [TensorCreation, FreedTraceBuffer, UnallocatedOutput]
