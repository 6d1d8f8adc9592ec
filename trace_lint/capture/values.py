"""Values relative to a capture region, from reaching definitions: which values are trace
inputs (made before the region and read in it), which are made in the region, and whether
the trace can still run after a point.

Names, not values, were the old basis: `out = op()` before a region and `out = op();
out.deallocate()` inside it are two values; only the first is a trace input.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from ..frontend.syntax_walk import preorder
from ..semantic.bindings import Binding
from ..semantic.dataflow import accesses
from ..frameworks.region import Region
from ..semantic.nodes import always_leaves, call_arguments
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
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                if any(not isinstance(t, cst.Name) for t in targets):
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


def executed_after(region: Region, statement: cst.CSTNode, execute: cst.Call) -> bool:
    """The execute can run after the statement: later on a path from it (not on the other
    branch of an `if`), or in a loop after the region holding both (its next turn)."""
    module = region.module
    for loop in loops(region.function):
        if module.start(loop) >= region.stop and within(module, statement, loop) and within(module, execute, loop):
            return True
    return module.start(execute) >= module.end(statement) and not exclusive(region.function, statement, execute)


def exclusive(function: FunctionInfo, a: cst.CSTNode, b: cst.CSTNode) -> bool:
    """The two nodes are on different branches of one `if` (or of a conditional expression):
    no run of the function passes through both, loops aside."""
    module = function.module
    outer_a = module.ancestors(a, stop=function.node)
    outer_b = module.ancestors(b, stop=function.node)
    shared = 0
    while shared < min(len(outer_a), len(outer_b)) and outer_a[shared] is outer_b[shared]:
        shared += 1
    if shared == 0:
        return False
    common = outer_a[shared - 1]
    branch_a = outer_a[shared] if shared < len(outer_a) else a
    branch_b = outer_b[shared] if shared < len(outer_b) else b
    if isinstance(common, cst.If):
        return _branch(common, branch_a) != _branch(common, branch_b)
    if isinstance(common, cst.IfExp):
        sides = {id(common.body): "body", id(common.orelse): "orelse"}
        return sides.get(id(branch_a)) is not None and sides.get(id(branch_b)) is not None and sides[id(branch_a)] != sides[id(branch_b)]
    if isinstance(common, cst.Else):
        return False
    return False


def _branch(node: cst.If, child: cst.CSTNode) -> str:
    if child is node.body:
        return "body"
    if child is node.orelse:
        return "orelse"
    return "test"


def runs_after_region(region: Region, node: cst.CSTNode) -> bool:
    """The node runs only after the region on any run of its function: later in the text,
    not in a loop holding the region too (an earlier turn runs before the next capture), and
    not on the other branch of an `if` from it (another path)."""
    module = region.module
    if module.start(node) < region.stop:
        return False
    for loop in loops(region.function):
        if within(module, node, loop) and within(module, region.begin, loop):
            return False
    return not exclusive(region.function, region.begin, node) and not reached_around(region.function, region.begin, node)


def reached_around(function: FunctionInfo, site: cst.CSTNode, node: cst.CSTNode) -> bool:
    """Some run of the function reaches the node without passing through the site (a
    capture's begin, a capture helper's call): the site sits under an `if` that does not hold
    the node (its test can be false: "first call eager, second call captured" with the eager
    run written below), or in a block that always returns or raises and does not hold it."""
    module = function.module
    node_ancestors = {id(a) for a in module.ancestors(node, stop=function.node)}
    for block in module.ancestors(site, stop=function.node):
        if id(block) in node_ancestors:
            continue
        if isinstance(block, cst.If) or (isinstance(block, cst.IndentedBlock) and always_leaves(block)):
            return True
    return False


def within(module, node: cst.CSTNode, outer: cst.CSTNode) -> bool:
    return module.start(outer) <= module.start(node) and module.end(node) <= module.end(outer)


def loops(function: FunctionInfo) -> list[cst.CSTNode]:
    return [n for n in function.nodes if isinstance(n, (cst.For, cst.While))]
