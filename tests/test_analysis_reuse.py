"""Reusing the engine's findings across edits (`cache.AnalysisRecord`): a run whose changed
files the findings cannot depend on skips the engine, and gives what a `--no-cache` run
gives. Every test compares with the shortcut on and off."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from trace_lint.capture import engine as engine_module
from trace_lint.driver.cache import ResultCache

from .cache_entries import payload, resealed
from trace_lint.driver.checker import check
from trace_lint.core.config import load_settings

FIXTURES = Path(__file__).parent / "fixtures"

MODEL = '''\
import ttnn


class Model:
    def forward(self, x):
        host = ttnn.to_torch(x)
        return ttnn.relu(x)
'''

RUNNER = '''\
import ttnn

from pkg.model import Model


def capture(device, x):
    model = Model()
    model.forward(x)
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    try:
        out = model.forward(x)
    finally:
        ttnn.end_trace_capture(device, tid, cq_id=0)
    return out
'''

PLAIN = '''\
def scale(values, factor):
    return [v * factor for v in values]
'''


class EngineRuns:
    """Counts analyses (engine runs with the rules, not the parse check of named files): a
    reused analysis runs none."""

    def __init__(self, monkeypatch):
        self.count = 0
        real = engine_module.Engine.run

        def run(engine):
            self.count += len(engine.rules) > 1
            return real(engine)

        monkeypatch.setattr(engine_module.Engine, "run", run)


def _project(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.trace-lint]\n")  # the project root, however a run names it
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "model.py").write_text(MODEL)
    (root / "pkg" / "runner.py").write_text(RUNNER)
    (root / "pkg" / "plain.py").write_text(PLAIN)
    (root / "pkg" / "other.py").write_text(PLAIN)
    return root


def _run(paths, root: Path, cache=None):
    result = check(paths, load_settings(root), cache=cache, whole_program=True)
    return [(f.filename, f.location.row, f.code, f.message, [[(s.filename, s.location.row) for s in c] for c in f.chains]) for f in result.findings], result.errors


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = _project(tmp_path / "project")
    monkeypatch.chdir(root)
    return root


def _edited_run(project: Path, tmp_path, monkeypatch, name: str, text: str):
    """Fill the cache, write `text` to pkg/`name`, run again with the cache: (findings,
    engine runs), after checking that the run without the cache agrees."""
    cache = ResultCache(tmp_path / "cache")
    _run([project], project, cache)
    runs = EngineRuns(monkeypatch)
    (project / "pkg" / name).write_text(text)
    edited = _run([project], project, cache)
    count = runs.count
    assert edited == _run([project], project)
    return edited[0], count


def test_an_edit_the_findings_cannot_depend_on_reuses_the_analysis(project, tmp_path, monkeypatch):
    cache = ResultCache(tmp_path / "cache")
    first = _run([project], project, cache)
    assert [(f[0], f[1], f[2]) for f in first[0]] == [("pkg/model.py", 6, "TRC102")]
    runs = EngineRuns(monkeypatch)
    (project / "pkg" / "plain.py").write_text(PLAIN + "\n\ndef shift(values, by):\n    return [v + by for v in values]\n")
    reused = _run([project], project, cache)
    assert runs.count == 0
    assert reused == _run([project], project) == first


def test_an_edit_of_reached_code_runs_the_engine(project, tmp_path, monkeypatch):
    edited, runs = _edited_run(project, tmp_path, monkeypatch, "model.py", MODEL.replace("host = ttnn.to_torch(x)", "host = x"))
    assert (edited, runs) == ([], 1)


def test_a_new_capture_in_an_unread_file_runs_the_engine(project, tmp_path, monkeypatch):
    edited, runs = _edited_run(project, tmp_path, monkeypatch, "other.py", RUNNER.replace("def capture", "def capture_again"))
    assert runs == 1
    assert [(f[0], f[1], f[2]) for f in edited] == [("pkg/model.py", 6, "TRC102")]
    assert len(edited[0][4]) == 2  # reached from both captures now


def test_an_unread_file_that_gains_a_searched_token_runs_the_engine(project, tmp_path, monkeypatch):
    # TRC405 searches every file's text for `open_device`.
    opener = "import ttnn\nfrom pkg.runner import capture\n\n\ndef main(x):\n    device = ttnn.open_device(device_id=0)\n    return capture(device, x)\n"
    edited, runs = _edited_run(project, tmp_path, monkeypatch, "plain.py", opener)
    # The group whose search finds it runs again, and the file, now admitted, as a new group.
    assert runs == 2
    assert ("pkg/plain.py", 6, "TRC405") in [(f[0], f[1], f[2]) for f in edited]


def test_a_one_file_run_reuses_the_whole_run(project, tmp_path, monkeypatch):
    cache = ResultCache(tmp_path / "cache")
    _run([project], project, cache)
    runs = EngineRuns(monkeypatch)
    for name in ("plain.py", "runner.py", "model.py"):
        path = project / "pkg" / name
        assert _run([path], project, cache) == _run([path], project)
    assert runs.count == 3  # the three runs without the cache


def test_a_one_file_run_decodes_only_the_findings_it_reports(project, tmp_path, monkeypatch):
    """A record read back is sliced (`ResultCache.reported_slice`): a run on one file decodes
    the findings it reports, here one reached from it in another file, and not the others."""
    from trace_lint.driver import cache as cache_module

    (project / "pkg" / "model_b.py").write_text(MODEL.replace("class Model", "class ModelB"))
    (project / "pkg" / "runner_b.py").write_text(RUNNER.replace("pkg.model import Model", "pkg.model_b import ModelB").replace("Model()", "ModelB()"))
    cache = ResultCache(tmp_path / "cache")
    whole = _run([project], project, cache)
    assert [(f[0], f[2]) for f in whole[0]] == [("pkg/model.py", "TRC102"), ("pkg/model_b.py", "TRC102")]
    decoded = []
    real = cache_module.finding_from_data
    monkeypatch.setattr(cache_module, "finding_from_data", lambda data, files: decoded.append(data["filename"]) or real(data, files))
    for name, reported in (("runner.py", ["pkg/model.py"]), ("runner_b.py", ["pkg/model_b.py"]), ("plain.py", [])):
        for entry in (tmp_path / "cache").glob("results-*.json"):
            entry.unlink()  # so that the analysis record answers
        decoded.clear()
        path = project / "pkg" / name
        found = _run([path], project, cache)
        assert decoded == reported
        assert found == _run([path], project)
        assert [f[0] for f in found[0]] == reported


def test_a_named_file_that_does_not_parse_is_reported_from_a_reused_analysis(project, tmp_path, monkeypatch):
    cache = ResultCache(tmp_path / "cache")
    _run([project], project, cache)
    broken = project / "pkg" / "other.py"
    broken.write_text("def scale(values:\n")
    runs = EngineRuns(monkeypatch)
    named = _run([broken], project, cache)
    assert runs.count == 0  # naming a file no capture reads only adds its own parse check
    assert named == _run([broken], project)
    assert [(f[0], f[2]) for f in named[0]] == [("pkg/other.py", "TRC001")]
    # The folder run does not name it, so the prefilter leaves it unparsed: no TRC001.
    runs.count = 0
    folder = _run([project], project, cache)
    assert runs.count == 0
    assert folder == _run([project], project)
    assert "TRC001" not in [f[2] for f in folder[0]]


def _edits(text: str, callee: str) -> list[str]:
    return [
        text + "\n\ndef _probe_helper(values):\n    return [v for v in values]\n",
        text + f"\n\ndef _probe_caller(x):\n    return {callee}(x)\n",
        text
        + "\n\nimport ttnn as _probe_ttnn\n\n\ndef _probe_capture(device, x):\n"
        + "    tid = _probe_ttnn.begin_trace_capture(device, cq_id=0)\n"
        + "    y = _probe_ttnn.to_torch(x)\n"
        + "    _probe_ttnn.end_trace_capture(device, tid, cq_id=0)\n    return y\n",
    ]


@pytest.mark.parametrize("group_bytes", [None, 1], ids=["default groups", "a group per file"])
@pytest.mark.parametrize("fixture", ["semantic", "interprocedural", "revised_rules", "torch_rules"])
def test_every_edit_of_every_fixture_file_gives_the_uncached_findings(fixture, group_bytes, tmp_path, monkeypatch):
    from trace_lint.driver import parallel

    if group_bytes is not None:
        # Every candidate file its own engine run: an edit reruns only the runs it touches.
        monkeypatch.setattr(parallel, "GROUP_BYTES", group_bytes)
    root = tmp_path / fixture
    shutil.copytree(FIXTURES / fixture, root)
    (root / "unrelated_helpers.py").write_text(PLAIN)  # a file no capture reads
    monkeypatch.chdir(root)
    cache = ResultCache(tmp_path / "cache")
    runs = EngineRuns(monkeypatch)
    files = sorted(root.rglob("*.py"))
    callees = [line.split("(")[0][4:] for f in files for line in f.read_text().splitlines() if line.startswith("def ")]
    reused = rerun = 0
    for index, path in enumerate(files):
        original = path.read_text()
        for edited in _edits(original, callees[index % len(callees)]):
            path.write_text(original)
            _run([root], root, cache)  # the record now holds the original contents
            path.write_text(edited)
            before = runs.count
            cached = _run([root], root, cache)
            if runs.count == before:
                reused += 1
            else:
                rerun += 1
            assert cached == _run([root], root), (path.relative_to(root), textwrap.shorten(edited[len(original):], 80))
        path.write_text(original)
    # Both paths ran: some edits reused the analysis, some could not.
    assert reused > 0 and rerun > 0


def _seal(text: str, **changes) -> str:
    """The record with fields of its payload changed, sealed again (a matching digest)."""
    return resealed(text, lambda data: data.update(changes))


def _first_group(text: str, **changes) -> str:
    """The record with its first group changed, sealed again (a matching digest)."""
    data = payload(text)
    return _seal(text, groups=[dict(data["groups"][0], **changes), *data["groups"][1:]])


def _group(text: str) -> dict:
    return payload(text)["groups"][0]


def _dropped_finding(text: str) -> str:
    """The first group without its first finding, the header (and its digest) as it was."""
    data = payload(text)
    data["groups"] = [dict(data["groups"][0], findings=data["groups"][0]["findings"][1:]), *data["groups"][1:]]
    return text.partition("\n")[0] + "\n" + json.dumps(data, separators=(",", ":"))


RECORD_FAULTS = {
    "truncated": lambda text: text[: len(text) // 2],
    "not json": lambda text: "{not json",
    "deeply nested": lambda text: "[" * 100_000 + "]" * 100_000,
    "digest flipped": lambda text: text.replace('"digest":"', '"digest":"0'),
    "a finding dropped, digest not resealed": _dropped_finding,
    "a hash that is not hex": lambda text: _seal(text, hashes={k: "zz" for k in payload(text)["hashes"]}),
    "a file missing from the hashes": lambda text: _seal(text, hashes=dict(list(payload(text)["hashes"].items())[1:])),
    "a dependent file outside the run": lambda text: _first_group(text, dependent=["elsewhere.py"]),
    "a member outside the run": lambda text: _first_group(text, members=["elsewhere.py"]),
    "capture kinds that are not a list": lambda text: _first_group(text, kinds={"pkg/model.py": "ttnn"}),
    "groups not a list": lambda text: _seal(text, groups=_group(text)),
    "tokens that are not text": lambda text: _first_group(text, tokens=[1, 2]),
    "calls not a list": lambda text: _first_group(text, calls="capture"),
    "a finding with an unknown code": lambda text: _first_group(text, findings=[dict(_group(text)["findings"][0], code="XYZ1")]),
    "suppression facts with a line 0": lambda text: _seal(text, facts={k: [None, [[0, 1]]] for k in payload(text)["facts"]}),
    "suppression facts for a file outside the run": lambda text: _seal(text, facts={"elsewhere.py": [None, []]}),
    "an extra key": lambda text: _seal(text, extra=1),
    "an extra key in a group": lambda text: _first_group(text, extra=1),
    "another version": lambda text: resealed(text, version="0.0.0-other"),
    "reported findings of another file": lambda text: _seal(text, reported=_reported_elsewhere(text)),
    "reported findings that are not a map": lambda text: _seal(text, reported=[]),
}


def _reported_elsewhere(text: str) -> dict:
    """What the record says each file reports, with one file's list said of another file."""
    data = payload(text)
    findings = [finding for group in data["groups"] for finding in group["findings"]]
    assert findings, "the project must have findings for this fault to mean anything"
    displays = sorted(data["hashes"])
    other = next(display for display in displays if display != findings[0]["filename"])
    return {**{display: None for display in displays}, other: [findings[0]]}


