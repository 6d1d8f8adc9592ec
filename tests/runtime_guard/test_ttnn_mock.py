"""The guard on the real ttnn 0.81.1, on a mock device, one scenario per subprocess.

Needs TRACE_LINT_TTNN_PYTHON (a python with ttnn==0.81.1 and this project importable) and
TT_METAL_MOCK_CLUSTER_DESC_PATH; `eval "$(scripts/setup_ttnn_mock.sh VENV)"` sets both.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
TTNN_PYTHON = os.environ.get("TRACE_LINT_TTNN_PYTHON", "")
CLUSTER = os.environ.get("TT_METAL_MOCK_CLUSTER_DESC_PATH", "")

_why_not = None
if not TTNN_PYTHON:
    _why_not = "TRACE_LINT_TTNN_PYTHON is not set (run scripts/setup_ttnn_mock.sh to make a ttnn venv)"
elif not os.access(TTNN_PYTHON, os.X_OK):
    _why_not = f"TRACE_LINT_TTNN_PYTHON={TTNN_PYTHON} is not an executable python"
elif not CLUSTER or not os.path.exists(CLUSTER):
    _why_not = "TT_METAL_MOCK_CLUSTER_DESC_PATH is not set to a mock cluster descriptor"

pytestmark = pytest.mark.skipif(_why_not is not None, reason=_why_not or "")


def run_scenario(name: str, tmp_path_factory: pytest.TempPathFactory, *, script: str = "ttnn_scenarios.py",
                 **env: str) -> dict:
    workdir = tmp_path_factory.mktemp(name)  # ttnn writes generated/ files into its working directory
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join([str(ROOT), environment.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    environment.update(env)
    proc = subprocess.run(
        [TTNN_PYTHON, str(HERE / script), name],
        cwd=workdir, env=environment, capture_output=True, text=True, timeout=180,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("TRACE_LINT_RESULT ")]
    assert proc.returncode == 0 and lines, (
        f"scenario {name} exited {proc.returncode} (a negative code is a signal: -11 is the mock's segfault)\n"
        f"stdout tail:\n{proc.stdout[-2000:]}\nstderr tail:\n{proc.stderr[-3000:]}"
    )
    result = json.loads(lines[-1].split(" ", 1)[1])
    assert "crash" not in result, result["crash"]
    return result


def assert_stopped(outcome: dict, code: str, line: int | None = None) -> None:
    assert outcome["raised"] == "TraceSafetyError", outcome
    assert outcome["is_runtime_error"]
    assert outcome["codes"][-1] == code, outcome
    if line is not None:
        assert outcome["frames"][-1][:2] == ["ttnn_scenarios.py", line], outcome
    assert "fix:" in outcome["message"]
    assert f"ttnn_scenarios.py:{outcome['frames'][-1][1]} in " in outcome["message"]


def test_alias_bound_before_guard_and_read_stop_the_capture(tmp_path_factory):
    r = run_scenario("alias_and_read", tmp_path_factory)
    # `from ttnn import add` bound at import time is still recorded, with its user line.
    assert r["ops"] == [["ttnn.add", r["lines"]["op"]], ["Tensor.cpu", r["lines"]["read"]]]
    assert_stopped(r["read"], "TRC102", r["lines"]["read"])
    assert "Reads are not supported" not in r["read"]["message"]  # stopped before ttnn's own check
    assert r["active_after"] is False  # the guard ended the capture
    assert r["end_again"]["raised"] is None  # the user's own end_trace_capture does not fail on top
    assert_stopped(r["execute"], "TRC102")
    assert "execute_trace refused" in r["execute"]["message"]
    assert r["status"] == ["aborted"]
    assert r["recorder_calls"] == ["ttnn.add"]


READS = ["Tensor.cpu", "Tensor.to_numpy", "Tensor.to_list", "Tensor.item", "Tensor.to_torch", "repr", "str",
         "f-string", "ttnn.from_device", "ttnn.to_torch", "ttnn.copy_device_to_host_tensor"]


def test_every_device_read_raises_trc102_before_ttnn(tmp_path_factory):
    r = run_scenario("reads", tmp_path_factory)
    for name in READS:
        assert_stopped(r[name], "TRC102")
        assert r[name]["active_after"] is False, name
    # Without the guard: ttnn's own error, no Python frame, and the capture stays open.
    assert r["unguarded"]["raised"] == "RuntimeError"
    assert "Reads are not supported during trace capture" in r["unguarded"]["message"]
    assert r["host_read"]["raised"] is None  # host tensors are not device reads


def test_host_transfers_and_syncs_raise_at_the_call(tmp_path_factory):
    r = run_scenario("transfers_and_sync", tmp_path_factory)
    for name in ("ttnn.to_device", "Tensor.to", "ttnn.copy_host_to_device_tensor"):
        assert_stopped(r[name], "TRC101")
        assert r[name]["active_after"] is False
    for name in ("ttnn.synchronize_device", "ttnn.record_event", "ttnn.wait_for_event", "ttnn.event_synchronize"):
        assert_stopped(r[name], "TRC103")
        assert r[name]["active_after"] is False
    # The mock accepts these silently without the guard: the guard is what finds them.
    assert r["unguarded_copy"]["raised"] is None
    assert r["unguarded_sync"]["raised"] is None


def test_program_cache_miss_is_stopped_before_the_op_runs(tmp_path_factory):
    r = run_scenario("cache_miss", tmp_path_factory)
    # The 64x32 add never ran before the capture; ttnn's function was set to None, so had the
    # guard let it through the scenario would have crashed with a TypeError instead.
    assert_stopped(r["miss"], "TRC404", r["line"])
    assert "TypeError" not in r["miss"]["message"]
    assert r["active_after"] is False
    assert r["recorder_calls"] == ["ttnn.add"]  # the warmed 32x32 add went through
    assert r["ops"] == ["ttnn.add", "ttnn.add"]


def test_creation_and_host_work_raise_at_end_and_replay_is_refused(tmp_path_factory):
    r = run_scenario("deferred_raise", tmp_path_factory)
    assert r["zeros"]["raised"] is None  # deferred: not at the call
    assert r["host_op"]["raised"] is None
    end = r["end"]
    assert end["raised"] == "TraceSafetyError"
    assert end["kinds"] == ["tensor-creation", "host-tensor-work"]
    assert end["codes"] == ["TRC301", "TRC301"]
    assert [f[1] for f in end["frames"]] == [r["lines"]["zeros"], r["lines"]["host_op"]]
    assert r["active_after"] is False
    # execute_trace of the trace is refused; the real execute_trace would segfault the mock.
    assert r["execute"]["raised"] == "TraceSafetyError"
    assert "execute_trace refused" in r["execute"]["message"]
    assert r["release_again"]["raised"] is None
    assert r["status"] == ["released"]
    assert r["refused"] == [1]


def test_warn_mode_warns_at_end_and_still_refuses_replay(tmp_path_factory):
    r = run_scenario("warn_mode", tmp_path_factory)
    assert r["warnings_before_end"] == 0
    assert r["end"]["raised"] is None
    assert [(w[0], w[1], w[2]) for w in r["warnings"]] == [
        ("TraceSafetyWarning", "ttnn_scenarios.py", r["lines"]["zeros"]),
        ("TraceSafetyWarning", "ttnn_scenarios.py", r["lines"]["sync"]),
    ]
    assert "TRC301" in r["warnings"][0][3] and "TRC103" in r["warnings"][1][3]
    assert r["codes"] == ["TRC301", "TRC103"]
    assert r["execute"]["raised"] == "TraceSafetyError"


def test_nested_begin_is_stopped_and_the_outer_capture_released(tmp_path_factory):
    r = run_scenario("nested_begin", tmp_path_factory)
    assert_stopped(r["nested"], "TRC406", r["line"])
    assert r["active_after"] is False
    assert r["captures"] == 1
    assert "already being used for tracing" in r["unguarded"]["message"]
    assert r["unguarded_active_after"] is True


def test_capture_left_open_is_reported_ended_and_patches_restored(tmp_path_factory):
    r = run_scenario("left_open", tmp_path_factory)
    assert_stopped(r["normal"], "TRC401", r["line"])
    assert r["active_after"] is False
    assert r["exception"]["type"] == "KeyError"  # the user's error is not replaced
    assert any("TRC401" in note for note in r["exception"]["notes"])
    assert r["active_after_exception"] is False
    assert r["restored"] and all(r["restored"].values()), r["restored"]


def test_stale_and_freed_inputs_are_refused_at_execute(tmp_path_factory):
    r = run_scenario("stale_inputs", tmp_path_factory)
    assert r["clean"]["raised"] is None
    assert r["executed"] == [0]  # only the clean trace reached (the recording) execute_trace
    assert r["reused_same_address"] is True
    assert_stopped(r["reused"], "TRC403")
    assert f"ttnn_scenarios.py:{r['lines']['reuse']}" in r["reused"]["message"]
    assert_stopped(r["rebound"], "TRC403")
    assert "freed after the capture" in r["rebound"]["message"]
    assert_stopped(r["deallocated"], "TRC302", r["lines"]["dealloc"])
    assert r["executions"] == [1, 0, 0, 0]


def test_allocation_tracker_findings_become_trc408_with_the_user_line(tmp_path_factory):
    r = run_scenario("alloc_tracker", tmp_path_factory, TT_METAL_TRACE_ALLOC_TRACKING="1")
    assert r["tracking"] is True
    assert_stopped(r["execute"], "TRC408", r["line"])
    assert "ttnn's allocation tracker said:" in r["execute"]["message"]
    assert "still alive before trace replay" in r["execute"]["message"]
    assert r["violations"] == ["TRC408"]


def test_device_work_is_identical_with_and_without_the_guard(tmp_path_factory):
    r = run_scenario("same_device_work", tmp_path_factory)
    assert r["guarded"] == r["unguarded"]
    assert [step[0] for step in r["guarded"]] == ["add", "matmul", "relu_out", "dealloc", "rebind", "empty_trace"]
    assert r["guarded_values"] == r["unguarded_values"]


def test_reentrant_guards_and_threads_restore_every_patch(tmp_path_factory):
    r = run_scenario("reentrant_threads", tmp_path_factory)
    assert r["inner_is_patched"] and r["still_patched_in_outer"] and r["patched_while_g1"]
    assert r["restored"] is True
    assert r["errors"] == []


def test_an_end_ttnn_refuses_keeps_the_capture_and_a_later_end_works(tmp_path_factory):
    r = run_scenario("end_fails", tmp_path_factory)
    assert r["wrong_queue"]["raised"] == "RuntimeError" and "TT_FATAL" in r["wrong_queue"]["message"]
    assert r["status_after_wrong_queue"] == "recording"  # ttnn still records, and says so
    assert r["end"]["raised"] is None and r["status_after_end"] == "ended"
    assert r["active_after"] is False and r["violations"] == []


def test_each_thread_keeps_its_guards_mode_on_the_real_ttnn(tmp_path_factory):
    r = run_scenario("thread_modes", tmp_path_factory)
    assert r["raise"]["raised"] == "TraceSafetyError" and r["raise_status"] == "aborted", r
    assert r["warn"]["raised"] is None and r["warn_status"] == "released", r
