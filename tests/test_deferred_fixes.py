"""Fixes whose edits are rendered only when read (`core.findings.Fix(build=...)`): every
output of a run, `--fix`, `--diff`, `--add-noqa` and `--statistics` included, is byte for
byte what it is when every fix is rendered the moment its rule reports it, and a run whose
output shows no edits renders none.

Each run is a real CLI process; the eager one is the same program with `Fix` rendering its
edits in its constructor (while the rule still runs, as fixes were built before)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from trace_lint.output import FORMAT_NAMES

# Runs the command line in this process after `mode` changed how fixes are built:
# "eager" renders every fix when it is made; "count" prints how many were rendered.
DRIVER = textwrap.dedent(
    """\
    import sys
    from trace_lint.core import findings

    mode = sys.argv[1]
    rendered = []
    original_init = findings.Fix.__init__
    original_edits = findings.Fix.edits.fget

    def init(self, applicability, message, edits=(), build=None):
        original_init(self, applicability, message, edits, build)
        if mode == "eager":
            self.edits

    def edits(self):
        if self._build is not None:
            rendered.append(self.message)
        return original_edits(self)

    findings.Fix.__init__ = init
    findings.Fix.edits = property(edits)
    from trace_lint.cli import app

    try:
        app(sys.argv[2:], prog_name="trace-lint")
    except SystemExit as done:
        code = done.code
    else:
        code = 0
    if mode == "count":
        sys.stderr.write(f"\\nrendered {len(rendered)}\\n")
    sys.exit(code)
    """
)

# TRC401 with a safe fix, one with an unsafe fix (a return in the region), one with none
# (the end is not its own statement), and an unused suppression (TRC002, with its own fix).
SOURCES = {
    "app/capture.py": """\
        import ttnn


        def safe(device, model, x):
            model(x)
            tid = ttnn.begin_trace_capture(device, cq_id=0)  # start
            # the forward pass
            out = model(x)

            out = ttnn.relu(out)
            ttnn.end_trace_capture(device, tid, cq_id=0)
            return tid, out


        class Runner:
            def unsafe(self, device, x):
                self.model(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                if x is None:
                    return None
                out = self.model(x)
                ttnn.end_trace_capture(device, tid, cq_id=0)
                return out

            def none(self, device, x):
                self.model(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                out = self.model(x); ttnn.end_trace_capture(device, tid, cq_id=0)
                return out
        """,
    "app/other.py": """\
        import ttnn


        def quiet(device, x):  # noqa: TRC101
            ttnn.relu(x)
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            y = ttnn.relu(x)
            ttnn.end_trace_capture(device, tid, cq_id=0)
            return y
        """,
}


def _project(root: Path) -> Path:
    for name, text in SOURCES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    (root / "pyproject.toml").write_text("[tool.trace-lint]\n")
    return root


def _run(mode: str, root: Path, *args: str) -> tuple[int, bytes, bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLUMNS")}
    done = subprocess.run([sys.executable, "-c", DRIVER, mode, *args], cwd=root, capture_output=True, timeout=300, env=env)
    return done.returncode, done.stdout, done.stderr


def _files(root: Path) -> dict[str, bytes]:
    return {name: (root / name).read_bytes() for name in SOURCES}


RUNS = [
    *(("check", "--no-cache", "--output-format", name) for name in FORMAT_NAMES),
    ("check", "--no-cache", "--output-format", "concise", "--unsafe-fixes"),
    ("check", "--no-cache", "--output-format", "json", "--unsafe-fixes"),
    ("check", "--no-cache", "--statistics"),
    ("check", "--no-cache", "--statistics", "--output-format", "json"),
    ("check", "--no-cache", "--diff"),
    ("check", "--no-cache", "--diff", "--unsafe-fixes"),
    ("check", "--output-format", "json"),  # through the cache: stored, then read back
    ("check", "--output-format", "json", "-j2"),
    ("check", "--no-cache", "--output-format", "json", "-j2"),  # a worker sends its findings
]


def _runs(mode: str, root: Path, args: tuple[str, ...], times: int) -> tuple[list, dict[str, bytes]]:
    """`times` runs of `args` on a fresh copy of the project at `root` (the same folder for
    both modes: outputs name it), and the files afterwards."""
    shutil.rmtree(root, ignore_errors=True)
    _project(root)
    outputs = [_run(mode, root, *args, ".") for _ in range(times)]
    return outputs, _files(root)


@pytest.mark.parametrize("args", RUNS, ids=[" ".join(run[1:]) for run in RUNS])
def test_outputs_equal_eager_fixes(tmp_path: Path, args: tuple[str, ...]):
    times = 1 if "--no-cache" in args else 2  # with a cache: cold, then warm
    lazy, _ = _runs("lazy", tmp_path / "project", args, times)
    eager, _ = _runs("eager", tmp_path / "project", args, times)
    assert lazy[0][0] in (0, 1), lazy[0][2].decode()
    assert lazy[0][1].strip()  # something was printed
    assert lazy == eager


@pytest.mark.parametrize("args", [("--fix",), ("--fix", "--unsafe-fixes"), ("--add-noqa",)])
def test_applied_fixes_equal_eager_fixes(tmp_path: Path, args: tuple[str, ...]):
    args = ("check", "--no-cache", *args)
    lazy, lazy_files = _runs("lazy", tmp_path / "project", args, 1)
    eager, eager_files = _runs("eager", tmp_path / "project", args, 1)
    assert lazy == eager
    assert lazy_files == eager_files
    assert lazy_files != {name: textwrap.dedent(text).encode() for name, text in SOURCES.items()}


def test_a_run_that_shows_no_edits_renders_none(tmp_path: Path):
    root = _project(tmp_path)
    code, out, err = _run("count", root, "check", "--no-cache", "--output-format", "concise", "--unsafe-fixes", ".")
    assert code == 1 and out.count(b"TRC401") == 4 and b"[*]" in out
    assert err.endswith(b"rendered 0\n"), err.decode()
    code, out, err = _run("count", root, "check", "--no-cache", "--output-format", "json", ".")
    # Two safe TRC401 fixes and the unsafe one (the fourth TRC401 has none; TRC002's fix is
    # made whole).
    assert err.endswith(b"rendered 3\n"), err.decode()
