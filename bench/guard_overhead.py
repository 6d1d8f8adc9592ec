"""Idle overhead of the runtime guard per ttnn call: installed, no capture open, vs unguarded.

Run with a python that has ttnn 0.81.1, on a mock device:
    eval "$(scripts/setup_ttnn_mock.sh /tmp/ttnn-venv)"
    "$TRACE_LINT_TTNN_PYTHON" bench/guard_overhead.py [--calls 2000] [--rounds 15]

Prints the median ns per call for each call kind, unguarded and guarded, and the ratio.
"Guard cost alone" rows put a function that does nothing in place of the op's function, so
the difference is the guard's own work (argument scan, program signature) and nothing else.

`--observed` (any python, no ttnn needed) measures the recording of calls in captures
(runtime_guard/observed.py): a call of a project function while a capture is open, with and
without recording, and the same call with the recorder started and no capture open.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def per_call_ns(call, calls: int, rounds: int) -> float:
    for _ in range(max(1, calls // 10)):  # warm caches and the program cache
        call()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        for _ in range(calls):
            call()
        samples.append((time.perf_counter_ns() - start) / calls)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--observed", action="store_true", help="measure the recording of calls in captures instead")
    options = parser.parse_args()
    if options.observed:
        return observed_overhead(options.calls, options.rounds)
    if not os.environ.get("TT_METAL_MOCK_CLUSTER_DESC_PATH"):
        print("TT_METAL_MOCK_CLUSTER_DESC_PATH is not set: eval \"$(scripts/setup_ttnn_mock.sh VENV)\" first",
              file=sys.stderr)
        return 2

    import numpy as np
    import ttnn

    from trace_lint.runtime_guard import guard

    device = ttnn.open_device(device_id=0, trace_region_size=10_000_000)
    try:
        def tensor(value):
            host = ttnn.Tensor(np.full((32, 32), value, dtype=np.float32), ttnn.float32)
            return ttnn.to_device(ttnn.to_layout(host, ttnn.TILE_LAYOUT), device)

        x, y, out = tensor(1.0), tensor(2.0), tensor(0.0)
        noop = ttnn.Tensor(np.zeros((32, 32), dtype=np.float32), ttnn.float32)
        real_relu = ttnn.relu.function

        cases = [
            ("ttnn.relu(x)  [mock op]", lambda: ttnn.relu(x), 1),
            ("ttnn.add(x, y, output_tensor=out)  [mock op]", lambda: ttnn.add(x, y, output_tensor=out), 1),
            ("ttnn.relu(x)  [guard cost alone]", lambda: ttnn.relu(x), 0),
            ("x.shape (not patched, baseline)", lambda: x.shape, 0),
            ("ttnn.synchronize_device(device)", lambda: ttnn.synchronize_device(device), 1),
            ("host.to_numpy()  [Tensor read method]", lambda: noop.to_numpy(), 1),
        ]
        rows = []
        for name, call, real in cases:
            if not real and "relu" in name:
                ttnn.relu.function = lambda *a, **k: noop
            try:
                bare = per_call_ns(call, options.calls, options.rounds)
                with guard("raise"):
                    guarded = per_call_ns(call, options.calls, options.rounds)
            finally:
                ttnn.relu.function = real_relu
            rows.append((name, bare, guarded))
    finally:
        ttnn.close_device(device)

    width = max(len(r[0]) for r in rows)
    print(f"ttnn {getattr(ttnn, '__version__', '0.81.1')} mock device, median of {options.rounds} rounds x "
          f"{options.calls} calls, guard installed with no capture open")
    print(f"{'call':<{width}}  {'unguarded ns':>13}  {'guarded ns':>11}  {'ratio':>6}  {'added ns':>9}")
    for name, bare, guarded in rows:
        print(f"{name:<{width}}  {bare:>13.0f}  {guarded:>11.0f}  {guarded / bare:>6.2f}  {guarded - bare:>9.0f}")
    return 0


PROJECT_CODE = """
def leaf(x):
    return x + 1


def caller(x):
    return leaf(x)
"""


def observed_overhead(calls: int, rounds: int) -> int:
    """ns per call of a project function (`caller` -> `leaf`, two starts per call) in an open
    capture, recorded or not, and outside captures with the recorder started."""
    import importlib
    import tempfile
    from pathlib import Path
    from types import SimpleNamespace

    from trace_lint.runtime_guard import observed
    from trace_lint.runtime_guard.report import Frame

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "bench_project.py").write_text(PROJECT_CODE)
        sys.path.insert(0, folder)
        project = importlib.import_module("bench_project")
        call = lambda: project.caller(1)  # noqa: E731
        capture = SimpleNamespace(begin_frame=Frame(str(root / "bench_project.py"), 6, "caller"), label="trace")
        rows = [("no recorder (baseline)", per_call_ns(call, calls, rounds))]
        recorder = observed.start(root / "records", root)
        try:
            rows.append(("recorder started, no capture open", per_call_ns(call, calls, rounds)))
            recorder.opened(capture)
            try:
                rows.append(("capture open, calls recorded", per_call_ns(call, calls, rounds)))
            finally:
                recorder.closed(capture)
            rows.append(("recorder started, capture closed again", per_call_ns(call, calls, rounds)))
            edges = recorder.edges()
        finally:
            observed.stop()
    how = "sys.monitoring" if sys.version_info >= (3, 12) else "sys.setprofile"
    print(f"python {sys.version.split()[0]} ({how}), median of {rounds} rounds x {calls} calls of "
          f"caller(x) -> leaf(x), two project functions per call; {len(edges)} edges recorded")
    base = rows[0][1]
    width = max(len(name) for name, _ in rows)
    print(f"{'state':<{width}}  {'ns per call':>11}  {'added ns':>9}")
    for name, value in rows:
        print(f"{name:<{width}}  {value:>11.0f}  {value - base:>9.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
