"""Per-file facts cached by content (`cache.Admissions`): what the prefilter admits is kept by
each file's content hash, module name and package flag, so a run asks the prefilter only
about contents it has not seen. Every test compares with a run without the cache."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from trace_lint.core.config import load_settings
from trace_lint.driver.cache import ResultCache, admissions_key
from trace_lint.driver.checker import check
from trace_lint.frameworks import prefilter_for
from trace_lint.frontend.prefilter import Prefilter

from .cache_entries import header, payload, resealed
from .cli_helpers import FIXTURES, REPO
from .test_analysis_reuse import _project


class Asked:
    """The module names the prefilter is asked about."""

    def __init__(self, monkeypatch):
        self.names: list[str] = []
        real = Prefilter.admits

        def admits(prefilter, data, module_name, is_package):
            self.names.append(module_name)
            return real(prefilter, data, module_name, is_package)

        monkeypatch.setattr(Prefilter, "admits", admits)


def _findings(root: Path, cache=None):
    result = check([root], load_settings(root), cache=cache, whole_program=True)
    return [(f.filename, f.location.row, f.code, [[(s.filename, s.location.row) for s in c] for c in f.chains]) for f in result.findings], result.errors


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = _project(tmp_path / "project")
    monkeypatch.chdir(root)
    return root


def _forget_runs(tmp_path: Path) -> None:
    """Drop the cached results and analysis records: the next run analyses, from the facts."""
    for stale in [*(tmp_path / "cache").glob("results-*.json"), *(tmp_path / "cache").glob("analysis-*.json")]:
        stale.unlink()


def _entry(tmp_path: Path) -> Path:
    (entry,) = (tmp_path / "cache").glob("admitted-*.json")
    return entry


def test_after_an_edit_only_the_edited_file_is_asked(project, tmp_path, monkeypatch):
    cache = ResultCache(tmp_path / "cache")
    first = _findings(project, cache)
    asked = Asked(monkeypatch)
    # A capture moves into a file the prefilter did not admit: its answer changes.
    runner = (project / "pkg" / "runner.py").read_text()
    (project / "pkg" / "plain.py").write_text(runner.replace("def capture", "def capture_again"))
    edited = _findings(project, cache)
    assert asked.names == ["pkg.plain"]
    assert edited == _findings(project)
    assert edited != first  # the model's finding is now reached from two captures
    # Undoing the edit finds the answer of the content before it.
    asked.names.clear()
    (project / "pkg" / "plain.py").write_text("def scale(values, factor):\n    return [v * factor for v in values]\n")
    assert _findings(project, cache) == first
    assert asked.names == []


def test_every_stored_answer_is_the_prefilters(project, tmp_path):
    _findings(project, ResultCache(tmp_path / "cache"))
    prefilter = prefilter_for(load_settings(project))
    text = _entry(tmp_path).read_text()
    entry = payload(text)
    assert header(text)["key"] == admissions_key(prefilter)
    stored = {name: admitted for _content, name, _package, admitted in entry["entries"]}
    files = {"pkg": project / "pkg" / "__init__.py", **{f"pkg.{p.stem}": p for p in (project / "pkg").glob("*.py") if p.stem != "__init__"}}
    assert stored.keys() == files.keys()
    assert stored == {name: prefilter.admits(path.read_bytes(), name, path.name == "__init__.py") for name, path in files.items()}
    assert sorted(name for name, admitted in stored.items() if admitted) == ["pkg.runner"]


def _reseal(text: str, key=None, **changes) -> str:
    """The entry with its payload's fields changed (a new `key` in its header), sealed again."""
    return resealed(text, lambda entry: entry.update(changes), **({} if key is None else {"key": key}))


def _flipped(text: str) -> str:
    entry = payload(text)
    entry["entries"] = [[c, n, p, not a] for c, n, p, a in entry["entries"]]
    return text.partition("\n")[0] + "\n" + json.dumps(entry)


