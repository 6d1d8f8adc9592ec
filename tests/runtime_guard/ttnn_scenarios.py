"""Guard scenarios on a real ttnn 0.81.1 mock device, one per process.

Run as `python ttnn_scenarios.py NAME`; prints one line `TRACE_LINT_RESULT {json}` with what
was observed. The tests decide what is right. A program launched inside a capture, and
execute_trace, segfault on the mock: where a scenario must let an op through inside a capture
it puts a recording function in place of that one op's function (`use_recorder`), or of
execute_trace; everything else is the real ttnn.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import traceback
import warnings

import numpy as np
import ttnn
from ttnn import add as add_bound_before_guard  # an alias the guard must still see

from trace_lint.runtime_guard import TraceSafetyError, TraceSafetyWarning, guard, install, uninstall

RESULT = {}
HERE = os.path.abspath(__file__)


def host(shape=(32, 32), value=1.0):
    return ttnn.Tensor(np.full(shape, value, dtype=np.float32), ttnn.float32)


def on_device(device, shape=(32, 32), value=1.0):
    return ttnn.to_device(ttnn.to_layout(host(shape, value), ttnn.TILE_LAYOUT), device)


def live_buffers(device):
    return sorted((b.address, str(b.buffer_type)) for b in ttnn._ttnn.reports.get_buffers(device))


def use_recorder(op, calls):
    """Let `op` through inside a capture without launching a program: its function records the
    call and returns a device tensor shaped like its first input (allocated, not computed)."""
    real = op.function

    def record(*args, **kwargs):
        calls.append(op.python_fully_qualified_name)
        first = next(value for value in (*args, *kwargs.values()) if isinstance(value, ttnn.Tensor))
        out = kwargs.get("output_tensor")
        if out is not None:
            return out
        return ttnn.allocate_tensor_on_device(first.spec, first.device())

    op.function = record
    return real


def outcome(fn):
    """Run fn; describe what it raised (or not)."""
    try:
        value = fn()
    except TraceSafetyError as error:
        return {
            "raised": "TraceSafetyError",
            "codes": [c for v in error.violations for c in v.codes],
            "kinds": [v.kind for v in error.violations],
            "frames": [[os.path.basename(v.frame.filename), v.frame.lineno, v.frame.function] for v in error.violations],
            "message": str(error),
            "is_runtime_error": isinstance(error, RuntimeError),
        }
    except Exception as error:  # ttnn's own errors
        return {"raised": type(error).__name__, "message": str(error)[:300]}
    return {"raised": None, "value": repr(type(value))}


def line_of(marker, path=HERE):
    with open(path) as source:
        for number, text in enumerate(source, 1):
            if marker in text and "line_of(" not in text:
                return number
    raise AssertionError(marker)


def patched_objects():
    return {
        "FastOperation.__call__": ttnn.decorators.FastOperation.__dict__["__call__"],
        **{f"ttnn.{n}": getattr(ttnn, n) for n in ("begin_trace_capture", "end_trace_capture", "execute_trace",
                                                   "_ttnn_execute_trace", "release_trace", "synchronize_device",
                                                   "record_event", "wait_for_event", "event_synchronize")},
        **{f"Tensor.{n}": ttnn.Tensor.__dict__[n] for n in ("cpu", "to_numpy", "to_list", "item", "__repr__",
                                                            "to", "deallocate", "to_torch")},
    }


# ----------------------------------------------------------------------------- scenarios
def scenario_alias_and_read(device):
    calls = []
    x = on_device(device)
    add_bound_before_guard(x, x)  # warm-up, before the guard: the cache is warm but unseen
    with guard("raise") as g:
        add_bound_before_guard(x, x)  # warm-up the guard sees
        use_recorder(ttnn.add, calls)
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        y = add_bound_before_guard(x, x)  # MARK-alias-op
        RESULT["read"] = outcome(lambda: y.cpu())  # MARK-read
        RESULT["active_after"] = ttnn.is_trace_capture_active(device)
        RESULT["end_again"] = outcome(lambda: ttnn.end_trace_capture(device, tid, cq_id=0))
        RESULT["execute"] = outcome(lambda: ttnn.execute_trace(device, tid, cq_id=0))
    RESULT["ops"] = [(op.op, op.frame.lineno) for c in g.captures for op in c.ops]
    RESULT["recorder_calls"] = calls
    RESULT["status"] = [c.status for c in g.captures]
    RESULT["lines"] = {"op": line_of("MARK-alias-op"), "read": line_of("MARK-read")}


def scenario_reads(device):
    x = on_device(device)
    h = host()
    reads = {
        "Tensor.cpu": lambda: x.cpu(),
        "Tensor.to_numpy": lambda: x.to_numpy(),
        "Tensor.to_list": lambda: x.to_list(),
        "Tensor.item": lambda: x.item(),
        "Tensor.to_torch": lambda: x.to_torch(),
        "repr": lambda: repr(x),
        "str": lambda: str(x),
        "f-string": lambda: f"{x}",
        "ttnn.from_device": lambda: ttnn.from_device(x),
        "ttnn.to_torch": lambda: ttnn.to_torch(x),
        "ttnn.copy_device_to_host_tensor": lambda: ttnn.copy_device_to_host_tensor(x, h),
    }
    RESULT["unguarded"] = {}
    for name, read in reads.items():
        with guard("raise"):
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            RESULT[name] = outcome(read)
            RESULT[name]["active_after"] = ttnn.is_trace_capture_active(device)
            ttnn.end_trace_capture(device, tid, cq_id=0)
    # The same reads without the guard: ttnn's own error, no frame, capture stays open.
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    RESULT["unguarded"] = outcome(lambda: x.cpu())
    ttnn.end_trace_capture(device, tid, cq_id=0)
    ttnn.release_trace(device, tid)
    # Host tensors are not device reads.
    with guard("raise"):
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        RESULT["host_read"] = outcome(lambda: h.to_numpy())
        ttnn.end_trace_capture(device, tid, cq_id=0)
        ttnn.release_trace(device, tid)


def scenario_transfers_and_sync(device):
    x = on_device(device)
    h = host()
    ht = ttnn.to_layout(host(), ttnn.TILE_LAYOUT)
    event = ttnn.record_event(device, 0)
    cases = {
        "ttnn.to_device": lambda: ttnn.to_device(ht, device),
        "Tensor.to": lambda: ht.to(device),
        "ttnn.copy_host_to_device_tensor": lambda: ttnn.copy_host_to_device_tensor(ht, x),
        "ttnn.synchronize_device": lambda: ttnn.synchronize_device(device),
        "ttnn.record_event": lambda: ttnn.record_event(device, 0),
        "ttnn.wait_for_event": lambda: ttnn.wait_for_event(0, event),
        "ttnn.event_synchronize": lambda: ttnn.event_synchronize(event),
    }
    for name, call in cases.items():
        with guard("raise"):
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            RESULT[name] = outcome(call)
            RESULT[name]["active_after"] = ttnn.is_trace_capture_active(device)
    # Unguarded, ttnn accepts these inside a capture on the mock.
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    RESULT["unguarded_copy"] = outcome(lambda: ttnn.copy_host_to_device_tensor(ht, x))
    RESULT["unguarded_sync"] = outcome(lambda: ttnn.synchronize_device(device))
    ttnn.end_trace_capture(device, tid, cq_id=0)
    ttnn.release_trace(device, tid)
    del h


def scenario_cache_miss(device):
    calls = []
    small, big = on_device(device), on_device(device, (64, 32))
    with guard("raise") as g:
        ttnn.add(small, small)  # warm-up: 32x32 only
        use_recorder(ttnn.add, calls)
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        ttnn.add(small, small)
        # The real add on an unwarmed signature would launch (and segfault the mock): the
        # guard must stop it before ttnn's function is called.
        ttnn.add.function = None
        RESULT["miss"] = outcome(lambda: ttnn.add(big, big))  # MARK-miss
        RESULT["active_after"] = ttnn.is_trace_capture_active(device)
    RESULT["recorder_calls"] = calls
    RESULT["line"] = line_of("MARK-miss")
    RESULT["ops"] = [op.op for c in g.captures for op in c.ops]


def scenario_deferred_raise(device):
    calls = []
    x = on_device(device)
    with guard("raise") as g:
        ttnn.relu(x)
        use_recorder(ttnn.relu, calls)
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        ttnn.relu(x)
        RESULT["zeros"] = outcome(
            lambda: ttnn.zeros((32, 32), dtype=ttnn.float32, layout=ttnn.TILE_LAYOUT, device=device)  # MARK-zeros
        )
        RESULT["host_op"] = outcome(lambda: ttnn.to_layout(host(), ttnn.TILE_LAYOUT))  # MARK-host-op
        RESULT["end"] = outcome(lambda: ttnn.end_trace_capture(device, tid, cq_id=0))
        RESULT["active_after"] = ttnn.is_trace_capture_active(device)
        RESULT["execute"] = outcome(lambda: ttnn.execute_trace(device, tid, cq_id=0))
        RESULT["release_again"] = outcome(lambda: ttnn.release_trace(device, tid))
    RESULT["status"] = [c.status for c in g.captures]
    RESULT["refused"] = [c.refused_executions for c in g.captures]
    RESULT["lines"] = {"zeros": line_of("MARK-zeros"), "host_op": line_of("MARK-host-op")}


def scenario_warn_mode(device):
    calls = []
    x = on_device(device)
    with guard("warn") as g:
        ttnn.relu(x)
        use_recorder(ttnn.relu, calls)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            ttnn.relu(x)
            ttnn.zeros((32, 32), dtype=ttnn.float32, layout=ttnn.TILE_LAYOUT, device=device)  # MARK-w-zeros
            ttnn.synchronize_device(device)  # MARK-w-sync
            RESULT["warnings_before_end"] = len(caught)
            RESULT["end"] = outcome(lambda: ttnn.end_trace_capture(device, tid, cq_id=0))
        RESULT["warnings"] = [
            [w.category.__name__, os.path.basename(w.filename), w.lineno, str(w.message).splitlines()[0]]
            for w in caught if issubclass(w.category, TraceSafetyWarning)
        ]
        RESULT["execute"] = outcome(lambda: ttnn.execute_trace(device, tid, cq_id=0))
        ttnn.release_trace(device, tid)
    RESULT["codes"] = [v.code for v in g.violations]
    RESULT["lines"] = {"zeros": line_of("MARK-w-zeros"), "sync": line_of("MARK-w-sync")}


def scenario_nested_begin(device):
    with guard("raise") as g:
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        RESULT["nested"] = outcome(lambda: ttnn.begin_trace_capture(device, cq_id=0))  # MARK-nested
        RESULT["active_after"] = ttnn.is_trace_capture_active(device)
        ttnn.end_trace_capture(device, tid, cq_id=0)
    RESULT["line"] = line_of("MARK-nested")
    RESULT["captures"] = len(g.captures)
    # Unguarded: ttnn's TT_FATAL, and the outer capture is left open.
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    RESULT["unguarded"] = outcome(lambda: ttnn.begin_trace_capture(device, cq_id=0))
    RESULT["unguarded_active_after"] = ttnn.is_trace_capture_active(device)
    ttnn.end_trace_capture(device, tid, cq_id=0)
    ttnn.release_trace(device, tid)


def scenario_left_open(device):
    before = patched_objects()

    def forget_to_end():
        with guard("raise"):
            ttnn.begin_trace_capture(device, cq_id=0)  # MARK-open

    RESULT["normal"] = outcome(forget_to_end)
    RESULT["active_after"] = ttnn.is_trace_capture_active(device)

    def fail_inside():
        with guard("raise"):
            ttnn.begin_trace_capture(device, cq_id=0)
            raise KeyError("model bug")

    try:
        fail_inside()
    except KeyError as error:
        RESULT["exception"] = {"type": "KeyError", "notes": getattr(error, "__notes__", [])}
    RESULT["active_after_exception"] = ttnn.is_trace_capture_active(device)
    after = patched_objects()
    RESULT["restored"] = {k: before[k] is after[k] for k in before}
    RESULT["line"] = line_of("MARK-open")


def scenario_stale_inputs(device):
    executed = []

    def fake_execute(mesh_device, trace_id, *, cq_id=None, blocking=True):
        executed.append(int(trace_id))

    ttnn.execute_trace = fake_execute
    ttnn._ttnn_execute_trace = fake_execute
    calls = []
    results = {}
    with guard("raise") as g:
        def capture(x, out):
            ttnn.add(x, x, output_tensor=out)
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            ttnn.add(x, x, output_tensor=out)
            ttnn.end_trace_capture(device, tid, cq_id=0)
            return tid

        x, out = on_device(device), on_device(device)
        ttnn.add(x, x, output_tensor=out)
        use_recorder(ttnn.add, calls)
        # 1. inputs unchanged: replays.
        tid = capture(x, out)
        results["clean"] = outcome(lambda: ttnn.execute_trace(device, tid, cq_id=0))
        ttnn.release_trace(device, tid)
        # 2. the input freed and a new tensor allocated at the same address.
        tid = capture(x, out)
        addr = x.buffer_address()
        del x
        y = ttnn.zeros((32, 32), dtype=ttnn.float32, layout=ttnn.TILE_LAYOUT, device=device)  # MARK-reuse
        results["reused_same_address"] = y.buffer_address() == addr
        results["reused"] = outcome(lambda: ttnn.execute_trace(device, tid, cq_id=0))
        ttnn.release_trace(device, tid)
        # 3. the input rebound to a new tensor (old buffer freed, address not reused).
        x = y
        del y
        tid = capture(x, out)
        keep = on_device(device)  # takes the next free address, so the old one stays free
        x = on_device(device)  # MARK-rebind
        results["rebound"] = outcome(lambda: ttnn.execute_trace(device, tid, cq_id=0))
        ttnn.release_trace(device, tid)
        del keep
        # 4. explicit deallocate of a trace input.
        x = on_device(device)
        tid = capture(x, out)
        ttnn.deallocate(x)  # MARK-dealloc
        results["deallocated"] = outcome(lambda: ttnn.execute_trace(device, tid, cq_id=0))
        ttnn.release_trace(device, tid)
    RESULT.update(results)
    RESULT["executed"] = executed
    RESULT["executions"] = [c.executions for c in g.captures]
    RESULT["lines"] = {k: line_of(f"MARK-{k}") for k in ("rebind", "reuse", "dealloc")}


def scenario_alloc_tracker(device):
    RESULT["tracking"] = bool(ttnn._trace_allocation_tracker.TRACE_ALLOC_TRACKING)
    with guard("raise") as g:
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        ttnn.end_trace_capture(device, tid, cq_id=0)
        y = ttnn.zeros((32, 32), dtype=ttnn.float32, layout=ttnn.TILE_LAYOUT, device=device)  # MARK-alive
        RESULT["execute"] = outcome(lambda: ttnn.execute_trace(device, tid, cq_id=0))
        ttnn.release_trace(device, tid)
    RESULT["line"] = line_of("MARK-alive")
    RESULT["violations"] = [v.code for v in g.violations]
    del y


def _workload(device, log):
    """Ops outside any capture; returns what the device looked like after each step."""
    x = on_device(device, value=2.0)
    w = on_device(device, value=3.0)
    steps = []
    y = ttnn.add(x, w)
    steps.append(("add", y.buffer_address(), live_buffers(device)))
    z = ttnn.matmul(y, w)
    steps.append(("matmul", z.buffer_address(), live_buffers(device)))
    ttnn.relu(z, output_tensor=y)
    steps.append(("relu_out", y.buffer_address(), live_buffers(device)))
    ttnn.deallocate(z)
    steps.append(("dealloc", None, live_buffers(device)))
    y = ttnn.add(y, w)  # the old y must be freed right here, not at some later GC
    steps.append(("rebind", y.buffer_address(), live_buffers(device)))
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    ttnn.end_trace_capture(device, tid, cq_id=0)
    ttnn.release_trace(device, tid)
    steps.append(("empty_trace", None, live_buffers(device)))
    log.extend(steps)
    return x.to_numpy().tolist()


def scenario_same_device_work(device):
    unguarded, guarded = [], []
    RESULT["unguarded_values"] = _workload(device, unguarded)
    with guard("raise"):
        RESULT["guarded_values"] = _workload(device, guarded)
    RESULT["unguarded"] = unguarded
    RESULT["guarded"] = guarded


def scenario_reentrant_threads(device):
    before = patched_objects()
    x = on_device(device)
    errors = []
    g1 = install("warn")
    with guard("raise") as g2:
        with g2:  # entering the same guard again only counts
            RESULT["inner_is_patched"] = ttnn.decorators.FastOperation.__dict__["__call__"] is not before[
                "FastOperation.__call__"]

            def work():
                try:
                    for _ in range(20):
                        ttnn.relu(x)
                except Exception as error:  # pragma: no cover - reported
                    errors.append(repr(error))

            threads = [threading.Thread(target=work) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        RESULT["still_patched_in_outer"] = ttnn.decorators.FastOperation.__dict__["__call__"] is not before[
            "FastOperation.__call__"]
    RESULT["patched_while_g1"] = ttnn.decorators.FastOperation.__dict__["__call__"] is not before[
        "FastOperation.__call__"]
    uninstall(g1)
    after = patched_objects()
    RESULT["restored"] = all(before[k] is after[k] for k in before)
    RESULT["errors"] = errors


def scenario_end_fails(device):
    """The real end_trace_capture raising: on a queue that is not capturing ttnn says TT_FATAL
    and still records; the guard follows ttnn's own is_trace_capture_active."""
    with guard("raise") as g:
        x = on_device(device)
        ttnn.relu(x)
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        RESULT["wrong_queue"] = outcome(lambda: ttnn.end_trace_capture(device, tid, cq_id=1))
        RESULT["status_after_wrong_queue"] = g.captures[0].status
        RESULT["end"] = outcome(lambda: ttnn.end_trace_capture(device, tid, cq_id=0))
        RESULT["status_after_end"] = g.captures[0].status
        ttnn.release_trace(device, tid)
    RESULT["active_after"] = ttnn.is_trace_capture_active(device)
    RESULT["violations"] = [v.code for v in g.violations]


