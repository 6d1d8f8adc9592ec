"""What the guard keys its state by, on the stand-in ttnn (runs everywhere; the same cases on
the real ttnn mock device are in test_ttnn_mock_state.py)."""

from __future__ import annotations

import threading

import pytest

import fake_ttnn
from trace_lint.runtime_guard import TraceSafetyError, forget_warm_ups, guard


@pytest.fixture
def tt():
    return fake_ttnn.make_ttnn()


def test_host_work_of_another_thread_is_not_filed_on_this_threads_capture(tt):
    dev = tt.MeshDevice()
    x = tt.Tensor(device=dev)
    began, done = threading.Event(), threading.Event()
    errors = []

    def other_thread():
        try:
            began.wait(30)
            tt.relu(tt.Tensor())  # host-only: no device involved
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)
        finally:
            done.set()

    worker = threading.Thread(target=other_thread)
    worker.start()
    with guard(ttnn_module=tt, torch=False) as g:
        tt.relu(x)
        tid = tt.begin_trace_capture(dev, cq_id=0)
        began.set()
        done.wait(30)
        tt.relu(x)
        tt.end_trace_capture(dev, tid, cq_id=0)
        assert [op.op for op in g.captures[0].ops] == ["ttnn.relu"] and g.violations == []
        # The capturing thread's own host work is the capture's.
        tid = tt.begin_trace_capture(dev, cq_id=0)
        tt.relu(tt.Tensor())
        with pytest.raises(TraceSafetyError, match="TRC301"):
            tt.end_trace_capture(dev, tid, cq_id=0)
    worker.join(30)
    assert errors == []


def test_an_op_output_inside_a_later_capture_at_a_freed_inputs_address_refuses_the_replay(tt):
    dev = tt.MeshDevice()
    x, w = tt.Tensor(device=dev), tt.Tensor(device=dev)
    with guard(ttnn_module=tt, torch=False):
        tt.relu(x)
        tid_a = tt.begin_trace_capture(dev, cq_id=0)
        tt.relu(x)
        tt.end_trace_capture(dev, tid_a, cq_id=0)
        address = x.buffer_address()
        del x
        tid_b = tt.begin_trace_capture(dev, cq_id=0)
        z = tt.relu(w)  # the output takes the freed address
        tt.end_trace_capture(dev, tid_b, cq_id=0)
        assert z.buffer_address() == address
        with pytest.raises(TraceSafetyError, match="TRC403") as info:
            tt.execute_trace(dev, tid_a, cq_id=0)
        assert "address reused by ttnn.relu" in str(info.value)
        tt.execute_trace(dev, tid_b, cq_id=0)  # its own inputs are intact


def test_the_warm_record_outlives_the_guard_until_forgotten(tt):
    dev = tt.MeshDevice()
    x = tt.Tensor(device=dev)
    with guard(ttnn_module=tt, torch=False):
        tt.relu(x)
    with guard(ttnn_module=tt, torch=False) as g:
        tid = tt.begin_trace_capture(dev, cq_id=0)
        tt.relu(x)
        tt.end_trace_capture(dev, tid, cq_id=0)
    assert g.violations == []
    forget_warm_ups(dev)
    with guard(ttnn_module=tt, torch=False):
        tt.begin_trace_capture(dev, cq_id=0)  # the stopped op ends it
        with pytest.raises(TraceSafetyError, match="TRC404"):
            tt.relu(x)


def test_an_empty_program_cache_forgets_the_devices_warm_ups(tt):
    dev = tt.MeshDevice()
    entries = [1]
    dev.num_program_cache_entries = lambda: entries[0]  # as ttnn's MeshDevice answers
    x = tt.Tensor(device=dev)
    with guard(ttnn_module=tt, torch=False):
        tt.relu(x)
        entries[0] = 0  # clear_program_cache(), or the device closed and reopened
        tt.begin_trace_capture(dev, cq_id=0)  # the stopped op ends it
        with pytest.raises(TraceSafetyError, match="TRC404"):
            tt.relu(x)
