"""torch work while a ttnn capture is open: classification (no torch needed) and the real
TorchFunctionMode (with torch, skipped where torch is not installed)."""

from __future__ import annotations

import sys

import pytest

import fake_ttnn
from trace_lint.runtime_guard import TraceSafetyError, guard
from trace_lint.runtime_guard.torch_guard import classify_torch_call


@pytest.mark.parametrize(
    "name, args, kwargs, kind",
    [
        ("item", (), {}, "host-read"),
        ("tolist", (), {}, "host-read"),
        ("numpy", (), {}, "host-read"),
        ("__bool__", (), {}, "host-read"),
        ("to", ("x", "cpu"), {}, "host-read"),
        ("to", ("x",), {"device": "cpu"}, "host-read"),
        ("to", ("x", "cuda"), {}, "host-tensor-work"),
        ("zeros", ((2, 2),), {}, "tensor-creation"),
        ("arange", (4,), {}, "tensor-creation"),
        ("tensor", ([1.0],), {}, "tensor-creation"),
        ("add", (), {}, "host-tensor-work"),
        ("__add__", (), {}, "host-tensor-work"),
        ("__getitem__", (), {}, "host-tensor-work"),
        ("__get__", (), {}, None),
        ("size", (), {}, None),
        ("dim", (), {}, None),
        ("__hash__", (), {}, None),
        ("__repr__", (), {}, "host-read"),
    ],
)
def test_classification(name, args, kwargs, kind):
    assert classify_torch_call(name, args, kwargs) == kind


def test_torch_work_during_a_ttnn_capture_is_reported_at_end():
    torch = pytest.importorskip("torch")
    tt = fake_ttnn.make_ttnn()
    dev = tt.MeshDevice()
    before = torch.overrides._get_current_function_mode() if hasattr(torch.overrides, "_get_current_function_mode") \
        else None
    host = torch.ones(4)  # before the capture: not reported
    with guard(ttnn_module=tt) as g:
        host.sum()  # outside any capture: not reported
        tid = tt.begin_trace_capture(dev, cq_id=0)
        scale = torch.zeros(4); zeros_line = sys._getframe().f_lineno  # noqa: E702
        (host + scale).shape  # noqa: B018
        value = host.sum().item(); item_line = sys._getframe().f_lineno  # noqa: E702
        with pytest.raises(TraceSafetyError) as info:
            tt.end_trace_capture(dev, tid, cq_id=0)
        after_end = [v.op for v in g.violations]
        host.mul(2)  # after the capture: not reported
    kinds = [(v.op, v.code, v.frame.lineno) for v in info.value.violations]
    assert ("torch.zeros", "TRC301", zeros_line) in kinds
    assert ("torch.item", "TRC102", item_line) in kinds
    assert any(op in ("torch.add", "torch.__add__") for op, _, _ in kinds)
    assert all(v.frame.filename == __file__ for v in info.value.violations)
    assert [v.op for v in g.violations] == after_end
    assert value == 4.0
    # The mode is off the stack once the guard is gone.
    if before is not None or hasattr(torch.overrides, "_get_current_function_mode"):
        assert torch.overrides._get_current_function_mode() is before


def test_guard_does_not_import_torch_when_the_program_did_not():
    tt = fake_ttnn.make_ttnn()
    dev = tt.MeshDevice()
    had_torch = "torch" in sys.modules
    with guard(ttnn_module=tt):
        tid = tt.begin_trace_capture(dev, cq_id=0)
        tt.end_trace_capture(dev, tid, cq_id=0)
    assert ("torch" in sys.modules) == had_torch
