"""The pytest plugin, driven by pytester (stand-in ttnn in-process; real ttnn in a subprocess)."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from trace_lint.runtime_guard import is_installed

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

STAND_IN = """
import fake_ttnn as _fake
globals().update({k: v for k, v in vars(_fake.make_ttnn()).items() if not k.startswith("__")})
"""

CAPTURING_TESTS = """
import pytest
import stand_in_ttnn as ttnn

def capture(read):
    dev = ttnn.MeshDevice()
    x = ttnn.Tensor((32, 32), device=dev)
    ttnn.relu(x)
    tid = ttnn.begin_trace_capture(dev, cq_id=0)
    ttnn.relu(x)
    if read:
        x.cpu()
    ttnn.end_trace_capture(dev, tid, cq_id=0)
    ttnn.execute_trace(dev, tid)
    return dev

def test_clean():
    capture(read=False)

def test_reads():
    capture(read=True)
"""


@pytest.fixture
def stand_in(pytester, monkeypatch):
    monkeypatch.setenv("TRACE_LINT_GUARD_TTNN_MODULE", "stand_in_ttnn")
    monkeypatch.syspath_prepend(str(HERE))
    pytester.makepyfile(stand_in_ttnn=STAND_IN)
    monkeypatch.syspath_prepend(str(pytester.path))  # importable at configure time, as ttnn would be
    return pytester


def test_session_flag_guards_every_test_and_summarizes(stand_in):
    stand_in.makepyfile(test_model=CAPTURING_TESTS)
    result = stand_in.runpytest("--trace-guard", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*TraceSafetyError*",
        "*trace-lint runtime guard*",
        "2 captures guarded, 1 clean, 1 with violations, 1 replay",
        "*trace 0 on MeshDevice(fake): 1 op recorded, ended, executed 1x, ok*",
        "*trace 0 on MeshDevice(fake): 2 ops recorded, aborted, executed 0x, 1 violation*",
        "*TRC102 device-to-host read inside a capture: Tensor.cpu(Tensor?32x32 float32 TILE DRAM?) at *test_model.py:11 in capture",
    ])
    assert not is_installed()


def test_without_the_flag_nothing_is_guarded(stand_in):
    stand_in.makepyfile(test_model=CAPTURING_TESTS)
    result = stand_in.runpytest("-p", "no:cacheprovider")
    # The stand-in's own read check fails the reading test, with ttnn's message, not the guard's.
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*Reads are not supported during trace capture*"])
    assert "trace-lint runtime guard" not in result.stdout.str()
    assert "TraceSafetyError" not in result.stdout.str()


def test_warn_mode_flag_turns_stops_into_warnings(stand_in):
    stand_in.makepyfile(test_model=CAPTURING_TESTS.replace("x.cpu()", "ttnn.zeros((32, 32), device=dev)"))
    result = stand_in.runpytest("--trace-guard", "--trace-guard-mode=warn", "-p", "no:cacheprovider")
    # warn mode: the capture itself passes, the replay of a bad trace is still refused.
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*execute_trace refused*", "*test_model.py:11: TraceSafetyWarning*TRC301*"])


def test_marker_guards_one_test_and_fixture_exposes_the_guard(stand_in):
    stand_in.makepyfile(test_model=CAPTURING_TESTS + textwrap.dedent("""
        @pytest.mark.trace_guard
        def test_marked_reads():
            capture(read=True)

        def test_unmarked_reads():
            capture(read=True)

        @pytest.mark.trace_guard(mode="warn")
        def test_fixture(trace_guard):
            assert trace_guard.mode == "warn" and trace_guard.active
            dev = capture(read=False)
            (record,) = trace_guard.captures
            assert [op.op for op in record.ops] == ["ttnn.relu"]
            assert record.executions == 1 and trace_guard.violations == []
    """))
    result = stand_in.runpytest("-p", "no:cacheprovider", "-k", "test_marked_reads or test_fixture")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_model.py::test_marked_reads - trace_lint.runtime_guard*"])
    assert "test_unmarked_reads FAILED" not in result.stdout.str()


def test_marker_reports_capture_left_open_as_a_failure(stand_in):
    stand_in.makepyfile(test_model="""
        import pytest
        import stand_in_ttnn as ttnn

        @pytest.mark.trace_guard
        def test_forgets_end():
            ttnn.begin_trace_capture(ttnn.MeshDevice(), cq_id=0)
    """)
    result = stand_in.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*TRC401 capture left open*"])


LEAVES_CAPTURE_OPEN = """
import pytest
import stand_in_ttnn as ttnn


@pytest.fixture
def device():
    dev = ttnn.MeshDevice()
    yield dev
    # Like ttnn.close_device: a capture still recording here would be ended on a closed device.
    assert not dev.capturing, "a capture was still recording when the device closed"


def test_clean(device):
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    ttnn.end_trace_capture(device, tid, cq_id=0)


def test_forgets_end(device):
    ttnn.begin_trace_capture(device, cq_id=0)