def scenario_thread_modes(device):
    """guard("raise") on one thread, guard("warn") on another, both active: each keeps its mode."""
    x = on_device(device)
    both_in = threading.Barrier(2, timeout=60)
    raise_done = threading.Event()
    found = {}

    def run(mode):
        try:
            with guard(mode) as g:
                both_in.wait()
                if mode == "warn":
                    raise_done.wait(60)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    found[mode] = outcome(lambda: ttnn.synchronize_device(device))
                finally:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        if g.captures[-1].status == "recording":
                            ttnn.end_trace_capture(device, tid, cq_id=0)
                        ttnn.release_trace(device, tid)
                    raise_done.set()
                found[mode + "_status"] = g.captures[-1].status
                both_in.wait()
        except BaseException as error:  # pragma: no cover - reported
            found[mode] = repr(error)
            raise_done.set()

    threads = [threading.Thread(target=run, args=(m,)) for m in ("raise", "warn")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    RESULT.update(found)
    ttnn.relu(x)


SCENARIOS = {name[len("scenario_"):]: fn for name, fn in globals().items() if name.startswith("scenario_")}


def main(scenarios=None, result=None) -> int:
    """Run the scenario named on the command line on a fresh device; print what it found."""
    scenarios = SCENARIOS if scenarios is None else scenarios
    result = RESULT if result is None else result
    name = sys.argv[1]
    device = ttnn.open_device(device_id=0, trace_region_size=10_000_000)
    try:
        scenarios[name](device)
    except BaseException:
        result["crash"] = traceback.format_exc()
    finally:
        ttnn.close_device(device)
    sys.stdout.write("\nTRACE_LINT_RESULT " + json.dumps(result, default=repr) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
