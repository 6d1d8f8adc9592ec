"""An edit that touches no analysis group, of a file that holds none of the engine's findings
and cannot hold a suppression, is settled from the analysis record without analysing
(`checker._edits_report_nothing`): the file reports nothing. Every other edited file is
settled by the analysis. Each test compares the cached run with a `--no-cache` run, and
with the shortcut turned off."""

from __future__ import annotations

from pathlib import Path

import pytest

from trace_lint.core.config import load_settings
from trace_lint.driver import checker
from trace_lint.driver.cache import ResultCache

HELPERS = '''\
import time


def unused(x):
    y = x + 1
    return y


def used(x):
    z = x + 2
    return z
'''

RUNNER = '''\
import ttnn

from pkg.helpers import used


def capture(device, x):
    used(x)
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    try:
        out = used(x)
        host = ttnn.to_torch(out)
    finally:
        ttnn.end_trace_capture(device, tid, cq_id=0)
    return out, host
'''

OTHER = '''\
def plain(a):
    return a * 2
'''


class Analyses:
    """How many times a run analysed (`checker._analysed`), rather than settling."""

    def __init__(self, monkeypatch):
        self.count = 0
        real = checker._analysed

        def counted(*args, **kwargs):
            self.count += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(checker, "_analysed", counted)


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.trace-lint]\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "helpers.py").write_text(HELPERS)
    (root / "pkg" / "runner.py").write_text(RUNNER)
    (root / "pkg" / "other.py").write_text(OTHER)
    monkeypatch.chdir(root)
    return root


def _run(paths: list[Path], root: Path, cache=None):
    result = checker.check(paths, load_settings(root), cache=cache, whole_program=True)
    found = [(f.filename, f.location.row, f.location.column, f.code, f.message, [[(s.filename, s.location.row) for s in c] for c in f.chains]) for f in result.findings]
    return found, result.errors, result.files_checked


def _after_edit(project: Path, tmp_path: Path, monkeypatch, name: str, data: bytes, paths=None):
    """Fill the cache, write `data` to pkg/`name`, run with the cache: (its answer, how many
    times it analysed), after checking that a run without the cache agrees."""
    paths = paths or [project]
    cache = ResultCache(tmp_path / "cache")
    _run([project], project, cache)
    (project / "pkg" / name).write_bytes(data)
    analyses = Analyses(monkeypatch)
    cached = _run(paths, project, cache)
    count = analyses.count
    assert cached == _run(paths, project)
    return cached, count


EDITS = {
    "comment in a dependency read in part": ("helpers.py", (HELPERS + "# a note\n").encode()),
    "comment in an unread file": ("other.py", (OTHER + "# a note\n").encode()),
    "code in an unread file": ("other.py", (OTHER + "\n\ndef more(b):\n    return b - 1\n").encode()),
    "an unused suppression": ("other.py", OTHER.replace("a * 2", "a * 2  # noqa: TRC101").encode()),
    "a suppression by its other spelling": ("other.py", OTHER.replace("a * 2", "a * 2  # trace-lint: ignore[TRC102]").encode()),
    "bytes that do not decode": ("other.py", b'x = "\xff"\n'),
    "a comment in the file that holds the finding": ("runner.py", (RUNNER + "# a note\n").encode()),
    "the finding suppressed": ("runner.py", RUNNER.replace("ttnn.to_torch(out)", "ttnn.to_torch(out)  # noqa: TRC102").encode()),
}

# The edits settled without analysing: nothing else in them can be reported.
SETTLED_HERE = {"comment in a dependency read in part", "comment in an unread file", "code in an unread file", "bytes that do not decode"}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edit_is_settled_as_an_analysis_would(project, tmp_path, monkeypatch, edit):
    name, data = EDITS[edit]
    (found, errors, _), analyses = _after_edit(project, tmp_path, monkeypatch, name, data)
    assert errors == []
    assert (analyses == 0) == (edit in SETTLED_HERE)
    codes = {(f[0], f[3]) for f in found}
    if edit in ("an unused suppression", "a suppression by its other spelling"):
        assert codes == {("pkg/other.py", "TRC002"), ("pkg/runner.py", "TRC102")}
    elif edit == "the finding suppressed":
        assert codes == set()
    else:
        assert codes == {("pkg/runner.py", "TRC102")}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_the_same_answer_with_the_shortcut_off(project, tmp_path, monkeypatch, edit):
    name, data = EDITS[edit]
    on, _ = _after_edit(project, tmp_path / "on", monkeypatch, name, data)
    (project / "pkg" / name).write_text({"helpers.py": HELPERS, "runner.py": RUNNER, "other.py": OTHER}[name])
    monkeypatch.setattr(checker, "_edits_report_nothing", lambda *args: False)
    off, analyses = _after_edit(project, tmp_path / "off", monkeypatch, name, data)
    assert analyses == 1
    assert on == off