"""


@pytest.mark.parametrize("mode", ["raise", "warn"])
def test_session_guard_fails_the_test_that_leaves_a_capture_open(stand_in, mode):
    stand_in.makepyfile(test_model=LEAVES_CAPTURE_OPEN)
    result = stand_in.runpytest("--trace-guard", f"--trace-guard-mode={mode}", "-p", "no:cacheprovider", "-rA")
    if mode == "raise":
        result.assert_outcomes(passed=1, failed=1)
        result.stdout.fnmatch_lines([
            "E *TraceSafetyError: *: test_model.py::test_forgets_end left a capture open; 1 violation:",
            "FAILED test_model.py::test_forgets_end - trace_lint.runtime_guard.report.Trac*",
        ])
    else:
        result.assert_outcomes(passed=2, warnings=1)
        result.stdout.fnmatch_lines(["*test_model.py::test_forgets_end left a capture open*"])
    # Ended by the guard before the device fixture tore down; nothing left for the session's end.
    assert "a capture was still recording when the device closed" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*0 ops recorded, aborted, executed 0x, 1 violation*", "*TRC401 capture left open*"])
    assert result.ret == (1 if mode == "raise" else 0)
    assert not is_installed()


def test_without_ttnn_the_run_is_undisturbed(pytester, monkeypatch):
    monkeypatch.setenv("TRACE_LINT_GUARD_TTNN_MODULE", "no_such_ttnn_module_here")
    monkeypatch.setenv("TRACE_LINT_GUARD_TORCH", "0")  # torch may be installed here
    pytester.makepyfile(test_plain="""
        import pytest

        def test_plain():
            assert 1 + 1 == 2

        @pytest.mark.trace_guard
        def test_marked():
            pass

        def test_fixture(trace_guard):
            raise AssertionError("must be skipped")
    """)
    result = pytester.runpytest("--trace-guard", "-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines([
        "*--trace-guard: ttnn is not importable and torch is turned off here; nothing was guarded*",
        "*test_marked: marked trace_guard but ttnn is not importable and torch is turned off here; ran unguarded*",
        "*SKIPPED*trace_guard: ttnn is not importable and torch is turned off here*",
    ])


# A module-scoped mock device for the test files run by the real ttnn's pytest.
REAL_DEVICE_FIXTURE = """
import numpy as np
import pytest
import ttnn


@pytest.fixture(scope="module")
def device():
    d = ttnn.open_device(device_id=0, trace_region_size=10_000_000)
    yield d
    ttnn.close_device(d)
"""

REAL_TTNN_TEST = REAL_DEVICE_FIXTURE + """

def test_capture_that_reads(device):
    x = ttnn.to_device(ttnn.to_layout(ttnn.Tensor(np.ones((32, 32), np.float32), ttnn.float32), ttnn.TILE_LAYOUT), device)
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    try:
        x.to_numpy()
    finally:
        ttnn.end_trace_capture(device, tid, cq_id=0)


def test_empty_capture(device, trace_guard):
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    ttnn.end_trace_capture(device, tid, cq_id=0)
    ttnn.release_trace(device, tid)
    assert [c.status for c in trace_guard.captures] == ["released"]
"""


# A mark on a helper does nothing: each test that runs the real ttnn carries it.
needs_ttnn_mock = pytest.mark.skipif(
    not os.environ.get("TRACE_LINT_TTNN_PYTHON") or not os.environ.get("TT_METAL_MOCK_CLUSTER_DESC_PATH"),
    reason="TRACE_LINT_TTNN_PYTHON / TT_METAL_MOCK_CLUSTER_DESC_PATH not set (scripts/setup_ttnn_mock.sh)",
)


def run_real_pytest(tmp_path: Path, name: str, text: str, *options: str) -> subprocess.CompletedProcess:
    """Run `text` as the test file `name` with the real ttnn's python and pytest (the plugin on)."""
    (tmp_path / name).write_text(text)
    env = dict(os.environ)
    env.pop("TRACE_LINT_GUARD_TTNN_MODULE", None)
    env["PYTHONPATH"] = str(ROOT)
    env["COLUMNS"] = "400"  # untruncated short summary
    return subprocess.run(
        [os.environ["TRACE_LINT_TTNN_PYTHON"], "-m", "pytest", *options, "-p", "no:cacheprovider", "-q", name],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180,
    )


@needs_ttnn_mock
def test_plugin_on_real_ttnn_mock_device(tmp_path):
    proc = run_real_pytest(tmp_path, "test_real.py", REAL_TTNN_TEST, "--trace-guard")
    out = proc.stdout
    assert proc.returncode == 1, out[-3000:] + proc.stderr[-3000:]
    assert "1 failed, 1 passed" in out
    assert "FAILED test_real.py::test_capture_that_reads - trace_lint.runtime_guard.report.TraceSafetyError" in out
    assert "Reads are not supported" not in out  # stopped before ttnn's own check
    assert "2 captures guarded, 1 clean, 1 with violations, 0 replays" in out
    line = REAL_TTNN_TEST.splitlines().index("        x.to_numpy()") + 1
    assert f"test_real.py:{line} in test_capture_that_reads" in out


