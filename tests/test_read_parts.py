"""An analysis group records which parts of a dependent file it read (`cache.read_parts`:
the file's outline facts and the chunks, one per top-level definition, that it parsed or
searched). An edit that keeps those parts does not touch the group; any other edit does.
Every test compares the cached run with a `--no-cache` run of the same tree."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from trace_lint.capture import engine as engine_module
from trace_lint.core.config import load_settings
from trace_lint.driver import parallel
from trace_lint.driver.cache import ResultCache
from trace_lint.driver.checker import check

from .cache_entries import payload

FIXTURES = Path(__file__).parent / "fixtures"

# No framework name, no capture token: the prefilter admits neither file, so each is only
# ever a dependency of the group rooted in the runner.
HELPERS = '''\
import time


def unused(x):
    y = x + 1
    return y


def used(x):
    z = x + 2
    return z


def also_unused(x):
    return x
'''

RUNNER = '''\
import ttnn

from pkg.helpers import used


def capture(device, x):
    used(x)
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    try:
        out = used(x)
    finally:
        ttnn.end_trace_capture(device, tid, cq_id=0)
    return out
'''


class EngineRoots:
    """The candidate files each engine run (with the rules) was rooted in."""

    def __init__(self, monkeypatch):
        self.runs: list[list[str]] = []
        real = engine_module.Engine.run

        def run(engine):
            if len(engine.rules) > 1:
                self.runs.append(sorted(m.display_path for m in engine.roots_in or ()))
            return real(engine)

        monkeypatch.setattr(engine_module.Engine, "run", run)


def _run(root: Path, cache=None):
    result = check([root], load_settings(root), cache=cache, whole_program=True)
    return [(f.filename, f.location.row, f.code, f.message, [[(s.filename, s.location.row) for s in c] for c in f.chains]) for f in result.findings], result.errors


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "GROUP_BYTES", 1)  # a group per candidate file
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.trace-lint]\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "helpers.py").write_text(HELPERS)
    (root / "pkg" / "runner.py").write_text(RUNNER)
    monkeypatch.chdir(root)
    return root


def _after_edit(project: Path, tmp_path: Path, monkeypatch, text: str):
    """Fill the cache, write `text` to pkg/helpers.py, run with the cache: (its findings,
    the engine runs it made), after checking that a run without the cache agrees."""
    cache = ResultCache(tmp_path / "cache")
    _run(project, cache)
    roots = EngineRoots(monkeypatch)
    (project / "pkg" / "helpers.py").write_text(text)
    cached = _run(project, cache)
    runs = list(roots.runs)
    assert cached == _run(project)
    return cached[0], runs


def test_the_record_names_the_chunks_a_group_read(project, tmp_path):
    _run(project, ResultCache(tmp_path / "cache"))
    (entry,) = (tmp_path / "cache").glob("analysis-*")
    (group,) = [g for g in payload(entry.read_text())["groups"] if g["members"] == ["pkg/runner.py"]]
    (read,) = [item for item in group["parts"] if item[0] == "pkg/helpers.py"]
    # Chunk 2 is `used` (0: the module-level code, 1: `unused`); the group never read `unused`.
    assert [number for number, _ in read[4]] == [2]


def test_an_edit_of_a_definition_the_group_never_read_reuses_it(project, tmp_path, monkeypatch):
    found, runs = _after_edit(project, tmp_path, monkeypatch, HELPERS.replace("y = x + 1", "y = time.time()"))
    assert runs == []
    assert found == []


def test_a_comment_appended_to_the_file_reuses_the_group(project, tmp_path, monkeypatch):
    found, runs = _after_edit(project, tmp_path, monkeypatch, HELPERS + "\n# edited\n")
    assert runs == []


def test_an_edit_of_the_read_definition_runs_the_group_again(project, tmp_path, monkeypatch):
    found, runs = _after_edit(project, tmp_path, monkeypatch, HELPERS.replace("z = x + 2", "z = time.time()"))
    assert runs == [["pkg/runner.py"]]
    assert [(f[0], f[1], f[2]) for f in found] == [("pkg/helpers.py", 10, "TRC203")]


def test_a_line_added_above_the_read_definition_runs_the_group_again(project, tmp_path, monkeypatch):
    # `used` moves down a line: its positions are in the outline, so the group runs again.
    text = HELPERS.replace("z = x + 2", "z = time.time()")
    cache = ResultCache(tmp_path / "cache")
    (project / "pkg" / "helpers.py").write_text(text)
    assert [(f[0], f[1]) for f in _run(project, cache)[0]] == [("pkg/helpers.py", 10)]
    roots = EngineRoots(monkeypatch)
    (project / "pkg" / "helpers.py").write_text(text.replace("y = x + 1\n", "y = x + 1\n    y += 1\n"))
    cached = _run(project, cache)
    assert roots.runs == [["pkg/runner.py"]]
    assert cached == _run(project)
    assert [(f[0], f[1]) for f in cached[0]] == [("pkg/helpers.py", 11)]


def test_a_new_definition_of_a_name_the_group_resolved_runs_it_again(project, tmp_path, monkeypatch):
    # A later `def used` wins: the outline changes, though no chunk the group read did.
    found, runs = _after_edit(project, tmp_path, monkeypatch, HELPERS + "\n\ndef used(x):\n    return time.time()\n")
    assert runs == [["pkg/runner.py"]]
    assert [(f[0], f[1], f[2]) for f in found] == [("pkg/helpers.py", 19, "TRC203")]


def test_a_file_holding_a_finding_is_read_whole(project, tmp_path, monkeypatch):
    text = HELPERS.replace("z = x + 2", "z = time.time()")
    (project / "pkg" / "helpers.py").write_text(text)
    found, runs = _after_edit(project, tmp_path, monkeypatch, text.replace("y = x + 1", "y = x + 3"))
    assert runs == [["pkg/runner.py"]]
    assert [(f[0], f[1], f[2]) for f in found] == [("pkg/helpers.py", 10, "TRC203")]


def test_an_edit_that_breaks_the_file_runs_the_group_again(project, tmp_path, monkeypatch):
    found, runs = _after_edit(project, tmp_path, monkeypatch, HELPERS.replace("y = x + 1", "y = (x +"))
    assert runs == [["pkg/runner.py"]]


def _statement_lines(text: str) -> list[int]:
    """Lines holding one whole simple statement inside a top-level definition."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    found = []
    for top in tree.body:
        if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for node in ast.walk(top):
                if isinstance(node, (ast.Assign, ast.AugAssign, ast.Expr, ast.Return, ast.Pass)) and node.lineno == node.end_lineno:
                    found.append(node.lineno)
    return sorted(set(found))


