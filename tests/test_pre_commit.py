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


def git(*args: str, cwd: Path) -> str:
    completed = subprocess.run(["git", *GIT_IDENTITY, *args], cwd=cwd, check=True, capture_output=True, text=True)
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


def test_pre_commit_fails_on_a_finding_then_passes_once_fixed(tmp_path: Path):
    rev = snapshot_of_checkout(tmp_path / "hook-repo")
    project = tmp_path / "project"
    project.mkdir()
    git("init", "-q", cwd=project)
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {(tmp_path / 'hook-repo').as_uri()}\n    rev: {rev}\n    hooks:\n      - id: trace-lint\n",
        encoding="utf-8",
    )
    (project / "model.py").write_text(BAD, encoding="utf-8")
    (project / "notes.txt").write_text("ttnn.to_torch is fine in text files\n", encoding="utf-8")
    git("add", "-A", cwd=project)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "PRE_COMMIT_COLOR": "never"}
    env.pop("VIRTUAL_ENV", None)

    def pre_commit() -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "pre_commit", "run", "--all-files"],
            cwd=project, env=env, capture_output=True, text=True, timeout=600,
        )

    failed = pre_commit()
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "model.py:7:13: TRC102" in failed.stdout, failed.stdout + failed.stderr
    assert "notes.txt" not in failed.stdout

    (project / "model.py").write_text(GOOD, encoding="utf-8")
    git("add", "-A", cwd=project)
    passed = pre_commit()
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "trace-lint" in passed.stdout and "Passed" in passed.stdout
