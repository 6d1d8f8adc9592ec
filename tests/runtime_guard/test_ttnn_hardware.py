"""The guard around a real capture and replay on a Tenstorrent device.

Skipped unless TRACE_LINT_TT_HARDWARE=1 and ttnn is importable in this interpreter (run the
suite with the ttnn venv's python on a machine with a device). On hardware, execute_trace
replays for real, so this runs in-process.
"""

from __future__ import annotations

import os

import pytest

pytestmark = [
    pytest.mark.ttnn_hardware,
    pytest.mark.skipif(os.environ.get("TRACE_LINT_TT_HARDWARE") != "1",
                       reason="needs a Tenstorrent device: set TRACE_LINT_TT_HARDWARE=1 where one is present"),
]


@pytest.fixture(scope="module")
def ttnn():
    return pytest.importorskip("ttnn")


@pytest.fixture(scope="module")
def device(ttnn):
    opened = ttnn.open_device(device_id=int(os.environ.get("TRACE_LINT_TT_DEVICE_ID", "0")),
                              trace_region_size=32 * 1024 * 1024)
    yield opened
    ttnn.close_device(opened)


def _weights(ttnn, device, seed):
    import numpy as np

    rng = np.random.default_rng(seed)

    def put(shape):
        host = ttnn.Tensor(rng.standard_normal(shape).astype(np.float32) * 0.1, ttnn.bfloat16)
        return ttnn.to_device(ttnn.to_layout(host, ttnn.TILE_LAYOUT), device)

    return put((32, 64)), put((64, 128)), put((128, 64)), put((32, 64))


def _model(ttnn, x, w1, w2, bias):
    hidden = ttnn.relu(ttnn.matmul(x, w1))
    return ttnn.add(ttnn.matmul(hidden, w2), bias)


def _read(ttnn, tensor):
    import numpy as np

    return np.array(ttnn.to_layout(ttnn.from_device(tensor), ttnn.ROW_MAJOR_LAYOUT).to_list(), dtype=np.float32)


def _capture_and_replay(ttnn, device, x, w1, w2, bias):
    _model(ttnn, x, w1, w2, bias)  # warm-up: compiles every program
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    try:
        out = _model(ttnn, x, w1, w2, bias)
    finally:
        ttnn.end_trace_capture(device, tid, cq_id=0)
    ttnn.execute_trace(device, tid, cq_id=0, blocking=True)
    result = _read(ttnn, out)
    ttnn.release_trace(device, tid)
    return result


def test_guarded_capture_replays_exactly_like_unguarded(ttnn, device):
    import numpy as np

    from trace_lint.runtime_guard import guard

    reference = _capture_and_replay(ttnn, device, *_weights(ttnn, device, seed=7))
    with guard("raise") as g:
        guarded = _capture_and_replay(ttnn, device, *_weights(ttnn, device, seed=7))
    assert np.array_equal(reference, guarded)
    (capture,) = g.captures
    assert [op.op for op in capture.ops] == ["ttnn.matmul", "ttnn.relu", "ttnn.matmul", "ttnn.add"]
    assert capture.violations == [] and capture.executions == 1 and capture.status == "released"


def test_read_inside_capture_is_stopped_and_device_stays_usable(ttnn, device):
    import numpy as np

    from trace_lint.runtime_guard import TraceSafetyError, guard

    x, w1, w2, bias = _weights(ttnn, device, seed=3)
    reference = _capture_and_replay(ttnn, device, x, w1, w2, bias)
    with guard("raise"):
        _model(ttnn, x, w1, w2, bias)
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        try:
            out = _model(ttnn, x, w1, w2, bias)
            with pytest.raises(TraceSafetyError, match="TRC102"):
                out.cpu()
        finally:
            ttnn.end_trace_capture(device, tid, cq_id=0)  # already ended by the guard: a no-op
        assert not ttnn.is_trace_capture_active(device)
        again = _capture_and_replay(ttnn, device, x, w1, w2, bias)
    assert np.array_equal(reference, again)
