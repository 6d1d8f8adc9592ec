"""Guard scenarios on a real ttnn 0.81.1 mock device about what the guard keys its state by:
threads, trace inputs across captures, op signatures, the warm record, the Tensor constructor,
method references taken before the guard, and refusals whose cause is gone.

Run as `python ttnn_state_scenarios.py NAME` (one scenario per process); prints one line
`TRACE_LINT_RESULT {json}`. Helpers come from ttnn_scenarios.py (recorder functions stand in
for the ops that would launch a program inside a capture, which segfaults the mock).
"""

from __future__ import annotations

import os
import sys
import threading
import warnings

import numpy as np
import ttnn

from ttnn import begin_trace_capture as begin_early  # noqa: E402 - bound before any guard exists
from ttnn import end_trace_capture as end_early  # noqa: E402
from ttnn import execute_trace as execute_early  # noqa: E402
from ttnn import release_trace as release_early  # noqa: E402

# Module-level references taken before any guard exists.
read_bound_early = ttnn.Tensor.cpu
free_bound_early = ttnn.Tensor.deallocate
sync_bound_early = ttnn.synchronize_device

import ttnn_scenarios  # noqa: E402
from ttnn_scenarios import host, on_device, outcome, use_recorder  # noqa: E402

from trace_lint.runtime_guard import guard  # noqa: E402

RESULT: dict = {}
HERE = os.path.abspath(__file__)


def line_of(marker):
    return ttnn_scenarios.line_of(marker, HERE)


def fake_execute_trace(executed):
    """execute_trace segfaults on the mock: record the replay instead (installed before the guard)."""

    def execute(mesh_device, trace_id, *, cq_id=None, blocking=True):
        executed.append(int(trace_id))

    if ttnn.execute_trace is ttnn._ttnn_execute_trace:
        ttnn.execute_trace = execute
    ttnn._ttnn_execute_trace = execute  # with the allocation tracker on, execute_trace calls this


