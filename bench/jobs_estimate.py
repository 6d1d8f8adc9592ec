"""Where do workers pay? The wall time -j1 and -jN would take on an idle machine, estimated from
CPU times (which a busy machine inflates far less than wall times), for the thresholds in
trace_lint/driver/parallel.py (MIN_CANDIDATE_BYTES, MIN_SHARE_BYTES).

    python bench/jobs_estimate.py [--models 10 40] [--jobs 2]

For each size, a TT-NN-shaped tree (bench/gen_model_repo.py, without the big capture file) is
checked in this process with -j1 and with -jN. The -jN estimate is the leader's CPU time with
its own share replaced by the slowest of its share and the workers' CPU time (each worker's
share runs beside the leader's).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

_ONE_RUN = """
import resource, sys, time
from pathlib import Path
from trace_lint import parallel
from trace_lint.driver.checker import check
from trace_lint.core.config import load_settings

root, jobs = Path(sys.argv[1]), int(sys.argv[2])
own, candidate_bytes = [], []
analyse, plan = parallel._analyse_share, parallel.planned_jobs

def timed_share(*args, **kwargs):
    start = time.process_time()
    try:
        return analyse(*args, **kwargs)
    finally:
        own.append(time.process_time() - start)

def recorded_plan(jobs, sizes):
    candidate_bytes.append(sum(sizes))
    return plan(jobs, sizes)

parallel._analyse_share, parallel.planned_jobs = timed_share, recorded_plan
start = time.process_time()
result = check([root], load_settings(root), jobs=jobs)
leader = time.process_time() - start
children = resource.getrusage(resource.RUSAGE_CHILDREN)
workers = children.ru_utime + children.ru_stime
own_share = own[0] if own and workers else 0.0
print(leader - own_share + max(own_share, workers), candidate_bytes[0] if candidate_bytes else 0, len(result.findings))
"""


def estimate(root: Path, jobs: int) -> tuple[float, int, int]:
    done = subprocess.run([sys.executable, "-c", _ONE_RUN, str(root), str(jobs)], capture_output=True, text=True, check=True)
    seconds, candidate_bytes, findings = done.stdout.split()
    return float(seconds), int(candidate_bytes), int(findings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, nargs="+", default=[10, 40])
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    import gen_model_repo

    print("| models | candidate bytes | -j1 s (CPU) | -jN s (idle estimate) | -jN / -j1 |")
    print("|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="trace-lint-jobs-") as temporary:
        for models in args.models:
            root = gen_model_repo.generate(Path(temporary) / f"m{models}", models, 0)
            serial, _, serial_findings = estimate(root, 1)
            sharded, candidate_bytes, sharded_findings = estimate(root, args.jobs)
            assert serial_findings == sharded_findings, "parallel and serial runs differ"
            print(f"| {models} | {candidate_bytes} | {serial:.2f} | {sharded:.2f} | {sharded / serial:.2f} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
