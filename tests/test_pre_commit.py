"""The pre-commit hook, run by real pre-commit against a temporary repository.

The hook repository is a git snapshot of this checkout (tracked and untracked files, as
they are now), so `.pre-commit-hooks.yaml` and the package are what gets installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .cli_helpers import CAPTURE_FIXED, CAPTURE_READING_HOST, REPO

pytest.importorskip("pre_commit", reason="pre-commit is not installed")

GIT_IDENTITY = ["-c", "user.name=trace-lint tests", "-c", "user.email=tests@example.invalid", "-c", "commit.gpgsign=false"]

BAD, GOOD = CAPTURE_READING_HOST, CAPTURE_FIXED


def git(*args: str, cwd: Path, env_extra: dict | None = None) -> str:
    completed = subprocess.run(["git", *GIT_IDENTITY, *args], cwd=cwd, check=True, capture_output=True, text=True, env=env_extra)
    return completed.stdout


def snapshot_of_checkout(target: Path) -> str:
    """Commit the checkout's current files into a fresh repository; return the commit."""
    try:
        listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=REPO)
    except (subprocess.CalledProcessError, FileNotFoundError):
        pytest.skip("the checkout is not a git work tree, so there is no hook repository to snapshot")
    target.mkdir()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    git("init", "-q", cwd=target)
    git("add", "-A", cwd=target)
    git("commit", "-q", "-m", "snapshot", cwd=target)
    return git("rev-parse", "HEAD", cwd=target).strip()


def test_hook_definition_matches_the_spec():
    yaml = pytest.importorskip("yaml")
    [hook] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert hook["id"] == "trace-lint"
    assert hook["entry"] == "trace-lint check --force-exclude"
    assert hook["language"] == "python"
    assert hook["types_or"] == ["python", "pyi"]
    assert hook["require_serial"] is True


@pytest.fixture(scope="module")
def hook(tmp_path_factory) -> dict:
    """The hook repository and one pre-commit home for the module: the hook's environment
    is installed once (the slow part) and shared by the tests."""
    base = tmp_path_factory.mktemp("hook")
    rev = snapshot_of_checkout(base / "hook-repo")
    env = {**os.environ, "PRE_COMMIT_HOME": str(base / "pre-commit-home"), "PRE_COMMIT_COLOR": "never"}
    env.pop("VIRTUAL_ENV", None)
    return {"uri": (base / "hook-repo").as_uri(), "rev": rev, "env": env}


def new_project(project: Path, hook: dict) -> Path:
    project.mkdir()
    git("init", "-q", cwd=project)
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook['uri']}\n    rev: {hook['rev']}\n    hooks:\n      - id: trace-lint\n",
        encoding="utf-8",
    )
    return project


def pre_commit(project: Path, hook: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", *args],
        cwd=project, env=hook["env"], capture_output=True, text=True, timeout=600,
    )


def test_pre_commit_fails_on_a_finding_then_passes_once_fixed(tmp_path: Path, hook: dict):
    project = new_project(tmp_path / "project", hook)
    (project / "model.py").write_text(BAD, encoding="utf-8")
    (project / "notes.txt").write_text("ttnn.to_torch is fine in text files\n", encoding="utf-8")
    git("add", "-A", cwd=project)

    failed = pre_commit(project, hook, "--all-files")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "model.py:7:13: TRC102" in failed.stdout, failed.stdout + failed.stderr
    assert "notes.txt" not in failed.stdout

    (project / "model.py").write_text(GOOD, encoding="utf-8")
    git("add", "-A", cwd=project)
    passed = pre_commit(project, hook, "--all-files")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "trace-lint" in passed.stdout and "Passed" in passed.stdout


# Cross-file: the capture is in main.py, the code it runs in helpers.py.
HELPERS_CLEAN = """\
import ttnn


def step(x):
    return ttnn.relu(x)
"""
HELPERS_READING_HOST = HELPERS_CLEAN.replace("ttnn.relu(x)", "ttnn.to_torch(x)")
HELPERS_SUPPRESSED = HELPERS_CLEAN.replace("ttnn.relu(x)", "ttnn.to_torch(x)  # noqa: TRC102")
MAIN = """\
import ttnn
from pkg.helpers import step


def run(device, x):
    step(x)
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    try:
        out = step(x)
    finally:
        ttnn.end_trace_capture(device, tid, cq_id=0)
    return out
"""