def test_a_resealed_record_with_nothing_changed_is_reused(project, tmp_path, monkeypatch):
    """The control for the faults below: resealing alone makes no record bad."""
    cache = ResultCache(tmp_path / "cache")
    _run([project], project, cache)
    for entry in (tmp_path / "cache").glob("results-*.json"):
        entry.unlink()
    (record,) = (tmp_path / "cache").glob("analysis-*.json")
    record.write_text(resealed(record.read_text()))
    (project / "pkg" / "plain.py").write_text(PLAIN + "\n# edited\n")
    runs = EngineRuns(monkeypatch)
    assert _run([project], project, cache) == _run([project], project)
    assert runs.count < 2
    assert not cache.last_rejection


@pytest.mark.parametrize("fault", sorted(RECORD_FAULTS))
def test_a_damaged_record_is_never_reused(fault, project, tmp_path, monkeypatch):
    cache = ResultCache(tmp_path / "cache")
    _run([project], project, cache)
    for entry in (tmp_path / "cache").glob("results-*.json"):
        entry.unlink()
    (record,) = (tmp_path / "cache").glob("analysis-*.json")
    record.write_text(RECORD_FAULTS[fault](record.read_text()))
    (project / "pkg" / "plain.py").write_text(PLAIN + "\n# edited\n")
    runs = EngineRuns(monkeypatch)
    assert _run([project], project, cache) == _run([project], project)
    assert runs.count == 2
    assert cache.last_rejection


