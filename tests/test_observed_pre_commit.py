"""The pre-commit hook follows the runtime guard's observed calls too (it runs the checker)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .test_observed import make_project, run_guarded
from .test_pre_commit import git, hook, new_project, pre_commit  # noqa: F401  (hook: the installed hook, per module)

pytest.importorskip("pre_commit", reason="pre-commit is not installed")


def test_a_staged_callee_is_reported_through_the_recorded_edge(tmp_path: Path, hook: dict, monkeypatch):
    project = new_project(tmp_path / "project", hook)
    (project / ".gitignore").write_text(".trace-lint-cache/\n")
    make_project(project)
    run_guarded(project, monkeypatch)  # the project's guarded test run, in this process
    git("add", ".gitignore", "pyproject.toml", "app/model.py", cwd=project)
    git("commit", "-q", "-m", "the model", cwd=project)
    git("add", "app/steps.py", cwd=project)  # pre-commit passes only this file
    failed = pre_commit(project, hook)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "app/steps.py:6:16: TRC102" in failed.stdout, failed.stdout
    assert "observed at run time by the capture begun at app/model.py:12" in failed.stdout
