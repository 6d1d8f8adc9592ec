"""The console script answers `--version` and `-V` before importing the command line (typer,
click, the analyzer), and hands everything else to it unchanged. Import lists, not times:
speed is measured in the bench."""

from __future__ import annotations

import os
import subprocess

from trace_lint import __version__

from .cli_helpers import cli_path, run_cli


def _imports_of(*args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    env = dict(os.environ, PYTHONPROFILEIMPORTTIME="1")  # CPython lists every import on stderr
    result = subprocess.run([cli_path(), *args], capture_output=True, env=env, timeout=120)
    modules = set()
    for line in result.stderr.decode().splitlines():
        if line.startswith("import time:") and "|" in line:
            modules.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return result, modules


def test_version_flags_answer_without_importing_the_command_line():
    for flag in ("--version", "-V"):
        result, modules = _imports_of(flag)
        assert result.returncode == 0
        assert result.stdout.decode() == f"trace-lint {__version__}\n"
        assert "trace_lint" in modules  # the listing works
        assert not modules & {"typer", "click", "libcst", "pathspec", "rich"}, sorted(modules)


def test_everything_else_goes_to_the_command_line():
    result, modules = _imports_of("rule", "TRC102")
    assert result.returncode == 0 and "(TRC102)" in result.stdout.decode()
    assert "typer" in modules
    # `--version` among other arguments is typer's to judge, as before.
    combined = run_cli("--version", "check")
    assert combined.returncode == 0 and combined.stdout.decode().strip() == f"trace-lint {__version__}"
    usage = run_cli("--bogus")
    assert usage.returncode == 2 and usage.stderr.decode().startswith("trace-lint: error:")