def test_a_one_file_run_of_the_edited_file(project, tmp_path, monkeypatch):
    """A run named on the edited file alone (pre-commit's, the editor's) reports what the
    whole run reports of it: here nothing, without analysing."""
    name, data = EDITS["code in an unread file"]
    (found, errors, checked), analyses = _after_edit(project, tmp_path, monkeypatch, name, data, paths=[project / "pkg" / "other.py"])
    assert (found, errors, checked, analyses) == ([], [], 1, 0)


class ParseChecks:
    """How many named files a run parse-checked itself (`checker._has_parse_errors`)."""

    def __init__(self, monkeypatch):
        self.count = 0
        real = checker._has_parse_errors

        def counted(*args, **kwargs):
            self.count += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(checker, "_has_parse_errors", counted)


@pytest.mark.parametrize("text", [OTHER, OTHER + "\ndef broken(:\n    pass\n"], ids=["parses", "syntax error"])
def test_a_named_files_parse_check_is_a_fact_of_its_content(project, tmp_path, monkeypatch, text):
    """A one-file run after a whole run parse-checks a named file the prefilter does not
    admit; a second run of the same content reads the answer from the cache."""
    (project / "pkg" / "other.py").write_text(text)
    named = [project / "pkg" / "other.py"]
    expected = _run(named, project)
    cache = ResultCache(tmp_path / "cache")
    _run([project], project, cache)
    checks = ParseChecks(monkeypatch)
    first = _run(named, project, cache)
    for entry in (tmp_path / "cache").glob("results-*.json"):
        entry.unlink()  # the run's own entry: the second run answers from the analysis record
    second = _run(named, project, cache)
    assert first == second == expected
    assert checks.count == 1
    assert bool(expected[0]) == (text != OTHER)
    if text != OTHER:
        assert {f[3] for f in expected[0]} == {"TRC001"}


def test_the_parse_check_code_is_the_rules(project):
    from trace_lint.rules.analysis import UnparsableFile

    assert checker.UNPARSABLE == UnparsableFile.code


@pytest.mark.parametrize("item", [["not a digest", False], ["0" * 32, "no"], ["0" * 32]], ids=["bad digest", "bad answer", "short"])
def test_a_damaged_parse_check_is_not_served(project, tmp_path, monkeypatch, item):
    from .cache_entries import resealed

    named = [project / "pkg" / "other.py"]
    cache = ResultCache(tmp_path / "cache")
    _run([project], project, cache)
    _run(named, project, cache)
    (entry,) = (tmp_path / "cache").glob("parse_checks-*.json")
    entry.write_text(resealed(entry.read_text(), lambda fields: fields["entries"].append(item)))
    for results in (tmp_path / "cache").glob("results-*.json"):
        results.unlink()
    checks = ParseChecks(monkeypatch)
    assert _run(named, project, cache) == _run(named, project)
    assert checks.count == 1
    assert cache.facts_rejections["parse_checks"]


def test_a_settled_edit_leaves_the_record_of_the_files_as_they_are(project, tmp_path, monkeypatch):
    """Once edits settled from a record have changed more than one file, the next run starts
    from a record of the files as they are: a third edit does not outline the first file
    again, and undoing them answers as before."""
    from trace_lint.driver.cache import ChangedText

    cache = ResultCache(tmp_path / "cache")
    before = _run([project], project, cache)
    (project / "pkg" / "helpers.py").write_text(HELPERS + "# a note\n")
    assert _run([project], project, cache) == before
    asked: list[str] = []
    real = ChangedText.__init__

    def recorded(self, data, display="", *args, **kwargs):
        asked.append(display)
        real(self, data, display, *args, **kwargs)

    (project / "pkg" / "other.py").write_text(OTHER + "# another note\n")
    assert _run([project], project, cache) == before
    monkeypatch.setattr(ChangedText, "__init__", recorded)
    analyses = Analyses(monkeypatch)
    (project / "pkg" / "other.py").write_text(OTHER + "# a third note\n")
    cached = _run([project], project, cache)
    assert (analyses.count, "pkg/helpers.py" in asked) == (0, False)
    assert cached == before == _run([project], project)
    analyses.count = 0
    (project / "pkg" / "helpers.py").write_text(HELPERS)
    (project / "pkg" / "other.py").write_text(OTHER)
    assert _run([project], project, cache) == before
    assert analyses.count == 0


