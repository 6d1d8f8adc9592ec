"""Same findings whatever the split, over every fixture project and a generated model tree:
`--no-cache` against a cold and a warm cache, workers (`-j2`, `-j8`), a cache made stale by
random edits (each edit checked against `--no-cache`, then undone), and every one-file run,
cached and not, against the whole run filtered to that file (findings in it, and findings
elsewhere whose chain starts in it). The CLI runs in this process (the same entry point as
the console script) so that the few hundred runs stay within the suite's time."""

from __future__ import annotations

import contextlib
import io
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trace_lint.cli import app

from .cli_helpers import FIXTURES, REPO

# Fixture projects that stand alone (`reach/roots` is about which folder is the root, and
# the observed ones about runtime records: both are tested on their own terms elsewhere).
PROJECTS = sorted(
    [
        *(FIXTURES / name for name in ("correct_trace", "interprocedural", "lexical_rules", "semantic", "split_chains", "torch_correct", "torch_rules")),
        *(path for group in ("helper_effects", "reach", "revised_rules") for path in (FIXTURES / group).iterdir() if path.is_dir() and path.name != "roots"),
    ]
)


Found = set[tuple[str, int, str, tuple[str, ...]]]


def _run(*args: str) -> Found:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            code = app(["check", *args, "--output-format", "json"], standalone_mode=False)
        except SystemExit as error:
            code = error.code
    assert code in (None, 0, 1), (args, code)
    found = set()
    for item in json.loads(out.getvalue()):
        starts = tuple(sorted({chain[0]["filename"] for chain in item["chains"]}))
        found.add((item["filename"], item["location"]["row"], item["code"], starts))
    return found


def _python_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py") if ".trace-lint-cache" not in p.parts)


def _edit(text: str, rng: random.Random) -> str:
    """One random edit a developer makes: a comment, a new function, a line removed or doubled."""
    lines = text.splitlines(keepends=True)
    kind = rng.randrange(4)
    if kind == 0 or not lines:
        return text + "\n# edited\n"
    if kind == 1:
        return text + "\n\ndef added_helper(value):\n    return value\n"
    index = rng.randrange(len(lines))
    if kind == 2:
        return "".join(lines[:index] + lines[index + 1:])
    return "".join(lines[: index + 1] + lines[index:])


def _check_every_split(root: Path, seed: str, edits: int = 3) -> None:
    whole = _run(".", "--no-cache")
    assert _run(".") == whole, "cold cache"
    assert _run(".") == whole, "warm cache"
    assert _run(".", "--no-cache", "-j2") == whole, "-j2"
    assert _run(".", "--no-cache", "-j8") == whole, "-j8"
    assert _run(".", "-j2") == whole, "-j2 with the cache"
    files = _python_files(root)
    rng = random.Random(seed)
    for _ in range(edits):
        name = rng.choice(files)
        path = root / name
        before = path.read_text()
        path.write_text(_edit(before, rng))
        assert _run(".") == _run(".", "--no-cache"), f"stale cache after an edit of {name}"
        path.write_text(before)
        assert _run(".") == whole, f"cache after undoing an edit of {name}"
    for name in files:
        expected = {f for f in whole if f[0] == name or name in f[3]}
        assert _run(name) == expected, name
        assert _run(name, "--no-cache") == expected, f"{name} --no-cache"


@pytest.mark.parametrize("fixture", PROJECTS, ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_every_split_of_a_fixture_project_agrees(fixture, tmp_path, monkeypatch):
    root = tmp_path / fixture.name
    shutil.copytree(fixture, root, ignore=shutil.ignore_patterns(".trace-lint-cache"))
    if not (root / "pyproject.toml").exists() and not (root / "trace-lint.toml").exists():
        (root / "pyproject.toml").write_text("[tool.trace-lint]\n")  # the copy is its own project
    monkeypatch.chdir(root)
    _check_every_split(root, fixture.name)


def test_every_split_of_a_generated_model_tree_agrees(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    subprocess.run([sys.executable, str(REPO / "bench" / "gen_model_repo.py"), str(root), "--models", "3", "--dense-captures", "12"], check=True, capture_output=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)  # inside a repository, as users run it
    monkeypatch.chdir(root)
    whole = _run(".", "--no-cache")
    assert {f[2] for f in whole} >= {"TRC401"}  # the tree has findings to agree on
    _check_every_split(root, "generated", edits=4)
