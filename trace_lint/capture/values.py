"""Values relative to a capture region, from reaching definitions and the function's
control-flow graph (`semantic/cfg.py`): which values are trace inputs (made before the region
and read in it), which are made in the region, whether the trace can still run after a
point, what runs only after the region, and whether a capture is conditional.

Names, not values, were the old basis: `out = op()` before a region and `out = op();
out.deallocate()` inside it are two values; only the first is a trace input.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from ..frontend.syntax_walk import preorder
from ..semantic.bindings import Binding, assignment_targets, single_assignment, target_path
from ..semantic.dataflow import accesses
from ..frameworks.region import Region
from ..semantic.nodes import call_arguments
from ..semantic.project import FunctionInfo


def binding_place(region: Region, binding: Binding) -> str:
    """"before" (or a parameter), "inside" or "after" the region, by where it binds."""
    if binding.kind == "param":
        return "before"
    position = region.module.start(binding.node)
    if position < region.start:
        # A loop header binds each turn: a loop around the region binds before it.
        return "before"
    return "inside" if position < region.stop else "after"


def reaching(region: Region, name: str, node: cst.CSTNode) -> tuple[Binding, ...]:
    bindings = region.function.bindings
    if not bindings.binds(name):
        return ()
    return bindings.reaching(name, node)


def input_names(region: Region) -> frozenset[str]:
    """Local names whose value made before the region is read in it."""
    cached = getattr(region, "_input_names", None)
    if cached is not None:
        return cached
    found: set[str] = set()
    for access in accesses(region.function):
        if access.kind != "read" or "." in access.key or access.key in found:
            continue
        if not (region.start <= access.position < region.stop):
            continue
        if any(binding_place(region, b) == "before" for b in reaching(region, access.key, access.node)):
            found.add(access.key)
    result = frozenset(found)
    region._input_names = result  # type: ignore[attr-defined]
    return result


def made_in_region_and_read_after(region: Region, name: str, bindings: tuple[Binding, ...]) -> bool:
    """One of these in-region bindings reaches a read of the name after the region."""
    inside = {id(b) for b in bindings if binding_place(region, b) == "inside"}
    if not inside:
        return False
    for access in accesses(region.function):
        if access.kind == "read" and access.key == name and access.position >= region.stop:
            if any(id(b) in inside for b in reaching(region, name, access.node)):
                return True
    return False


def trace_escapes(region: Region) -> bool:
    """The trace id leaves the function (returned, stored, passed on): it can be executed
    anywhere later."""
    cached = getattr(region, "_escapes", None)
    if cached is not None:
        return cached
    escapes = False
    tid = region.trace_id
    module = region.module
    if tid is None:
        escapes = True
    else:
        lifecycle = {id(c) for c in (*region.execute_calls, *region.release_calls)}
        if region.end is not None:
            lifecycle.add(id(region.end))
        for node in region.function.nodes:
            if isinstance(node, cst.Return) and node.value is not None and _names(node.value, tid, module):
                escapes = True
            elif isinstance(node, (cst.Assign, cst.AnnAssign)) and node.value is not None and module.normalized(node.value) == tid:
                if any(not isinstance(t, cst.Name) for t in assignment_targets(node)):
                    escapes = True
            elif isinstance(node, cst.Call) and id(node) not in lifecycle:
                positional, keywords = call_arguments(node)
                if any(module.normalized(a) == tid for a in (*positional, *keywords.values())):
                    escapes = True
            elif isinstance(node, (cst.Yield, cst.Dict, cst.List)):
                if any(isinstance(e, cst.Name) and e.value == tid for e in _elements(node)):
                    escapes = True
            if escapes:
                break
    region._escapes = escapes  # type: ignore[attr-defined]
    return escapes


def _names(value: cst.BaseExpression, tid: str, module) -> bool:
    """The expression holds the trace id itself (`return tid`, `return y, tid`), not a name
    that merely contains its text (`return tid_list`)."""
    return any(isinstance(n, (cst.Name, cst.Attribute)) and module.normalized(n) == tid for n in preorder(value))


def _elements(node: cst.CSTNode):
    if isinstance(node, cst.Yield):
        return [node.value] if node.value is not None else []
    if isinstance(node, cst.Dict):
        return [e.value for e in node.elements if isinstance(e, cst.DictElement)]
    return [e.value for e in getattr(node, "elements", [])]


def executable_after(region: Region, node: cst.CSTNode, executed_after) -> bool:
    """The trace can still be executed after this point: a later `execute_trace` of it in
    the function (in the text, or a loop holding both), or the trace id escapes."""
    module = region.module
    for execute in region.execute_calls:
        if module.start(execute) >= region.stop and same_trace(region, execute) and executed_after(region, node, execute):
            return True
    return trace_escapes(region)


def same_trace(region: Region, execute: cst.Call) -> bool:
    """The execute call runs this region's trace (or cannot be told apart)."""
    if region.trace_id is None:
        return True
    positional, keywords = call_arguments(execute)
    argument = keywords.get("trace_id", positional[1] if len(positional) > 1 else None)
    return argument is None or region.module.normalized(argument) == region.trace_id


