"""Configuration through the real CLI: per-folder configs (the nearest decides what is
reported, in any argument order), dotted keys, `extend`, inline `--config`, `--isolated`,
`--show-settings` and ruff's selector precedence."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from .cli_helpers import CAPTURE_READING_HOST, run_cli

HOST_READ = CAPTURE_READING_HOST  # TRC102 on line 7
SYNC = CAPTURE_READING_HOST.replace("y = ttnn.to_torch(x)", "ttnn.synchronize_device(device); y = x")  # TRC103 on line 7


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def reported(project: Path, *args: str) -> set[tuple[str, str]]:
    result = run_cli("check", "--no-cache", "--output-format", "json", *args, cwd=project)
    assert result.returncode in (0, 1), result.stderr.decode()
    return {(Path(item["filename"]).as_posix(), item["code"]) for item in json.loads(result.stdout)}


def nested_project(root: Path) -> Path:
    """A repository whose tests/ folder has its own config: TRC102 ignored there, TRC103
    ignored in one file, a generated folder excluded."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    write(root / "pyproject.toml", '[project]\nname = "demo"\n\n[tool.trace-lint]\n')
    write(root / "src" / "pkg" / "helpers.py", HOST_READ)
    write(root / "src" / "pkg" / "sync.py", SYNC)
    write(root / "tests" / "test_run.py", HOST_READ)
    write(root / "tests" / "test_sync.py", SYNC)
    write(root / "tests" / "test_other_sync.py", SYNC)
    write(root / "tests" / "generated" / "gen.py", SYNC)
    write(
        root / "tests" / "pyproject.toml",
        '[tool.trace-lint]\nignore = ["TRC102"]\nexclude = ["generated"]\n\n[tool.trace-lint.per-file-ignores]\n"test_sync.py" = ["TRC103"]\n',
    )
    return root


EXPECTED = {
    ("src/pkg/helpers.py", "TRC102"),
    ("src/pkg/sync.py", "TRC103"),
    ("tests/test_other_sync.py", "TRC103"),
}


def test_nearest_config_decides_each_files_report_in_any_order(tmp_path):
    project = nested_project(tmp_path)
    assert reported(project, ".") == EXPECTED
    files = ["tests/test_run.py", "src/pkg/helpers.py", "tests/test_sync.py", "src/pkg/sync.py", "tests/test_other_sync.py"]
    forward = reported(project, *files)
    backward = reported(project, *reversed(files))
    assert forward == backward == EXPECTED
    # As pre-commit calls it: named files, excludes forced.
    assert reported(project, "--force-exclude", "tests/generated/gen.py", *files) == EXPECTED
    listed = run_cli("check", "--show-files", ".", cwd=project).stdout.decode().splitlines()
    assert "tests/generated/gen.py" not in listed and "tests/test_run.py" in listed
    # From inside the nested folder, the same files get the same report.
    assert reported(project / "tests", ".") == {("test_other_sync.py", "TRC103")}


def test_config_and_isolated_turn_the_hierarchy_off(tmp_path):
    project = nested_project(tmp_path)
    everything = {*EXPECTED, ("tests/test_run.py", "TRC102"), ("tests/test_sync.py", "TRC103"), ("tests/generated/gen.py", "TRC103")}
    assert reported(project, "--config", "pyproject.toml", ".") == everything
    assert reported(project, "--isolated", ".") == everything
    refused = run_cli("check", "--isolated", "--config", "pyproject.toml", ".", cwd=project)
    assert refused.returncode == 2
    assert refused.stderr.decode().strip() == "trace-lint: error: the argument '--isolated' cannot be used with '--config FILE'"


def test_command_line_options_apply_under_every_config(tmp_path):
    project = nested_project(tmp_path)
    assert reported(project, "--select", "TRC103", ".") == {("src/pkg/sync.py", "TRC103"), ("tests/test_other_sync.py", "TRC103")}