HELPER = '''\
import ttnn


def helper_{n}(x):
    return ttnn.relu(x)
'''

CAPTURE = '''\
import ttnn

from pkg.helpers_{n} import helper_{n}


def capture_{n}(device, x):
    helper_{n}(x)
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    try:
        out = helper_{n}(x)
    finally:
        ttnn.end_trace_capture(device, tid, cq_id=0)
    return out
'''


@pytest.mark.parametrize("group_bytes", [None, 1], ids=["one group", "a group per file"])
def test_files_read_only_by_worker_processes_are_dependent(group_bytes, tmp_path, monkeypatch):
    import multiprocessing

    from trace_lint.driver import parallel

    if group_bytes is not None:
        monkeypatch.setattr(parallel, "GROUP_BYTES", group_bytes)  # groups spread over the workers

    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.trace-lint]\n")
    (root / "pkg" / "__init__.py").write_text("")
    for n in range(4):
        (root / "pkg" / f"helpers_{n}.py").write_text(HELPER.format(n=n))
        (root / "pkg" / f"capture_{n}.py").write_text(CAPTURE.format(n=n))
    monkeypatch.chdir(root)
    monkeypatch.setattr(parallel, "_worker_context", lambda: (multiprocessing.get_context("fork"), True))
    cache = ResultCache(tmp_path / "cache")

    def sharded(cache=None):
        result = check([root], load_settings(root), cache=cache, jobs=3, whole_program=True)
        return [(f.filename, f.location.row, f.code) for f in result.findings]

    assert sharded(cache) == []
    for n in range(4):
        helper = root / "pkg" / f"helpers_{n}.py"
        helper.write_text(HELPER.format(n=n).replace("return ttnn.relu(x)", "print(ttnn.to_torch(x))\n    return x"))
        assert sharded(cache) == sharded() == [(f"pkg/helpers_{n}.py", 5, "TRC102")]
        helper.write_text(HELPER.format(n=n))
        assert sharded(cache) == []


