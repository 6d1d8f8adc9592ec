"""What the guard keys its state by, on the real ttnn 0.81.1 mock device (one process per
scenario, ttnn_state_scenarios.py): the capturing thread, trace inputs across captures, bound
op arguments, a warm record that outlives a guard, the Tensor constructor, references taken
before the guard, and a TRC408 refusal lifted when its buffer is freed."""

from __future__ import annotations

import test_ttnn_mock
from test_ttnn_mock import run_scenario

pytestmark = test_ttnn_mock.pytestmark  # skipped where the ttnn mock is not set up

SCRIPT = "ttnn_state_scenarios.py"


def assert_stopped(outcome: dict, code: str, line: int | None = None) -> None:
    assert outcome["raised"] == "TraceSafetyError", outcome
    assert outcome["codes"][-1] == code, outcome
    if line is not None:
        assert outcome["frames"][-1][:2] == [SCRIPT, line], outcome
    assert "fix:" in outcome["message"]
    assert f"{SCRIPT}:{outcome['frames'][-1][1]} in " in outcome["message"]


def scenario(name, tmp_path_factory, **env):
    return run_scenario(name, tmp_path_factory, script=SCRIPT, **env)


def test_host_work_on_another_thread_is_not_filed_on_this_threads_capture(tmp_path_factory):
    r = scenario("host_work_on_another_thread", tmp_path_factory)
    assert "a_error" not in r and "b_error" not in r, r
    assert r["b_work"]["raised"] is None
    assert r["end"]["raised"] is None, r["end"]  # thread A's clean trace stays clean
    assert r["ops"] == ["ttnn.relu"]
    # Host work on the capturing thread itself is still the capture's.
    assert r["own_host_work"]["raised"] == "TraceSafetyError"
    assert r["own_host_work"]["codes"] == ["TRC301"]
    assert r["own_host_work"]["frames"][0][1] == r["lines"]["own"]


def test_trace_input_reused_by_an_op_output_inside_a_later_capture_refuses_the_replay(tmp_path_factory):
    r = scenario("input_reused_inside_a_later_capture", tmp_path_factory)
    assert r["reused_same_address"] is True  # the case the test is about really happened
    assert_stopped(r["replay_a"], "TRC403")
    assert f"ttnn_state_scenarios.py:{r['line']}" in r["replay_a"]["message"]  # where the address was reused
    assert r["replay_b"]["raised"] is None  # trace B's own inputs are intact
    assert r["executed"] == [r["trace_b"]]


def test_keyword_and_positional_arguments_are_one_warm_signature(tmp_path_factory):
    r = scenario("keyword_and_positional_are_one_signature", tmp_path_factory)
    for case in ("keyword_b", "both_keywords", "explicit_default", "end"):
        assert r[case]["raised"] is None, (case, r[case])
    assert r["recorder_calls"] == 3
    assert r["violations"] == []


def test_warm_record_outlives_the_last_guard_until_forget_warm_ups(tmp_path_factory):
    r = scenario("warm_record_outlives_the_guard", tmp_path_factory)
    assert r["after_guard_exit"]["raised"] is None, r["after_guard_exit"]
    assert r["end"]["raised"] is None
    assert_stopped(r["after_reset"], "TRC404", r["line"])
    assert r["recorder_calls"] == 1


def test_clearing_the_program_cache_forgets_the_warm_ups(tmp_path_factory):
    r = scenario("program_cache_cleared", tmp_path_factory)
    assert r["entries"] > 0  # the begin's own check would not have caught it
    assert_stopped(r["relu"], "TRC404", r["line"])


def test_tensor_constructor_with_a_device_inside_a_capture_is_a_transfer(tmp_path_factory):
    r = scenario("tensor_constructor", tmp_path_factory)
    # Seen once ttnn made the buffer (nanobind ignores a patched __init__): reported at the end.
    assert r["with_device"]["raised"] is None
    assert_stopped(r["end"], "TRC301", r["lines"]["device"])  # codes[-1] of TRC101/TRC301
    assert r["end"]["codes"] == ["TRC101", "TRC301"]
    assert r["device_codes"] == ["TRC101", "TRC301"]
    # Without a device it makes a host tensor and touches no device: not reported.
    assert r["host_end"]["raised"] is None, r["host_end"]
    assert r["outside"] == ["released", 0]


def test_method_references_taken_before_the_guard_are_caught(tmp_path_factory):
    r = scenario("references_taken_before_the_guard", tmp_path_factory)
    assert_stopped(r["unbound_read"], "TRC102", r["lines"]["read"])
    assert "Reads are not supported" not in r["unbound_read"]["message"]  # stopped before ttnn
    assert_stopped(r["sync"], "TRC103")
    assert_stopped(r["local_read"], "TRC102", r["lines"]["local_read"])
    assert_stopped(r["bound_read"], "TRC102")
    assert_stopped(r["local_sync"], "TRC103")
    for name in ("unbound_read", "sync", "local_read", "bound_read", "local_sync"):
        assert r[name]["active_after"] is False, name  # the guard ended the capture
    assert r["restored"] is True  # module-level references put back on exit
    assert r["free_end"]["raised"] == "TraceSafetyError"
    assert r["free_end"]["codes"] == ["TRC302"]
    assert r["free_end"]["frames"][0][1] == r["lines"]["free"]
    assert r["outside_read"]["raised"] is None


def test_trace_functions_imported_by_name_before_the_guard_are_guarded(tmp_path_factory):
    r = scenario("functions_imported_before_the_guard", tmp_path_factory)
    assert_stopped(r["read"], "TRC102", r["line"])  # the guard saw the capture begin
    assert r["active_after"] is False
    assert r["end"]["raised"] is None  # already ended by the guard: a no-op
    assert_stopped(r["execute"], "TRC102")
    assert "execute_trace refused" in r["execute"]["message"]
    assert r["release"]["raised"] is None
    assert r["status"] == ["aborted"]
    assert r["restored"] == [True, True]


def test_wrappers_bound_while_a_guard_was_on_pass_through_after_it(tmp_path_factory):
    r = scenario("names_bound_while_a_guard_was_on", tmp_path_factory)
    assert r["read"]["raised"] == "RuntimeError" and "TT_FATAL" in r["read"]["message"]
    assert r["tools_left"] == []  # no call watch left running for a guard that is gone
    assert_stopped(r["read_later_guard"], "TRC102")  # the later guard saw the begin
    assert r["active_after"] is False
    assert r["restored"] is True  # back to the earlier (pass-through) wrapper on exit


def test_a_trc408_refusal_is_lifted_once_the_buffer_is_freed(tmp_path_factory):
    r = scenario("tracker_refusal_lifted", tmp_path_factory, TT_METAL_TRACE_ALLOC_TRACKING="1")
    assert r["tracking"] is True
    assert_stopped(r["first"], "TRC408", r["line"])
    assert r["after_free"]["raised"] is None, r["after_free"]
    assert r["executed"] == [0]
    assert r["executions"] == 1
    assert "executed 1x" in r["summary"] and "lifted" in r["summary"]


def test_guard_works_as_a_decorator(tmp_path_factory):
    r = scenario("decorator", tmp_path_factory)
    assert_stopped(r["decorated"], "TRC102")
    assert r["patched_after"] is True  # every patch undone when the decorated call returns
    assert_stopped(r["again"], "TRC102")
