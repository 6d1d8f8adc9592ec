"""The ttnn and torch names the runtime guard patches or classifies.

The names come from the reviewed table the static rules read too (trace_lint/data/api.toml,
through trace_lint.core.api_tables), so the two sides cannot drift: a new API name goes into that
table once. What is left here is how the guard acts on each category (violation kinds, hints)
and the few names that only exist at run time (dunder methods, aten op packets).
"""

from __future__ import annotations

from trace_lint.core.api_tables import tables as _tables

_TTNN = _tables().ttnn
_TORCH = _tables().torch


def _short(names, prefix: str = "ttnn.") -> list[str]:
    """"ttnn.zeros" -> "zeros" (the attribute of the module), sorted for a stable order."""
    return sorted(name[len(prefix):] for name in names if name.startswith(prefix))

# Violation kinds. Each maps to the static rule that would have caught it (see KINDS).
HOST_TRANSFER = "host-transfer"
DEVICE_READ = "device-read"
SYNC = "sync"
CACHE_MISS = "program-cache-miss"
TENSOR_CREATION = "tensor-creation"
HOST_WORK = "host-tensor-work"
HOST_READ = "host-read"
NESTED_BEGIN = "nested-begin"
LEFT_OPEN = "capture-left-open"
STALE_INPUT = "stale-input"
FREED_INPUT = "freed-trace-input"
ALIVE_ACROSS_REPLAY = "alive-across-replay"
# CUDA graph kinds: same codes, hints in CUDA terms.
CUDA_HOST_READ = "cuda-host-read"
CUDA_HOST_TRANSFER = "cuda-host-transfer"
CUDA_SYNC = "cuda-sync"
CUDA_HOST_WORK = "cuda-host-work"
CUDA_TENSOR_CREATION = "cuda-tensor-creation"
DATA_DEPENDENT_SHAPE = "data-dependent-shape"
CUDA_LEFT_OPEN = "cuda-capture-left-open"


class KindInfo:
    __slots__ = ("code", "title", "hint", "raises_at_call")

    def __init__(self, code: str, title: str, hint: str, raises_at_call: bool) -> None:
        self.code = code
        self.title = title
        self.hint = hint
        # True: mode "raise" stops the call before ttnn runs it (ttnn would fail or hang).
        self.raises_at_call = raises_at_call


