"""Idle overhead of the runtime guard per ttnn call: installed, no capture open, vs unguarded.

Run with a python that has ttnn 0.81.1, on a mock device:
    eval "$(scripts/setup_ttnn_mock.sh /tmp/ttnn-venv)"
    "$TRACE_LINT_TTNN_PYTHON" bench/guard_overhead.py [--calls 2000] [--rounds 15]

Prints the median ns per call for each call kind, unguarded and guarded, and the ratio.
"Guard cost alone" rows put a function that does nothing in place of the op's function, so
the difference is the guard's own work (argument scan, program signature) and nothing else.
A last table times plain Python calls made while a capture records: on Python 3.12+ the guard
watches calls through sys.monitoring then (and only then).
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
    options = parser.parse_args()
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
            ("ttnn.relu(input_tensor=x)  [guard cost alone]", lambda: ttnn.relu(input_tensor=x), 0),
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

        def python_function():
            return None

        def inside_a_capture() -> float:
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            try:
                return per_call_ns(python_function, options.calls, options.rounds)
            finally:
                ttnn.end_trace_capture(device, tid, cq_id=0)
                ttnn.release_trace(device, tid)

        bare = inside_a_capture()
        with guard("raise"):
            capturing = [("python_function()  [a capture recording]", bare, inside_a_capture())]
    finally:
        ttnn.close_device(device)

    width = max(len(r[0]) for r in rows)
    print(f"ttnn {getattr(ttnn, '__version__', '0.81.1')} mock device, median of {options.rounds} rounds x "
          f"{options.calls} calls, guard installed with no capture open")
    print(f"{'call':<{width}}  {'unguarded ns':>13}  {'guarded ns':>11}  {'ratio':>6}  {'added ns':>9}")
    for name, bare, guarded in rows + capturing:
        print(f"{name:<{width}}  {bare:>13.0f}  {guarded:>11.0f}  {guarded / bare:>6.2f}  {guarded - bare:>9.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