ENTRY_FAULTS = {
    "torn": lambda text: text[: len(text) // 2],
    "answers flipped, digest kept": _flipped,
    "a hash that is no hash": lambda text: _reseal(text, entries=[["xyz", n, p, a] for _c, n, p, a in payload(text)["entries"]]),
    "an answer that is no bool": lambda text: _reseal(text, entries=[[c, n, p, 1] for c, n, p, _a in payload(text)["entries"]]),
    "another key": lambda text: _reseal(text, key="0" * 40),
    "an extra key": lambda text: _reseal(text, extra=1),
}


@pytest.mark.parametrize("fault", sorted(ENTRY_FAULTS))
def test_a_damaged_entry_is_never_served(fault, project, tmp_path, monkeypatch):
    cache = ResultCache(tmp_path / "cache")
    _findings(project, cache)
    _forget_runs(tmp_path)
    entry = _entry(tmp_path)
    entry.write_text(ENTRY_FAULTS[fault](entry.read_text()))
    asked = Asked(monkeypatch)
    assert _findings(project, cache) == _findings(project)
    assert cache.facts_rejections["admitted"] or fault == "another key"  # another key is another entry
    # Not served: the prefilter is asked about every file again.
    assert sorted(set(asked.names)) == ["pkg", "pkg.model", "pkg.other", "pkg.plain", "pkg.runner"]
    # Rewritten: the next run asks nothing.
    asked.names.clear()
    _forget_runs(tmp_path)
    _findings(project, cache)
    assert asked.names == []


def test_another_prefilter_asks_again(project, tmp_path, monkeypatch):
    cache = ResultCache(tmp_path / "cache")
    _findings(project, cache)
    # A configured capture helper is a target of its own: the stored answers are not its.
    (project / "pyproject.toml").write_text('[tool.trace-lint]\ncapture-helpers = ["pkg.plain.scale"]\n')
    asked = Asked(monkeypatch)
    assert _findings(project, cache) == _findings(project)
    assert "pkg.plain" in asked.names
    assert len(list((tmp_path / "cache").glob("admitted-*.json"))) == 2


# -- the syntax limits' scans ------------------------------------------------------------------

NESTED = "import ttnn\n\n\ndef capture(device):\n    tid = ttnn.begin_trace_capture(device, cq_id=0)\n    x = " + "(" * 201 + "1" + ")" * 201 + "\n    ttnn.end_trace_capture(device, tid, cq_id=0)\n"
TABBED = "import ttnn\n\n\ndef capture(device, x):\n\ttid = ttnn.begin_trace_capture(device, cq_id=0)\n\ttry:\n\t\ty = ttnn.relu(x)\n\tfinally:\n\t\tttnn.end_trace_capture(device, tid, cq_id=0)\n\treturn y\n"


class Scanned:
    """The first line of every text the syntax limits scan."""

    def __init__(self, monkeypatch):
        from trace_lint.frontend import syntax_limits

        self.texts: list[str] = []
        real = syntax_limits.scan

        def scan(text):
            self.texts.append(text)
            return real(text)

        monkeypatch.setattr(syntax_limits, "scan", scan)


def _limits_project(root: Path) -> Path:
    _project(root)
    (root / "pkg" / "nested.py").write_text(NESTED)  # refused: TRC001
    (root / "pkg" / "tabbed.py").write_text(TABBED)  # tabs in indentation: rewritten
    return root


def _scans_entry(tmp_path: Path) -> Path:
    (entry,) = (tmp_path / "cache").glob("scans-*.json")
    return entry


def test_every_stored_scan_is_the_scanners(tmp_path, monkeypatch):
    from trace_lint.frontend.syntax_limits import scan, text_digest

    root = _limits_project(tmp_path / "project")
    monkeypatch.chdir(root)
    found = _findings(root, ResultCache(tmp_path / "cache"))
    assert ("pkg/nested.py", 6, "TRC001", []) in found[0]
    entries = payload(_scans_entry(tmp_path).read_text())["entries"]
    texts = {text_digest(p.read_text()): p.name for p in (root / "pkg").glob("*.py")}
    stored = {texts[digest]: (refusal, edits, reduced) for digest, refusal, edits, reduced in entries}
    assert {"nested.py", "tabbed.py", "runner.py", "model.py"} <= stored.keys()
    for name, (refusal, edits, reduced) in stored.items():
        expected = scan((root / "pkg" / name).read_text())
        assert refusal == (None if expected[0] is None else [expected[0].message, expected[0].line, expected[0].column])
        assert (edits, reduced) == ([list(edit) for edit in expected[1]], expected[2])
    assert stored["nested.py"][0] is not None and stored["tabbed.py"][1] != []


def test_a_run_scans_only_texts_it_has_not_seen(tmp_path, monkeypatch):
    root = _limits_project(tmp_path / "project")
    monkeypatch.chdir(root)
    cache = ResultCache(tmp_path / "cache")
    first = _findings(root, cache)
    scanned = Scanned(monkeypatch)
    # The runner's group runs again: every file it reads is loaded, only the runner scanned.
    (root / "pkg" / "runner.py").write_text((root / "pkg" / "runner.py").read_text() + "\n# edited\n")
    edited = _findings(root, cache)
    assert [text.endswith("# edited\n") for text in scanned.texts] == [True]
    assert edited == first == _findings(root)
    # Without the analysis records, every file the run loads comes from the stored scans.
    _forget_runs(tmp_path)
    scanned.texts.clear()
    assert _findings(root, cache) == first
    assert scanned.texts == []


def _refusal_added(text: str) -> str:
    entry = payload(text)
    entry["entries"] = [[d, ["made up", 1, 1], e, r] for d, _refusal, e, r in entry["entries"]]
    return text.partition("\n")[0] + "\n" + json.dumps(entry)


SCAN_FAULTS = {
    "torn": lambda text: text[: len(text) // 2],
    "a refusal added, digest kept": _refusal_added,
    "an edit of no kind": lambda text: _reseal(text, entries=[[d, f, [[0, 1, "shout"]], r] for d, f, _e, r in payload(text)["entries"]]),
    "an edit ending before its start": lambda text: _reseal(text, entries=[[d, f, [[5, 1, "space"]], r] for d, f, _e, r in payload(text)["entries"]]),
    "a refusal at line 0": lambda text: _reseal(text, entries=[[d, ["x", 0, 1], e, r] for d, _f, e, r in payload(text)["entries"]]),
}


def _damaged_run(tmp_path: Path, monkeypatch, entry_of, damage, counter):
    """A cached run, its entry damaged, then a run from the cache: (its findings, the
    no-cache findings, what `counter` saw it recompute)."""
    root = _limits_project(tmp_path / "project")
    monkeypatch.chdir(root)
    cache = ResultCache(tmp_path / "cache")
    _findings(root, cache)
    _forget_runs(tmp_path)
    entry = entry_of(tmp_path)
    entry.write_text(damage(entry.read_text()))
    seen = counter(monkeypatch)
    served = _findings(root, cache)
    recomputed = list(seen.texts)
    return served, _findings(root), recomputed, cache


@pytest.mark.parametrize("fault", sorted(SCAN_FAULTS))
def test_a_damaged_scan_entry_is_never_served(fault, tmp_path, monkeypatch):
    def scans_alone(tmp_path: Path) -> Path:
        # A module loaded from its outline facts needs no scan (they are kept only for texts
        # the limits leave as they are): without them, every loaded text is scanned.
        _outlines_entry(tmp_path).unlink()
        return _scans_entry(tmp_path)

    served, uncached, scanned, cache = _damaged_run(tmp_path, monkeypatch, scans_alone, SCAN_FAULTS[fault], Scanned)
    assert served == uncached
    assert cache.facts_rejections["scans"]
    assert len(scanned) > 2  # scanned again, not served


# -- module outlines -------------------------------------------------------------------------


def _outlines_entry(tmp_path: Path) -> Path:
    (entry,) = (tmp_path / "cache").glob("outlines-*.json")
    return entry


def _outline_of(path: Path, names: tuple, package: bool):
    from trace_lint.semantic.project import ModuleInfo

    module = ModuleInfo(path, names, path.name)
    module.load()
    assert module.has_outline and module.is_package == package
    return module._outline_data()


def test_every_stored_outline_is_what_loading_reads(tmp_path, monkeypatch):
    from trace_lint.frontend.syntax_limits import text_digest

    root = _limits_project(tmp_path / "project")
    # The same text in two packages: a relative import names two modules.
    for package in ("left", "right"):
        (root / "pkg" / package).mkdir()
        (root / "pkg" / package / "__init__.py").write_text("")
        (root / "pkg" / package / "use.py").write_text("import ttnn\n\nfrom .helpers import relu\n\n\ndef capture(device, x):\n    tid = ttnn.begin_trace_capture(device, cq_id=0)\n    y = relu(x)\n    ttnn.end_trace_capture(device, tid, cq_id=0)\n    return y\n")
        (root / "pkg" / package / "helpers.py").write_text("import ttnn\n\n\ndef relu(x):\n    return ttnn.relu(x)\n")
    monkeypatch.chdir(root)
    _findings(root, ResultCache(tmp_path / "cache"))
    from trace_lint.driver.cache import FACT_CODECS

    stored = dict(FACT_CODECS["outlines"][1](item) for item in payload(_outlines_entry(tmp_path).read_text())["entries"])
    files = {(text_digest(p.read_text()), p) for p in root.rglob("*.py")}
    seen = set()
    for (digest, names, package), facts in stored.items():
        path = next(p for d, p in files if d == digest and ".".join(p.relative_to(root).with_suffix("").parts).replace(".__init__", "") == names[0])
        assert facts == _outline_of(path, names, package)
        seen.add(names[0])
    assert {"pkg.runner", "pkg.model", "pkg.left.use", "pkg.right.use"} <= seen
    imports = {names[0]: facts.imports for (_d, names, _p), facts in stored.items()}
    assert imports["pkg.left.use"]["relu"] == "pkg.left.helpers.relu"
    assert imports["pkg.right.use"]["relu"] == "pkg.right.helpers.relu"


class Outlined:
    """The texts `ast` outlines while loading modules."""

    def __init__(self, monkeypatch):
        from trace_lint.semantic import outline as outline_module

        self.texts: list[str] = []
        real = outline_module._outline

        def outline(module, text, digest=None):
            self.texts.append(text)
            return real(module, text, digest)

        monkeypatch.setattr(outline_module, "_outline", outline)


def test_a_run_outlines_only_texts_it_has_not_seen(tmp_path, monkeypatch):
    root = _limits_project(tmp_path / "project")
    monkeypatch.chdir(root)
    cache = ResultCache(tmp_path / "cache")
    first = _findings(root, cache)
    _forget_runs(tmp_path)
    (root / "pkg" / "runner.py").write_text((root / "pkg" / "runner.py").read_text() + "\n# edited\n")
    outlined = Outlined(monkeypatch)
    again = _findings(root, cache)
    texts = {p.read_text(): p.name for p in (root / "pkg").glob("*.py")}
    # The edited file; the one the limits refuse and the one they rewrite keep no outline.
    assert sorted(texts[text] for text in outlined.texts) == ["nested.py", "runner.py", "tabbed.py"]
    assert again == first == _findings(root)


def _owner_out_of_range(text: str) -> str:
    entry = payload(text)
    for item in entry["entries"]:
        item[4] = {name: 99 for name in item[4]}
    return resealed(text, replace=entry)


OUTLINE_FAULTS = {
    "torn": lambda text: text[: len(text) // 2],
    "a binding of no kind": lambda text: _reseal(text, entries=[[*item[:8], {"x": [["shout", None, False, False]]}, *item[9:]] for item in payload(text)["entries"]]),
    "a span past the text": lambda text: _reseal(text, entries=[[*item[:3], [[1, 10**6]], *item[4:]] for item in payload(text)["entries"]]),
    "an owner past the chunks": _owner_out_of_range,
}


@pytest.mark.parametrize("fault", sorted(OUTLINE_FAULTS))
def test_a_damaged_outline_is_never_served(fault, tmp_path, monkeypatch):
    served, uncached, outlined, _cache = _damaged_run(tmp_path, monkeypatch, _outlines_entry, OUTLINE_FAULTS[fault], Outlined)
    assert served == uncached
    assert len(outlined) > 2  # outlined again, not served


# -- outlines in parts -----------------------------------------------------------------------
PARTS_SHAPES = '''"""Module docstring.
def not_a_def_at_column_zero(): inside the docstring
"""
import os
from . import sibling
from .deep import name as alias

CONSTANT = 1; OTHER = (2,
3)


@decorator(
    argument)
@second
def decorated(x):
    return x


async def coroutine():
    await thing()


class Model(Base):
    attribute = 1

    def forward(self, x):
        return x

    class Inner:
        def method(self):
            pass


if CONSTANT:
    def conditional():
        pass
else:
    conditional = None

try:
    import fast
except ImportError:
    fast = None
finally:
    cleanup = True

TEMPLATE = """
def inside_a_string():
    pass
class AlsoInside:
"""


def after_string():
    x = [
1, 2]
    return x


class Model(Other):
    def forward(self, y):
        return y
'''


# The same without the strings that hold a `def` or `class` at the start of a line.
PARTS_SHAPES_CUTTABLE = PARTS_SHAPES.replace("def not_a_def_at_column_zero(): inside the docstring\n", "").replace(
    'TEMPLATE = """\ndef inside_a_string():\n    pass\nclass AlsoInside:\n"""\n', "TEMPLATE = None\n"
)


@pytest.mark.parametrize("part_lines", [1, 2, 3, 5, 8, 13])
def test_an_outline_in_parts_is_the_whole_outline(part_lines, tmp_path, monkeypatch):
    """A long text outlined a part at a time gives the facts the whole text's outline gives
    (`_outline_data`), wherever the parts are cut: decorators, statements across lines,
    redefinitions, relative imports. Where a cut falls inside a string that holds a `def`
    at the start of a line, the part before it does not parse and the whole text is
    outlined instead: loading reads the same either way."""
    from trace_lint.semantic import outline, project

    path = tmp_path / "pkg" / "mod.py"
    path.parent.mkdir()
    for text, always in ((PARTS_SHAPES_CUTTABLE, True), (PARTS_SHAPES, False)):
        assert "inside_a_string" not in text or not always
        path.write_text(text)
        monkeypatch.setattr(outline, "OUTLINE_PART_LINES", 10**9)
        whole = _outline_of(path, ("pkg.mod",), False)
        monkeypatch.setattr(outline, "OUTLINE_PART_LINES", part_lines)
        parts = outline._outline_in_parts(project.ModuleInfo(path, ("pkg.mod",), path.name), text, None)
        assert parts == whole if always else parts in (None, whole)
        assert _outline_of(path, ("pkg.mod",), False) == whole  # whichever way loading went
    # A text the syntax limits reduce (an over-long chain): the whole outline, which reads
    # the reduced text.
    from trace_lint.frontend.syntax_limits import CHAIN_LIMIT

    chained = PARTS_SHAPES_CUTTABLE + "\nX = " + " + ".join(["1"] * (CHAIN_LIMIT + 5)) + "\n"
    assert outline._outline_in_parts(project.ModuleInfo(path, ("pkg.mod",), path.name), chained, None) is None
    # A cut inside the docstring: the whole outline.
    assert part_lines > 1 or outline._outline_in_parts(project.ModuleInfo(path, ("pkg.mod",), path.name), PARTS_SHAPES, None) is None


def test_outlines_in_parts_of_this_repository_are_the_whole_outlines(monkeypatch):
    """Every source file of trace-lint itself, cut into parts of 3 lines where it can be."""
    from trace_lint.semantic import outline, project

    compared = 0
    for path in sorted((REPO / "trace_lint").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        monkeypatch.setattr(outline, "OUTLINE_PART_LINES", 10**9)
        whole = _outline_of(path, ("pkg.mod",), path.name == "__init__.py")
        monkeypatch.setattr(outline, "OUTLINE_PART_LINES", 3)
        parts = outline._outline_in_parts(project.ModuleInfo(path, ("pkg.mod",), path.name), text, None)
        if parts is not None:
            assert parts == whole, path
            compared += 1
    assert compared > 50


def test_a_long_file_outlined_in_parts_gives_the_same_findings(tmp_path, monkeypatch):
    """The command line on a project whose files are outlined in parts (3 lines) and whole."""
    project_root = tmp_path / "project"
    shutil.copytree(FIXTURES / "interprocedural", project_root)
    monkeypatch.chdir(project_root)

    def run(part_lines: int) -> set:
        from trace_lint.semantic import outline

        monkeypatch.setattr(outline, "OUTLINE_PART_LINES", part_lines)
        found, errors = _findings(project_root, None)
        assert not errors
        return {(filename, row, code, json.dumps(chains)) for filename, row, code, chains in found}

    assert run(3) == run(10**9) != set()
