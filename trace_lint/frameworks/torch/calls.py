"""What torch's calls do in a CUDA graph capture (the [torch] table section), as effects
rules subscribe to."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from ...semantic.nodes import call_arguments, iter_body_nodes
from ..effects import CallEffect, Effect, Unit
from . import CUDA_GRAPH_KINDS


def call_effects(api, call: cst.Call, name: Optional[str], unit: Unit, graph_contract: bool) -> tuple[CallEffect, ...]:
    found: list[CallEffect] = []
    if name is not None and name in api.host_random and draws_on_the_host(api, unit, call, name):
        found.append(CallEffect(Effect.HOST_RANDOM, f"the CPU random draw `{name}`"))
    if not graph_contract:
        return tuple(found)
    what = host_to_device(api, unit, call, name)
    if what is not None:
        found.append(CallEffect(Effect.TRANSFER, what, "make the static input before capturing and `copy_` new data into it before `replay()`"))
    if unit.capture_kinds & CUDA_GRAPH_KINDS:
        what = device_to_host(api, unit, call)
        if what is not None:
            found.append(CallEffect(Effect.READ, what))
    what = sync_call(api, unit, call, name)
    if what is not None:
        found.append(CallEffect(Effect.SYNC, what, "a CUDA graph cannot record it and the capture fails"))
    created = host_creation(unit, call, name)
    if created is not None:
        found.append(CallEffect(
            Effect.CREATION, f"`{created}`",
            "it is made on the host: the graph does not record it, so replay reuses the value made at capture; make it on the device before capturing",
        ))
    return tuple(found)


def to_target(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The device argument of `x.to(device)` / `x.to(device=...)` (None for `x.to(dtype)` too)."""
    positional, keywords = call_arguments(call)
    return keywords.get("device", positional[0] if positional else None)


def host_to_device(api, unit: Unit, call: cst.Call, name: Optional[str]) -> Optional[str]:
    """What a torch host-to-device write is called, or None: `torch.tensor(data, device="cuda")`,
    `.cuda()` / `.to("cuda")` of a tensor known to be on the host."""
    facts = unit.torch
    if name is not None:
        if name in api.data_to_device and facts.creation_device(call) == "cuda":
            positional, _ = call_arguments(call)
            if not (positional and facts.is_device(positional[0])):
                return f"`{name}(..., device=<cuda>)`"
        return None
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in api.to_cuda_methods | api.to_methods or not facts.is_host(func.value):
        return None
    method = func.attr.value
    if method in api.to_cuda_methods:
        return f"`.{method}()` of a host tensor"
    if method in api.to_methods and facts.device_kind(to_target(call)) == "cuda":
        return f"`.{method}(<cuda>)` of a host tensor"
    return None


def device_to_host(api, unit: Unit, call: cst.Call) -> Optional[str]:
    """`.to("cpu")` of a tensor not known to be on the host already."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in api.to_methods:
        return None
    if unit.qualified_name(func.value) is not None or unit.torch.is_host(func.value):
        return None
    if unit.torch.device_kind(to_target(call)) == "cpu":
        return f"`.{func.attr.value}(\"cpu\")`"
    return None


def host_creation(unit: Unit, call: cst.Call, name: Optional[str]) -> Optional[str]:
    """The name of a torch creation call that makes a host tensor."""
    if name is None or not name.startswith("torch."):
        return None
    return name if unit.torch.creation_device(call) == "cpu" else None


def _constructs_stream_or_event(api, unit: Unit, expr: Optional[cst.BaseExpression]) -> bool:
    return isinstance(expr, cst.Call) and unit.qualified_name(expr.func) in api.streams_and_events


def is_stream_or_event(api, unit: Unit, receiver: cst.BaseExpression) -> bool:
    """`torch.cuda.current_stream()`, a local bound only to streams or events, or `self.attr`
    constructed as one."""
    if _constructs_stream_or_event(api, unit, receiver):
        return True
    function = unit.function
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
        return bool(values) and all(_constructs_stream_or_event(api, unit, v) for v in values)
    if (
        isinstance(receiver, cst.Attribute)
        and isinstance(receiver.value, cst.Name)
        and function.cls is not None
        and function.params
        and receiver.value.value == function.params[0]
    ):
        constructor = function.cls.attribute_types.get(receiver.attr.value)
        return constructor is not None and unit.facts.qualified_name(constructor, function.cls.module, None) in api.streams_and_events
    return False


def sync_call(api, unit: Unit, call: cst.Call, name: Optional[str]) -> Optional[str]:
    """`torch.cuda.synchronize()`, or `.synchronize()` / `.query()` of a stream or event."""
    if name is not None:
        return f"`{name}`" if name in api.syncs else None
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in api.sync_methods and is_stream_or_event(api, unit, func.value):
        return f"`.{func.attr.value}()` of a CUDA stream or event"
    return None


def draws_on_the_host(api, unit: Unit, call: cst.Call, name: str) -> bool:
    if name not in api.random_from_input:
        return _host_generator(call)
    # Drawn on its input's device: a host draw only where that input is known host.
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    return bool(positional) and unit.torch.is_host(positional[0])


def _host_generator(call: cst.Call) -> bool:
    """A creation-style draw (`torch.rand(n)`): on the host unless a device or generator says
    otherwise."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in ("device", "generator"):
            value = arg.value
            return isinstance(value, cst.SimpleString) and "cpu" in value.value
    return True