def test_suppressions_apply_to_a_reused_analysis_without_parsing_again(project, tmp_path, monkeypatch):
    # A multi-line statement: its noqa goes on the first line (the record keeps where each
    # statement starts), and a second code that suppresses nothing (TRC002).
    (project / "pkg" / "model.py").write_text(
        MODEL.replace("host = ttnn.to_torch(x)", "host = ttnn.to_torch(  # noqa: TRC102, TRC301\n            x\n        )")
    )
    cache = ResultCache(tmp_path / "cache")
    first = _run([project], project, cache)
    assert [(f[0], f[1], f[2]) for f in first[0]] == [("pkg/model.py", 6, "TRC002")]
    runs = EngineRuns(monkeypatch)
    parsed = []
    from trace_lint.semantic import project as project_module

    real = project_module.ModuleInfo.load

    def load(module):
        if not module._loaded:
            parsed.append(module.display_path)
        return real(module)

    monkeypatch.setattr(project_module.ModuleInfo, "load", load)
    (project / "pkg" / "plain.py").write_text(PLAIN + "\n# edited\n")
    assert _run([project], project, cache) == first
    assert runs.count == 0 and parsed == []
    assert _run([project], project) == first


def _package(root: Path, files: dict[str, str]) -> Path:
    """A project whose package `pkg` holds `files` (name -> text)."""
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.trace-lint]\n")
    (root / "pkg" / "__init__.py").write_text("")
    for name, text in files.items():
        (root / "pkg" / name).write_text(text)
    return root