def test_a_one_file_run_after_edits_of_two_files(project, tmp_path, monkeypatch):
    """A one-file run settles its file and leaves the record as it is (it cannot settle the
    other edited file); the whole run after it settles both."""
    cache = ResultCache(tmp_path / "cache")
    _run([project], project, cache)
    (project / "pkg" / "helpers.py").write_text(HELPERS + "# a note\n")
    (project / "pkg" / "other.py").write_text(OTHER + "# a note\n")
    named = [project / "pkg" / "other.py"]
    expected_named, expected_whole = _run(named, project), _run([project], project)
    records = sorted(p.name for p in (tmp_path / "cache").glob("analysis-*"))
    analyses = Analyses(monkeypatch)
    assert _run(named, project, cache) == expected_named
    assert sorted(p.name for p in (tmp_path / "cache").glob("analysis-*")) == records
    assert _run([project], project, cache) == expected_whole
    assert len(list((tmp_path / "cache").glob("analysis-*"))) == len(records) + 1
    assert analyses.count == 0



@pytest.mark.parametrize("on_demand", [True, False], ids=["read on demand", "all read"])
def test_a_run_the_newest_record_settles_reads_no_other(project, tmp_path, monkeypatch, on_demand):
    """Records are read when a run reaches them (`cache.ReadOnDemand`): with four records of
    earlier states on disk, an edit the newest settles decodes that one alone; an edit that
    needs the analysis reads on. Every answer is the one with all read first."""
    from trace_lint.driver import cache as cache_module

    if not on_demand:
        monkeypatch.setattr(cache_module, "ReadOnDemand", list)
    cache = ResultCache(tmp_path / "cache")
    for note in range(4):  # four states of the files, each with its record
        (project / "pkg" / "runner.py").write_text(RUNNER + f"# note {note}\n")  # analysed: the file holds a finding
        _run([project], project, cache)
    assert len(list((tmp_path / "cache").glob("analysis-*"))) == 4
    decoded: list[int] = []
    real = ResultCache._decode_analysis

    def counted(self, *args, **kwargs):
        decoded.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ResultCache, "_decode_analysis", counted)
    analyses = Analyses(monkeypatch)
    (project / "pkg" / "other.py").write_text(OTHER + "# a note\n")
    settled = _run([project], project, cache)
    assert (len(decoded), analyses.count) == ((1, 0) if on_demand else (4, 0))
    assert settled == _run([project], project)
    decoded.clear()
    analyses.count = 0
    (project / "pkg" / "runner.py").write_text(RUNNER.replace("ttnn.to_torch(out)", "ttnn.to_torch(out)  # noqa: TRC102"))
    analysed = _run([project], project, cache)
    assert (len(decoded), analyses.count) == (4, 1)
    assert analysed == _run([project], project)


SETTLED_IN_A_FRESH_PROCESS = """
import json, sys
from pathlib import Path
from trace_lint.core.config import load_settings
from trace_lint.driver.cache import ResultCache
from trace_lint.driver.checker import check

root, cache = Path(sys.argv[1]), ResultCache(Path(sys.argv[2]))
found = check([root], load_settings(root), cache=cache, whole_program=True).findings
# libcst's body ran (a deferred module in sys.modules is not loaded yet).
print(json.dumps(["libcst._nodes" in sys.modules, "trace_lint.rules" in sys.modules, [(f.filename, f.location.row, f.code) for f in found]]))
"""


