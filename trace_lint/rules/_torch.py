"""Questions the rules ask about torch calls in captured code; names come from the [torch] table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from ..semantic.nodes import call_arguments, iter_body_nodes

if TYPE_CHECKING:
    from ..capture.facts import RuleContext


def to_target(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The device argument of `x.to(device)` / `x.to(device=...)` (None for `x.to(dtype)` too)."""
    positional, keywords = call_arguments(call)
    return keywords.get("device", positional[0] if positional else None)


def host_to_device(context: RuleContext, call: cst.Call) -> Optional[str]:
    """What a torch host-to-device write is called, or None: `torch.tensor(data, device="cuda")`,
    `.cuda()` / `.to("cuda")` of a tensor known to be on the host."""
    api = context.tables.torch
    facts = context.torch
    name = context.qualified_name(call.func)
    if name is not None:
        if name in api.data_to_device and facts.creation_device(call) == "cuda":
            positional, _ = call_arguments(call)
            if not (positional and facts.is_device(positional[0])):
                return f"`{name}(..., device=<cuda>)`"
        return None
    func = call.func
    if not isinstance(func, cst.Attribute) or not facts.is_host(func.value):
        return None
    method = func.attr.value
    if method in api.to_cuda_methods:
        return f"`.{method}()` of a host tensor"
    if method in api.to_methods and facts.device_kind(to_target(call)) == "cuda":
        return f"`.{method}(<cuda>)` of a host tensor"
    return None


def device_to_host(context: RuleContext, call: cst.Call) -> Optional[str]:
    """`.to("cpu")` of a tensor not known to be on the host already."""
    api = context.tables.torch
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in api.to_methods:
        return None
    if context.qualified_name(func.value) is not None or context.torch.is_host(func.value):
        return None
    if context.torch.device_kind(to_target(call)) == "cpu":
        return f"`.{func.attr.value}(\"cpu\")`"
    return None


def host_creation(context: RuleContext, call: cst.Call) -> Optional[str]:
    """The name of a torch creation call that makes a host tensor."""
    name = context.qualified_name(call.func)
    if name is None or not name.startswith("torch."):
        return None
    return name if context.torch.creation_device(call) == "cpu" else None


def _constructs_stream_or_event(context: RuleContext, expr: Optional[cst.BaseExpression]) -> bool:
    return isinstance(expr, cst.Call) and context.qualified_name(expr.func) in context.tables.torch.streams_and_events


def is_stream_or_event(context: RuleContext, receiver: cst.BaseExpression) -> bool:
    """`torch.cuda.current_stream()`, a local bound only to streams or events, or `self.attr`
    constructed as one."""
    if _constructs_stream_or_event(context, receiver):
        return True
    function = context.function
    if function is None:
        return False
    if isinstance(receiver, cst.Name) and receiver.value not in function.params:
        values = []
        for node in iter_body_nodes(function):
            if isinstance(node, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == receiver.value for t in node.targets):
                values.append(node.value)
            elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.AsName, cst.NamedExpr)):
                target = getattr(node, "target", None) or getattr(node, "name", None)
                if isinstance(target, cst.Name) and target.value == receiver.value:
                    values.append(None)
        return bool(values) and all(_constructs_stream_or_event(context, v) for v in values)
    if (
        isinstance(receiver, cst.Attribute)
        and isinstance(receiver.value, cst.Name)
        and function.cls is not None
        and function.params
        and receiver.value.value == function.params[0]
    ):
        constructor = function.cls.attribute_types.get(receiver.attr.value)
        return constructor is not None and context.facts.qualified_name(constructor, function.cls.module, None) in context.tables.torch.streams_and_events
    return False


def sync_call(context: RuleContext, call: cst.Call) -> Optional[str]:
    """`torch.cuda.synchronize()`, or `.synchronize()` / `.query()` of a stream or event."""
    api = context.tables.torch
    name = context.qualified_name(call.func)
    if name is not None:
        return f"`{name}`" if name in api.syncs else None
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in api.sync_methods and is_stream_or_event(context, func.value):
        return f"`.{func.attr.value}()` of a CUDA stream or event"
    return None
