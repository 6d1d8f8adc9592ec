"""The flake8 plugin, run by real flake8 in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("flake8", reason="flake8 is not installed")

from .cli_helpers import CHAIN_MAIN as MAIN, write_chain_package  # noqa: E402



@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_chain_package(tmp_path)


def flake8(project: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "TRC", *args],
        cwd=project, input=stdin, capture_output=True, text=True, encoding="utf-8",
    )


def test_plugin_is_registered():
    completed = subprocess.run([sys.executable, "-m", "flake8", "--version"], capture_output=True, text=True)
    assert "trace-lint" in completed.stdout


def test_findings_across_files_with_flake8_columns(project: Path):
    completed = flake8(project, "pkg")
    assert completed.returncode == 1, completed.stderr
    sync_column = MAIN.splitlines()[9].index("ttnn.synchronize_device") + 1
    helpers_line, main_line = completed.stdout.splitlines()
    # The callee is flagged though the capture is in main.py.
    assert helpers_line == (
        "pkg/helpers.py:5:12: TRC102 `ttnn.to_torch` reads a device tensor back to the host"
        " inside a capture; read it after `execute_trace`"
    )
    assert main_line.startswith(f"pkg/main.py:10:{sync_column}: TRC103 ")


def test_flake8_noqa_and_project_settings_apply(project: Path):
    main = project / "pkg" / "main.py"
    main.write_text(MAIN.replace("synchronize_device(device)", "synchronize_device(device)  # noqa: TRC103"), encoding="utf-8")
    (project / "pyproject.toml").write_text('[tool.trace-lint]\nignore = ["TRC102"]\n', encoding="utf-8")
    completed = flake8(project, "pkg")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert completed.stdout == ""


def test_stdin_is_checked_as_the_named_file(project: Path):
    edited = MAIN.replace('s = "😀"; ttnn.synchronize_device(device)', "s = 1")
    assert edited != MAIN
    completed = flake8(project, "--stdin-display-name", "pkg/main.py", "-", stdin=edited)
    assert completed.returncode == 0, completed.stdout + completed.stderr

    worse = MAIN.replace("out = step(x)", "out = ttnn.from_torch(x, device=device)")
    completed = flake8(project, "--stdin-display-name", "pkg/main.py", "-", stdin=worse)
    codes = sorted(line.split()[1] for line in completed.stdout.splitlines())
    assert codes == ["TRC101", "TRC103", "TRC301"], completed.stdout + completed.stderr