def test_dotted_keys_are_the_same_table(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write(tmp_path / "a.py", SYNC)
    write(tmp_path / "pyproject.toml", 'tool.trace-lint.select = ["TRC102"]\n\n[project]\nname = "demo"\n')
    assert reported(tmp_path, ".") == set()
    write(tmp_path / "pyproject.toml", '[tool]\ntrace-lint.select = ["TRC103"]\n')
    assert reported(tmp_path, ".") == {("a.py", "TRC103")}


def test_extend_reads_the_base_config(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write(tmp_path / "base.toml", 'ignore = ["TRC103"]\n')
    write(tmp_path / "pyproject.toml", '[tool.trace-lint]\nextend = "base.toml"\n')
    write(tmp_path / "a.py", SYNC)
    write(tmp_path / "b.py", HOST_READ)
    assert reported(tmp_path, ".") == {("b.py", "TRC102")}
    # The extending config's selection is a layer over the base's.
    write(tmp_path / "base.toml", 'select = ["TRC1"]\nignore = ["TRC103"]\n')
    write(tmp_path / "pyproject.toml", '[tool.trace-lint]\nextend = "base.toml"\nextend-select = ["TRC103"]\n')
    assert reported(tmp_path, ".") == {("a.py", "TRC103"), ("b.py", "TRC102")}
    write(tmp_path / "pyproject.toml", '[tool.trace-lint]\nextend = "base.toml"\nselect = ["TRC102"]\n')
    assert reported(tmp_path, ".") == {("b.py", "TRC102")}
    write(tmp_path / "base.toml", 'extend = "pyproject.toml"\n')
    cycle = run_cli("check", ".", cwd=tmp_path)
    assert cycle.returncode == 2 and "`extend` makes a cycle" in cycle.stderr.decode()


def test_inline_config_overrides(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write(tmp_path / "a.py", SYNC)
    write(tmp_path / "b.py", HOST_READ)
    assert reported(tmp_path, "--config", 'select = ["TRC103"]', ".") == {("a.py", "TRC103")}
    bad = run_cli("check", "--config", "select = [oops", ".", cwd=tmp_path)
    assert bad.returncode == 2 and "not a TOML `KEY = VALUE` pair" in bad.stderr.decode()
    unknown = run_cli("check", "--config", "colour = 1", ".", cwd=tmp_path)
    assert unknown.returncode == 2 and "unknown key `colour`" in unknown.stderr.decode()


def test_the_more_specific_selector_wins(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write(tmp_path / "a.py", SYNC)
    write(tmp_path / "b.py", HOST_READ)
    assert reported(tmp_path, "--select", "TRC102", "--ignore", "TRC1", ".") == {("b.py", "TRC102")}
    assert reported(tmp_path, "--select", "TRC1", "--ignore", "TRC102", ".") == {("a.py", "TRC103")}
    assert reported(tmp_path, "--select", "TRC102", "--ignore", "TRC102", ".") == set()
    # The command line is a later layer than the config, as in ruff: its selectors win there
    # even when less specific, and a `--select` of its own starts afresh.
    write(tmp_path / "pyproject.toml", '[tool.trace-lint]\nignore = ["TRC102"]\n')
    assert reported(tmp_path, ".") == {("a.py", "TRC103")}
    assert reported(tmp_path, "--extend-select", "TRC102", ".") == {("a.py", "TRC103"), ("b.py", "TRC102")}
    assert reported(tmp_path, "--select", "TRC1", ".") == {("a.py", "TRC103"), ("b.py", "TRC102")}
    assert reported(tmp_path, "--ignore", "TRC103", ".") == set()


def test_show_settings_prints_the_rules_in_force(tmp_path):
    project = nested_project(tmp_path)
    shown = run_cli("check", "--show-settings", "--select", "TRC1", "--ignore", "TRC103", ".", cwd=project)
    assert shown.returncode == 0, shown.stderr.decode()
    text = shown.stdout.decode()
    rules = text.split("rules = [", 1)[1].split("]", 1)[0]
    assert "'TRC101'" in rules and "'TRC102'" in rules and "TRC103" not in rules
    # A file under tests/ shows its own folder's config.
    own = run_cli("check", "--show-settings", "tests/test_run.py", cwd=project).stdout.decode()
    assert "TRC102" not in own.split("rules = [", 1)[1].split("]", 1)[0]
    assert "tests/pyproject.toml" in own


def test_a_cached_run_sees_a_nested_config_change(tmp_path):
    project = nested_project(tmp_path)
    assert reported(project, ".") == EXPECTED  # --no-cache: the reference
    cached = lambda: {(Path(i["filename"]).as_posix(), i["code"]) for i in json.loads(run_cli("check", "--output-format", "json", ".", cwd=project).stdout)}  # noqa: E731
    assert cached() == EXPECTED
    write(project / "tests" / "pyproject.toml", "[tool.trace-lint]\n")
    assert ("tests/test_run.py", "TRC102") in cached()


def test_runs_with_several_nested_configs_hit_the_cache(tmp_path):
    project = nested_project(tmp_path)
    for folder in ("a", "b", "c", "d"):
        write(project / folder / "pyproject.toml", '[tool.trace-lint]\nignore = ["TRC103"]\n')
        write(project / folder / "m.py", SYNC)
    first = run_cli("check", "--output-format", "json", ".", cwd=project)
    assert first.returncode == 1
    # The same settings give the same cache key: the second run reads the stored result.
    cache = project / ".trace-lint-cache"
    before = {p: p.stat().st_mtime_ns for p in cache.rglob("*") if p.is_file()}
    second = run_cli("check", "--output-format", "json", ".", cwd=project)
    assert second.stdout == first.stdout
    after = {p: p.stat().st_mtime_ns for p in cache.rglob("*") if p.is_file()}
    assert set(after) == set(before), "a second run with unchanged configs stored a new result"