KINDS: dict[str, KindInfo] = {
    HOST_TRANSFER: KindInfo(
        "TRC101",
        "host-to-device transfer inside a capture",
        "write inputs before begin_trace_capture (or between replays) with "
        "ttnn.copy_host_to_device_tensor into a preallocated device tensor",
        True,
    ),
    DEVICE_READ: KindInfo(
        "TRC102",
        "device-to-host read inside a capture",
        "read results after end_trace_capture / execute_trace, never while recording",
        True,
    ),
    SYNC: KindInfo(
        "TRC103",
        "synchronization or event inside a capture",
        "synchronize or record events outside the capture, around execute_trace",
        True,
    ),
    CACHE_MISS: KindInfo(
        "TRC404",
        "program-cache miss: this op signature never ran before the capture",
        "run the same work once, with the same shapes, dtypes, layouts and configs, before begin_trace_capture",
        True,
    ),
    TENSOR_CREATION: KindInfo(
        "TRC301",
        "tensor creation inside a capture",
        "allocate the tensor before begin_trace_capture and pass it in (output_tensor= for op results)",
        False,
    ),
    HOST_WORK: KindInfo(
        "TRC301",
        "host tensor work inside a capture (replay will not repeat it)",
        "do host-side tensor work before the capture; the trace replays device commands only",
        False,
    ),
    HOST_READ: KindInfo(
        "TRC102",
        "host value read inside a capture (replay will not read it again)",
        "read host values before the capture; inside it, keep the data on the device",
        False,
    ),
    NESTED_BEGIN: KindInfo(
        "TRC406",
        "begin_trace_capture while another capture is recording on this device",
        "end (end_trace_capture) the outer capture before beginning another",
        True,
    ),
    LEFT_OPEN: KindInfo(
        "TRC401",
        "capture left open",
        "call end_trace_capture in a finally block right after begin_trace_capture",
        False,
    ),
    STALE_INPUT: KindInfo(
        "TRC403",
        "stale trace input: the buffer the trace reads was freed or replaced since capture",
        "keep the captured input tensor alive and copy new data into it "
        "(ttnn.copy_host_to_device_tensor) instead of rebinding it",
        True,
    ),
    FREED_INPUT: KindInfo(
        "TRC302",
        "a buffer the trace uses was deallocated",
        "deallocate trace inputs and outputs only after the last execute_trace and release_trace",
        False,
    ),
    ALIVE_ACROSS_REPLAY: KindInfo(
        "TRC408",
        "device buffer allocated after the capture is alive across execute_trace",
        "free it before execute_trace, allocate it before the capture, or acknowledge it with "
        "ttnn.tools.trace_allocation_tracker.corruptible_allocation_scope()",
        True,
    ),
    # CUDA graphs. raises_at_call is not used there: a call stops before torch runs it (mode
    # "raise") when CUDA itself would fail it, i.e. when it touches a GPU tensor or syncs.
    CUDA_HOST_READ: KindInfo(
        "TRC102",
        "host read inside a CUDA graph capture (replay will not read it again)",
        "read results after capture_end() / replay(); inside the graph keep values on the GPU "
        "(torch.where instead of `if x.item()`)",
        False,
    ),
    CUDA_HOST_TRANSFER: KindInfo(
        "TRC101",
        "host-to-device copy inside a CUDA graph capture",
        "copy new inputs into the graph's static GPU tensors before replay() (static_x.copy_(x))",
        False,
    ),
    CUDA_SYNC: KindInfo(
        "TRC103",
        "synchronization inside a CUDA graph capture (CUDA error 900)",
        "synchronize or query streams and events outside the capture, after replay()",
        True,
    ),
    CUDA_HOST_WORK: KindInfo(
        "TRC301",
        "CPU tensor work inside a CUDA graph capture (replay will not repeat it)",
        "do CPU tensor work before the capture, or keep it on the GPU: replay repeats GPU kernels only",
        False,
    ),
    CUDA_TENSOR_CREATION: KindInfo(
        "TRC301",
        "CPU tensor created inside a CUDA graph capture (replay will not create it again)",
        "create the tensor before the capture, or on the GPU (device='cuda')",
        False,
    ),
    DATA_DEPENDENT_SHAPE: KindInfo(
        "TRC501",
        "op with a data-dependent output shape inside a CUDA graph capture",
        "use a fixed-shape form: torch.where / masked_fill instead of a boolean index, "
        "torch.nonzero_static(size=...) instead of nonzero",
        False,
    ),
    CUDA_LEFT_OPEN: KindInfo(
        "TRC401",
        "CUDA graph capture left open",
        "call capture_end() in a finally block right after capture_begin(), or use `with torch.cuda.graph(g):`",
        False,
    ),
}

# Plain (nanobind) functions, patched as attributes of the module `ttnn`, and their role.
# `_ttnn_execute_trace` is what `ttnn.execute_trace` calls when ttnn's allocation tracker
# wraps it (TT_METAL_TRACE_ALLOC_TRACKING=1); without the tracker both names are one object.
TTNN_FUNCTIONS: dict[str, str] = {
    **{name: "begin" for name in _short(_TTNN.capture_begin)},
    **{name: "end" for name in _short(_TTNN.capture_end)},
    **{name: "execute" for name in _short(_TTNN.execute) + _short(_TTNN.execute_aliases)},
    **{name: "release" for name in _short(_TTNN.release)},
    **{name: "sync" for name in _short(_TTNN.syncs)},
}

# The class whose __call__ every registered ttnn op goes through (797 ops in 0.81.1).
FAST_OPERATION = ("decorators", "FastOperation")

# Tensor methods that read device memory back to the host (those ttnn.Tensor has), and
# repr, which prints the values (str and format fall back to it: the table's `formatting`).
TENSOR_READ_METHODS: tuple[str, ...] = tuple(sorted(_TTNN.read_methods)) + (
    ("__repr__",) if "repr" in _tables().python.formatting else ()
)
# Tensor.to(device) writes a host tensor to the device; Tensor.to(layout) stays on the host.
TENSOR_TRANSFER_METHODS: tuple[str, ...] = tuple(sorted(_TTNN.transfer_methods))
TENSOR_FREE_METHODS: tuple[str, ...] = tuple(sorted(_TTNN.deallocate_methods))

# Host data in, device tensor out when a device is given: a transfer and a creation.
OPS_TRANSFER_IF_DEVICE: frozenset[str] = frozenset(_TTNN.host_to_device_if_device_kwarg)
# Registered ops by python_fully_qualified_name whose kind does not depend on the inputs.
# Constructors (ttnn.Tensor) are no registered op; the transfer-if-device ops are decided per call.
OP_KINDS: dict[str, str] = {
    **{name: TENSOR_CREATION for name in sorted(_TTNN.creators - _TTNN.tensor_types - OPS_TRANSFER_IF_DEVICE)},
    **{name: HOST_TRANSFER for name in sorted(_TTNN.host_to_device)},
    **{name: DEVICE_READ for name in sorted(_TTNN.device_to_host)},
}
# Ops that free a buffer.
FREE_OPS: frozenset[str] = frozenset(_TTNN.deallocate)
# Ops that compile no program, so they never miss the program cache.
NO_PROGRAM_OPS: frozenset[str] = frozenset(_TTNN.deallocate)
# Keyword arguments that pick a command queue; not part of an op's program signature.
QUEUE_KWARGS: frozenset[str] = frozenset({"queue_id", "cq_id"})