def _in_place_edits(text: str) -> list[str]:
    """Edits that keep every line where it was: a statement replaced by `pass`, a comment at
    the end of a statement's line, a comment appended to the file."""
    lines = text.splitlines(keepends=True)
    statements = _statement_lines(text)
    chosen = statements[:: max(1, len(statements) // 4)][:4]
    edits = [text + "\n# edited\n"]
    for line in chosen:
        original = lines[line - 1]
        indent = original[: len(original) - len(original.lstrip())]
        ending = original[len(original.rstrip("\r\n")):] or "\n"
        edits.append("".join(lines[: line - 1] + [f"{indent}pass{ending}"] + lines[line:]))
        edits.append("".join(lines[: line - 1] + [original.rstrip("\r\n") + "  # edited" + ending] + lines[line:]))
    return edits


# (fixture, whether some group reads one of its files in part: its files are not all candidates)
KEEP_LINES = [
    ("interprocedural", True),
    ("revised_rules", False),
    ("helper_effects/warm_up_below", False),
    ("helper_effects/helper_arguments", False),
    ("helper_effects/static_receivers", False),
]


@pytest.mark.parametrize("fixture,partial", KEEP_LINES, ids=[name for name, _ in KEEP_LINES])
def test_edits_that_keep_lines_give_the_uncached_findings(fixture, partial, tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "GROUP_BYTES", 1)  # a group per candidate file: most files are dependencies
    source = FIXTURES / fixture
    root = tmp_path / "project"
    shutil.copytree(source, root, ignore=shutil.ignore_patterns(".trace-lint-cache"))
    if not (root / "pyproject.toml").exists():
        (root / "pyproject.toml").write_text("[tool.trace-lint]\n")
    monkeypatch.chdir(root)
    cache = ResultCache(tmp_path / "cache")
    roots = EngineRoots(monkeypatch)
    reused_dependency = rerun = 0
    for path in sorted(root.rglob("*.py")):
        original = path.read_text()
        for edited in _in_place_edits(original):
            path.write_text(original)
            _run(root, cache)
            entry = max((tmp_path / "cache").glob("analysis-*"), key=lambda p: p.stat().st_mtime_ns)
            display = path.relative_to(root).as_posix()
            groups = payload(entry.read_text())["groups"]
            read_in_part = [g for g in groups if display not in g["members"] and any(item[0] == display for item in g["parts"])]
            path.write_text(edited)
            roots.runs.clear()
            cached = _run(root, cache)
            assert cached == _run(root), (display, edited.splitlines()[-1])
            reran = {tuple(run) for run in roots.runs}
            if read_in_part and not any(tuple(g["members"]) in reran for g in read_in_part):
                reused_dependency += 1
            elif roots.runs:
                rerun += 1
        path.write_text(original)
    # Other edits ran groups again; where a group reads a file in part, it kept through some
    # edits of that file.
    assert rerun > 0
    assert (reused_dependency > 0) == partial
