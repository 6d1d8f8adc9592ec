"""The fixture projects whose captures call `self.module(x)`, `self.module` picked from a registry
dict at run time: `trace-lint check` alone sees nothing there; after the project's own tests
ran under `pytest --trace-guard`, it reports the host reads the registered classes do, with the
step "observed at run time"; after an edit of the callee's file the record is stale.

- tests/fixtures/observed_torch: CUDA graphs, on a CPU build of torch with a stand-in CUDAGraph
  (its own `graph_standin` plugin), the tests run by pytest-xdist workers; on a real GPU in
  `test_torch_fixture_on_a_gpu` (marked cuda).
- tests/fixtures/observed_ttnn: the real ttnn 0.81.1 on a mock device (TRACE_LINT_TTNN_PYTHON,
  a Python 3.12: sys.monitoring records there).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trace_lint.core import observed as reader

from .cli_helpers import FIXTURES, REPO, run_cli

HEADS = {"score": (6, ".item()"), "list": (11, ".tolist()"), "host": (16, ".cpu()"), "move": (21, '.to("cpu")')}


def copy_fixture(name: str, into: Path) -> Path:
    project = into / name
    shutil.copytree(FIXTURES / name, project)
    return project


def guarded_pytest(project: Path, python: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = dict(os.environ)
    environment.pop("TRACE_LINT_GUARD_TTNN_MODULE", None)
    environment["PYTHONPATH"] = os.pathsep.join([str(project), str(REPO)])
    environment.update(env or {})
    return subprocess.run(
        [python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--trace-guard", *args],
        cwd=project, env=environment, capture_output=True, text=True, timeout=600,
    )


def findings(project: Path, *extra: str) -> list[dict]:
    result = run_cli("check", ".", "--output-format", "json", *extra, cwd=project)
    assert result.returncode in (0, 1), result.stderr.decode()
    return json.loads(result.stdout)


def observed_steps(finding: dict) -> list[str]:
    return [step["message"] for chain in finding["chains"] for step in chain if "observed at run time" in step["message"]]


def assert_heads_reported(project: Path, test_file: str) -> None:
    found = findings(project)
    assert sorted((f["filename"], f["location"]["row"], f["code"]) for f in found) == sorted(
        ("model/heads.py", line, "TRC102") for line, _ in HEADS.values()
    )
    by_line = {f["location"]["row"]: f for f in found}
    for kind, (line, _) in HEADS.items():
        (step,) = observed_steps(by_line[line])
        assert f"observed at run time by {test_file}::test_capture[{kind}]" in step, step


def assert_stale_after_editing_heads(project: Path) -> None:
    heads = project / "model" / "heads.py"
    heads.write_text(heads.read_text() + "\n# edited after the guarded run\n")
    assert findings(project) == []
    settings = run_cli("check", ".", "--show-settings", cwd=project).stdout.decode()
    assert f"{len(HEADS)} call edges, {len(HEADS)} stale" in settings


# ------------------------------------------------------------------ torch, CPU build
@pytest.fixture(scope="module")
def torch_run(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("xdist")
    project = copy_fixture("observed_torch", tmp_path_factory.mktemp("torch"))
    before = findings(project)
    # Two pytest-xdist workers, each writing its record into the same folder.
    proc = guarded_pytest(project, sys.executable, "-n", "2", "--trace-guard-mode=warn")
    return project, before, proc


def test_torch_capture_through_a_registry_is_reported_after_the_guarded_run(torch_run):
    project, before, proc = torch_run
    assert before == []
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert_heads_reported(project, "tests/check_heads.py")


def test_records_of_parallel_workers_keep_every_edge(torch_run):
    project, _before, _proc = torch_run
    records = reader.read_folder(project / ".trace-lint-cache" / "observed")
    assert records.warnings == []
    callees = sorted(edge.callee.qualname for edge in records.edges)
    assert callees == sorted(f"{cls}.__call__" for cls in ("ScoreHead", "ListHead", "HostHead", "MoveHead"))
    assert {edge.capture.kind for edge in records.edges} == {"cuda-graph"}


def test_torch_record_is_stale_after_editing_the_callee(torch_run, tmp_path):
    project, _before, _proc = torch_run
    copy = tmp_path / "copy"
    shutil.copytree(project, copy)
    assert_stale_after_editing_heads(copy)


@pytest.mark.cuda
def test_torch_fixture_on_a_gpu(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    project = copy_fixture("observed_torch", tmp_path)
    assert findings(project) == []
    # Mode "raise": each host read of a GPU tensor is stopped before CUDA runs it (the tests fail).
    proc = guarded_pytest(project, sys.executable)
    assert "TraceSafetyError" in proc.stdout, proc.stdout[-3000:]
    assert_heads_reported(project, "tests/check_heads.py")
    assert_stale_after_editing_heads(project)


# ------------------------------------------------------------------ ttnn, mock device
TTNN_PYTHON = os.environ.get("TRACE_LINT_TTNN_PYTHON", "")
CLUSTER = os.environ.get("TT_METAL_MOCK_CLUSTER_DESC_PATH", "")


@pytest.mark.skipif(
    not TTNN_PYTHON or not CLUSTER or not os.path.exists(CLUSTER),
    reason="TRACE_LINT_TTNN_PYTHON / TT_METAL_MOCK_CLUSTER_DESC_PATH not set (scripts/setup_ttnn_mock.sh)",
)
def test_ttnn_capture_through_a_registry_on_the_mock_device(tmp_path):
    project = copy_fixture("observed_ttnn", tmp_path)
    assert findings(project) == []
    proc = guarded_pytest(project, TTNN_PYTHON)
    # The guard stops the read at run time too: the test fails, and the record is written.
    assert proc.returncode == 1 and "TRC102 device-to-host read inside a capture" in proc.stdout, proc.stdout[-3000:]
    assert "calls observed in captures written to" in proc.stdout
    found = findings(project)
    assert [(f["filename"], f["location"]["row"], f["code"]) for f in found] == [("model/blocks.py", 11, "TRC102")]
    (chain,) = found[0]["chains"]
    assert [(step["filename"], step["location"]["row"]) for step in chain] == [("model/model.py", 14), ("model/model.py", 16)]
    assert chain[1]["message"] == (
        "calls `ReadBack.__call__` (observed at run time by tests/check_model.py::test_capture; no static target)"
    )
    sarif = json.loads(run_cli("check", ".", "--output-format", "sarif", cwd=project).stdout)
    flow = sarif["runs"][0]["results"][0]["codeFlows"][0]["threadFlows"][0]["locations"]
    assert any("observed at run time" in step["location"]["message"]["text"] for step in flow)
    blocks = project / "model" / "blocks.py"
    blocks.write_text(blocks.read_text() + "\n# edited after the guarded run\n")
    assert findings(project) == []
    assert "1 call edges, 1 stale" in run_cli("check", ".", "--show-settings", cwd=project).stdout.decode()