# The ttnn allocation tracker's replay error (ttnn/tools/trace_allocation_tracker.py).
TRACKER_ERROR_MARKER = "still alive before trace replay"

# torch, seen through a TorchFunctionMode while a ttnn capture is open.
TORCH_READ_FUNCTIONS: frozenset[str] = frozenset(
    {"item", "tolist", "numpy", "cpu", "__repr__", "__format__", "__bool__", "__int__", "__float__", "__index__"}
)
# torch functions that make a tensor (names as TorchFunctionMode sees them), and `clone`, a
# method that makes one too: during a ttnn capture any of them is host work replay skips.
TORCH_CREATION_FUNCTIONS: frozenset[str] = frozenset(
    _short(_TORCH.creators | _TORCH.host_creators | _TORCH.like_creators, "torch.")
) | frozenset({"clone"})
# Host metadata, not tensor work: reading these during a capture is harmless.
TORCH_METADATA_FUNCTIONS: frozenset[str] = frozenset(
    {
        "__get__", "__set__", "size", "dim", "ndimension", "numel", "nelement", "stride",
        "is_contiguous", "element_size", "get_device", "is_floating_point", "is_complex",
        "data_ptr", "storage_offset", "__len__", "__hash__", "requires_grad_", "__torch_function__",
    }
)

# ---------------------------------------------------------------- CUDA graphs (torch)
# Methods of torch.cuda.CUDAGraph, patched while a guard is active (torch.cuda.graph and
# make_graphed_callables call them).
CUDA_GRAPH_METHODS: dict[str, str] = {
    **{name: "begin" for name in sorted(_TORCH.graph_begin_methods)},
    **{name: "end" for name in sorted(_TORCH.graph_end_methods)},
    **{name: "replay" for name in sorted(_TORCH.graph_replay_methods)},
}
# Functions that block the host on the GPU: (module under torch, name), and stream and event
# methods that block on, or poll, the GPU: (class under torch.cuda, method). Both from `syncs`.
CUDA_SYNC_FUNCTIONS: tuple[tuple[str, str], ...] = tuple(
    tuple(name.split(".")[1:]) for name in sorted(_TORCH.syncs) if name.count(".") == 2  # type: ignore[misc]
)
CUDA_SYNC_METHODS: tuple[tuple[str, str], ...] = tuple(
    tuple(name.split(".")[2:]) for name in sorted(_TORCH.syncs)  # type: ignore[misc]
    if name.startswith("torch.cuda.") and name.count(".") == 3
)
# TorchFunctionMode names that read tensor values into Python (TORCH_READ_FUNCTIONS above) and
# torch functions whose output shape depends on the values of their input.
CUDA_DATA_DEPENDENT_FUNCTIONS: frozenset[str] = frozenset(
    _short(_TORCH.data_dependent_shape | _TORCH.data_dependent_unless_output_size, "torch.")
) | _TORCH.data_dependent_shape_methods | _TORCH.data_dependent_unless_output_size_methods
# The same at the aten level (TorchDispatchMode, overload packet names): seen also when torch
# calls them inside a composite op. repeat_interleave counts only without output_size.
ATEN_HOST_READS: frozenset[str] = frozenset({"_local_scalar_dense", "item"})
ATEN_DATA_DEPENDENT: frozenset[str] = frozenset(
    {"nonzero", "argwhere", "masked_select", "_unique", "_unique2", "unique_dim", "unique_consecutive",
     "bincount", "repeat_interleave"}
)
# aten ops that copy between devices: a copy to the CPU is a host read, from the CPU a transfer.
ATEN_COPIES: frozenset[str] = frozenset({"_to_copy", "copy_", "_copy_from", "_copy_from_and_resize"})
# Indexing ops whose boolean index makes the output shape data-dependent.
ATEN_INDEXING: frozenset[str] = frozenset({"index"})
# x[mask] = values: data-dependent unless the value is a single element (a masked fill).
ATEN_INDEX_PUTS: frozenset[str] = frozenset({"index_put", "index_put_", "_index_put_impl_"})
# Environment switch: "0" keeps the guard off torch (ttnn only).
TORCH_ENV = "TRACE_LINT_GUARD_TORCH"
