"""The one table of ttnn and torch names the runtime guard patches or classifies.

Everything the guard knows about ttnn 0.81.1's and torch's (CUDA graphs) surface lives here,
so a new release means editing this file only.
"""

from __future__ import annotations

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

# Plain (nanobind) functions, patched as attributes of the module `ttnn`.
# `_ttnn_execute_trace` is what `ttnn.execute_trace` calls when ttnn's allocation tracker
# wraps it (TT_METAL_TRACE_ALLOC_TRACKING=1); without the tracker both names are one object.
TTNN_FUNCTIONS: dict[str, str] = {
    "begin_trace_capture": "begin",
    "end_trace_capture": "end",
    "execute_trace": "execute",
    "_ttnn_execute_trace": "execute",
    "release_trace": "release",
    "synchronize_device": "sync",
    "record_event": "sync",
    "wait_for_event": "sync",
    "event_synchronize": "sync",
}

# The class whose __call__ every registered ttnn op goes through (797 ops in 0.81.1).
FAST_OPERATION = ("decorators", "FastOperation")

# Tensor methods that read device memory back to the host (repr prints the values;
# str and format fall back to repr).
TENSOR_READ_METHODS: tuple[str, ...] = (
    "cpu",
    "to_torch",
    "to_torch_with_padded_shape",
    "to_numpy",
    "to_list",
    "item",
    "__repr__",
)
# Tensor.to(device) writes a host tensor to the device; Tensor.to(layout) stays on the host.
TENSOR_TRANSFER_METHODS: tuple[str, ...] = ("to",)
TENSOR_FREE_METHODS: tuple[str, ...] = ("deallocate",)

# Registered ops by python_fully_qualified_name whose kind does not depend on the inputs.
OP_KINDS: dict[str, str] = {
    "ttnn.to_device": HOST_TRANSFER,
    "ttnn.copy_host_to_device_tensor": HOST_TRANSFER,
    "ttnn.copy_host_to_device_tensor_partial": HOST_TRANSFER,
    "ttnn.from_device": DEVICE_READ,
    "ttnn.to_torch": DEVICE_READ,
    "ttnn.copy_device_to_host_tensor": DEVICE_READ,
    "ttnn.zeros": TENSOR_CREATION,
    "ttnn.ones": TENSOR_CREATION,
    "ttnn.full": TENSOR_CREATION,
    "ttnn.empty": TENSOR_CREATION,
    "ttnn.rand": TENSOR_CREATION,
    "ttnn.randn": TENSOR_CREATION,
    "ttnn.arange": TENSOR_CREATION,
    "ttnn.zeros_like": TENSOR_CREATION,
    "ttnn.ones_like": TENSOR_CREATION,
    "ttnn.full_like": TENSOR_CREATION,
    "ttnn.empty_like": TENSOR_CREATION,
    "ttnn.allocate_tensor_on_device": TENSOR_CREATION,
    "ttnn.allocate_tensor_on_host": TENSOR_CREATION,
    "ttnn.from_buffer": TENSOR_CREATION,
}
# Host data in, device tensor out when a device is given: a transfer and a creation.
OPS_TRANSFER_IF_DEVICE: frozenset[str] = frozenset({"ttnn.from_torch", "ttnn.as_tensor"})
# Ops that free a buffer.
FREE_OPS: frozenset[str] = frozenset({"ttnn.deallocate"})
# Ops that compile no program, so they never miss the program cache.
NO_PROGRAM_OPS: frozenset[str] = frozenset({"ttnn.deallocate"})
# Keyword arguments that pick a command queue; not part of an op's program signature.
QUEUE_KWARGS: frozenset[str] = frozenset({"queue_id", "cq_id"})

# The ttnn allocation tracker's replay error (ttnn/tools/trace_allocation_tracker.py).
TRACKER_ERROR_MARKER = "still alive before trace replay"

# torch, seen through a TorchFunctionMode while a ttnn capture is open.
TORCH_READ_FUNCTIONS: frozenset[str] = frozenset(
    {"item", "tolist", "numpy", "cpu", "__repr__", "__format__", "__bool__", "__int__", "__float__", "__index__"}
)
TORCH_CREATION_FUNCTIONS: frozenset[str] = frozenset(
    {
        "tensor", "as_tensor", "asarray", "from_numpy", "frombuffer",
        "zeros", "ones", "full", "empty", "empty_strided", "eye",
        "rand", "randn", "randint", "randperm", "normal",
        "arange", "range", "linspace", "logspace",
        "zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like", "randint_like",
        "clone",
    }
)
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
CUDA_GRAPH_METHODS: dict[str, str] = {"capture_begin": "begin", "capture_end": "end", "replay": "replay"}
# Functions that block the host on the GPU: (module under torch, name).
CUDA_SYNC_FUNCTIONS: tuple[tuple[str, str], ...] = (("cuda", "synchronize"), ("accelerator", "synchronize"))
# Stream and event methods that block on, or poll, the GPU: (class under torch.cuda, method).
CUDA_SYNC_METHODS: tuple[tuple[str, str], ...] = (
    ("Stream", "synchronize"),
    ("Stream", "query"),
    ("Event", "synchronize"),
    ("Event", "query"),
)
# TorchFunctionMode names that read tensor values into Python (TORCH_READ_FUNCTIONS above) and
# torch functions whose output shape depends on the values of their input.
CUDA_DATA_DEPENDENT_FUNCTIONS: frozenset[str] = frozenset(
    {"nonzero", "argwhere", "masked_select", "unique", "unique_consecutive", "bincount", "repeat_interleave"}
)
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