# ----------------------------------------------------------------------------- scenarios
def scenario_host_work_on_another_thread(device):
    """Thread A captures; thread B, with its own guard, does host-only ttnn work meanwhile."""
    calls = []
    x = on_device(device)
    a_began, b_done = threading.Event(), threading.Event()
    found = {}

    def thread_a():
        try:
            with guard("raise") as g:
                ttnn.relu(x)
                use_recorder(ttnn.relu, calls)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                a_began.set()
                b_done.wait(60)
                ttnn.relu(x)
                found["end"] = outcome(lambda: ttnn.end_trace_capture(device, tid, cq_id=0))
                found["ops"] = [op.op for op in g.captures[0].ops]
                ttnn.release_trace(device, tid)
        except BaseException as error:  # pragma: no cover - reported
            found["a_error"] = repr(error)
            a_began.set()

    def thread_b():
        try:
            with guard("raise"):
                a_began.wait(60)
                found["b_work"] = outcome(lambda: ttnn.to_layout(host(), ttnn.TILE_LAYOUT))  # MARK-b-host
        except BaseException as error:  # pragma: no cover - reported
            found["b_error"] = repr(error)
        finally:
            b_done.set()

    threads = [threading.Thread(target=thread_a), threading.Thread(target=thread_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    RESULT.update(found)
    # The capturing thread's own host work is still reported.
    with guard("raise"):
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        ttnn.to_layout(host(), ttnn.TILE_LAYOUT)  # MARK-a-host
        RESULT["own_host_work"] = outcome(lambda: ttnn.end_trace_capture(device, tid, cq_id=0))
    RESULT["lines"] = {"own": line_of("MARK-a-host")}
    RESULT["recorder_calls"] = len(calls)


def scenario_program_cache_cleared(device):
    calls = []
    x = on_device(device)
    with guard("raise"):
        ttnn.relu(x)  # warm
        device.clear_program_cache()
        ttnn.add(x, x)  # the cache is not empty again at the begin
        RESULT["entries"] = device.num_program_cache_entries()
        use_recorder(ttnn.relu, calls)
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        RESULT["relu"] = outcome(lambda: ttnn.relu(x))  # MARK-after-clear
        if ttnn.is_trace_capture_active(device):
            ttnn.end_trace_capture(device, tid, cq_id=0)
    RESULT["line"] = line_of("MARK-after-clear")


def scenario_input_reused_inside_a_later_capture(device):
    executed = []
    fake_execute_trace(executed)
    calls = []
    with guard("raise") as g:
        x, out, w = on_device(device), on_device(device), on_device(device)
        ttnn.add(x, x, output_tensor=out)
        ttnn.relu(w)
        use_recorder(ttnn.add, calls)
        use_recorder(ttnn.relu, calls)
        tid_a = ttnn.begin_trace_capture(device, cq_id=0)
        ttnn.add(x, x, output_tensor=out)
        ttnn.end_trace_capture(device, tid_a, cq_id=0)
        address = x.buffer_address()
        del x  # trace A's input is freed...
        tid_b = ttnn.begin_trace_capture(device, cq_id=0)
        z = ttnn.relu(w)  # MARK-reuse-op ...and an op output inside capture B takes its address
        ttnn.end_trace_capture(device, tid_b, cq_id=0)
        RESULT["reused_same_address"] = z.buffer_address() == address
        RESULT["replay_a"] = outcome(lambda: ttnn.execute_trace(device, tid_a, cq_id=0))
        RESULT["replay_b"] = outcome(lambda: ttnn.execute_trace(device, tid_b, cq_id=0))
        ttnn.release_trace(device, tid_a)
        ttnn.release_trace(device, tid_b)
    RESULT["executed"] = executed
    RESULT["trace_b"] = int(tid_b)
    RESULT["line"] = line_of("MARK-reuse-op")
    RESULT["violations"] = [v.code for v in g.violations]


def scenario_keyword_and_positional_are_one_signature(device):
    calls = []
    b, c = on_device(device), on_device(device, value=2.0)
    with guard("raise") as g:
        ttnn.add(b, c)  # warm-up, positional
        use_recorder(ttnn.add, calls)
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        RESULT["keyword_b"] = outcome(lambda: ttnn.add(b, input_tensor_b=c))
        RESULT["both_keywords"] = outcome(lambda: ttnn.add(input_tensor_a=b, input_tensor_b=c))
        RESULT["explicit_default"] = outcome(lambda: ttnn.add(b, c, memory_config=None))
        RESULT["end"] = outcome(lambda: ttnn.end_trace_capture(device, tid, cq_id=0))
        ttnn.release_trace(device, tid)
    RESULT["recorder_calls"] = len(calls)
    RESULT["violations"] = [v.code for v in g.violations]


def scenario_warm_record_outlives_the_guard(device):
    calls = []
    x = on_device(device)
    with guard("raise"):
        ttnn.relu(x)  # warm-up under a guard that then exits (the last one)
    use_recorder(ttnn.relu, calls)
    with guard("raise"):
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        RESULT["after_guard_exit"] = outcome(lambda: ttnn.relu(x))
        RESULT["end"] = outcome(lambda: ttnn.end_trace_capture(device, tid, cq_id=0))
        ttnn.release_trace(device, tid)
    from trace_lint.runtime_guard import forget_warm_ups

    forget_warm_ups()  # the documented reset
    with guard("raise"):
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        RESULT["after_reset"] = outcome(lambda: ttnn.relu(x))  # MARK-after-reset
        ttnn.end_trace_capture(device, tid, cq_id=0)
    RESULT["line"] = line_of("MARK-after-reset")
    RESULT["recorder_calls"] = len(calls)


def scenario_tensor_constructor(device):
    data = np.ones((32, 32), dtype=np.float32)
    with guard("raise") as g:
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        RESULT["with_device"] = outcome(
            lambda: ttnn.Tensor(data, ttnn.float32, device=device, layout=ttnn.TILE_LAYOUT)  # MARK-ctor-device
        )
        RESULT["end"] = outcome(lambda: ttnn.end_trace_capture(device, tid, cq_id=0))
    RESULT["device_codes"] = [c for v in g.violations for c in v.codes]
    with guard("raise") as g:
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        ttnn.Tensor(data, ttnn.float32)
        RESULT["host_end"] = outcome(lambda: ttnn.end_trace_capture(device, tid, cq_id=0))
        ttnn.release_trace(device, tid)
    # Outside a capture the constructor is fine, with or without a device.
    with guard("raise") as g:
        ttnn.Tensor(data, ttnn.float32, device=device, layout=ttnn.TILE_LAYOUT)
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        ttnn.end_trace_capture(device, tid, cq_id=0)
        ttnn.release_trace(device, tid)
    RESULT["outside"] = [c.status for c in g.captures] + [len(g.violations)]
    RESULT["lines"] = {"device": line_of("MARK-ctor-device")}


def scenario_references_taken_before_the_guard(device):
    x = on_device(device)
    # Local references (the call monitor's; module-level ones are re-pointed at install).
    local_read, local_sync, bound_read = ttnn.Tensor.cpu, ttnn.synchronize_device, x.cpu
    found = {}
    cases = {
        "unbound_read": lambda: read_bound_early(x),  # MARK-ref-read
        "sync": lambda: sync_bound_early(device),
        "local_read": lambda: local_read(x),  # MARK-local-read
        "bound_read": lambda: bound_read(),
        "local_sync": lambda: local_sync(device),
    }
    for name, call in cases.items():
        with guard("raise"):
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            found[name] = outcome(call)
            found[name]["active_after"] = ttnn.is_trace_capture_active(device)
            if found[name]["active_after"]:
                ttnn.end_trace_capture(device, tid, cq_id=0)
    # Freeing a trace input inside its capture through an early reference.
    calls = []
    with guard("raise"):
        ttnn.relu(x)
        use_recorder(ttnn.relu, calls)
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        ttnn.relu(x)
        free_bound_early(x)  # MARK-ref-free
        found["free_end"] = outcome(lambda: ttnn.end_trace_capture(device, tid, cq_id=0))
    # Outside a capture the early references work as before.
    y = on_device(device)
    with guard("raise"):
        found["outside_read"] = outcome(lambda: read_bound_early(y))
    RESULT.update(found)
    RESULT["lines"] = {"read": line_of("MARK-ref-read"), "free": line_of("MARK-ref-free"),
                       "local_read": line_of("MARK-local-read")}
    RESULT["restored"] = read_bound_early is ttnn.Tensor.cpu and sync_bound_early is ttnn.synchronize_device


def scenario_functions_imported_before_the_guard(device):
    x = on_device(device)
    with guard("raise") as g:
        tid = begin_early(device, cq_id=0)
        RESULT["read"] = outcome(lambda: x.cpu())  # MARK-early-read
        RESULT["active_after"] = ttnn.is_trace_capture_active(device)
        RESULT["end"] = outcome(lambda: end_early(device, tid, cq_id=0))
        RESULT["execute"] = outcome(lambda: execute_early(device, tid, cq_id=0))
        RESULT["release"] = outcome(lambda: release_early(device, tid))
    RESULT["status"] = [c.status for c in g.captures]
    RESULT["line"] = line_of("MARK-early-read")
    RESULT["restored"] = [begin_early is ttnn.begin_trace_capture, execute_early is ttnn.execute_trace]


def scenario_names_bound_while_a_guard_was_on(device):
    """A module imported under a guard binds the wrappers; after the guard they are plain ttnn."""
    import sys as system

    global begin_during, end_during  # module attributes, as a module imported under the guard has
    with guard("raise"):
        from ttnn import begin_trace_capture as begin_during, end_trace_capture as end_during
    x = on_device(device)
    tid = begin_during(device, cq_id=0)
    RESULT["read"] = outcome(lambda: x.cpu())  # ttnn's own error now, not the guard's
    end_during(device, tid, cq_id=0)
    ttnn.release_trace(device, tid)
    RESULT["tools_left"] = [tool for tool in range(6) if system.monitoring.get_tool(tool) is not None]
    with guard("raise"):  # a later guard puts its own wrappers in their place
        tid = begin_during(device, cq_id=0)
        RESULT["read_later_guard"] = outcome(lambda: x.cpu())
        RESULT["active_after"] = ttnn.is_trace_capture_active(device)
    RESULT["restored"] = getattr(begin_during, "__trace_lint_guard__", False) is True


def scenario_tracker_refusal_lifted(device):
    executed = []
    fake_execute_trace(executed)
    RESULT["tracking"] = bool(ttnn._trace_allocation_tracker.TRACE_ALLOC_TRACKING)
    with guard("raise") as g:
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        ttnn.end_trace_capture(device, tid, cq_id=0)
        y = ttnn.zeros((32, 32), dtype=ttnn.float32, layout=ttnn.TILE_LAYOUT, device=device)  # MARK-alive
        RESULT["first"] = outcome(lambda: ttnn.execute_trace(device, tid, cq_id=0))
        ttnn.deallocate(y)  # the cause is gone
        RESULT["after_free"] = outcome(lambda: ttnn.execute_trace(device, tid, cq_id=0))
        ttnn.release_trace(device, tid)
    RESULT["executed"] = executed
    RESULT["line"] = line_of("MARK-alive")
    RESULT["executions"] = g.captures[0].executions
    RESULT["summary"] = g.captures[0].summary_line()


def scenario_decorator(device):
    x = on_device(device)

    @guard("raise")
    def capture_with_a_read():
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        try:
            x.cpu()
        finally:
            ttnn.end_trace_capture(device, tid, cq_id=0)

    RESULT["decorated"] = outcome(capture_with_a_read)
    RESULT["patched_after"] = ttnn.Tensor.cpu is read_bound_early
    RESULT["again"] = outcome(capture_with_a_read)  # each call enters the guard afresh


SCENARIOS = {name[len("scenario_"):]: fn for name, fn in globals().items() if name.startswith("scenario_")}


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    sys.exit(ttnn_scenarios.main(SCENARIOS, RESULT))