def _captures_project(root: Path, count: int) -> Path:
    files = {f"helpers_{n}.py": HELPER.format(n=n) for n in range(count)}
    return _package(root, {**files, **{f"capture_{n}.py": CAPTURE.format(n=n) for n in range(count)}})


def _groups_of_record(cache_folder: Path) -> list[list[str]]:
    newest = max(cache_folder.glob("analysis-*.json"), key=lambda p: p.stat().st_mtime_ns)
    return [group["members"] for group in payload(newest.read_text())["groups"]]


def test_an_edit_reruns_only_the_groups_it_touches(tmp_path, monkeypatch):
    from trace_lint.driver import parallel

    monkeypatch.setattr(parallel, "GROUP_BYTES", 1)  # a group per candidate file
    root = _captures_project(tmp_path / "project", 4)
    monkeypatch.chdir(root)
    cache = ResultCache(tmp_path / "cache")
    assert _run([root], root, cache) == _run([root], root)
    groups = _groups_of_record(tmp_path / "cache")
    assert len(groups) >= 4 and ["pkg/capture_2.py"] in groups
    runs = EngineRuns(monkeypatch)
    helper = root / "pkg" / "helpers_2.py"
    helper.write_text(HELPER.format(n=2).replace("return ttnn.relu(x)", "print(ttnn.to_torch(x))\n    return x"))
    edited = _run([root], root, cache)
    touched = runs.count
    assert [(f[0], f[1], f[2]) for f in edited[0]] == [("pkg/helpers_2.py", 5, "TRC102")]
    assert edited == _run([root], root)
    # The capture that reaches the helper runs again (and the helper's own group, where the
    # prefilter admits it); the three other captures' groups are reused.
    assert 1 <= touched <= 2 < len(groups)


GRAPH_USER = '''\
import torch

from pkg.helpers_0 import helper_0


def capture(x):
    helper_0(x)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = helper_0(x)
    return out
'''

# A helper no prefilter admits (no framework name): it links no group to another.
SHARED = '''\
def helper_0(x):
    y = x * 2
    print("step")
    return y
'''


def test_groups_that_capture_one_function_two_ways_are_analysed_as_one(tmp_path, monkeypatch):
    from trace_lint.driver import parallel

    monkeypatch.setattr(parallel, "GROUP_BYTES", 1)  # a group per candidate file, but for imports
    root = _package(tmp_path / "project", {"capture_0.py": CAPTURE.format(n=0), "graph_user.py": GRAPH_USER, "helpers_0.py": SHARED})
    monkeypatch.chdir(root)
    cache = ResultCache(tmp_path / "cache")
    assert _run([root], root, cache) == _run([root], root)
    # `helper_0` is reached from a ttnn capture in one group and a CUDA graph in the other:
    # rules read which kinds reach a function, so one engine run decides.
    assert _groups_of_record(tmp_path / "cache") == [["pkg/capture_0.py", "pkg/graph_user.py"]]


