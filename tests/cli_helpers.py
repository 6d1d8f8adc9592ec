"""Running the installed `trace-lint` console script, as users do."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def cli_path() -> str:
    candidate = Path(sys.executable).parent / "trace-lint"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("trace-lint")
    assert found, "the trace-lint console script is not installed (pip install -e .)"
    return found


def run_cli(*args: str, cwd: Path | None = None, stdin: bytes | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLUMNS")}
    return subprocess.run(
        [cli_path(), *args], cwd=cwd, input=stdin, capture_output=True, timeout=timeout, env=env
    )


def finding_set(path: Path, *extra: str, cwd: Path | None = None) -> set[tuple[str, int, str]]:
    """(file relative to the checked folder, line, code) for every finding of a CLI run."""
    result = run_cli("check", str(path), "--output-format", "json", *extra, cwd=cwd)
    assert result.returncode in (0, 1), result.stderr.decode()
    out = set()
    for item in json.loads(result.stdout):
        filename = Path(item["filename"])
        absolute = (cwd / filename) if cwd and not filename.is_absolute() else filename
        out.add((absolute.resolve().relative_to(path.resolve()).as_posix(), item["location"]["row"], item["code"]))
    return out


# A two-module package whose capture in main.py reaches a host read in helpers.py, with a
# sync on line 10 after a non-ASCII character (columns differ between code points and UTF-16).
# One capture that reads a device tensor back to the host (TRC102 on line 8), and its fix.
CAPTURE_READING_HOST = textwrap.dedent(
    """\
    import ttnn


    def run(device, x):
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        try:
            y = ttnn.to_torch(x)
        finally:
            ttnn.end_trace_capture(device, tid, cq_id=0)
        return y
    """
)
CAPTURE_FIXED = CAPTURE_READING_HOST.replace("y = ttnn.to_torch(x)", "y = ttnn.relu(x)")

CHAIN_HELPERS = textwrap.dedent(
    """\
    import ttnn


    def step(x):
        return ttnn.to_torch(x)
    """
)
CHAIN_MAIN = textwrap.dedent(
    """\
    import ttnn
    from pkg.helpers import step


    def run(device, x):
        step(x)
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        try:
            out = step(x)
            s = "😀"; ttnn.synchronize_device(device)
        finally:
            ttnn.end_trace_capture(device, tid, cq_id=0)
        return out, s
    """
)


def write_chain_package(project: Path) -> Path:
    """`project/pkg/` with CHAIN_HELPERS and CHAIN_MAIN; returns `project`."""
    package = project / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "helpers.py").write_text(CHAIN_HELPERS, encoding="utf-8")
    (package / "main.py").write_text(CHAIN_MAIN, encoding="utf-8")
    return project
