"""TRC4xx: the trace lifecycle: open captures, stale inputs, warm-up, trace region, nesting."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator, Optional

import libcst as cst

from ..semantic.calls import bind_record_fields, callee_name
from ..semantic.receivers import receiver_parameter
from ..semantic.bindings import assignment_targets, class_bindings, names_bound_by, single_assignment
from ..semantic.dataflow import accesses
from ..semantic.project import FunctionInfo
from ..frameworks.region import Region
from ..semantic.nodes import is_sliced, iter_body_nodes
from ..frontend.syntax_walk import children
from ._common import has_star_kwargs, is_none, keyword
from ..semantic.calls import Target
from ..semantic.effects import same_work
from ..capture.values import assigned_value, capture_condition, conditional_capture, executed_after, input_names, rebinds_to_itself, runs_after_region, same_trace
from .allocation import allocates, released_before
from ..core.findings import Fix, Location, Related
from ._edits import source_of, statements_replacement
from ..core.api_tables import tables
from ..core.config import real_path
from ..frameworks.effects import Effect
from .base import Invalid, Rule, Valid

if TYPE_CHECKING:
    from ..capture.facts import ProgramFacts, TensorFacts

def _iter_nodes(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and node is not root:
            continue
        stack.extend(reversed(children(node)))


class CaptureLeftOpen(Rule):
    """
    ## What it does
    Flags a `begin_trace_capture` that an exception can leave open: some statement between
    the begin and the matching `end_trace_capture` can raise, and no `try` around it ends the
    capture in its `finally` or in an `except` handler catching `Exception` (or broader),
    directly or in a nested `try`. Assignments, returns and tests without calls cannot raise
    and do not count. A conditional capture (`tid = ttnn.begin_trace_capture(d) if capture
    else None` ... `if capture: ttnn.end_trace_capture(d, tid)`) is judged the same way on its
    capturing path. The same holds
    for `g.capture_begin()` and `g.capture_end()` of a `torch.cuda.CUDAGraph`; a
    `with torch.cuda.graph(g):` block always ends its capture and is never reported.

    ## Why is this bad?
    A failed capture stays open on the device. Every following ttnn call is then recorded
    into, or rejected by, the half-made trace, and the original error is buried under a
    cascade of unrelated ones or a hang at teardown.
    """

    code = "TRC401"
    fix_docs = """
        The fix wraps the statements between the begin and the end in `try:` and moves the
        end statement into `finally:`. On the normal path the same statements run in the
        same order; an exception now ends the capture on its way out. It is offered when the
        begin call ends its statement line and the end call is a statement of its own
        (`end(...)` or `x = end(...)`) later in the same block, with no other capture end
        between them; comments, blank lines and nested blocks move with the statements.

        The fix is safe, except in two cases where it is marked unsafe (`--unsafe-fixes`):
        the region holds a `return`, a `yield`, or a `break`/`continue` of a loop outside it
        (that exit now runs the end, where before it skipped it; a generator may end the
        capture when it is closed), or the end call reads a name that the region assigns
        (on the exceptional path the `finally:` could fail with a `NameError` before it ends
        the capture). Review those by hand.
    """

    INVALID = [
        Invalid(
            """
            import ttnn

            def capture(device, model, x):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                out = model(x)
                ttnn.end_trace_capture(device, tid, cq_id=0)
                return tid, out
            """,
            lines=(4,),
        ),
        Invalid(
            """
            import torch

            def capture(model, static_in):
                model(static_in)
                graph = torch.cuda.CUDAGraph()
                graph.capture_begin()
                out = model(static_in)
                graph.capture_end()
                return graph, out
            """,
            lines=(6,),
        ),
    ]
    VALID = [
        Valid(
            """
            import ttnn

            def capture(device, model, x):
                model(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    out = model(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                return tid, out
            """
        ),
        Valid(
            """
            import torch

            def capture(model, static_in):
                model(static_in)
                graph = torch.cuda.CUDAGraph()
                graph.capture_begin()
                try:
                    out = model(static_in)
                finally:
                    graph.capture_end()
                with torch.cuda.graph(graph):  # a `with` always ends the capture
                    again = model(static_in)
                return graph, out, again
            """
        ),
    ]

    def check_region(self, region: Region) -> None:
        if region.end is None or self.facts.closes_itself(region):
            return  # ended in another function, or a `with` block, which always closes
        module = region.module
        ends = [n for n in region.function.nodes if type(n) is cst.Call and (n is region.end or self.facts.ends_capture(n, region))]
        # A loop over the trace ids ends every capture; its header belongs to the ends.
        loops = _loops_over_the_trace_ids(region, ends)
        ends += loops
        loop_ids = {id(loop) for loop in loops}
        guards = capture_condition(region)  # judged on the capturing path
        for node in region.function.nodes:
            if not isinstance(node, _MAY_RAISE_HOLDERS) or id(node) in loop_ids:
                continue
            at = module.positions.get(node)
            if at is None or not (region.start <= (at.start.line, at.start.column) < region.stop):
                continue
            if _cannot_raise(node) or region.function.cfg.exceptions_pass(node, ends, assume=guards):
                continue
            self.report(
                region.begin,
                "an exception between begin and end leaves this capture open; end it in a `finally:`",
                module=module,
                fix=self._fix(region),
            )
            return

    def _fix(self, region: Region) -> Optional[Fix]:
        try:
            return capture_left_open_fix(self, region)
        except (KeyError, ValueError, IndexError):
            return None  # a node without a position (code built by the analysis): no fix, the finding stands


def _loops_over_the_trace_ids(region: Region, ends: list[cst.Call]) -> list[cst.CSTNode]:
    """The `for` loops whose body ends a capture per trace id that a multi-device begin
    collected (`ids = tuple(begin(d) for d in devices)` ... `for d, tid in zip(devices,
    ids): end(d, tid)`, the end a statement of the loop's own body): such a loop runs the end
    once per capture the begins opened, so reaching the loop is reaching the ends (its
    no-turn exit leaves nothing open)."""
    statement = region.begin_statement
    target = single_assignment(statement) if isinstance(statement, cst.Assign) else None
    if not isinstance(target, cst.Name):
        return []
    if statement.value is region.begin:
        return []  # one begin, one id: no collection of them
    name = target.value
    parents = region.module.parents
    loops: list[cst.CSTNode] = []
    for end in ends:
        line = parents.get(id(parents.get(id(end))))  # end(...) or x = end(...), then its line
        block = parents.get(id(line)) if isinstance(line, cst.SimpleStatementLine) else None
        loop = parents.get(id(block)) if isinstance(block, cst.IndentedBlock) else None
        if isinstance(loop, cst.For) and _iterates_over(loop.iter, name) and all(loop is not seen for seen in loops):
            loops.append(loop)
    return loops


def _iterates_over(iterable: cst.BaseExpression, name: str) -> bool:
    """The loop takes every element of `name`: the name itself, or one of the arguments of
    `zip`/`enumerate` (`zip(devices, ids)`)."""
    if isinstance(iterable, cst.Name):
        return iterable.value == name
    if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.func.value in ("zip", "enumerate"):
        return any(isinstance(a.value, cst.Name) and a.value.value == name and a.keyword is None and not a.star for a in iterable.args)
    return False


# -- TRC401's fix: the region wrapped in `try:` / `finally: <end>` ------------------------
# Offered only where the edit is plain: the begin ends its own statement line, the end call
# is a statement of its own (`end(...)` or `x = end(...)`) in the same block, later, and no
# other capture end lies between them. The statements in between move into `try:` in order,
# the end statement into `finally:`; so on the normal path the same statements run in the
# same order. Unsafe where the move changes more than the exceptional path: a `return`,
# `yield` or loop exit (`break`/`continue` of a loop outside the region) in the region, which
# now runs the end where before it skipped it (or, for a generator, may run it at close),
# and an end statement that reads a name the region binds (the `finally:` could then fail
# with a NameError on the exceptional path instead of ending the capture).


# Node kinds the fix looks at in a region.
_FIX_RELEVANT = frozenset({
    cst.Call, cst.Return, cst.Yield, cst.Break, cst.Continue, cst.FunctionDef, cst.ClassDef, cst.Assign,
    cst.AugAssign, cst.AnnAssign, cst.NamedExpr, cst.For, cst.WithItem, cst.ExceptHandler,
    cst.Del, cst.Import, cst.ImportFrom,
})




def _in_loopwithin(module, node: cst.CSTNode, block: cst.CSTNode) -> bool:
    """Whether a `break`/`continue` belongs to a loop inside `block` (its body, not its `else`)."""
    path = [*module.ancestors(node, stop=block), node]
    return any(isinstance(outer, (cst.For, cst.While)) and inner is outer.body for outer, inner in zip(path, path[1:]))


def _statement_line(module, node: cst.CSTNode, stop: cst.CSTNode) -> Optional[cst.SimpleStatementLine]:
    for ancestor in reversed(module.ancestors(node, stop=stop)):
        if isinstance(ancestor, cst.SimpleStatementLine):
            return ancestor
    return None


def capture_left_open_fix(rule: Rule, region: Region) -> Optional[Fix]:
    """TRC401's fix for `region`, or None where it is not offered (see above)."""
    module, function = region.module, region.function
    if region.end is None or module.text_reduced:
        return None  # no end to move, or a tree that is not the user's text everywhere
    begin_line = _statement_line(module, region.begin, function.node)
    end_line = _statement_line(module, region.end, function.node)
    if begin_line is None or end_line is None:
        return None
    block = module.parent(begin_line)
    if not isinstance(block, cst.IndentedBlock) or module.parent(end_line) is not block:
        return None
    body = list(block.body)
    first, last = body.index(begin_line), body.index(end_line)
    if last <= first or module.start(begin_line.body[-1]) > module.start(region.begin):
        return None  # the end comes first, or more statements follow the begin on its line
    if len(end_line.body) != 1 or not isinstance(end_line.body[0], (cst.Expr, cst.Assign)) or end_line.body[0].value is not region.end:
        return None
    between = body[first + 1 : last]
    # One pass over the region's nodes (nested scopes are not entered).
    exit_kind: Optional[str] = None
    bound: set[str] = set()
    for node in function.nodes:
        kind = type(node)
        if kind not in _FIX_RELEVANT or not region.contains(node):
            continue
        if kind is cst.Call:
            if node is not region.end and rule.facts.ends_capture(node, region):
                return None  # another end in the region: it would now run twice
        elif kind is cst.Return or kind is cst.Yield:
            exit_kind = exit_kind or ("return" if kind is cst.Return else "yield")
        elif kind is cst.Break or kind is cst.Continue:
            if not _in_loopwithin(module, node, block):
                exit_kind = exit_kind or ("break" if kind is cst.Break else "continue")
        else:
            bound.update(names_bound_by(node))
    unsafe_because = None
    if exit_kind is not None:
        unsafe_because = f"the `{exit_kind}` in the region would now end the capture"
    else:
        read = {node.value for node in _iter_nodes(end_line) if isinstance(node, cst.Name)}
        rebound = sorted(read & bound)
        if rebound:
            unsafe_because = f"the end call reads `{rebound[0]}`, which the region binds"
    end_code = source_of(module, region.end)

    def wrapped() -> cst.Try:
        # Blank lines before the end separated it from the work; under `finally:` they would not.
        moved_end = end_line.with_changes(leading_lines=[line for line in end_line.leading_lines if line.comment is not None])
        return cst.Try(
            body=cst.IndentedBlock(body=between or [cst.SimpleStatementLine([cst.Pass()])]),
            finalbody=cst.Finally(body=cst.IndentedBlock(body=[moved_end])),
        )

    message = f"Wrap the capture in `try:` ... `finally: {end_code}`"
    if unsafe_because:
        message += f" (unsafe: {unsafe_because})"
    render = statements_replacement(module, function, block, begin_line, end_line, wrapped)
    if render is None:
        return None
    # Rendered only when something reads the edits (most runs show none).
    return Fix("unsafe" if unsafe_because else "safe", message, build=lambda: (render(),))


# Statements, and compound statements whose header runs code, that can raise between a begin
# and its end.
_MAY_RAISE_HOLDERS = (
    cst.Expr, cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Return, cst.Raise, cst.Assert, cst.Del,
    cst.Import, cst.ImportFrom, cst.If, cst.While, cst.For, cst.With, cst.Match,
)


def _header(node: cst.CSTNode) -> list[cst.CSTNode]:
    """What a statement runs itself: a compound statement's test or items, a small
    statement whole."""
    if isinstance(node, (cst.If, cst.While)):
        return [node.test]
    if isinstance(node, cst.For):
        return [node.iter]
    if isinstance(node, cst.With):
        return list(node.items)
    if isinstance(node, cst.Match):
        return [node.subject]
    return [node]


def _cannot_raise(node: cst.CSTNode) -> bool:
    """Assignments, returns and tests without calls: they cannot raise into an open capture.
    A `yield` or `await` can: the consumer may throw into the generator or cancel the task."""
    if isinstance(node, (cst.Raise, cst.Assert, cst.Import, cst.ImportFrom)):
        return False
    return not any(isinstance(n, (cst.Call, cst.Yield, cst.Await)) for part in _header(node) for n in _iter_nodes(part))


def _stale_rebindings(region: Region, facts: ProgramFacts) -> list[tuple[cst.CSTNode, str]]:
    """(statement, name) for each local trace input rebound after the region and then replayed
    (TRC403 reports them, TRC408 leaves them to it: computed once per region)."""
    cached = getattr(region, "_stale", None)
    if cached is None:
        cached = region._stale = _find_stale_rebindings(region, facts)  # type: ignore[attr-defined]
    return cached


def _find_stale_rebindings(region: Region, facts: ProgramFacts) -> list[tuple[cst.CSTNode, str]]:
    module = region.module
    inputs = input_names(region)
    if not inputs:
        return []
    executes = [e for e in region.execute_calls if module.start(e) >= region.stop and same_trace(region, e)]
    if not executes:
        return []
    tensors = facts.unshared_tensor_facts(module, region.function)
    out = []
    for access in accesses(region.function):
        if access.kind != "bind" or access.key not in inputs or access.position < region.stop or access.statement is None:
            continue
        # Rebound to another tensor, or to what may be one: a rebinding to a value that is
        # surely no tensor (a number, None, a container) leaves no stale buffer.
        value = assigned_value(access.statement)
        if value is None or not _may_be_tensor(value, tensors, facts, region):
            continue
        if released_before(region, access.statement):
            continue
        if rebinds_to_itself(region, access.statement, access.key):
            continue  # `graph, x, out = self.entries[key]` right after storing them there
        if any(executed_after(region, access.statement, e) for e in executes):
            out.append((access.statement, access.key))
    return out


_NOT_TENSORS = (
    cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
    cst.List, cst.Tuple, cst.Set, cst.Dict, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp,
    cst.Lambda, cst.Comparison, cst.BooleanOperation,
)


def _may_be_tensor(value: cst.BaseExpression, tensors: TensorFacts, facts: ProgramFacts, region: Region) -> bool:
    if tensors.is_device_value(value):
        return True
    if isinstance(value, _NOT_TENSORS):
        return False
    if isinstance(value, cst.Name) and value.value in ("None", "True", "False"):
        return False
    if isinstance(value, cst.Call):
        name = facts.qualified_name(value.func, region.module, region.function)
        if name is not None and "." not in name:
            return False  # a builtin: int(...), len(...), list(...)
    return True


class StaleTraceInput(Rule):
    """
    ## What it does
    Flags the rebinding, after the capture, of a local name that the region reads (a trace
    input), when the trace is executed afterwards: `x = ttnn.from_torch(new, device=d)`
    followed by `ttnn.execute_trace(...)`.

    ## Why is this bad?
    The trace recorded the buffer the name pointed to at capture. Rebinding the name makes a
    new tensor that replay never reads: the trace keeps computing on the old input, and
    the output silently stops changing. Copy the new data into the captured input instead
    (`ttnn.copy_host_to_device_tensor(host, x)`, `static.copy_(new)`).
    """

    code = "TRC403"

    INVALID = [
        Invalid(
            """
            import ttnn

            def generate(device, model, x, steps, next_input):
                model(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    out = model(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                for step in range(steps):
                    x = ttnn.from_torch(next_input(step), device=device)
                    ttnn.execute_trace(device, tid, cq_id=0)
                return out
            """,
            lines=(11,),
        ),
        Invalid(
            """
            import torch

            def serve(model, static_x, batches):
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    static_y = model(static_x)
                for batch in batches:
                    static_x = batch.cuda()
                    graph.replay()
                    yield static_y.clone()
            """,
            lines=(8,),
        ),
    ]
    VALID = [
        Valid(
            """
            import ttnn

            def generate(device, model, x, steps, next_input):
                model(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    out = model(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                for step in range(steps):
                    host = ttnn.from_torch(next_input(step))
                    ttnn.copy_host_to_device_tensor(host, x)
                    ttnn.execute_trace(device, tid, cq_id=0)
                return out
            """
        ),
        Valid(
            """
            import ttnn

            def serve(device, model, x, use_trace, host):
                model(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    out = model(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                if not use_trace:
                    x = ttnn.from_torch(host, device=device)  # the eager path: never replayed after
                    out = model(x)
                else:
                    ttnn.execute_trace(device, tid, cq_id=0)
                return out
            """
        ),
    ]

    def check_region(self, region: Region) -> None:
        for statement, name in _stale_rebindings(region, self.facts):
            self.report(statement, f"`{name}` is a trace input; rebinding it makes a new tensor that replay never reads; copy into it instead", module=region.module)


_IDENTIFIER = r"(?<![.\w]){}\b"
# How many frames down a warm-up is looked for.
_WARM_UP_DEPTH = 6


def _runs_before(function: FunctionInfo, node: cst.CSTNode, site: cst.CSTNode) -> bool:
    """On a path before the site (earlier, or in a loop that holds both: its next turn), or on
    a path that skips the site (an earlier call of the function)."""
    return not function.cfg.runs_only_after(site, node)


class MissingWarmUp(Rule):
    """
    ## What it does
    Flags a capture whose work is a call to user code that reaches device work
    (`model(x)`, `self.model[i].decode(x)`, `step()`) and never ran on a path before the
    capture: not elsewhere in the same function (earlier, or on another path such as the
    eager branch of "first call eager, second call captured"), not in a caller before it
    calls the capturing function, not in a function that caller ran earlier (a sibling:
    `setup(): self._warmup(); self._capture()`), and not inside any of those, any number of
    frames down (`self._decode_step(x)` whose body runs `self.model.decode(x)`). A run after
    the region is no warm-up. A call matches by its resolved target, by the same expression
    with the capturing function's parameters replaced by the caller's arguments, or by what
    it runs (the user callables and launching functions it reaches, from its summary).
    Calls of helpers that launch no device program (host helpers; helpers that only
    allocate, copy into preallocated buffers, alias or compare addresses) are not judged,
    nor the work of a conditional capture, whose eager path runs it. A capture helper's callable is judged at each
    call site; a helper nobody in the project calls is not judged (its callers own the
    warm-up). For `with torch.cuda.graph(g):` it is reported on the `with` item; callables
    given to `torch.cuda.make_graphed_callables` warm up themselves.

    ## Why is this bad?
    The first run of an op compiles its program and writes it to the device. Inside a
    capture that fails on hardware with "Cannot load new binaries during trace capture ...
    Warm up before capturing a trace." In a CUDA graph the first run does one-time setup
    (library handles, kernel selection, allocator growth) that must not be recorded; torch
    asks for a few warm-up iterations on a side stream. Run the same work once, uncaptured,
    first.
    """

    code = "TRC404"

    INVALID = [
        Invalid(
            """
            import ttnn

            class Generator:
                def capture(self, device, x):
                    tid = ttnn.begin_trace_capture(device, cq_id=0)
                    try:
                        out = self.model(x)
                    finally:
                        ttnn.end_trace_capture(device, tid, cq_id=0)
                    return tid, out
            """,
            lines=(5,),
        ),
        Invalid(
            """
            import torch

            class Runner:
                def capture(self, static_in):
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph):
                        static_out = self.model(static_in)
                    return graph, static_out
            """,
            lines=(6,),
        ),
        Invalid(
            """
            import ttnn

            class Model:
                def __call__(self, x):
                    return ttnn.relu(x)

            def capture(device, x):
                model = Model()
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    out = model(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                model(x)  # after the capture: no warm-up
                return tid, out
            """,
            lines=(9,),
        ),
    ]
    VALID = [
        Valid(
            """
            import ttnn

            class Generator:
                def __init__(self, model, device):
                    self.model = model
                    self.device = device

                def _decode_step(self, x):
                    return self.model.decode(x)

                def capture(self, x):
                    self._decode_step(x)  # runs `self.model.decode` one frame down
                    tid = ttnn.begin_trace_capture(self.device, cq_id=0)
                    try:
                        out = self.model.decode(x)
                    finally:
                        ttnn.end_trace_capture(self.device, tid, cq_id=0)
                    return tid, out
            """
        ),
        Valid(
            """
            import ttnn

            def capture(device, model, x):
                model(x)  # warm-up: compiles every program the trace will use
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    out = model(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                return tid, out
            """
        ),
        Valid(
            """
            import ttnn

            def capture(device, model, x):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    out = model(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                return tid, out

            def main(device, model, x):
                model(x)  # warm-up one frame up
                return capture(device, model, x)
            """
        ),
        Valid(
            """
            import torch

            def capture(model, static_in):
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(3):
                        model(static_in)
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    static_out = model(static_in)
                return graph, static_out

            def graphed(model, sample):
                return torch.cuda.make_graphed_callables(model, (sample,))  # warms up itself
            """
        ),
    ]

    def __init__(self, reporter, facts) -> None:
        super().__init__(reporter, facts)
        # The project functions calling each capturing function: one search per run.
        self._callers_cache: dict[int, list] = {}

    def _user_calls(self, function: FunctionInfo, nodes: Iterable[cst.CSTNode], receiver: Optional[str]) -> list[cst.Call]:
        """Calls of user code that can reach device work among the nodes: project functions
        that reach a ttnn/torch op, locals and parameters, and `self.*` calls
        (`self.model(x)`, `self.model.forward(x)`) the analysis cannot see into."""
        module = function.module
        calls = []
        for node in nodes:
            if not isinstance(node, cst.Call):
                continue
            targets = self.facts.targets(node, function)
            if targets:
                if any(self.facts.reaches_device_work(t) for t in targets):
                    calls.append(node)
                continue  # host helpers are not judged
            func = node.func
            root = func
            while isinstance(root, (cst.Attribute, cst.Subscript)):
                root = root.value  # `self.model[i].decode`: an element's method is user work too
            if isinstance(func, cst.Name) and self.facts.qualified_name(func, module, function) is None:
                if not self._bound_to_library(func, function):
                    calls.append(node)  # a local or parameter: `model(x)`, `step()`
            elif isinstance(func, cst.Attribute) and isinstance(root, cst.Name) and root.value == receiver:
                qualified = self.facts.qualified_name(func, module, function)
                if qualified is not None and self.facts.definition(qualified) is None:
                    continue  # `self.ttnn.to_torch(y)`: the framework module kept on self, a library call
                element_of = func.value.value if isinstance(func.value, cst.Subscript) else None
                if isinstance(element_of, cst.Attribute) and element_of.value is root and self.facts.holds_library_objects(function, element_of.attr.value):
                    continue  # `self._events[0].record()`: a torch.cuda.Event's method
                if isinstance(func.value, cst.Attribute) and self.facts.is_tensor_method(func.attr.value):
                    continue  # `self.static_out.copy_(y)`: a tensor's own method, not user work
                if (
                    isinstance(element_of, cst.Attribute)
                    and element_of.value is root
                    and self.facts.is_tensor_method(func.attr.value)
                    and self.facts.holds_library_elements(function, element_of.attr.value)
                ):
                    continue  # `self.outputs[n].copy_(y)`: a buffer a torch op made, copied into
                if is_sliced(func.value) and self.facts.is_tensor_method(func.attr.value):
                    continue  # `self.logits[:n].copy_(y)`: a slice of a buffer, copied into
                if isinstance(func.value, cst.Attribute) and func.attr.value in tables().host_metadata.methods:
                    continue  # `self.state.mask.data_ptr()`: host metadata, no work at all
                calls.append(node)  # `self.model(x)`, `self.model.forward(x)`
        return calls

    def _region_work(self, region: Region) -> list[cst.Call]:
        function = region.function
        receiver = receiver_parameter(function)
        # A capture helper's callable is judged at each call site (and not at all when
        # nobody in the project calls the helper: its callers own the warm-up).
        helper = self.facts.capture_helper(function)
        stored = self.facts.callables_stored_by(function)
        calls = []
        for call in self._user_calls(function, [n for n in function.nodes if region.contains(n)], receiver):
            if helper is not None and isinstance(call.func, cst.Name) and call.func.value in helper.params:
                continue
            if (
                isinstance(call.func, cst.Attribute)
                and call.func.attr.value in stored
                and isinstance(call.func.value, cst.Name)
                and call.func.value.value == receiver
            ):
                continue  # a class helper's stored callable: judged at each construction
            calls.append(call)
        return calls

    def _bound_to_library(self, name: cst.Name, function: FunctionInfo) -> bool:
        """A local that every binding reaching the call binds to a library function
        (`act = ttnn.gelu if g else ttnn.relu`)."""
        facts = self.facts
        bindings = function.bindings
        if not bindings.binds(name.value):
            return False
        reaching = bindings.reaching(name.value, name)

        def library(expr: cst.BaseExpression) -> bool:
            if isinstance(expr, cst.IfExp):
                return library(expr.body) and library(expr.orelse)
            qualified = facts.qualified_name(expr, function.module, function)
            return qualified is not None and facts.definition(qualified) is None and "." in qualified

        return bool(reaching) and all(b.kind in ("assign", "annassign") and b.value is not None and library(b.value) for b in reaching)

    def _matches(self, caller: FunctionInfo, candidate: cst.Call, text: str, targets: list, work: frozenset = frozenset()) -> bool:
        if caller.module.normalized(candidate.func) == text:
            return True
        if work and work <= self.facts.call_runs(candidate, caller):
            return True  # it runs all the work, frames down (`self._decode_step(x)`)
        found = self.facts.targets(candidate, caller)
        if targets and same_work(targets, found):
            return True
        return any(self._runs_argument(caller, candidate, text, target.function, targets) for target in found)

    def _runs_argument(self, caller: FunctionInfo, candidate: cst.Call, text: str, runner: FunctionInfo, targets: list = ()) -> bool:
        """The call hands the same callable (`run_once`), or a project function doing the
        same work (`timed(eager)`, whose `eager` runs the kernel), to a function that calls
        it outside its own captures (`self._capture_init(run_once)`, whose body is
        `run_once_fn()`)."""
        arguments = self.facts.arguments_landing(candidate, caller, runner)

        def same(value: cst.BaseExpression) -> bool:
            if caller.module.normalized(value) == text:
                return True
            if not targets or not isinstance(value, (cst.Name, cst.Attribute)):
                return False
            runs = self.facts.callable_targets(value, caller)
            return same_work(targets, runs) or any(self._runs_below(t.function, t.self_class, targets, 1, set()) for t in runs)

        handed = {name for name, value in arguments.items() if same(value)}
        if not handed:
            return False
        regions = self.facts.regions_in(runner)
        return any(
            type(node) is cst.Call
            and isinstance(node.func, cst.Name)
            and node.func.value in handed
            and not any(r.contains(node) for r in regions)
            for node in runner.nodes
        )

    def _runs_below(self, function: FunctionInfo, self_class, targets: list, depth: int, seen: set) -> bool:
        """A call in the function, or in what it calls (frames down), does the same work."""
        key = (id(function), id(self_class))
        if depth > _WARM_UP_DEPTH or key in seen:
            return False
        seen.add(key)
        for node in function.nodes:
            if type(node) is not cst.Call:
                continue
            if self.facts.runs_unknown_element(node, function):
                return True  # an element of a list not known exactly: it may run the same work
            found = self.facts.targets(node, function, self_class)
            if same_work(targets, found):
                return True
            if any(self._runs_below(t.function, t.self_class, targets, depth + 1, seen) for t in found):
                return True
        return False

    def _warmed_in(self, function: FunctionInfo, call: cst.Call, text: str, targets: list, exclude: Optional[Region], before: Optional[cst.Call] = None, work: frozenset = frozenset()) -> bool:
        """The same work runs in the function outside the capture (before `before`, when
        given: the site in a caller), directly or frames down; a run only after the region
        is no warm-up."""
        seen: set = set()
        for node in iter_body_nodes(function):
            if not isinstance(node, cst.Call) or node is call or node is before:
                continue
            if exclude is not None and (exclude.contains(node) or runs_after_region(exclude, node)):
                continue
            if before is not None and not _runs_before(function, node, before):
                continue
            if self.facts.runs_unknown_element(node, function):
                return True  # `for f in fns: f(x)` of a list not known exactly: it may have run it
            if self._matches(function, node, text, targets, work):
                return True
            if targets and any(self._runs_below(t.function, t.self_class, targets, 1, seen) for t in self.facts.targets(node, function)):
                return True
        return False

    def _callers_of(self, function: FunctionInfo) -> list[tuple[FunctionInfo, cst.Call, bool]]:
        """The calls that run the function, each with whether it is handed the function
        rather than calling it (`timed_replay(record)`, which runs `record()`: looked for
        only where nothing calls it by name)."""
        cache = self._callers_cache
        if id(function) not in cache:
            found = [(caller, call, False) for call, caller in self.facts.callers(function)]
            if not found:  # run only through the functions it is handed to
                found = [(caller, call, True) for caller, call in self.facts.handing_sites(function)]
            cache[id(function)] = found
        return cache[id(function)]

    def _substitute(self, text: str, function: FunctionInfo, caller: FunctionInfo, site: cst.Call) -> str:
        params = set(function.params)
        landing = self.facts.arguments_landing(site, caller, function)
        mapping = {name: caller.module.normalized(value) for name, value in landing.items() if name in params}
        for name, replacement in mapping.items():
            text = re.sub(_IDENTIFIER.format(re.escape(name)), lambda _m, r=replacement: r, text)
        return text

    def _warm(self, function: FunctionInfo, call: cst.Call, text: str, targets: list, exclude: Optional[Region], before: Optional[cst.Call] = None) -> bool:
        """The same work runs on a path before the capture: elsewhere in the function, in a
        caller before it calls the capturing function (or in a function that caller ran
        earlier: a sibling), two callers up at most, any number of frames down. The work is
        matched by the call's text, its resolved targets, or what it runs (its summary: the
        user callables and launching functions it reaches, moved into each caller's frame)."""
        work = self.facts.call_work(call, function)
        if self._warmed_in(function, call, text, targets, exclude, before=before, work=work):
            return True
        frontier = [(function, text, work)]
        for _level in range(2):
            next_frontier = []
            for callee, callee_text, callee_work in frontier:
                for caller, site, handed in self._callers_of(callee):
                    if handed:
                        # The site calls another function, which runs this one: no argument
                        # of it lands on this one's parameters.
                        substituted, moved = None, self.facts.frame_free(callee_work)
                    else:
                        substituted = self._substitute(callee_text, callee, caller, site) if callee_text is not None else None
                        moved = self.facts.move_up(callee_work, site, caller, callee)
                    if self._warmed_in(caller, site, substituted if substituted is not None else "\0", targets, None, before=site, work=moved):
                        return True
                    next_frontier.append((caller, None, moved))
            frontier = next_frontier
        return False

    def unwarmed_calls(self, region: Region) -> list[cst.Call]:
        function = region.function
        if conditional_capture(region):
            return []  # its eager path (the condition false) runs the same work
        return [
            call
            for call in self._region_work(region)
            if not self._warm_each(function, call, region)
            and not self._nested_body_warm(function, call, region)
        ]

    def _warm_each(self, function: FunctionInfo, call: cst.Call, region: Region) -> bool:
        """The call's work ran before the capture; a loop over a local list of callables
        known exactly (`for f in fns: f(x)`) runs every element, each judged on its own."""
        text = function.module.normalized(call.func)
        every = self.facts.every_element_runs(call, function)
        if not every:
            return self._warm(function, call, text, self.facts.targets(call, function), region)
        return all(self._warm(function, call, text, [t], region) for t in every if self.facts.reaches_device_work(t))

    def _nested_body_warm(self, function: FunctionInfo, call: cst.Call, region: Optional[Region]) -> bool:
        """The call runs a def nested in the function (`def denoise(): ...` called in the
        region) whose calls of user code all ran before, each judged in the function as a
        lambda's body is: the nested def reads the function's own names. A body with no such
        call (framework ops only) is its own first run: not warm."""
        targets = self.facts.targets(call, function)
        if not targets or any(t.function.parent is not function for t in targets):
            return False
        receiver = receiver_parameter(function)
        module = function.module
        judged = False
        for target in targets:
            for inner in self._user_calls(target.function, target.function.nodes, receiver):
                if not self._warm(function, inner, module.normalized(inner.func), self.facts.targets(inner, target.function), region):
                    return False
                judged = True
        return judged

    def check_region(self, region: Region) -> None:
        missing = self.unwarmed_calls(region)
        if missing:
            work = region.module.code(missing[0].func)
            self.report(region.begin, f"`{work}(...)` runs for the first time inside the capture; {self.facts.warm_up_advice(region.kind)}", module=region.module)

    def _helper_warms_itself(self, helper, seen: Optional[set] = None) -> bool:
        """The helper calls its callable outside its own regions before capturing, or hands
        it on to a helper that does."""
        function = helper.function
        if function is None:
            return False
        seen = set() if seen is None else seen
        if id(helper) in seen:
            return False
        seen.add(id(helper))
        if any(self._helper_warms_itself(inner, seen) for inner in helper.forwards_to):
            return True
        if helper.cls is not None and self._class_helper_warms_itself(helper):
            return True
        regions = self.facts.regions_in(function)
        for node in function.nodes:
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in helper.params:
                if not any(r.contains(node) for r in regions):
                    return True
        return False

    def _class_helper_warms_itself(self, helper) -> bool:
        """A method of the class helper that captures, or calls a method that does, calls the
        stored callable outside its regions: before the capture, or on the eager path of
        "run eagerly until warm, then capture" (`if not ready: return self._fn(x)` beside
        `self._capture(x)`)."""
        capturing = {id(m) for m in helper.capturing_methods}
        methods = list(helper.capturing_methods) + [
            method for method in helper.cls.methods.values()
            if id(method) not in capturing and receiver_parameter(method) is not None and any(
                type(node) is cst.Call
                and isinstance(node.func, cst.Attribute)
                and isinstance(node.func.value, cst.Name)
                and node.func.value.value == receiver_parameter(method)
                and any(id(t.function) in capturing for t in self.facts.targets(node, method))
                for node in method.nodes
            )
        ]
        seen: set[int] = set()
        return any(self._method_runs_stored(helper, method, seen) for method in methods)

    def _method_runs_stored(self, helper, method: FunctionInfo, seen: set[int], depth: int = 0) -> bool:
        """The method calls the stored callable (`self._fn(x)`) outside its regions and not
        after them, itself or through a method of the class it calls so, any number of frames
        down (`self.warmup(x)` whose loop runs `self.encoder(x)`)."""
        if id(method) in seen or depth > 8:
            return False
        seen.add(id(method))
        receiver = receiver_parameter(method)
        if receiver is None:
            return False
        regions = self.facts.regions_in(method)
        own = {id(m) for m in helper.cls.methods.values()}
        for node in method.nodes:
            if not (
                isinstance(node, cst.Call)
                and isinstance(node.func, cst.Attribute)
                and isinstance(node.func.value, cst.Name)
                and node.func.value.value == receiver
            ) or any(r.contains(node) or runs_after_region(r, node) for r in regions):
                continue
            if node.func.attr.value in helper.stored:
                return True
            for target in self.facts.targets(node, method):
                if id(target.function) in own and self._method_runs_stored(helper, target.function, seen, depth + 1):
                    return True
        return False

    def _constructed_and_warmed(self, site) -> bool:
        """A class helper's instance runs its callable through a method that does not capture
        (`executor.compile(x)`) before a capturing method is called on it
        (`executor.capture(x)`): a `create_pipeline`-style runner."""
        helper, caller = site.helper, site.caller
        if helper.cls is None or caller is None:
            return False
        statement = caller.module.parent(site.call)
        target = single_assignment(statement) if isinstance(statement, cst.Assign) else None
        if target is None or statement.value is not site.call:
            return False
        instance = caller.module.normalized(target)
        capturing = {id(m) for m in helper.capturing_methods}
        stored = {f"{instance}.{attribute}" for attribute in helper.stored}
        calls = [
            node for node in caller.nodes
            if type(node) is cst.Call and isinstance(node.func, cst.Attribute) and caller.module.normalized(node.func.value) == instance
        ]
        captures = [c for c in calls if any(id(t.function) in capturing for t in self.facts.targets(c, caller))]
        capture_ids = {id(c) for c in captures}
        warm_ups = [
            c for c in calls
            if id(c) not in capture_ids and self.facts.targets(c, caller) and stored & self.facts.call_runs(c, caller)
        ]
        return bool(captures) and all(any(_runs_before(caller, w, c) for w in warm_ups) for c in captures)

    def check_project(self) -> None:
        sites = self.facts.capture_helper_sites()
        if not sites:
            return
        kinds = {id(r.function): r.kind for r in self.facts.regions}
        for site in sites:
            caller = site.caller
            if caller is None or self._helper_warms_itself(site.helper) or self._constructed_and_warmed(site):
                continue  # module-level call sites: nothing to compare with
            module = site.module
            receiver = receiver_parameter(caller)

            def unwarmed_body_calls() -> list[cst.Call]:
                # The calls of a lambda's body, or of a def nested in the caller (its body
                # reads the caller's names as a lambda's does), each judged in the caller.
                work = self._user_calls(site.target, site.target.nodes, receiver)
                return [
                    c for c in work
                    if not self._warm(caller, c, module.normalized(c.func), self.facts.targets(c, site.target), None, before=site.call)
                ]

            if isinstance(site.target.node, cst.Lambda):
                missing = unwarmed_body_calls()
                if not missing:
                    continue
                shown = module.code(missing[0].func)
            else:
                if self._warm(caller, site.call, module.normalized(site.argument), [Target(site.target)], None, before=site.call):
                    continue
                if site.target.parent is caller and not unwarmed_body_calls():
                    continue  # `_capture(run_all)`, `def run_all(s): step(s)`: each step ran before
                shown = module.code(site.argument)
            advice = self.facts.warm_up_advice(_helper_kind(site.helper, kinds))
            self.report(site.call, f"`{shown}(...)` runs for the first time inside the capture made by `{site.helper.name}`; {advice}", module=module)


class MissingTraceRegion(Rule):
    """
    ## What it does
    Flags `ttnn.open_device` / `ttnn.open_mesh_device` called without a `trace_region_size`,
    or with `trace_region_size=0`, when the device it opens reaches a capture: captured in the
    same function, passed to a function that captures with it (a constructor storing it on
    `self` included), or returned or yielded (a pytest fixture) to code that does. A
    fixture reaches the tests and fixtures requesting it where pytest would give it to them:
    in its own module or below its folder, and not where a nearer fixture of the same name
    is found. A device opened for code that never captures is not reported, nor a size or a
    device passed through `**kwargs` (unknown).

    ## Why is this bad?
    Traces live in a dedicated region of device memory whose size is fixed when the device
    opens. Without one, the first `end_trace_capture` fails with "Creating trace buffers of
    size ...B ... only 0B is allocated for trace region."
    """

    code = "TRC405"
    fix_docs = """
        No fix is offered: the size the traces need is not known before they are captured
        (a capture reports it). Pass a `trace_region_size` measured for the model, or
        suppress the finding with `# noqa: TRC405` where the device is opened elsewhere.
    """

    INVALID = [
        Invalid(
            """
            import ttnn

            def main(model, x):
                device = ttnn.open_device(device_id=0)
                model(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    model(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
            """,
            lines=(4,),
        )
    ]
    VALID = [
        Valid(
            """
            import ttnn

            def main(model, x):
                device = ttnn.open_device(device_id=0, trace_region_size=10_000_000)
                model(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    model(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
            """
        )
    ]

    def check_project(self) -> None:
        # A device is captured on through a region that names it (a begin given the device).
        if not any(r.device is not None for r in self.facts.regions):
            return
        open_calls = self.facts.names_with(Effect.OPEN_DEVICE)
        reach = DeviceReach(self.facts)
        # The text only says which modules to parse; the call's effect decides.
        words = sorted({name.rsplit(".", 1)[-1].encode() for name in open_calls})
        for module in self.facts.modules_mentioning(*words) if words else ():
            for call, function in module.iter_calls(module.tokens_for(open_calls)):
                opened = next((e for e in self.facts.call_effects(call, module, function) if e.effect is Effect.OPEN_DEVICE), None)
                if opened is None or not opened.argument:
                    continue
                size = keyword(call, opened.argument)
                if size is None:
                    if has_star_kwargs(call):
                        continue
                    message = f"{opened.what} without `{opened.argument}` leaves no memory for traces"
                elif isinstance(size, cst.Integer) and int(size.value.replace("_", ""), 0) == 0 or is_none(size):
                    message = f"{opened.what} with `{opened.argument}={module.code(size)}` leaves no memory for traces"
                else:
                    continue
                if reach.value_reaches_capture(call, function) if function is not None else reach.module_value_reaches_capture(call, module):
                    self.report(call, f"{message}; the device it opens is captured on", module=module)


def _helper_kind(helper, kinds: dict[int, str], depth: int = 0) -> Optional[str]:
    """The kind of capture a helper makes: its own region's, its capturing methods' (a class
    helper), or that of the helper it hands its callable on to."""
    for function in (helper.function, *helper.capturing_methods):
        if function is not None and id(function) in kinds:
            return kinds[id(function)]
    if depth < 8:
        for inner in helper.forwards_to:
            found = _helper_kind(inner, kinds, depth + 1)
            if found is not None:
                return found
    return None


class DeviceReach:
    """Whether an opened device reaches a ttnn capture: captured in the same function, passed
    to a function that captures with it (any number of frames down, constructors storing it
    on `self` included), or returned or yielded (a pytest fixture) to code that does. A value
    passed through `**kwargs` is not followed."""

    # Steps (a binding, an argument, a return), not frames: a few frames deep.
    MAX_DEPTH = 12

    def __init__(self, facts: ProgramFacts):
        self.facts = facts
        self.devices_of: dict[int, set[str]] = {}
        for region in facts.regions:
            if region.device is not None:
                self.devices_of.setdefault(id(region.function), set()).add(region.device)
        self._param_memo: dict[tuple[int, str], bool] = {}
        self._attribute_memo: dict[tuple[int, str], bool] = {}

    # -- where a value goes ------------------------------------------------------------------
    # `field` follows an object whose attribute holds the device (`Context(device=d)`, then
    # `context.device`); None follows the device itself.
    def value_reaches_capture(self, expr: cst.CSTNode, function: FunctionInfo, depth: int = 0, field: Optional[str] = None) -> bool:
        if depth > self.MAX_DEPTH:
            return False
        module = function.module
        parent = module.parent(expr)
        while isinstance(parent, cst.Await):
            expr, parent = parent, module.parent(parent)
        if field is not None and isinstance(parent, cst.Attribute) and parent.value is expr and parent.attr.value == field:
            return self.value_reaches_capture(parent, function, depth + 1)
        if isinstance(parent, cst.Arg) and parent.value is expr:
            call = module.parent(parent)
            return isinstance(call, cst.Call) and self._argument_captures(call, parent, function, depth, field)
        if isinstance(parent, cst.Return):
            return self._returned_captures(function, depth, field)
        if isinstance(parent, cst.Yield):
            return self._yielded_captures(function, depth, field)
        if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is expr:
            return any(self._target_captures(t, function, depth, field) for t in assignment_targets(parent))
        return False

    def module_value_reaches_capture(self, expr: cst.CSTNode, module) -> bool:
        """A device opened in module-level code (a script's `if __name__ == "__main__":`),
        bound to a name that a module-level call hands to a project function capturing with it."""
        parent = module.parent(expr)
        if not isinstance(parent, (cst.Assign, cst.AnnAssign)) or parent.value is not expr:
            return False
        # A name module-level code binds more than once may hold another value where it is
        # handed on (`device = open(...)`, closed, `device = open(..., trace_region_size=...)`):
        # without a graph of module-level code, only a name bound once is followed.
        names = {t.value for t in assignment_targets(parent) if isinstance(t, cst.Name) and len(module.global_bindings.get(t.value, ())) == 1}
        for call, function in module.iter_calls():
            if function is not None:
                continue
            for arg in call.args:
                if arg.star or not isinstance(arg.value, cst.Name) or arg.value.value not in names:
                    continue
                targets = self.facts.callable_targets(call.func, None, module)
                if len(targets) != 1:
                    continue
                target = targets[0].function
                bound = self.facts.bind_arguments(call, None, target, module)
                name = bound.parameter_of(arg)
                if name is not None and bound.by_parameter.get(name) is arg.value and self._name_captures(target, name, 1):
                    return True
        return False

    def _target_captures(self, target: cst.BaseExpression, function: FunctionInfo, depth: int, field: Optional[str]) -> bool:
        if isinstance(target, cst.Name):
            return self._name_captures(function, target.value, depth, field)
        attribute = self._self_attribute(target, function)
        if attribute is not None and function.cls is not None and field is None:
            return self._attribute_captures(function.cls, attribute, depth)
        return False

    def _name_captures(self, function: FunctionInfo, name: str, depth: int, field: Optional[str] = None) -> bool:
        """A local or parameter holding the device (or, with `field`, an object holding it):
        captured here, or handed on."""
        key = (id(function), name if field is None else f"{name}.{field}")
        if key in self._param_memo:
            return self._param_memo[key]
        self._param_memo[key] = False  # recursion: not (yet) known to capture
        if field is None:
            found = name in self.devices_of.get(id(function), ())
        else:
            found = f"{name}.{field}" in self.devices_of.get(id(function), ())
        found = found or any(
            self.value_reaches_capture(node, function, depth + 1, field)
            for node in function.nodes
            if isinstance(node, cst.Name) and node.value == name and self._is_read(node, function)
        )
        # A nested def reading it as a free variable (`def record(): begin(device)`).
        found = found or any(
            self._name_captures(nested, name, depth + 1, field)
            for nested in function.nested.values()
            if not nested.bindings.binds(name) and name not in nested.bindings.declared_global
        )
        self._param_memo[key] = found
        return found

    def _attribute_captures(self, cls, attribute: str, depth: int) -> bool:
        """`self.<attribute>` holds the device: some method captures with it or hands it on."""
        key = (id(cls), attribute)
        if key in self._attribute_memo:
            return self._attribute_memo[key]
        self._attribute_memo[key] = False
        found = False
        for method in cls.methods.values():
            receiver = receiver_parameter(method)
            if receiver is None:
                continue
            if f"{receiver}.{attribute}" in self.devices_of.get(id(method), ()):
                found = True
                break
            for node in method.nodes:
                if (
                    isinstance(node, cst.Attribute)
                    and node.attr.value == attribute
                    and isinstance(node.value, cst.Name)
                    and node.value.value == receiver
                    and self._is_read(node, method)
                    and self.value_reaches_capture(node, method, depth + 1)
                ):
                    found = True
                    break
            if found:
                break
        self._attribute_memo[key] = found
        return found

    # -- calls ---------------------------------------------------------------------------------
    def _argument_captures(self, call: cst.Call, arg: cst.Arg, function: FunctionInfo, depth: int, field: Optional[str] = None) -> bool:
        if arg.star:
            return False  # `**kwargs` / `*args`: not followed
        target = self._callee(call, function)
        if target is None:
            # A class without `__init__` (a dataclass, a NamedTuple): the argument becomes a field.
            fields = self._record_fields(call, function)
            if fields is None or field is not None:
                return False
            name = bind_record_fields(call, fields).parameter_of(arg)
            return name is not None and self.value_reaches_capture(call, function, depth + 1, name)
        bound = self.facts.bind_arguments(call, function, target)
        name = bound.parameter_of(arg)
        if name is None or bound.by_parameter.get(name) is not arg.value:
            return False  # lands in `*args` / `**kwargs`: not followed
        return self._name_captures(target, name, depth + 1, field)

    def _record_fields(self, call: cst.Call, function: FunctionInfo) -> Optional[list[str]]:
        """The annotated fields, in order, of a project class without `__init__` constructed here."""
        name = self.facts.qualified_name(call.func, function.module, function)
        definition = self.facts.definition(name) if name else None
        if definition is None or isinstance(definition, FunctionInfo) or self.facts.method(definition, "__init__") is not None:
            return None
        return [name for name, bindings in class_bindings(definition.node).items() if any(isinstance(b.node, cst.AnnAssign) for b in bindings)]

    def _callee(self, call: cst.Call, function: FunctionInfo) -> Optional[FunctionInfo]:
        """The project function a call runs: its one target, or a project class's `__init__`."""
        target = self.facts.sole_target(call, function)
        if target is not None:
            return target
        name = self.facts.qualified_name(call.func, function.module, function)
        definition = self.facts.definition(name) if name else None
        if definition is not None and not isinstance(definition, FunctionInfo):
            return self.facts.method(definition, "__init__")
        return None

    def _callers(self, function: FunctionInfo) -> Iterator[tuple[cst.Call, FunctionInfo]]:
        # Calls that run this function alone: a value returned by one of several is not followed.
        for call, caller in self.facts.callers(function):
            if self.facts.sole_target(call, caller) is function:
                yield call, caller

    def _returned_captures(self, function: FunctionInfo, depth: int, field: Optional[str] = None) -> bool:
        return any(self.value_reaches_capture(call, caller, depth + 1, field) for call, caller in self._callers(function))

    def _yielded_captures(self, function: FunctionInfo, depth: int, field: Optional[str] = None) -> bool:
        """A pytest fixture yielding the device: the tests taking it as a parameter."""
        name = _fixture_name(function)
        if name is None:
            return self._returned_captures(function, depth, field)
        # pytest finds a fixture from the tests of its own folder and below (a conftest.py) or
        # of its module: a fixture of the same name elsewhere is another device.
        folder = _real(function.module).parent
        for module in self.facts.modules_mentioning(name.encode()):
            if module is not function.module and not _real(module).is_relative_to(folder):
                continue
            if module is not function.module and self._shadowed(name, folder, module):
                continue
            module.load()
            for candidate in module.iter_functions((name,)):
                # Only tests and other fixtures request fixtures: a function that merely has
                # a parameter of that name (`capture(device, ...)`) is not given it.
                requests = candidate.name.startswith("test") or _fixture_name(candidate) is not None
                if requests and name in candidate.params and self._name_captures(candidate, name, depth + 1, field):
                    return True
        return False

    def _shadowed(self, name: str, folder, module) -> bool:
        """A fixture of the same name nearer to the test module (in itself, or in a
        conftest.py of a folder between) is the one its tests get."""
        between = [p for p in _real(module).parents if p != folder and p.is_relative_to(folder)]
        for candidate in self.facts.modules_mentioning(name.encode()):
            if candidate is not module and not (candidate.path.name == "conftest.py" and _real(candidate).parent in between):
                continue
            candidate.load()
            if any(_fixture_name(f) == name for f in candidate.iter_functions((name,))):
                return True
        return False

    # -- small questions -----------------------------------------------------------------------
    @staticmethod
    def _self_attribute(target: cst.BaseExpression, function: FunctionInfo) -> Optional[str]:
        if (
            isinstance(target, cst.Attribute)
            and isinstance(target.value, cst.Name)
            and target.value.value == receiver_parameter(function)
        ):
            return target.attr.value
        return None

    @staticmethod
    def _is_read(node: cst.CSTNode, function: FunctionInfo) -> bool:
        parent = function.module.parent(node)
        if isinstance(parent, cst.AssignTarget) or (isinstance(parent, (cst.AnnAssign, cst.AugAssign)) and any(t is node for t in assignment_targets(parent))):
            return False
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return False
        if isinstance(parent, cst.Arg) and parent.keyword is node:
            return False
        return True


def _real(module) -> Path:
    """A module's file as one absolute path: a run names some files relative to the current
    folder and finds the rest of the project by walking its root."""
    return real_path(module.path)


def _fixture_name(function: FunctionInfo) -> Optional[str]:
    """The name a pytest fixture is requested by, or None when the function is no fixture."""
    for decorator in function.node.decorators:
        expr = decorator.decorator
        call = expr if isinstance(expr, cst.Call) else None
        func = call.func if call is not None else expr
        if callee_name(cst.Call(func=func)) != "fixture":
            continue
        if call is not None:
            name = keyword(call, "name")
            if isinstance(name, cst.SimpleString):
                return name.evaluated_value
        return function.name
    return None


class NestedCapture(Rule):
    """
    ## What it does
    Flags a `begin_trace_capture` reached while another capture is being recorded: written
    inside another region, or in code a capture calls.

    ## Why is this bad?
    A command queue records one trace at a time. ttnn rejects the inner begin on hardware
    ("CQ ... is already being used for tracing"), and the outer capture is left open.
    """

    code = "TRC406"

    INVALID = [
        Invalid(
            """
            import ttnn

            def capture(device, x):
                outer = ttnn.begin_trace_capture(device, cq_id=0)
                inner = ttnn.begin_trace_capture(device, cq_id=0)
                y = ttnn.relu(x)
                ttnn.end_trace_capture(device, inner, cq_id=0)
                ttnn.end_trace_capture(device, outer, cq_id=0)
                return y
            """,
            lines=(5,),
        ),
        Invalid(
            """
            import torch

            def capture(model, static_x):
                outer, inner = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
                with torch.cuda.graph(outer):
                    y = model(static_x)
                    with torch.cuda.graph(inner):
                        z = model(y)
                return y, z
            """,
            lines=(7,),
        ),
    ]
    VALID = [
        Valid(
            """
            import ttnn

            def capture(device, x):
                first = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    y = ttnn.relu(x)
                finally:
                    ttnn.end_trace_capture(device, first, cq_id=0)
                second = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    z = ttnn.gelu(x)
                finally:
                    ttnn.end_trace_capture(device, second, cq_id=0)
                return y, z
            """
        )
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.facts.begins_capture(node, self.context.qualified_name(node.func)) and not self._other_branch(node):
            self.report(node, "a capture begins while another is being recorded")

    def _other_branch(self, node: cst.Call) -> bool:
        """The begin is on the other branch of an `if` from the region's own begin
        (`if pool: g.capture_begin(pool=pool) else: g.capture_begin()`), with no loop around
        both whose next turn could take it while the first capture records."""
        region = self.context.region
        return region is not None and region.function.cfg.exclusive(region.begin, node)


class AllocationAcrossReplay(Rule):
    """
    ## What it does
    Flags a device allocation after a capture, while that trace can still be executed, whose
    tensor is alive across an `execute_trace`. A rebinding of a trace input is TRC403 instead.
    The capture may be made by a helper that returns the trace id (`tid, out = capture(d,
    x)`, any frames down): the allocation is then judged in the caller, after that call, up
    to an `execute_trace` of the id it bound (also through a helper that executes its
    parameter), and there a helper returning a new device buffer counts as an allocation.
    Where the id
    goes where the analysis cannot follow (code that does not resolve, a container,
    `**kwargs`), nothing is reported.

    ## Why is this bad?
    The trace's intermediates live in memory the allocator believes free once the capture
    ends. A tensor allocated there afterwards is overwritten the next time the trace runs.
    Allocate everything before capturing, or release the trace first.
    """

    code = "TRC408"

    INVALID = [
        Invalid(
            """
            import ttnn

            def run(device, model, x):
                model(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    out = model(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                scratch = ttnn.zeros([32, 32], device=device)
                ttnn.execute_trace(device, tid, cq_id=0)
                return out, scratch
            """,
            lines=(10,),
        ),
        Invalid(
            """
            import ttnn

            def capture(device, model, x):
                model(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    out = model(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                return tid, out

            def run(device, model, x):
                tid, out = capture(device, model, x)
                scratch = ttnn.zeros([32, 32], device=device)
                ttnn.execute_trace(device, tid, cq_id=0)
                return out, scratch
            """,
            lines=(14,),
        ),
    ]
    VALID = [
        Valid(
            """
            import ttnn

            def run(device, model, x):
                scratch = ttnn.zeros([32, 32], device=device)
                model(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    out = model(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                ttnn.execute_trace(device, tid, cq_id=0)
                return out, scratch
            """
        ),
        Valid(
            """
            import ttnn

            def run(device, model, x, steps):
                model(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    out = model(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                for _ in range(steps):
                    ttnn.execute_trace(device, tid, cq_id=0)
                    host = ttnn.zeros([32, 32], device=device)
                    ttnn.deallocate(host)  # freed before the next replay
                return out
            """
        ),
    ]

    def _frees(self, function: FunctionInfo, name: str, allocated: cst.CSTNode) -> list[cst.Call]:
        """`ttnn.deallocate(name)` and `name.deallocate()` calls in the function that free the
        value the `allocated` statement bound (the binding reaches the free: values, not
        names)."""
        out = []
        for node in function.nodes:
            if not isinstance(node, cst.Call):
                continue
            target = self.facts.freed_expression(node, function)
            if target is None:
                continue
            if isinstance(target, cst.Name) and target.value == name:
                reaching = function.bindings.reaching(name, node)
                if any(b.node is allocated for b in reaching):
                    out.append(node)
        return out

    def _allocation_frees(self, function: FunctionInfo, node: cst.Call) -> list[cst.Call]:
        """The frees of the value an allocating call binds (`buf = alloc(...)`), if any."""
        module = function.module
        statement = next((a for a in reversed(module.ancestors(node, stop=function.node)) if isinstance(a, cst.BaseSmallStatement)), None)
        target = single_assignment(statement) if isinstance(statement, cst.Assign) and statement.value is node else None
        name = target.value if isinstance(target, cst.Name) else None
        return self._frees(function, name, statement) if name else []

    def check_region(self, region: Region) -> None:
        module = region.module
        executes = [e for e in region.execute_calls if module.start(e) >= region.stop and same_trace(region, e)]
        if not executes:
            return
        stale = {id(statement) for statement, _ in _stale_rebindings(region, self.facts)}
        for node in iter_body_nodes(region.function):
            if not isinstance(node, cst.Call) or module.start(node) < region.stop or not allocates(self.facts, node, region):
                continue
            if released_before(region, node):
                continue
            statement = next((a for a in reversed(module.ancestors(node, stop=region.function.node)) if isinstance(a, cst.BaseSmallStatement)), None)
            if statement is not None and id(statement) in stale:
                continue
            target = single_assignment(statement) if isinstance(statement, cst.Assign) else None
            name = target.value if isinstance(target, cst.Name) else None
            frees = self._frees(region.function, name, statement) if name else []
            # Alive across a replay: some path from the allocation reaches it without a free.
            if any(executed_after(region, node, e, avoiding=tuple(frees)) for e in executes):
                self.report(node, "this tensor is allocated after the capture and alive across `execute_trace`; replay can overwrite it", module=module)


    # -- a capture made by a helper that returns the trace id ---------------------------------
    def check_project(self) -> None:
        """A function that captures and returns the trace id (`def capture(d, x): tid =
        begin(d); ...; return tid, y`), any frames down: at each call of it that binds the
        id (`tid, out = capture(d, x)`), the caller's allocations after that call, while the
        trace can still be executed (no `release_trace` of it first), that are alive across
        a later `execute_trace` of that id (directly, or through a helper executing its
        parameter). Where the id goes somewhere the analysis cannot follow, nothing.

        A call in a function some run searches for captures is judged by that run, from the
        call to what it runs; the other calls are found from the capture outward, through the
        callers of each function returning the id. So every split judges each call once, and
        none reads the others' shares."""
        facts = self.facts
        done: set[int] = set()
        own = facts.candidate_functions()
        for caller in own:
            for node in caller.nodes:
                if type(node) is not cst.Assign or type(node.value) is not cst.Call or id(node.value) in done:
                    continue
                helper = next((t.function for t in facts.targets(node.value, caller) if t.function is not caller and facts.returned_traces(t.function)), None)
                if helper is not None:
                    done.add(id(node.value))
                    self._check_caller(caller, node.value, helper)
        queue = list({id(f): f for f in [*(r.function for r in facts.regions), *own]}.values())
        seen = {id(f) for f in queue}
        while queue:
            function = queue.pop(0)
            if not facts.returned_traces(function):
                continue
            for call, caller in facts.callers_outside_candidates(function):
                if id(call) in done:
                    continue
                done.add(id(call))
                self._check_caller(caller, call, function)
                if id(caller) not in seen:
                    seen.add(id(caller))
                    queue.append(caller)

    def _check_caller(self, function: FunctionInfo, call: cst.Call, helper: FunctionInfo) -> None:
        module = function.module
        statement = module.parent(call)
        if not isinstance(statement, cst.Assign) or statement.value is not call:
            return
        target = single_assignment(statement)
        positions = self.facts.call_traces(call, function)
        keys: list[cst.BaseExpression] = []
        if target is not None and -1 in positions:
            keys.append(target)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for index, element in enumerate(target.elements):
                if isinstance(element, cst.StarredElement):
                    break
                if index in positions:
                    keys.append(element.value)
        keys = [k for k in keys if isinstance(k, (cst.Name, cst.Attribute))]
        uses = self._trace_uses(function, statement, keys)
        if uses is None:
            return  # the id goes where the analysis cannot follow it
        executes, releases = uses
        if not executes:
            return
        graph = function.cfg
        # A rebinding of a trace input of a region written here is TRC403's.
        stale = {id(s) for region in self.facts.regions_in(function) for s, _ in _stale_rebindings(region, self.facts)}
        for node in function.nodes:
            if not isinstance(node, cst.Call) or node is call or not graph.runs_before(call, node):
                continue
            if not self.facts.call_allocates(node, function):
                continue
            statement = next((a for a in reversed(module.ancestors(node, stop=function.node)) if isinstance(a, cst.BaseSmallStatement)), None)
            if statement is not None and id(statement) in stale:
                continue
            if releases and not graph.runs_before(call, node, avoiding=releases):
                continue  # the trace is released on every path to it
            frees = self._allocation_frees(function, node)
            execute = next((e for e in executes if graph.runs_before(node, e, avoiding=(call, *frees, *releases))), None)
            if execute is None:
                continue
            at_call = module.range(call).start
            at_execute = module.range(execute).start
            chain = [
                Related(module.display_path, Location(at_call.line, at_call.column + 1), f"the trace is captured by this call of `{helper.qualname}`"),
                Related(module.display_path, Location(at_execute.line, at_execute.column + 1), "the trace is executed here"),
            ]
            self.report(node, "this tensor is allocated after the capture and alive across `execute_trace`; replay can overwrite it", module=module, chain=chain)

    def _trace_uses(self, function: FunctionInfo, statement: cst.Assign, keys: list) -> Optional[tuple[list, list]]:
        """The calls that execute and release the trace ids the statement binds to `keys`
        (locals by value, attributes by their chain, and the aliases they are copied to);
        None where one is used in a way the analysis cannot follow (handed to code that does
        not resolve, put in a container, passed through `**kwargs`)."""
        module = function.module
        names = {(k.value, id(statement)) for k in keys if isinstance(k, cst.Name)}
        chains = {module.normalized(k) for k in keys if isinstance(k, cst.Attribute)}
        if not names and not chains:
            return None

        def holds(expr: cst.BaseExpression) -> bool:
            if isinstance(expr, cst.Name):
                if not function.bindings.binds(expr.value):
                    return False
                return any((expr.value, id(b.node)) in names for b in function.bindings.reaching(expr.value, expr))
            return isinstance(expr, cst.Attribute) and module.normalized(expr) in chains

        # Copies of the id (`self.tid = tid`, `t = tid`), found until none is new.
        changed = True
        while changed:
            changed = False
            for node in function.nodes:
                if isinstance(node, cst.Assign) and holds(node.value):
                    alias = single_assignment(node)
                    if isinstance(alias, cst.Name) and (alias.value, id(node)) not in names:
                        names.add((alias.value, id(node)))
                        changed = True
                    elif isinstance(alias, cst.Attribute) and module.normalized(alias) not in chains:
                        chains.add(module.normalized(alias))
                        changed = True
        executes: list[cst.Call] = []
        releases: list[cst.Call] = []
        handed: set[int] = set()
        for node in function.nodes:
            if not isinstance(node, cst.Call):
                continue
            for role, argument in self.facts.call_trace_uses(node, function):
                if not holds(argument):
                    continue
                handed.add(id(argument))
                if role == "unknown":
                    return None
                (executes if role == "execute" else releases).append(node)
            for arg in node.args:
                if holds(arg.value):
                    handed.add(id(arg.value))  # a framework call, a builtin, or a project function that keeps no trace
        # Any other use of a local holding the id: only tests, returns, copies and
        # formatting are followed.
        for node in function.nodes:
            if not isinstance(node, (cst.Name, cst.Attribute)) or id(node) in handed or not holds(node):
                continue
            parent = module.parent(node)
            if isinstance(parent, (cst.Comparison, cst.ComparisonTarget, cst.If, cst.While, cst.Return, cst.FormattedStringExpression, cst.UnaryOperation, cst.BooleanOperation)):
                continue
            if isinstance(parent, cst.Assign) and parent.value is node:
                continue  # a copy, followed above
            if _returned_element(module, node) or _in_target(module, node):
                continue  # returned to the caller (its callers are judged there), or a binding
            return None
        return executes, releases


def _returned_element(module, node: cst.CSTNode) -> bool:
    """The node is an element of a tuple the function returns (`return tid, out`)."""
    current = node
    while isinstance(module.parent(current), cst.Element) and isinstance(module.parent(module.parent(current)), cst.Tuple):
        current = module.parent(module.parent(current))
    return current is not node and isinstance(module.parent(current), cst.Return)


def _in_target(module, node: cst.CSTNode) -> bool:
    """The node is inside an assignment target (`tid, out = ...`)."""
    current = module.parent(node)
    while current is not None and not isinstance(current, cst.BaseSmallStatement):
        if isinstance(current, (cst.AssignTarget, cst.For)):
            return True
        current = module.parent(current)
    return False

RULES = [CaptureLeftOpen, StaleTraceInput, MissingWarmUp, MissingTraceRegion, NestedCapture, AllocationAcrossReplay]
