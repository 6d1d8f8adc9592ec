"""Running the installed `trace-lint` console script, as users do."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
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
