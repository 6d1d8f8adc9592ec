"""What ttnn's calls do (the [ttnn] table section), as effects rules subscribe to."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from ...semantic.nodes import call_arguments
from ..effects import CallEffect, Effect, Unit


def _given_device(call: cst.Call) -> bool:
    device = call_arguments(call)[1].get("device")
    return device is not None and not (isinstance(device, cst.Name) and device.value == "None")


def call_effects(api, call: cst.Call, name: Optional[str], unit: Unit) -> tuple[CallEffect, ...]:
    found: list[CallEffect] = []
    if name is not None:
        if name in api.host_to_device:
            found.append(CallEffect(Effect.TRANSFER, f"`{name}`", "copy into the trace input before `execute_trace` instead"))
        elif name in api.host_to_device_if_device_kwarg and _given_device(call):
            found.append(CallEffect(Effect.TRANSFER, f"`{name}(..., device=...)`", "create the input before capturing and copy into it"))
        if name in api.device_to_host:
            found.append(CallEffect(Effect.READ, f"`{name}`", "read it after `execute_trace`"))
        if name in api.syncs:
            found.append(CallEffect(Effect.SYNC, f"`{name}`", "the trace cannot record it"))
        if name in api.creators:
            found.append(CallEffect(Effect.CREATION, f"`{name}`", "preallocate it before `begin_trace_capture`"))
        if allocates(api, call, name):
            found.append(CallEffect(Effect.ALLOCATION, f"`{name}`"))
        if name in api.output_tensor_ops and "output_tensor" not in call_arguments(call)[1]:
            found.append(CallEffect(Effect.OUTPUT_ALLOCATION, f"`{name}`", "pass a preallocated `output_tensor=`", argument="output_tensor"))
        if name in api.open_device:
            found.append(CallEffect(Effect.OPEN_DEVICE, f"`{name}`", "pass `trace_region_size=` large enough for your traces", argument="trace_region_size"))
        for names, effect in ((api.capture_begin, Effect.BEGIN), (api.capture_end, Effect.END), (api.execute, Effect.EXECUTE), (api.release, Effect.RELEASE)):
            if name in names:
                found.append(CallEffect(effect, f"`{name}`"))
    if reads_by_method(api, call, unit):
        found.append(CallEffect(Effect.READ, f"`.{call.func.attr.value}()`"))  # type: ignore[union-attr]
    return tuple(found)


def allocates(api, call: cst.Call, name: Optional[str]) -> bool:
    """An allocator, or a creator or transfer given a device: a new device buffer."""
    if name is None:
        return False
    return name in api.device_allocators or ((name in api.creators or name in api.host_to_device_if_device_kwarg) and _given_device(call))


def trace_call(api, call: cst.Call, name: Optional[str]) -> Optional[tuple[str, Optional[cst.BaseExpression]]]:
    """`begin_trace_capture` makes a trace id; `execute_trace` and `release_trace` take one
    (their second argument, or `trace_id=`)."""
    if name is None:
        return None
    if name in api.capture_begin:
        return ("begin", None)
    for names, role in ((api.execute, "execute"), (api.release, "release")):
        if name in names:
            positional, keywords = call_arguments(call)
            return (role, keywords.get("trace_id", positional[1] if len(positional) > 1 else None))
    return None


def freed(api, call: cst.Call, name: Optional[str]) -> Optional[cst.BaseExpression]:
    """What `ttnn.deallocate(t)` or `t.deallocate()` frees."""
    if name in api.deallocate and call.args:
        return call.args[0].value
    if name is None and isinstance(call.func, cst.Attribute) and call.func.attr.value in api.deallocate_methods:
        return call.func.value
    return None


def reads_by_method(api, call: cst.Call, unit: Unit) -> bool:
    """`x.cpu()`, `x.item()`, ... on a receiver that is not a module or a known host value."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in api.read_methods:
        return False
    receiver = func.value
    if unit.qualified_name(receiver) is not None:
        return False  # a module attribute such as `np.item` is not a tensor method
    if isinstance(receiver, cst.Call) and unit.qualified_name(receiver.func) in api.device_to_host:
        return False  # already on the host
    if unit.torch.is_host(receiver):
        return False  # a torch tensor made on the host: nothing to read back
    return True
