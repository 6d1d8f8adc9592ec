"""Whole-program file runs: a run on some files analyses the whole project that holds them
and reports what they select (findings in them, or reached from a capture in them), so
`check a.py` agrees with `check .` on a.py."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

from trace_lint.driver.checker import project_root

from .cli_helpers import CHAIN_HELPERS as HELPERS, run_cli

MAIN = textwrap.dedent(
    """\
    import ttnn
    from pkg.helpers import step


    def run(device, x):
        step(x)
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        try:
            out = step(x)
        finally:
            ttnn.end_trace_capture(device, tid, cq_id=0)
        return out
    """
)
# A file of its own with a finding that no run on the package should report.
OTHER = textwrap.dedent(
    """\
    import ttnn


    def other(device, x):
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        try:
            y = ttnn.to_torch(x)
        finally:
            ttnn.end_trace_capture(device, tid, cq_id=0)
        return y
    """
)


def _project(root: Path, helpers: str = HELPERS) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\n\n[tool.trace-lint]\n', encoding="utf-8")
    (root / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (root / "pkg" / "helpers.py").write_text(helpers, encoding="utf-8")
    (root / "pkg" / "main.py").write_text(MAIN, encoding="utf-8")
    (root / "other.py").write_text(OTHER, encoding="utf-8")
    return root


def _findings(root: Path, *paths: str, stdin: bytes | None = None) -> tuple[int, set[tuple[str, int, str]]]:
    result = run_cli("check", *paths, "--no-cache", "--output-format", "json", cwd=root, stdin=stdin)
    assert result.returncode in (0, 1), result.stderr.decode()
    return result.returncode, {(Path(f["filename"]).as_posix(), f["location"]["row"], f["code"]) for f in json.loads(result.stdout)}


def test_a_file_run_agrees_with_the_project_run_on_that_file(tmp_path: Path):
    root = _project(tmp_path)
    _status, everything = _findings(root, ".")
    assert ("pkg/helpers.py", 5, "TRC102") in everything and ("other.py", 7, "TRC102") in everything
    for name in ("pkg/helpers.py", "pkg/main.py", "other.py"):
        _status, named = _findings(root, name)
        assert {f for f in named if f[0] == name} == {f for f in everything if f[0] == name}, name


def test_a_capture_in_a_named_file_reports_its_callee_elsewhere(tmp_path: Path):
    root = _project(tmp_path)
    status, found = _findings(root, "pkg/main.py")
    # The host read sits in helpers.py; its chain starts at the capture in main.py.
    assert status == 1 and found == {("pkg/helpers.py", 5, "TRC102")}
    result = run_cli("check", "pkg/main.py", "--no-cache", cwd=root)
    assert "pkg/main.py:7:11: capture begins here" in result.stdout.decode()


def test_a_callee_file_alone_still_sees_its_callers(tmp_path: Path):
    root = _project(tmp_path)
    status, found = _findings(root, "pkg/helpers.py")
    assert status == 1 and found == {("pkg/helpers.py", 5, "TRC102")}
    # Its text from stdin stands in for the file on disk, in the same project.
    fixed = HELPERS.replace("ttnn.to_torch(x)", "ttnn.relu(x)").encode()
    status, found = _findings(root, "-", "--stdin-filename", "pkg/helpers.py", stdin=fixed)
    assert status == 0 and found == set()


def test_a_needed_suppression_is_not_unused_when_its_file_is_named_alone(tmp_path: Path):
    suppressed = HELPERS.replace("return ttnn.to_torch(x)", "return ttnn.to_torch(x)  # noqa: TRC102")
    root = _project(tmp_path, helpers=suppressed)
    for name in ("pkg/helpers.py", "pkg/main.py", "."):
        status, found = _findings(root, name)
        assert not any(f[0] == "pkg/helpers.py" for f in found), (name, found)
    # And one that nothing needs is reported in both kinds of run.
    (root / "pkg" / "main.py").write_text(MAIN.replace("out = step(x)", "out = ttnn.relu(x)"), encoding="utf-8")
    assert ("pkg/helpers.py", 5, "TRC002") in _findings(root, "pkg/helpers.py")[1]
    assert ("pkg/helpers.py", 5, "TRC002") in _findings(root, ".")[1]


def test_problems_elsewhere_in_the_project_do_not_fail_a_file_run(tmp_path: Path):
    root = _project(tmp_path)
    (root / "broken.py").write_text("import ttnn\ndef f(:\n    ttnn.begin_trace_capture(d)\n", encoding="utf-8")
    status, found = _findings(root, "pkg/main.py")
    assert status == 1 and not any(f[0] == "broken.py" for f in found)
    assert ("broken.py", 2, "TRC001") in _findings(root, ".")[1]


def test_project_root_is_the_config_folder_then_the_repository_then_the_folder(tmp_path: Path):
    repo = tmp_path / "repo"
    (repo / "sub" / "deeper").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    file = repo / "sub" / "deeper" / "a.py"
    file.write_text("", encoding="utf-8")
    assert project_root(file) == repo.resolve()
    # A pyproject.toml without the table does not make a project root; one with it does.
    (repo / "sub" / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    assert project_root(file) == repo.resolve()
    (repo / "sub" / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.trace-lint]\n', encoding="utf-8")
    assert project_root(file) == (repo / "sub").resolve()
    # A config further down decides only what is reported under it (hierarchical
    # configuration): the project stays the outermost configured folder in the repository.
    (repo / "sub" / "deeper" / "trace-lint.toml").write_text("", encoding="utf-8")
    assert project_root(file) == (repo / "sub").resolve()
    loose = tmp_path / "loose"
    loose.mkdir()
    assert project_root(loose / "b.py") == loose.resolve()


def test_a_configuration_above_the_repository_does_not_widen_the_project(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.trace-lint]\n", encoding="utf-8")
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert project_root(repo / "a.py") == repo.resolve()
    assert project_root(tmp_path / "elsewhere.py") == tmp_path.resolve()
