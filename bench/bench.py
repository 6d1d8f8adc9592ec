"""trace-lint against ruff, in one run, on the same trees.

    python bench/bench.py [PATH] [--repeat 5] [--dense 1000]

1. PATH (default: the installed torch package's source folder): `trace-lint check` cold
   (`--no-cache`) and warm (from its cache), and `ruff check --no-cache --select E9,F`.
2. A generated trace-dense tree (`--dense` modules of each kind, in a temporary folder): the
   same, plus libcst's bare `parse_module` of every file (the floor) and `-j1` against `-j2`.
3. The runtime guard's idle overhead (bench/guard_overhead.py) with $TRACE_LINT_TTNN_PYTHON.

Prints medians of the wall times and the ratios. Timings are measured, never asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    found = BIN / name
    return str(found) if found.exists() else (shutil.which(name) or name)


def timed(command: list[str], repeat: int, cwd: Path, before=None) -> float:
    """Median wall seconds of `command` over `repeat` runs (exit status 0 or 1 accepted)."""
    samples = []
    for _ in range(repeat):
        if before is not None:
            before()
        start = time.perf_counter()
        done = subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        samples.append(time.perf_counter() - start)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return statistics.median(samples)


def bare_parse(root: Path, repeat: int) -> float:
    """libcst's parse_module of every .py file under root, in a fresh process (one core),
    without cyclic garbage collection (as trace-lint runs its analysis)."""
    script = (
        "import gc, sys, pathlib, libcst\n"
        "gc.disable()\n"
        "files = [p.read_text() for p in pathlib.Path(sys.argv[1]).rglob('*.py')]\n"
        "for text in files:\n"
        "    libcst.parse_module(text)\n"
    )
    return timed([sys.executable, "-c", script, str(root)], repeat, root)


def row(name: str, seconds: float, reference: float | None = None) -> str:
    ratio = f"{seconds / reference:6.2f}x" if reference else ""
    return f"| {name:<46} | {seconds:8.3f} | {ratio:>8} |"


def bench_tree(root: Path, repeat: int, cache_dir: Path, dense: bool) -> None:
    trace_lint = _tool("trace-lint")
    ruff = _tool("ruff")
    config = cache_dir / "pyproject.toml"
    config.write_text(f'[tool.trace-lint]\ncache-dir = "{cache_dir / "cache"}"\n')
    check = [trace_lint, "check", str(root), "--config", str(config), "--exit-zero", "--output-format", "concise"]
    ruff_time = timed([ruff, "check", "--no-cache", "--select", "E9,F", "--exit-zero", "--quiet", str(root)], repeat, root)
    cold = timed([*check, "--no-cache"], repeat, root)
    subprocess.run(check, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fill the cache
    warm = timed(check, repeat, root)
    print(f"\n### {root} ({sum(1 for _ in root.rglob('*.py'))} .py files), median of {repeat}\n")
    print("| run | seconds | vs ruff |")
    print("|---|---:|---:|")
    print(row("ruff check --no-cache --select E9,F", ruff_time, ruff_time))
    print(row("trace-lint check --no-cache (cold)", cold, ruff_time))
    print(row("trace-lint check (warm cache)", warm, ruff_time))
    if dense:
        floor = bare_parse(root, repeat)
        one = timed([*check, "--no-cache", "-j1"], repeat, root)
        two = timed([*check, "--no-cache", "-j2"], repeat, root)
        print(row("libcst parse_module of every file (floor)", floor, ruff_time))
        print(row("trace-lint check --no-cache -j1", one, ruff_time))
        print(row("trace-lint check --no-cache -j2", two, ruff_time))
        print(f"\n-j1 over bare parse: {one / floor:.2f}x (target <= 1.5x); -j1 / -j2: {one / two:.2f}x (target >= 1.7x)")
    else:
        # The ruff targets are for a big real tree; on generated code they mean nothing.
        print(f"\ncold / ruff: {cold / ruff_time:.2f}x (target <= 2x); warm / ruff: {warm / ruff_time:.2f}x (target <= 1x)")


def default_tree() -> Path:
    found = subprocess.run(
        [sys.executable, "-c", "import importlib.util, os; print(os.path.dirname(importlib.util.find_spec('torch').origin))"],
        capture_output=True, text=True,
    )
    if found.returncode != 0 or not found.stdout.strip():
        raise SystemExit("torch is not installed here: give a PATH to benchmark")
    return Path(found.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", nargs="?", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dense", type=int, default=1000, help="modules of each kind in the generated tree (0: skip)")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from gen_tree import generate

    with tempfile.TemporaryDirectory(prefix="trace-lint-bench-") as temporary:
        work = Path(temporary)
        (work / "a").mkdir()
        bench_tree((args.path or default_tree()).resolve(), args.repeat, work / "a", dense=False)
        if args.dense:
            (work / "b").mkdir()
            tree = generate(work / "tree", args.dense)
            bench_tree(tree, args.repeat, work / "b", dense=True)

    ttnn_python = os.environ.get("TRACE_LINT_TTNN_PYTHON")
    if not ttnn_python:
        print("\nruntime guard idle overhead: skipped (set TRACE_LINT_TTNN_PYTHON, see scripts/setup_ttnn_mock.sh)")
        return
    print("\n### runtime guard idle overhead\n")
    sys.stdout.flush()
    subprocess.run([ttnn_python, str(HERE / "guard_overhead.py")], check=False)


if __name__ == "__main__":
    main()