@pytest.mark.parametrize("fixture", ["interprocedural", "revised_rules"])  # several groups each
def test_shared_parses_change_no_finding(fixture, tmp_path, monkeypatch):
    # The same grouped runs with each copy of the project parsing for itself.
    from trace_lint.driver import parallel
    from trace_lint.semantic.outline import SharedParses

    monkeypatch.setattr(parallel, "GROUP_BYTES", 1)
    root = tmp_path / fixture
    shutil.copytree(FIXTURES / fixture, root)
    monkeypatch.chdir(root)
    shared = _run([root], root, ResultCache(tmp_path / "shared"))
    monkeypatch.setattr(SharedParses, "__enter__", lambda self: self)  # never active
    assert _run([root], root, ResultCache(tmp_path / "own")) == shared
    assert len(_groups_of_record(tmp_path / "own")) > 1


def test_files_with_the_same_text_in_one_engine_run_give_the_uncached_findings(tmp_path, monkeypatch):
    # Groups in one process share each file's parse (`outline.SharedParses`, keyed by the
    # file as well as the text); two files of one project with the same text, both loaded
    # by one engine run.
    from trace_lint.driver import parallel

    monkeypatch.setattr(parallel, "GROUP_BYTES", 1)  # a group per candidate file, but for imports
    root = _package(tmp_path / "project", {})
    for name in ("model.py", "copy_of_model.py"):
        (root / "pkg" / name).write_text(MODEL)
    # One capture reaches both: one engine run loads both files.
    runner = RUNNER.replace("from pkg.model import Model", "from pkg.model import Model\nfrom pkg.copy_of_model import Model as Copy")
    runner = runner.replace("        out = model.forward(x)", "        out = model.forward(x)\n        Copy().forward(x)")
    (root / "pkg" / "runner.py").write_text(runner)
    monkeypatch.chdir(root)
    cache = ResultCache(tmp_path / "cache")
    cached = _run([root], root, cache)
    assert cached == _run([root], root)
    assert [(f[0], f[1], f[2]) for f in cached[0] if f[2] == "TRC102"] == [("pkg/copy_of_model.py", 6, "TRC102"), ("pkg/model.py", 6, "TRC102")]


def test_groups_keep_files_that_import_one_another_together(monkeypatch):
    from trace_lint.driver import parallel
    from trace_lint.driver.parallel import plan_groups

    assert plan_groups([10, 10, 10, 10], target=25) == [[0, 1], [2, 3]]
    # 0 and 3 import one another: one group, even over the target; neighbours fill the rest.
    assert plan_groups([10, 10, 10, 10], target=15, links=[(3, 0)]) == [[0, 3], [1], [2]]
    monkeypatch.setattr(parallel, "GROUP_BYTES", None)  # no size: one group of all
    assert plan_groups([10, 10, 10, 10]) == [[0, 1, 2, 3]]
    assert plan_groups([], target=15) == []


def test_imports_are_read_from_the_text():
    from trace_lint.frontend.text_index import imported_modules

    text = b"import os, pkg.a as a\nfrom . import sibling as s\nfrom .tools import (x,\n    y)\nfrom ..up import z  # c\n"
    assert imported_modules(text, "pkg.sub.mod", False) == {
        "os", "pkg.a", "pkg.sub", "pkg.sub.sibling", "pkg.sub.tools", "pkg.sub.tools.x", "pkg.sub.tools.y", "pkg.up", "pkg.up.z",
    }
    # In a package's __init__, `.` is the package itself.
    assert imported_modules(b"from .core import run\n", "pkg", True) == {"pkg.core", "pkg.core.run"}


