"""Call edges the runtime guard observed in captures, followed by the static analysis.

The guard records them (trace_lint/runtime_guard/observed.py) on a stand-in ttnn here and on the
real one in test_observed_ttnn.py; `trace-lint check` reads them (trace_lint/core/observed.py, trace_lint/capture/observed.py)
where static resolution finds no target for a call.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .cli_helpers import REPO, run_cli
from trace_lint.core import observed as reader
from trace_lint.driver.checker import check
from trace_lint.core.config import ConfigError, Settings, load_settings, read_config_file
from trace_lint.runtime_guard import TraceSafetyError, guard
from trace_lint.runtime_guard import observed as recorder

sys.path.insert(0, str(Path(__file__).resolve().parent / "runtime_guard"))
import fake_ttnn  # noqa: E402

STEPS = textwrap.dedent(
    """\
    import ttnn


    class Reader:
        def __call__(self, x):
            return ttnn.from_device(x)


    STEPS = {"read": Reader}
    """
)
MODEL = textwrap.dedent(
    """\
    import ttnn

    from app.steps import STEPS


    class Model:
        def __init__(self, device, kind):
            self.device = device
            self.step = STEPS[kind]()

        def run(self, x):
            tid = ttnn.begin_trace_capture(self.device, cq_id=0)
            try:
                return self.step(x)
            finally:
                ttnn.end_trace_capture(self.device, tid, cq_id=0)
    """
)
CALL_LINE = MODEL.splitlines().index("            return self.step(x)") + 1
BEGIN_LINE = MODEL.splitlines().index("        tid = ttnn.begin_trace_capture(self.device, cq_id=0)") + 1


def make_project(root: Path) -> Path:
    (root / "app").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.trace-lint]\n")
    (root / "app" / "steps.py").write_text(STEPS)
    (root / "app" / "model.py").write_text(MODEL)
    return root


def run_guarded(root: Path, monkeypatch, record=True) -> None:
    """Import the project and run its capture under the guard on the stand-in ttnn."""
    tt = fake_ttnn.make_ttnn()
    monkeypatch.setitem(sys.modules, "ttnn", tt)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.chdir(root)
    for name in ("app", "app.steps", "app.model"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    from app.model import Model

    device = tt.MeshDevice()
    with guard(ttnn_module=tt, torch=False, record=record):
        with pytest.raises(TraceSafetyError):  # the guard stops the read at run time too
            Model(device, "read").run(tt.Tensor(device=device))


def codes(root: Path, **settings) -> dict[str, list]:
    found = check([root], Settings(root=root, **settings), whole_program=True).findings
    return {f"{f.filename}:{f.location.row}:{f.code}": f.chains for f in found}


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = make_project(tmp_path / "project")
    monkeypatch.chdir(root)  # findings name files relative to the working directory
    return root


def records_in(root: Path) -> list[Path]:
    return sorted((root / ".trace-lint-cache" / "observed").glob("observed-*.json"))


# ------------------------------------------------------------------ recording
def test_guard_records_the_call_made_through_a_registry(project, monkeypatch):
    run_guarded(project, monkeypatch)
    (path,) = records_in(project)
    (edge,) = reader.parse_record(path.read_bytes())
    assert edge.capture == reader.Capture("app/model.py", BEGIN_LINE, "run", "ttnn")
    assert (edge.caller.file, edge.caller.line, edge.caller.function) == ("app/model.py", CALL_LINE, "Model.run")
    if sys.version_info >= (3, 11):
        assert edge.caller.column == MODEL.splitlines()[CALL_LINE - 1].index("self.step(x)")
    assert edge.callee == reader.Callee("app/steps.py", "Reader.__call__", 5)
    assert edge.caller_hash == reader.file_hash((project / "app" / "model.py").read_bytes())
    assert edge.seen_by == [] and "the capture begun at app/model.py" in edge.witness()
    # The cache folder the record made is kept out of git, as the result cache keeps it.
    assert (project / ".trace-lint-cache" / ".gitignore").read_text() == "*\n"


def test_nothing_is_recorded_without_record_and_nothing_watched_outside_captures(project, monkeypatch):
    run_guarded(project, monkeypatch, record=None)
    assert records_in(project) == []
    started = recorder.start(project / "records", project)
    try:
        capture = type("Capture", (), {"begin_frame": None, "label": "trace"})()
        assert sys.getprofile() is None
        if sys.version_info >= (3, 12):
            assert started._tool is None  # no sys.monitoring tool taken before a capture opens
        started.opened(capture)
        if sys.version_info >= (3, 12):
            assert sys.monitoring.get_events(started._tool) == sys.monitoring.events.PY_START
        else:
            assert sys.getprofile() == started._on_profile
        started.closed(capture)
        assert sys.getprofile() is None
        if sys.version_info >= (3, 12):
            assert sys.monitoring.get_events(started._tool) == 0
    finally:
        recorder.stop()


# ------------------------------------------------------------------ use by the analysis
def test_check_follows_the_observed_edge_and_keeps_static_findings(project, monkeypatch):
    before = codes(project)
    # Statically the step is unknown: only TRC404 (unwarmed `self.step(x)`), nothing reached.
    assert set(before) == {f"app/model.py:{BEGIN_LINE}:TRC404"}
    run_guarded(project, monkeypatch)
    after = codes(project)
    assert set(after) == {f"app/model.py:{BEGIN_LINE}:TRC404", "app/steps.py:6:TRC102"}
    (chain,) = after["app/steps.py:6:TRC102"]
    assert [step.message for step in chain] == [
        "capture begins here, in `Model.run`",
        "calls `Reader.__call__` (observed at run time by the capture begun at app/model.py:12 in `run`; no static target)",
    ]
    assert (chain[1].filename, chain[1].location.row) == ("app/model.py", CALL_LINE)
    # An observed edge is no warm-up (it ran inside the capture): TRC404 stays.
    assert after[f"app/model.py:{BEGIN_LINE}:TRC404"] == before[f"app/model.py:{BEGIN_LINE}:TRC404"]
    assert set(codes(project, observed=False)) == set(before)


@pytest.mark.parametrize("edited", ["app/steps.py", "app/model.py"])
def test_an_edge_whose_file_changed_is_stale_and_ignored(project, monkeypatch, edited):
    run_guarded(project, monkeypatch)
    assert "app/steps.py:6:TRC102" in codes(project)
    path = project / edited
    path.write_text(path.read_text() + "# edited\n")
    assert "app/steps.py:6:TRC102" not in codes(project)
    result = run_cli("check", str(project), "--show-settings")
    assert "1 call edges, 1 stale" in result.stdout.decode()


def test_cached_and_uncached_runs_agree_and_a_changed_record_is_never_served_stale(project, monkeypatch):
    def json_run(*extra):
        result = run_cli("check", ".", "--output-format", "json", *extra, cwd=project)
        assert result.returncode in (0, 1), result.stderr.decode()
        return json.loads(result.stdout)

    first = json_run()  # fills the cache without a record
    assert {f["code"] for f in first} == {"TRC404"}
    run_guarded(project, monkeypatch)
    cached, uncached = json_run(), json_run("--no-cache")
    assert cached == uncached == json_run()
    assert {f["code"] for f in cached} == {"TRC404", "TRC102"}
    (path,) = records_in(project)
    data = path.read_bytes()
    path.unlink()
    assert json_run() == first
    path.write_bytes(data)
    assert json_run() == cached
    assert json_run("--no-observed") == first


def test_corrupt_and_foreign_records_are_warnings(project, monkeypatch):
    run_guarded(project, monkeypatch)
    folder = project / ".trace-lint-cache" / "observed"
    (folder / "observed-bad-json.json").write_text("{not json")
    (folder / "observed-foreign.json").write_text(json.dumps({"format": "something-else"}))
    (folder / "observed-future.json").write_text(json.dumps({"format": reader.FORMAT_NAME, "version": 99, "captures": []}))
    (folder / "observed-malformed.json").write_text(json.dumps(
        {"format": reader.FORMAT_NAME, "version": 1, "captures": [{"begin": ["/abs.py", 1, "f"], "kind": "ttnn", "edges": []}]}))
    (folder / "observed-binary.json").write_bytes(b"\xff\xfe\x00")
    (folder / "observed-folder.json").mkdir()
    result = run_cli("check", ".", "--output-format", "concise", cwd=project)
    out, err = result.stdout.decode(), result.stderr.decode()
    assert result.returncode == 1 and "Traceback" not in err
    assert "app/steps.py:6:16: TRC102" in out  # the good record is still used
    for name, why in [
        ("observed-bad-json.json", "not JSON"),
        ("observed-foreign.json", "not a trace-lint observed-calls record"),
        ("observed-future.json", "record format version 99"),
        ("observed-malformed.json", "expected a path relative to the project root"),
        ("observed-binary.json", "not JSON"),
        ("observed-folder.json", "not a readable regular file"),
    ]:
        assert any(name in line and why in line and "warning" in line for line in err.splitlines()), (name, err)


def _write_edges(folder: str, root: str, worker: int, barrier) -> None:
    capture = reader.Capture("a.py", 1, "f", "ttnn")
    digest = reader.file_hash(b"x = 1\n")
    barrier.wait()
    for index in range(10):
        edge = reader.Edge(capture, reader.Site("a.py", worker * 100 + index + 1, 0, "f"), reader.Callee("a.py", "g", 1), digest, digest)
        reader.write_record(Path(folder), [edge], "test", Path(root))


def test_parallel_writers_lose_no_edge(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    folder = tmp_path / "records"
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(4)
    workers = [context.Process(target=_write_edges, args=(str(folder), str(tmp_path), n, barrier)) for n in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    records = reader.read_folder(folder)
    assert records.warnings == []
    assert sorted(edge.caller.line for edge in records.edges) == sorted(w * 100 + i + 1 for w in range(4) for i in range(10))


# ------------------------------------------------------------------ switches
PLUGIN_TEST = textwrap.dedent(
    """\
    import pytest

    import fake_ttnn_module as tt
    from app.model import Model
    from trace_lint.runtime_guard import TraceSafetyError


    def test_run():
        device = tt.MeshDevice()
        with pytest.raises(TraceSafetyError):
            Model(device, "read").run(tt.Tensor(device=device))
    """
)
# The plugin guards the module TRACE_LINT_GUARD_TTNN_MODULE names: the stand-in, as `ttnn` too.
STAND_IN_MODULE = "import sys\n\nimport fake_ttnn\n\nsys.modules['ttnn'] = sys.modules[__name__] = fake_ttnn.make_ttnn()\n"


def _run_plugin(project: Path, *args: str) -> subprocess.CompletedProcess:
    (project / "check_run.py").write_text(PLUGIN_TEST)
    (project / "fake_ttnn_module.py").write_text(STAND_IN_MODULE)
    env = dict(os.environ)
    env["TRACE_LINT_GUARD_TORCH"] = "0"
    env["TRACE_LINT_GUARD_TTNN_MODULE"] = "fake_ttnn_module"
    env["PYTHONPATH"] = os.pathsep.join([str(project), str(REPO / "tests" / "runtime_guard"), str(REPO)])
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--trace-guard", "check_run.py", *args],
        cwd=project, env=env, capture_output=True, text=True, timeout=300,
    )


def test_the_pytest_plugin_records_under_trace_guard_unless_turned_off(project):
    off = _run_plugin(project, "--no-trace-guard-record")
    assert off.returncode == 0, off.stdout + off.stderr
    assert records_in(project) == []
    on = _run_plugin(project)
    assert on.returncode == 0, on.stdout + on.stderr
    assert "calls observed in captures written to" in on.stdout
    (path,) = records_in(project)
    (edge,) = reader.parse_record(path.read_bytes())
    assert edge.seen_by == ["check_run.py::test_run"]
    assert "observed at run time by check_run.py::test_run" in run_cli("check", ".", cwd=project).stdout.decode()
    path.unlink()
    ini_off = _run_plugin(project, "-o", "trace_guard_record=false")
    assert ini_off.returncode == 0 and records_in(project) == []
    (project / "pyproject.toml").write_text("[tool.trace-lint]\nobserved = false\n")
    configured_off = _run_plugin(project)
    assert configured_off.returncode == 0 and records_in(project) == []


def test_the_observed_config_key(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.trace-lint]\nobserved = "records"\n')
    settings = load_settings(tmp_path)
    assert reader.records_folder(settings) == tmp_path / "records"
    assert reader.records_folder(Settings(root=tmp_path)) == tmp_path / ".trace-lint-cache" / "observed"
    assert reader.records_folder(Settings(root=tmp_path, observed=False)) is None
    (tmp_path / "pyproject.toml").write_text("[tool.trace-lint]\nobserved = 3\n")
    with pytest.raises(ConfigError, match="`observed` must be true, false or a folder name"):
        read_config_file(tmp_path / "pyproject.toml")


def test_a_configured_records_folder_is_written_and_read_and_left_unmarked(project, monkeypatch):
    (project / "pyproject.toml").write_text('[tool.trace-lint]\nobserved = "records"\n')
    run_guarded(project, monkeypatch)
    assert records_in(project) == [] and len(list((project / "records").glob("observed-*.json"))) == 1
    assert not (project / ".gitignore").exists()  # only the cache folder is marked for git
    assert "app/steps.py:6:TRC102" in codes(project, observed="records")
