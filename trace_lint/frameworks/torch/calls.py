"""What torch's calls do in a CUDA graph capture (the [torch] table section), as effects
rules subscribe to."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from ...semantic.nodes import call_arguments
from ...semantic.receivers import receiver_parameter
from ..effects import CallEffect, Effect, Unit
from . import CUDA_GRAPH_KINDS

_BITWISE = (cst.BitAnd, cst.BitOr, cst.BitXor)
_SYNCS_IN_A_GRAPH = "it synchronizes, which a CUDA-graph capture does not allow"


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
    if unit.capture_kinds & CUDA_GRAPH_KINDS:
        what = data_dependent_shape(api, unit, call, name)
        if what is not None:
            found.append(CallEffect(Effect.DATA_DEPENDENT_SHAPE, what, _SYNCS_IN_A_GRAPH))
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
        values = [b.value if b.kind == "assign" else None for b in _reaching(function, receiver)]
        return bool(values) and all(_constructs_stream_or_event(api, unit, v) for v in values)
    if (
        isinstance(receiver, cst.Attribute)
        and isinstance(receiver.value, cst.Name)
        and function.cls is not None
        and receiver.value.value == receiver_parameter(function)
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


def data_dependent_shape(api, unit: Unit, call: cst.Call, name: Optional[str]) -> Optional[str]:
    """`torch.nonzero(x)`, `x.unique()`, `torch.where(cond)` with the condition alone."""
    if name is not None:
        if name in api.data_dependent_shape:
            return f"`{name}`"
        if name in api.data_dependent_if_single_argument and len(call.args) == 1 and call.args[0].keyword is None and not call.args[0].star:
            return f"`{name}(condition)`, which is `nonzero`,"
        return None
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in api.data_dependent_shape_methods and unit.qualified_name(func.value) is None:
        return f"`.{func.attr.value}()`"
    return None


def subscript_effects(api, unit: Unit, node: cst.Subscript) -> tuple[CallEffect, ...]:
    """Indexing with a boolean mask (`x[x > 0]`, `x[mask]`) in a CUDA graph."""
    if not unit.capture_kinds & CUDA_GRAPH_KINDS:
        return ()
    for element in node.slice:
        if isinstance(element.slice, cst.Index) and is_mask(api, unit, element.slice.value, node.value, 0):
            return (CallEffect(Effect.DATA_DEPENDENT_SHAPE, "indexing with a boolean mask", _SYNCS_IN_A_GRAPH),)
    return ()


def is_mask(api, unit: Unit, expr: cst.BaseExpression, indexed: cst.BaseExpression, depth: int) -> bool:
    """A boolean tensor: a comparison of a tensor, a boolean op's result, or a name bound only to those."""
    if depth > 4:
        return False
    if isinstance(expr, cst.Comparison):
        if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in expr.comparisons):
            return False
        operands = [expr.left, *(c.comparator for c in expr.comparisons)]
        root = _root_name(indexed)
        return any(unit.torch.is_device(o) or unit.torch.is_host(o) or (root is not None and _root_name(o) == root) for o in operands)
    if isinstance(expr, cst.Call):
        name = unit.qualified_name(expr.func)
        if name is not None:
            return name in api.boolean_functions
        return isinstance(expr.func, cst.Attribute) and expr.func.attr.value in api.boolean_methods
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
        return is_mask(api, unit, expr.expression, indexed, depth + 1)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _BITWISE):
        return is_mask(api, unit, expr.left, indexed, depth + 1) or is_mask(api, unit, expr.right, indexed, depth + 1)
    if isinstance(expr, cst.Name):
        values = _local_values(unit.function, expr)
        return bool(values) and all(v is not None and is_mask(api, unit, v, indexed, depth + 1) for v in values)
    return False


def _root_name(expr: cst.BaseExpression) -> Optional[str]:
    """`x` for `x`, `x.abs()`, `x[0]`, `x.data`: the tensor an expression is computed from."""
    while True:
        if isinstance(expr, cst.Name):
            return expr.value
        if isinstance(expr, cst.Attribute):
            expr = expr.value
        elif isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            expr = expr.func.value
        else:
            return None


def _reaching(function, name: cst.Name) -> tuple:
    """The binder's bindings of a local name (not a parameter) that can reach this read."""
    if function is None or name.value in function.params or not function.bindings.binds(name.value, name):
        return ()
    return function.bindings.reaching(name.value, name)


def _local_values(function, name: cst.Name) -> list[Optional[cst.BaseExpression]]:
    """What a local name read here is bound to by `=`, `: T =` or `:=` (None for other bindings)."""
    return [b.value if b.kind in ("assign", "annassign", "walrus") else None for b in _reaching(function, name)]