def test_a_one_file_run_after_a_whole_run_loads_neither_libcst_nor_the_rules(project, tmp_path):
    # Fresh interpreters: this one has loaded libcst already.
    script = textwrap.dedent(
        """
        import json, sys
        from pathlib import Path
        from trace_lint.core.config import load_settings
        from trace_lint.driver.cache import ResultCache
        from trace_lint.driver.checker import check

        root, cache, named = Path(sys.argv[1]), ResultCache(Path(sys.argv[2])), Path(sys.argv[3])
        found = check([named], load_settings(root), cache=cache, whole_program=True).findings
        loaded = sorted({"libcst", "trace_lint.rules"} & set(sys.modules))
        print(json.dumps([loaded, [(f.filename, f.location.row, f.code, f.help) for f in found]]))
        """
    )
    import subprocess
    import sys

    def run(named: Path, cache: Path) -> list:
        done = subprocess.run([sys.executable, "-c", script, str(project), str(cache), str(named)], capture_output=True, text=True, cwd=project, check=True)
        return json.loads(done.stdout)

    named = project / "pkg" / "runner.py"  # a capture file: what the editor and pre-commit name
    assert run(project, tmp_path / "cache")[0] == ["libcst", "trace_lint.rules"]  # the whole run analyses
    loaded, found = run(named, tmp_path / "cache")
    assert loaded == []
    assert [tuple(f[:3]) for f in found] == [(f[0], f[1], f[2]) for f in _run([named], project)[0]]
    assert [tuple(f[:3]) for f in found] == [("pkg/model.py", 6, "TRC102")]  # reached from runner.py
    assert all(f[3] for f in found)  # the rule's advice, from the registry
    # A named file with no capture is parsed for its own syntax errors (TRC001).
    assert run(project / "pkg" / "model.py", tmp_path / "cache")[0] == ["libcst", "trace_lint.rules"]


def test_a_named_file_checked_for_parse_errors_settles_nothing_a_folder_run_reports(project, tmp_path, monkeypatch):
    broken = project / "pkg" / "other.py"
    broken.write_text("def scale(values:\n")
    cache = ResultCache(tmp_path / "cache")
    folder = _run([project], project, cache)
    named = _run([broken], project, cache)
    assert [(f[0], f[2]) for f in named[0]] == [("pkg/other.py", "TRC001")]
    for entry in (tmp_path / "cache").glob("results-*.json"):
        entry.unlink()  # so that the analysis record answers the folder run
    assert _run([project], project, cache) == folder == _run([project], project)
    assert "TRC001" not in [f[2] for f in folder[0]]


def test_a_file_edited_since_its_findings_were_settled_is_settled_again(project, tmp_path, monkeypatch):
    cache = ResultCache(tmp_path / "cache")
    first = _run([project], project, cache)
    # No capture reads other.py, so the engine's findings stand; its new comment is a
    # suppression of nothing (TRC002), which only settling the file again can see.
    (project / "pkg" / "other.py").write_text(PLAIN + "\nLIMIT = 3  # noqa: TRC102\n")
    runs = EngineRuns(monkeypatch)
    edited = _run([project], project, cache)
    assert runs.count == 0
    assert edited == _run([project], project)
    assert [(f[0], f[1], f[2]) for f in edited[0]] == [*((f[0], f[1], f[2]) for f in first[0]), ("pkg/other.py", 4, "TRC002")]
    assert _run([project / "pkg" / "runner.py"], project, cache) == _run([project / "pkg" / "runner.py"], project)


def test_a_named_file_without_a_capture_is_answered_from_the_record_once_it_parses(project, tmp_path, monkeypatch):
    from trace_lint.driver import checker

    cache = ResultCache(tmp_path / "cache")
    _run([project], project, cache)
    settled_again = []
    real = checker._reported
    monkeypatch.setattr(checker, "_reported", lambda *args, **kwargs: settled_again.append(1) or real(*args, **kwargs))
    model = project / "pkg" / "model.py"  # the prefilter does not admit it: no capture starts there
    assert _run([model], project, cache) == _run([model], project)
    assert settled_again == [1]  # only the run without the cache settled anything
    assert [(f[0], f[1], f[2]) for f in _run([model], project, cache)[0]] == [("pkg/model.py", 6, "TRC102")]
