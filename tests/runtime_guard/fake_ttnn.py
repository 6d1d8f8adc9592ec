"""A small stand-in for the parts of ttnn 0.81.1 the guard touches, for tests without ttnn.

Same names and call shapes as the real module (FastOperation.__call__ -> self.function,
module-level trace functions, Tensor read methods); a device that tracks a capture and, like
ttnn, refuses reads while one is open. The real-ttnn behaviour is covered by test_ttnn_mock.py.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import types
from typing import Any, Callable


class StorageType(enum.Enum):
    HOST = 0
    DEVICE = 1


class DataType(enum.Enum):
    FLOAT32 = 0
    BFLOAT16 = 1


class Layout(enum.Enum):
    ROW_MAJOR = 0
    TILE = 1


class BufferType(enum.Enum):
    DRAM = 0
    L1 = 1


@dataclasses.dataclass(frozen=True)
class MemoryConfig:
    buffer_type: BufferType = BufferType.DRAM


DRAM_MEMORY_CONFIG = MemoryConfig()


class MeshDevice:
    def __init__(self) -> None:
        self.capturing: dict[int, int] = {}  # cq -> trace id
        self.traces: set[int] = set()
        self.buffers: dict[int, int] = {}  # address -> uid
        self._ids = itertools.count()
        self._uids = itertools.count()
        self.log: list[str] = []

    def __repr__(self) -> str:
        return "MeshDevice(fake)"

    def allocate(self) -> tuple[int, int]:
        address = 0x1000
        while address in self.buffers:
            address += 0x1000
        uid = next(self._uids)
        self.buffers[address] = uid
        return address, uid


class Tensor:
    def __init__(self, shape=(32, 32), dtype=DataType.FLOAT32, layout=Layout.TILE, device=None) -> None:
        self.shape = tuple(shape)
        self.dtype = dtype
        self.layout = layout
        self._device = device
        self._address = self._uid = None
        if device is not None:
            self._address, self._uid = device.allocate()

    # metadata
    def storage_type(self):
        return StorageType.DEVICE if self._device is not None else StorageType.HOST

    def device(self):
        return self._device

    def memory_config(self):
        return DRAM_MEMORY_CONFIG

    def buffer_address(self):
        if self._device is None or self._address is None:
            raise RuntimeError("not allocated")
        return self._address

    def buffer_unique_id(self):
        if self._device is None or self._address is None:
            raise RuntimeError("not allocated")
        return self._uid

    def _free(self):
        if self._device is not None and self._address is not None:
            self._device.buffers.pop(self._address, None)
            self._address = None

    def deallocate(self, force: bool = True):
        self._free()

    def __del__(self):
        # Like ttnn's C++ destructor: frees the buffer without going through Python methods.
        Tensor._free(self)

    # reads
    def _read(self):
        if self._device is not None and self._device.capturing:
            raise RuntimeError("TT_FATAL: Reads are not supported during trace capture.")
        return [[0.0] * self.shape[-1]] * self.shape[0]

    def cpu(self):
        self._read()
        return type(self)(self.shape, self.dtype, self.layout)

    def to_numpy(self):
        return self._read()

    def to_list(self):
        return self._read()

    def to_torch(self):
        return self._read()

    def to_torch_with_padded_shape(self):
        return self._read()

    def item(self):
        return self._read()[0][0]

    def __repr__(self):
        self._read()
        return f"ttnn.Tensor(shape={self.shape})"

    def to(self, target, *args, **kwargs):
        if isinstance(target, MeshDevice):
            return type(self)(self.shape, self.dtype, self.layout, device=target)
        return type(self)(self.shape, self.dtype, target, device=self._device)


@dataclasses.dataclass
class FastOperation:
    python_fully_qualified_name: str
    function: Callable

    def __call__(self, *args, **kwargs):
        return self.function(*args, **kwargs)


def _device_of(args, kwargs):
    for value in list(args) + list(kwargs.values()):
        if isinstance(value, Tensor) and value._device is not None:
            return value._device
        if isinstance(value, MeshDevice):
            return value
    return None


def _op_function(name: str) -> Callable:
    def run(*args, **kwargs):
        device = _device_of(args, kwargs)
        if device is not None:
            device.log.append(name)
        out = kwargs.get("output_tensor")
        if out is not None:
            return out
        first = next(a for a in args if isinstance(a, Tensor))
        return type(first)(first.shape, first.dtype, first.layout, device=device)

    return run


def _zeros_for(tensor_class):
    def zeros(shape, dtype=DataType.FLOAT32, layout=Layout.TILE, device=None, memory_config=None):
        if device is not None:
            device.log.append("ttnn.zeros")
        return tensor_class(shape, dtype, layout, device=device)

    return zeros


def _to_device(tensor, device, memory_config=None):
    device.log.append("ttnn.to_device")
    return type(tensor)(tensor.shape, tensor.dtype, tensor.layout, device=device)


def _from_device(tensor):
    tensor._read()
    return type(tensor)(tensor.shape, tensor.dtype, tensor.layout)


def _deallocate(tensor, force=True):
    tensor.deallocate(force)


def make_ttnn() -> types.ModuleType:
    """A fresh fake ttnn module (a new one per test, so patches cannot leak between tests)."""
    ttnn = types.ModuleType("fake_ttnn_instance")
    ttnn.Tensor = type("Tensor", (Tensor,), {})
    ttnn.MeshDevice = MeshDevice
    ttnn.StorageType = StorageType
    ttnn.DataType = DataType
    ttnn.Layout = Layout
    ttnn.float32 = DataType.FLOAT32
    ttnn.TILE_LAYOUT = Layout.TILE
    fast = type("FastOperation", (FastOperation,), {"__call__": FastOperation.__call__})
    ttnn.decorators = types.SimpleNamespace(FastOperation=fast)
    for name, function in {
        "add": _op_function("ttnn.add"),
        "relu": _op_function("ttnn.relu"),
        "zeros": _zeros_for(ttnn.Tensor),
        "to_device": _to_device,
        "from_device": _from_device,
        "deallocate": _deallocate,
    }.items():
        setattr(ttnn, name, fast(f"ttnn.{name}", function))

    def begin_trace_capture(mesh_device, *, cq_id=None):
        cq = cq_id or 0
        if cq in mesh_device.capturing:
            raise RuntimeError(f"TT_FATAL: CQ {cq} is already being used for tracing")
        tid = next(mesh_device._ids)
        mesh_device.capturing[cq] = tid
        return tid

    def end_trace_capture(mesh_device, trace_id, *, cq_id=None):
        mesh_device.capturing.pop(cq_id or 0)
        mesh_device.traces.add(trace_id)

    def execute_trace(mesh_device, trace_id, *, cq_id=None, blocking=True):
        mesh_device.log.append(f"execute {trace_id}")

    def release_trace(mesh_device, trace_id):
        mesh_device.traces.discard(trace_id)

    def synchronize_device(device, cq_id=None, sub_device_ids=()):
        device.log.append("sync")

    def record_event(mesh_device, cq_id=None, sub_device_ids=(), device_range=None):
        mesh_device.log.append("record_event")
        return ("event", mesh_device)

    def wait_for_event(cq_id, mesh_event):
        return None

    def event_synchronize(mesh_event):
        return None

    def is_trace_capture_active(mesh_device):
        return bool(mesh_device.capturing)

    for function in (begin_trace_capture, end_trace_capture, execute_trace, release_trace, synchronize_device,
                     record_event, wait_for_event, event_synchronize, is_trace_capture_active):
        setattr(ttnn, function.__name__, function)
    ttnn._ttnn_execute_trace = execute_trace

    def get_buffers(device):
        return [types.SimpleNamespace(address=a) for a in device.buffers]

    ttnn._ttnn = types.SimpleNamespace(reports=types.SimpleNamespace(get_buffers=get_buffers))
    return ttnn


def snapshot(ttnn: Any) -> dict:
    """Every attribute the guard may patch, by identity."""
    names = ("begin_trace_capture", "end_trace_capture", "execute_trace", "_ttnn_execute_trace", "release_trace",
             "synchronize_device", "record_event", "wait_for_event", "event_synchronize")
    snap = {n: getattr(ttnn, n) for n in names}
    snap["FastOperation.__call__"] = vars(ttnn.decorators.FastOperation).get("__call__")
    for n in ("cpu", "to_numpy", "to_list", "to_torch", "item", "__repr__", "to", "deallocate"):
        snap[f"Tensor.{n}"] = vars(ttnn.Tensor).get(n, "<inherited>")
    return snap
