"""The pytest plugin on the real ttnn 0.81.1 mock device: a warm-up done by a fixture counts for
the marker and for the `trace_guard` fixture, and a failure's traceback ends at the user's
line, without the guard's own frames."""

from __future__ import annotations

import os
import re

import pytest
from test_pytest_plugin import REAL_DEVICE_FIXTURE, run_real_pytest

pytestmark = pytest.mark.skipif(
    not os.environ.get("TRACE_LINT_TTNN_PYTHON") or not os.environ.get("TT_METAL_MOCK_CLUSTER_DESC_PATH"),
    reason="TRACE_LINT_TTNN_PYTHON / TT_METAL_MOCK_CLUSTER_DESC_PATH not set (scripts/setup_ttnn_mock.sh)",
)

WARMED_BY_A_FIXTURE = REAL_DEVICE_FIXTURE + """

@pytest.fixture
def warmed(device):
    host = ttnn.Tensor(np.ones((32, 32), np.float32), ttnn.float32)
    x = ttnn.to_device(ttnn.to_layout(host, ttnn.TILE_LAYOUT), device)
    ttnn.relu(x)  # the warm-up, done by a fixture
    return x


def capture_relu(device, x):
    # A program launched inside a capture segfaults the mock: allocate the output instead.
    real = ttnn.relu.function
    ttnn.relu.function = lambda t, **kwargs: ttnn.allocate_tensor_on_device(t.spec, t.device())
    try:
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        ttnn.relu(x)
        ttnn.end_trace_capture(device, tid, cq_id=0)
        ttnn.release_trace(device, tid)
    finally:
        ttnn.relu.function = real


@pytest.mark.trace_guard
def test_marked_capture_after_a_fixture_warm_up(device, warmed):
    capture_relu(device, warmed)


def test_fixture_guard_sees_the_earlier_fixture(device, warmed, trace_guard):
    capture_relu(device, warmed)
    assert trace_guard.violations == []
    assert [c.status for c in trace_guard.captures] == ["released"]


@pytest.mark.trace_guard
def test_marked_read(device, warmed):
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    try:
        warmed.cpu()
    finally:
        ttnn.end_trace_capture(device, tid, cq_id=0)
"""


def test_a_fixtures_warm_up_counts_for_the_marker_and_the_fixture(tmp_path):
    proc = run_real_pytest(tmp_path, "test_warm.py", WARMED_BY_A_FIXTURE, "-k", "not test_marked_read")
    out = proc.stdout
    assert "TRC404" not in out, out[-4000:]
    assert proc.returncode == 0 and "2 passed" in out, out[-4000:] + proc.stderr[-2000:]


def test_a_failures_traceback_ends_at_the_user_line_without_the_guards_frames(tmp_path):
    proc = run_real_pytest(tmp_path, "test_warm.py", WARMED_BY_A_FIXTURE, "-k", "test_marked_read")
    out = proc.stdout
    assert "FAILED test_warm.py::test_marked_read - trace_lint.runtime_guard.report.TraceSafetyError" in out, out[-3000:]
    failure = out.split("test_marked_read", 1)[1].split("short test summary", 1)[0]
    line = WARMED_BY_A_FIXTURE.splitlines().index("        warmed.cpu()") + 1
    locations = re.findall(r"^(\S+):(\d+): ", failure, re.MULTILINE)
    assert locations and locations[-1] == ("test_warm.py", str(line)), failure[-3000:]
    assert not [path for path, _ in locations if "runtime_guard" in path], failure[-3000:]