REAL_TTNN_LEAVES_OPEN = """
import pytest
import ttnn


@pytest.fixture
def device():
    d = ttnn.open_device(device_id=0, trace_region_size=10_000_000)
    yield d
    ttnn.close_device(d)


def test_clean(device):
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    ttnn.end_trace_capture(device, tid, cq_id=0)
    ttnn.release_trace(device, tid)


def test_forgets_end(device):
    ttnn.begin_trace_capture(device, cq_id=0)
"""


@needs_ttnn_mock
def test_plugin_fails_the_test_that_leaves_a_capture_open_on_the_mock_device(tmp_path):
    proc = run_real_pytest(tmp_path, "test_real.py", REAL_TTNN_LEAVES_OPEN, "--trace-guard")
    out = proc.stdout
    assert proc.returncode == 1, out[-3000:] + proc.stderr[-3000:]
    assert "1 failed, 1 passed" in out
    assert "FAILED test_real.py::test_forgets_end - trace_lint.runtime_guard.report.TraceSafetyError" in out
    assert "test_real.py::test_forgets_end left a capture open" in out
    # Ended while the device was open: no TT_FATAL from ending it on a closed device.
    assert "TT_FATAL" not in out + proc.stderr
    assert "end_trace_capture failed" not in out


def test_entry_point_is_declared_and_installed():
    tomllib = pytest.importorskip("tomllib")  # 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"trace_lint": "trace_lint.runtime_guard.pytest_plugin"}
    from importlib.metadata import entry_points

    installed = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert installed.get("trace_lint") == "trace_lint.runtime_guard.pytest_plugin", (
        "the project is installed without its pytest11 entry point: reinstall it (pip install -e .)"
    )


GRAPH_TESTS = """
import pytest
import torch

def capture(read):
    g = torch.cuda.CUDAGraph()
    x = torch.ones(4, device="meta")
    g.capture_begin()
    try:
        y = x * 2
        if read:
            y.sum().item()
    finally:
        g.capture_end()
    g.replay()

def test_clean():
    capture(read=False)

def test_reads():
    capture(read=True)

@pytest.mark.trace_guard(mode="warn")
def test_fixture(trace_guard):
    capture(read=False)
    (record,) = trace_guard.captures
    assert record.label == "CUDA graph" and record.executions == 1
    assert [op.op for op in record.ops] == ["torch.mul"]
"""


GRAPH_CONFTEST = """
import torch


class StandInGraph:  # no CUDA here; swapped in before the plugin's session guard starts
    def capture_begin(self, *args, **kwargs):
        pass

    def capture_end(self):
        pass

    def replay(self):
        pass


torch.cuda.CUDAGraph = StandInGraph


def pytest_unconfigure(config):
    print("patches undone:", not hasattr(StandInGraph.capture_begin, "__wrapped__"))
"""


@pytest.fixture(scope="module")
def torch_installed():
    # Before pytester's snapshot of sys.modules, which would drop a torch imported after it (and
    # torch cannot be imported twice in one process).
    return pytest.importorskip("torch")


@pytest.fixture
def graph_run(torch_installed, pytester, monkeypatch):
    monkeypatch.setenv("TRACE_LINT_GUARD_TTNN_MODULE", "no_such_ttnn_module_here")  # torch only
    pytester.makeconftest(GRAPH_CONFTEST)
    pytester.makepyfile(test_graphs=GRAPH_TESTS)
    # A subprocess: torch cannot be imported twice in one process, and pytester's in-process
    # runs drop the modules a run imported.
    return pytester


def test_session_flag_guards_cuda_graphs_and_summarizes(graph_run):
    result = graph_run.runpytest_subprocess("--trace-guard", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "E *TraceSafetyError: trace-lint runtime guard: CUDA graph 2 on cuda*: torch.item stopped before torch ran it*",
        "*trace-lint runtime guard*",
        "3 captures guarded, 2 clean, 1 with violations, 2 replays",
        "*CUDA graph 1 on cuda*: 1 op recorded, ended, executed 1x, ok*",
        "*CUDA graph 2 on cuda*: 3 ops recorded, aborted, executed 0x, 1 violation*",
        "*TRC102 host read inside a CUDA graph capture*: torch.item(tensor?scalar float32 meta?) at *test_graphs.py:11 in capture",
        "*passed*",
        "patches undone: True",
    ])


def test_without_the_flag_graphs_are_unguarded_but_the_marker_guards(graph_run):
    result = graph_run.runpytest_subprocess("-p", "no:cacheprovider")
    # Unguarded, the stand-in cannot stop the read: torch's own meta-tensor error fails it.
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["E * RuntimeError: Tensor.item() cannot be called on meta tensors"])
    assert "torch.item stopped" not in result.stdout.str()
    assert "TraceSafetyError" not in result.stdout.str()