@pytest.mark.parametrize("edit", sorted(SETTLED_HERE))
def test_a_settled_edit_loads_neither_libcst_nor_the_rules(project, tmp_path, edit):
    """The edited file is outlined with `ast` alone (`outline.ModuleOutline`): libcst is
    never loaded, nor are the rules; the answer is a `--no-cache` run's."""
    import json
    import subprocess
    import sys

    def fresh() -> list:
        done = subprocess.run([sys.executable, "-c", SETTLED_IN_A_FRESH_PROCESS, str(project), str(tmp_path / "cache")], capture_output=True, text=True, cwd=project, check=True)
        return json.loads(done.stdout)

    assert fresh()[:2] == [True, True]  # the first run analyses
    name, data = EDITS[edit]
    (project / "pkg" / name).write_bytes(data)
    loaded, rules, found = fresh()
    assert (loaded, rules) == (False, False)
    assert [tuple(f) for f in found] == [(f[0], f[1], f[3]) for f in _run([project], project)[0]]


def _outline_facts(module) -> tuple:
    module.load()
    return (
        module.ok, module.read_error, module.parse_error, module.has_outline, module.text_reduced,
        module.parts_signature(range(len(module._chunks))), module.chunk_texts(), module.imports, module.globals,
        module.global_bindings, module.outline_facts, module._spans,
    )


def test_an_outline_alone_reads_what_loading_the_module_reads():
    """`ModuleOutline` (no libcst) and `ModuleInfo` (which parses on top of it) agree on
    everything an outline gives, for every file of the fixtures and of trace-lint itself;
    where `ast` refuses a text (a syntax error), the outline says it needs libcst, and the
    module was not outlined."""
    from trace_lint.semantic.outline import ModuleOutline
    from trace_lint.semantic.project import ModuleInfo

    repository = Path(__file__).resolve().parent.parent
    compared, refused = 0, 0
    for path in sorted([*(repository / "tests" / "fixtures").rglob("*.py"), *(repository / "trace_lint").rglob("*.py")]):
        for names in (("pkg.mod",), ("a.b.mod", "mod")):
            outline, module = ModuleOutline(path, names, path.name), ModuleInfo(path, names, path.name)
            facts = _outline_facts(outline)
            if outline.needs_parser:
                assert not module.has_outline and not outline.ok, path
                refused += 1
            else:
                assert facts == _outline_facts(module), path
                compared += 1
    assert compared > 600 and refused > 0


def test_a_text_ast_refuses_is_probed_with_libcst(monkeypatch):
    """A changed text this Python's parser refuses (newer syntax) is given to libcst, as
    loading the module would: its probe is a parsed module, not an empty outline."""
    import ast

    from trace_lint.driver.cache import ChangedText
    from trace_lint.semantic.project import ModuleInfo

    real = ast.parse

    def refuse(text, *args, **kwargs):
        if "refused_here" in text:
            raise SyntaxError("refused for the test")
        return real(text, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", refuse)
    data = b"def refused_here(x):\n    return used(x)\n"
    text = ChangedText(data, "pkg/new.py", ("pkg/new.py", ("pkg.new",)), lambda data, probe: None)
    probe = text._probe(("pkg.new",), False)
    assert isinstance(probe, ModuleInfo) and probe.ok and not probe.has_outline
    assert probe.chunk_texts() == [data.decode()]
    assert text.calls_outside_candidates({"used"})


def test_a_damaged_finding_of_the_named_file_is_not_served(project, tmp_path, monkeypatch):
    """A record whose stored finding of the named file is damaged (sealed again, so only the
    field checks see it) is not used: the run analyses and answers as `--no-cache` does."""
    import json

    from .cache_entries import resealed

    cache = ResultCache(tmp_path / "cache")
    _run([project], project, cache)
    for entry in (tmp_path / "cache").glob("results-*.json"):
        entry.unlink()
    (record,) = (tmp_path / "cache").glob("analysis-*.json")

    def damage(fields):
        for group in fields["groups"]:
            for item in group["findings"]:
                if item["filename"] == "pkg/runner.py":
                    item["location"] = [0, 0]

    record.write_text(resealed(record.read_text(), damage))
    assert json.loads(record.read_text().partition("\n")[2])  # still an entry
    analyses = Analyses(monkeypatch)
    named = [project / "pkg" / "runner.py"]
    found = _run(named, project, cache)
    assert analyses.count == 1
    assert found == _run(named, project)
