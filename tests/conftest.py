from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

# Fixture projects are code the analyzer reads, with tests and conftests of their own: never
# collected by this suite.
collect_ignore_glob = ["fixtures/*"]

from trace_lint.driver.checker import check
from trace_lint.core.config import Settings

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _default_cache_folder(monkeypatch):
    """Tests place the cache themselves: a developer's TRACE_LINT_CACHE_DIR never leaks in."""
    monkeypatch.delenv("TRACE_LINT_CACHE_DIR", raising=False)


def findings_for(source: str, tmp_path: Path, select=("ALL",), name: str = "example.py", **settings):
    """Run the real engine on one in-memory file and return its findings."""
    path = tmp_path / name
    # select=None: the default set of rules; a tuple: exactly those (empty: none).
    result = check([path], Settings(select=None if select is None else tuple(select), root=tmp_path, **settings), sources={path: source})
    return result.findings


@pytest.fixture
def lint(tmp_path):
    def run(source: str, select=("ALL",), **settings):
        return findings_for(source, tmp_path, select=select, **settings)

    return run