def test_staged_files_are_checked_with_the_whole_project_around_them(tmp_path: Path, hook: dict):
    project = new_project(tmp_path / "project", hook)
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\n\n[tool.trace-lint]\n', encoding="utf-8")
    (project / "pkg").mkdir()
    (project / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (project / "pkg" / "helpers.py").write_text(HELPERS_CLEAN, encoding="utf-8")
    (project / "pkg" / "main.py").write_text(MAIN, encoding="utf-8")
    git("add", "-A", cwd=project)
    git("commit", "-q", "-m", "clean start", cwd=project)
    subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=project, env=hook["env"], check=True, capture_output=True)

    # A commit that only changes the captured callee: the capture is in a file not staged.
    helpers = project / "pkg" / "helpers.py"
    helpers.write_text(HELPERS_READING_HOST, encoding="utf-8")
    git("add", "pkg/helpers.py", cwd=project)
    blocked = subprocess.run(
        ["git", *GIT_IDENTITY, "commit", "-m", "callee reads the host"], cwd=project, env=hook["env"], capture_output=True, text=True, timeout=600
    )
    assert blocked.returncode != 0, blocked.stdout + blocked.stderr
    assert "pkg/helpers.py:5:12: TRC102" in blocked.stdout + blocked.stderr
    assert "pkg/main.py:7:11: capture begins here" in blocked.stdout + blocked.stderr

    # A suppression that the capture in main.py needs: only helpers.py is staged, and it
    # is not called unused (it is used: a whole-project run agrees).
    helpers.write_text(HELPERS_SUPPRESSED, encoding="utf-8")
    git("add", "pkg/helpers.py", cwd=project)
    passed = pre_commit(project, hook)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "TRC002" not in passed.stdout
    git("commit", "-q", "-m", "known host read", cwd=project, env_extra=hook["env"])

    # Only the capturing file changes; the finding it reaches in helpers.py is reported.
    helpers.write_text(HELPERS_READING_HOST, encoding="utf-8")
    git("commit", "-q", "--no-verify", "-am", "drop the suppression", cwd=project)
    (project / "pkg" / "main.py").write_text(MAIN.replace("    return out\n", "    return out  # done\n"), encoding="utf-8")
    git("add", "pkg/main.py", cwd=project)
    caught = pre_commit(project, hook)
    assert caught.returncode == 1, caught.stdout + caught.stderr
    assert "pkg/helpers.py:5:12: TRC102" in caught.stdout


def test_pre_commit_agrees_with_check_dot_under_nested_configs(tmp_path: Path, hook: dict):
    """bench/ has its own config ignoring TRC102; its files sort first, so a run that took
    the first file's config for all of them passed over src/'s finding."""
    project = new_project(tmp_path / "project", hook)
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\n\n[tool.trace-lint]\n', encoding="utf-8")
    for folder in ("bench", "src"):
        (project / folder).mkdir()
        (project / folder / "run.py").write_text(BAD, encoding="utf-8")
    (project / "bench" / "pyproject.toml").write_text('[tool.trace-lint]\nignore = ["TRC102"]\n', encoding="utf-8")
    git("add", "-A", cwd=project)

    hooked = pre_commit(project, hook, "--all-files")
    assert hooked.returncode == 1, hooked.stdout + hooked.stderr
    from .cli_helpers import run_cli

    direct = run_cli("check", "--no-cache", "--output-format", "concise", ".", cwd=project)
    found = sorted(line for line in direct.stdout.decode().splitlines() if ": TRC" in line)
    assert found == ["src/run.py:7:13: TRC102 `ttnn.to_torch` reads a device tensor back to the host inside a capture; read it after `execute_trace`"]
    assert sorted(line for line in hooked.stdout.splitlines() if ": TRC" in line) == found
