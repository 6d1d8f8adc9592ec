"""ttnn's capture regions: `begin_trace_capture` ... `end_trace_capture` in one function,
matched through the trace id."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from ...core.api_tables import tables
from ...semantic.bindings import single_assignment
from ...semantic.nodes import call_arguments, iter_body_nodes
from ...semantic.project import FunctionInfo, Project
from ...semantic.receivers import receiver_parameter
from ..region import Region
from ...frontend.syntax_walk import SMALL_STATEMENTS

def _yields(value: Optional[cst.BaseExpression], call: cst.Call) -> bool:
    """The value is the call, or a conditional capture's `begin(...) if capture else None`."""
    if value is call:
        return True
    return isinstance(value, cst.IfExp) and (value.body is call or value.orelse is call)


def _assigned_target(statement: cst.CSTNode, call: cst.Call) -> Optional[cst.BaseExpression]:
    target = single_assignment(statement)
    return target if target is not None and _yields(statement.value, call) else None


def find_regions(project: Project, function: FunctionInfo) -> list[Region]:
    """The ttnn capture regions of one function (CUDA-graph regions are added by kind)."""
    module = function.module
    api = tables().ttnn
    begins: list[tuple[cst.Call, cst.CSTNode]] = []
    ends: list[cst.Call] = []
    releases: list[cst.Call] = []
    executes: list[cst.Call] = []
    statement: Optional[cst.CSTNode] = None
    for node in iter_body_nodes(function):
        kind = type(node)
        if kind in SMALL_STATEMENTS:
            statement = node
        if kind is not cst.Call:
            continue
        name = project.qualified_name(node.func, module, function)
        if name is None:
            continue
        if name in api.capture_begin:
            begins.append((node, statement if statement is not None else node))
        elif name in api.capture_end:
            ends.append(node)
        elif name in api.release:
            releases.append(node)
        elif name in api.execute:
            executes.append(node)
    if not begins:
        return []
    regions = []
    body_end = module.end(function.node)

    def end_id(end: cst.Call, where=module) -> Optional[str]:
        positional, keywords = call_arguments(end)
        argument = keywords.get("trace_id", keywords.get("tid", positional[1] if len(positional) > 1 else None))
        return where.normalized(argument) if argument is not None else None

    targets = [_assigned_target(statement, begin) for begin, statement in begins]
    trace_ids = [module.normalized(t) if t is not None else None for t in targets]
    for (begin, begin_statement), trace_id in zip(begins, trace_ids):
        begin_end = module.end(begin)
        later = [e for e in ends if module.start(e) >= begin_end]
        matched = next((e for e in later if trace_id is not None and end_id(e) == trace_id), None)
        if matched is None:
            # The id may have been copied (`self.tid = tid`); never take another begin's end.
            others = {t for t in trace_ids if t is not None and t != trace_id}
            matched = next((e for e in later if end_id(e) not in others), None)
        positional, keywords = call_arguments(begin)
        device_arg = keywords.get("device", positional[0] if positional else None)
        regions.append(
            Region(
                kind="ttnn",
                function=function,
                begin=begin,
                begin_statement=begin_statement,
                end=matched,
                trace_id=trace_id,
                start=begin_end,
                # Unmatched: recording stops at the next end of any trace on the device, if any.
                stop=module.start(matched) if matched is not None else (module.start(later[0]) if later else body_end),
                device=module.normalized(device_arg) if device_arg is not None else None,
                release_calls=releases,
                execute_calls=executes,
            )
        )
    _methods_running(project, function, regions, end_id)
    return regions


def _methods_running(project: Project, function: FunctionInfo, regions: list[Region], trace_id_of) -> None:
    """For a trace id kept on `self`, the other methods of the class that execute or release
    it (`self.tid` captured in `capture()`, replayed in `step()`)."""
    receiver = receiver_parameter(function)
    if receiver is None:
        return
    for region in regions:
        region.kept_as = _kept_on_receiver(function, region, receiver)
    kept = {r.kept_as for r in regions if r.kept_as is not None}
    if not kept:
        return
    api = tables().ttnn
    executes: dict[str, list] = {}
    releases: dict[str, list] = {}
    for method in function.cls.methods.values():
        # The trace id is spelled as the capturing method spells it (`self.tid`).
        if method is function or receiver_parameter(method) != receiver:
            continue
        for node in iter_body_nodes(method):
            if type(node) is not cst.Call:
                continue
            name = project.qualified_name(node.func, method.module, method)
            if name in api.execute or name in api.release:
                trace_id = trace_id_of(node, method.module)
                if trace_id in kept:
                    (executes if name in api.execute else releases).setdefault(trace_id, []).append((method, node))
    for region in regions:
        region.method_executes = executes.get(region.kept_as, [])
        region.method_releases = releases.get(region.kept_as, [])


def _kept_on_receiver(function: FunctionInfo, region: Region, receiver: str) -> Optional[str]:
    """The attribute of `self` the region's trace id is kept in: the begin's own target
    (`self.tid = begin(...)`), or an attribute the local id is stored in later (`tid =
    begin(...)` ... `self.tid = tid`, where the begin's binding of `tid` reaches the store)."""
    tid = region.trace_id
    if tid is None:
        return None
    if tid.startswith(f"{receiver}."):
        return tid
    if "." in tid:
        return None
    bindings = function.bindings
    for node in iter_body_nodes(function):
        if type(node) is not cst.Assign or not isinstance(node.value, cst.Name) or node.value.value != tid:
            continue
        target = single_assignment(node)
        on_receiver = isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == receiver
        if on_receiver and any(b.node is region.begin_statement for b in bindings.reaching(tid, node.value)):
            return f"{receiver}.{target.attr.value}"
    return None
