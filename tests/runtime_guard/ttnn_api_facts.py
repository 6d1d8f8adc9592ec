"""What ttnn 0.81.1 itself does with each entry of the guard's API table section
(trace_lint/data/api.toml, [guard.effects]), on a mock device, inside a capture, unguarded, and
what each `program_cache_clears` method leaves in the program cache.

Run as `python ttnn_api_facts.py`; prints one line `TRACE_LINT_RESULT {json}`: entry -> the
effect seen (read, write-if-device, free, host-only, none) or what went wrong. Nothing here
launches a program, so one process probes every entry.
"""

from __future__ import annotations

import json
import sys
import traceback

import numpy as np
import ttnn

from trace_lint.runtime_guard import api
from trace_lint.runtime_guard.api import GUARD_EFFECTS


def host(shape=(32, 32)):
    return ttnn.Tensor(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape), ttnn.float32)


def probes(device):
    """entry -> (call with a device, call without one or None): each returns what it made."""
    tiled = lambda: ttnn.to_device(ttnn.to_layout(host(), ttnn.TILE_LAYOUT), device)  # noqa: E731
    one = lambda: ttnn.to_device(host((1,)), device)  # noqa: E731 - item() needs one element
    data = np.ones((32, 32), dtype=np.float32)
    return {
        "ttnn.Tensor": (lambda x: ttnn.Tensor(data, ttnn.float32, device=device, layout=ttnn.TILE_LAYOUT),
                        lambda x: ttnn.Tensor(data, ttnn.float32), tiled),
        "ttnn.Tensor(tensor)": (lambda x: ttnn.Tensor(x), None, tiled),
        "Tensor.to": (lambda x: ttnn.to_layout(host(), ttnn.TILE_LAYOUT).to(device),
                      lambda x: host().to(ttnn.TILE_LAYOUT), tiled),
        "Tensor.cpu": (lambda x: x.cpu(), None, tiled),
        "Tensor.to_numpy": (lambda x: x.to_numpy(), None, tiled),
        "Tensor.to_list": (lambda x: x.to_list(), None, tiled),
        "Tensor.item": (lambda x: x.item(), None, one),
        "Tensor.to_torch": (lambda x: x.to_torch(), None, tiled),
        "Tensor.to_torch_with_padded_shape": (lambda x: x.to_torch_with_padded_shape(), None, tiled),
        "Tensor.__repr__": (lambda x: repr(x), None, tiled),
        "Tensor.__str__": (lambda x: str(x), None, tiled),
        "Tensor.__format__": (lambda x: f"{x}", None, tiled),
        "Tensor.deallocate": (lambda x: x.deallocate(), None, tiled),
        "Tensor.host_buffer": (lambda x: x.host_buffer(), None, tiled),
        "Tensor.pad": (lambda x: x.pad((1, 1, 64, 64), (0, 0, 0, 0), 0.0), None, tiled),
        "Tensor.unpad": (lambda x: x.unpad((0, 0, 0, 0), (1, 1, 16, 16)), None, tiled),
        "Tensor.unpad_from_tile": (lambda x: x.unpad_from_tile((32, 32)), None, tiled),
        "Tensor.reshape": (lambda x: x.reshape((1, 1, 32, 32)), None, tiled),
        "Tensor.pad_to_tile": (lambda x: x.pad_to_tile(0.0), None, tiled),
    }


def buffers(device):
    return len(ttnn._ttnn.reports.get_buffers(device))


def observe(device, call, make):
    """Run `call` inside a capture on a fresh device tensor; what ttnn did."""
    x = make()
    before = buffers(device)
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    error = ""
    try:
        made = call(x)
    except Exception as failure:  # ttnn's own refusal
        error, made = str(failure), None
    finally:
        ttnn.end_trace_capture(device, tid, cq_id=0)
        ttnn.release_trace(device, tid)
    new = buffers(device) - before
    seen = {"error": error.splitlines()[0][:200] if error else "", "new_buffers": new,
            "freed": not x.is_allocated(), "refused_read": "Reads are not supported during trace capture" in error}
    del made, x
    return seen


def effect(with_device, without):
    if with_device["refused_read"]:
        return "read"
    if with_device["error"] and ("is_cpu_tensor" in with_device["error"] or "StorageType::HOST" in with_device["error"]):
        return "host-only"
    if with_device["error"]:
        return "error: " + with_device["error"]
    if with_device["freed"]:
        return "free"
    if with_device["new_buffers"] > 0:
        if without is not None and without["new_buffers"] > 0:
            return "writes even without a device"
        return "write-if-device"
    return "none"


def main() -> int:
    result = {}
    device = ttnn.open_device(device_id=0, trace_region_size=10_000_000)
    try:
        table = probes(device)
        for entry in GUARD_EFFECTS:
            if entry not in table:
                result[entry] = {"effect": "no probe for this entry in ttnn_api_facts.py"}
                continue
            call, call_without, make = table[entry]
            with_device = observe(device, call, make)
            without = observe(device, call_without, make) if call_without is not None else None
            result[entry] = {"effect": effect(with_device, without), "with_device": with_device, "without": without}
        x = probes(device)["Tensor.cpu"][2]()
        for entry in api.PROGRAM_CACHE_CLEARS:
            ttnn.relu(x)  # one program in the cache
            before = device.num_program_cache_entries()
            getattr(device, entry)()
            result["MeshDevice." + entry] = {"entries_before": before, "entries_after": device.num_program_cache_entries()}
            device.enable_program_cache()
    except BaseException:
        result["crash"] = traceback.format_exc()
    finally:
        ttnn.close_device(device)
    sys.stdout.write("\nTRACE_LINT_RESULT " + json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