def assigned_value(statement: Optional[cst.CSTNode]) -> Optional[cst.BaseExpression]:
    if isinstance(statement, (cst.Assign, cst.AnnAssign)):
        return statement.value
    return None


def executed_after(region: Region, statement: cst.CSTNode, execute: cst.Call, avoiding: tuple = ()) -> bool:
    """The execute can run after the statement on some path of the function that does not
    capture again first (a loop around the region re-records before its next replay), nor
    pass the statements `avoiding`: later on a path from it, or in a later turn of a loop
    holding both."""
    return region.function.cfg.runs_before(statement, execute, avoiding=(region.begin, *avoiding))


def runs_after_region(region: Region, node: cst.CSTNode) -> bool:
    """The node runs only after the region on any run of its function: every path to it
    passes the begin, and none goes on from it to the begin (a loop holding both runs it
    before the next capture); a node on a path that skips the capture runs on another path."""
    if region.contains(node):
        return False
    return region.function.cfg.runs_only_after(region.begin, node)


def reached_around(function: FunctionInfo, site: cst.CSTNode, node: cst.CSTNode) -> bool:
    """Some run of the function reaches the node without passing through the site (a
    capture's begin, a capture helper's call): "first call eager, second call captured" with
    the eager run written below, or the site in a branch that returns."""
    return function.cfg.reached_without(node, [site])


def capture_condition(region: Region) -> list[cst.If]:
    """The `if` statements of the function testing the condition the begin runs under
    (`tid = begin(...) if capture else None`, `if capture: tid = begin(...)`): on the
    capturing path they take their true branch."""
    module, function = region.module, region.function
    test = None
    path = [*module.ancestors(region.begin, stop=function.node), region.begin]
    for outer, inner in zip(path, path[1:]):
        if isinstance(outer, cst.IfExp) and inner is outer.body:
            test = outer.test
        elif isinstance(outer, cst.If) and inner is outer.body:
            test = outer.test
    if test is None:
        return []
    text = module.normalized(test)
    return [n for n in function.nodes if type(n) is cst.If and module.normalized(n.test) == text]


def conditional_capture(region: Region) -> bool:
    """`tid = begin(...) if capture else None`, or a begin that the region's statements can
    be reached without (`if capture: tid = begin(...)` ... `if capture: end(...)`): the same
    statements run eagerly when the condition is false."""
    module, function = region.module, region.function
    if any(isinstance(a, cst.IfExp) for a in module.ancestors(region.begin, stop=function.node)):
        return True
    graph = function.cfg
    begin = graph.statement_of(region.begin)
    for item in graph.items:
        if item is None or item is begin:
            continue
        if region.contains(item) and graph.reached_without(item, [region.begin]):
            return True
    return False


def rebinds_to_itself(region: Region, statement: cst.CSTNode, name: str) -> bool:
    """The rebinding hands the name back the object it already held: `graph, x, out =
    self.entries[key]` (or `= entry`) where, on every path from the region to it, the
    function stored `(graph, x, out)` there first (`self.entries[key] = (graph, x, out)`,
    `entry = self.entries[key] = (...)`) and `x` was not rebound since: a cache round trip,
    no new value."""
    target = single_assignment(statement) if isinstance(statement, cst.Assign) else None
    if not isinstance(target, (cst.Tuple, cst.List)) or any(isinstance(e, cst.StarredElement) for e in target.elements):
        return False
    path = target_path(target, name)
    if path is None or len(path) != 1:
        return False  # absent, or inside a nested unpacking
    index = path[0]
    function, module = region.function, region.module
    cfg = function.cfg
    source = module.normalized(statement.value)
    stores = [
        node for node in function.nodes
        if isinstance(node, cst.Assign) and node is not statement and any(module.normalized(t) == source for t in assignment_targets(node))
    ]
    between = [s for s in stores if cfg.runs_before(region.begin, s) and cfg.runs_before(s, statement)]
    if not between or cfg.runs_before(region.begin, statement, avoiding=between):
        return False  # some path from the region reaches the unpacking without a store
    if isinstance(statement.value, cst.Name):
        # Every binding of the source name that can run between the region and the unpacking
        # is one of the stores.
        for binding in function.bindings.reaching(statement.value.value, statement.value):
            if all(binding.node is not s for s in between) and cfg.runs_before(region.begin, binding.node):
                return False
    held = {id(b) for b in function.bindings.reaching(name, statement.value)}
    for store in between:
        value = store.value
        if not isinstance(value, (cst.Tuple, cst.List)) or len(value.elements) != len(target.elements):
            return False
        element = value.elements[index].value
        if not (isinstance(element, cst.Name) and element.value == name):
            return False
        if {id(b) for b in function.bindings.reaching(name, element)} != held:
            return False
    return True
