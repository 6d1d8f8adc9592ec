"""Honest exits: every usage, configuration and output error exits 2 with a one-line message
that names the option or key, and never sits next to "All checks passed!"."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from .cli_helpers import CAPTURE_READING_HOST, cli_path, run_cli


def project(tmp_path: Path, config: str | None = None, source: str = CAPTURE_READING_HOST) -> Path:
    (tmp_path / "model.py").write_text(source, encoding="utf-8")
    if config is not None:
        (tmp_path / "pyproject.toml").write_text("[tool.trace-lint]\n" + config, encoding="utf-8")
    return tmp_path


def assert_error(result: subprocess.CompletedProcess, *parts: str) -> str:
    """Exit 2, one line on stderr that holds every part, and no success summary anywhere."""
    stderr = result.stderr.decode()
    assert result.returncode == 2, (result.returncode, stderr, result.stdout.decode())
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    for part in parts:
        assert part in lines[0], stderr
    assert "Traceback" not in stderr
    assert "All checks passed!" not in result.stdout.decode()
    return lines[0]


# -- rule selectors --------------------------------------------------------------------------
@pytest.mark.parametrize("option", ["--select", "--extend-select", "--ignore"])
def test_unknown_code_on_the_command_line_is_an_error(tmp_path, option):
    result = run_cli("check", ".", option, "TRC999", cwd=project(tmp_path))
    assert_error(result, option, "unknown rule code or prefix 'TRC999'")


def test_unknown_prefix_is_an_error_and_a_known_one_is_not(tmp_path):
    assert_error(run_cli("check", ".", "--select", "TRC7", cwd=project(tmp_path)), "--select", "'TRC7'")
    assert run_cli("check", ".", "--select", "TRC1", cwd=tmp_path).returncode == 1


@pytest.mark.parametrize(
    "config, key",
    [
        ('select = ["TRC999"]\n', "`select`"),
        ('extend-select = ["TRC9"]\n', "`extend-select`"),
        ('ignore = ["TRC999"]\n', "`ignore`"),
        ('[tool.trace-lint.per-file-ignores]\n"tests/*" = ["TRC999"]\n', "`per-file-ignores.tests/*`"),
    ],
)
def test_unknown_code_in_the_configuration_names_the_key(tmp_path, config, key):
    result = run_cli("check", ".", cwd=project(tmp_path, config))
    assert_error(result, "pyproject.toml", key, "TRC9")


def test_empty_select_selects_nothing(tmp_path):
    root = project(tmp_path, "select = []\n")
    result = run_cli("check", ".", "--output-format", "json", cwd=root)
    assert result.returncode == 0, result.stderr.decode()
    assert json.loads(result.stdout) == []
    # extend-select still adds to the empty selection.
    (root / "pyproject.toml").write_text('[tool.trace-lint]\nselect = []\nextend-select = ["TRC102"]\n', encoding="utf-8")
    result = run_cli("check", ".", "--output-format", "json", cwd=root)
    assert [item["code"] for item in json.loads(result.stdout)] == ["TRC102"]


# -- globs, keys and values -------------------------------------------------------------------
@pytest.mark.parametrize(
    "config, key",
    [
        ('exclude = ["gen[abc"]\n', "`exclude`"),
        ('extend-exclude = ["a**b"]\n', "`extend-exclude`"),
        ('[tool.trace-lint.per-file-ignores]\n"tests/[x" = ["TRC101"]\n', "`per-file-ignores`"),
    ],
)
def test_bad_glob_in_the_configuration_names_the_key(tmp_path, config, key):
    assert_error(run_cli("check", ".", cwd=project(tmp_path, config)), key, "invalid glob")


@pytest.mark.parametrize("option", ["--exclude", "--extend-exclude"])
def test_bad_glob_on_the_command_line_is_an_error(tmp_path, option):
    assert_error(run_cli("check", ".", option, "[oops", cwd=project(tmp_path)), option, "unclosed `[`")


@pytest.mark.parametrize(
    "config, key",
    [
        ("colour = true\n", "unknown key `colour`"),
        ('src = "lib"\n', "`src` must be a list of strings"),
        ('capture-contexts = ["not a name"]\n', "`capture-contexts` has an invalid entry"),
        ('extend-exclude = "gen"\n', "`extend-exclude` must be a list of strings"),
    ],
)
def test_unknown_keys_and_bad_values_name_the_key(tmp_path, config, key):
    assert_error(run_cli("check", ".", cwd=project(tmp_path, config)), key)


@pytest.mark.parametrize(
    "value, message",
    [("tests/*.py", "expected GLOB:CODES"), ("tests/*.py:TRC999", "unknown rule code"), ("t[:TRC101", "invalid glob")],
)
def test_bad_per_file_ignores_option(tmp_path, value, message):
    assert_error(run_cli("check", ".", "--per-file-ignores", value, cwd=project(tmp_path)), "--per-file-ignores", message)


# -- paths ------------------------------------------------------------------------------------
def test_missing_path_exits_2_without_a_success_line(tmp_path):
    result = run_cli("check", str(tmp_path / "nonexistent"))
    assert_error(result, "nonexistent", "no such file or directory")
    assert result.stdout.decode() == ""
    # Next to a path with findings, the findings are still reported, and the status is 2.
    root = project(tmp_path)
    result = run_cli("check", "model.py", "nonexistent.py", "--output-format", "concise", cwd=root)
    assert result.returncode == 2
    assert "TRC102" in result.stdout.decode() and "nonexistent.py: no such file" in result.stderr.decode()


def test_folder_without_python_files_says_so(tmp_path):
    (tmp_path / "notes.txt").write_text("no code here\n", encoding="utf-8")
    result = run_cli("check", ".", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stderr.decode().strip() == "trace-lint: warning: No Python files found under the given path(s)"


def test_stdin_named_twice_is_a_usage_error(tmp_path):
    result = run_cli("check", "-", "-", cwd=tmp_path, stdin=CAPTURE_READING_HOST.encode())
    assert_error(result, "`-` (standard input) can be named only once")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes (POSIX)")
def test_special_files_are_skipped_with_a_message_never_read(tmp_path):
    root = project(tmp_path)
    os.mkfifo(root / "pipe.py")  # opening it for reading would block forever
    result = run_cli("check", ".", "--output-format", "concise", cwd=root, timeout=60)
    assert result.returncode == 2
    assert "pipe.py: a named pipe (FIFO), skipped (never read)" in result.stderr.decode()
    assert "model.py:7" in result.stdout.decode()
    named = run_cli("check", "pipe.py", cwd=root, timeout=60)
    assert_error(named, "pipe.py: a named pipe (FIFO), skipped")


# -- usage and help ---------------------------------------------------------------------------
def test_usage_errors_are_one_line(tmp_path):
    line = assert_error(run_cli("check", "--bogus", cwd=tmp_path), "No such option: --bogus")
    assert line.startswith("trace-lint: error: ") and "╭" not in line
    assert_error(run_cli("check", "--jobs", "0", cwd=tmp_path), "--jobs")
    assert_error(run_cli("frobnicate", cwd=tmp_path), "No such command 'frobnicate'")
    assert_error(run_cli("check", "--color", "sometimes", cwd=tmp_path), "--color", "sometimes")
    assert_error(run_cli("check", "--output-format", "xml", cwd=tmp_path), "--output-format", "'xml'")


def test_help_has_no_type_placeholders():
    for command in ([], ["check"], ["rule"], ["lsp"]):
        result = run_cli(*command, "--help")
        text = result.stdout.decode()
        assert result.returncode == 0 and "Usage: trace-lint" in text
        assert "<bool>" not in text and "<list" not in text and "<str>" not in text and "╭" not in text


# -- statistics -------------------------------------------------------------------------------
def test_statistics_follow_a_json_format(tmp_path):
    root = project(tmp_path)
    result = run_cli("check", ".", "--statistics", "--output-format", "json", cwd=root)
    assert result.returncode == 1
    assert json.loads(result.stdout) == [{"code": "TRC102", "name": "device-to-host-in-capture", "count": 1, "fixable": False}]
    lines = run_cli("check", ".", "--statistics", "--output-format", "json-lines", cwd=root).stdout.decode().splitlines()
    assert [json.loads(line)["code"] for line in lines] == ["TRC102"]
    text = run_cli("check", ".", "--statistics", cwd=root).stdout.decode()
    assert text.split() == ["1", "TRC102", "device-to-host-in-capture"]
    assert_error(run_cli("check", ".", "--statistics", "--output-format", "sarif", cwd=root), "--statistics", "'sarif'")


# -- output -----------------------------------------------------------------------------------
@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_output_that_cannot_be_written_exits_2(tmp_path):
    root = project(tmp_path)
    with open("/dev/full", "wb") as full:
        result = subprocess.run([cli_path(), "check", "."], cwd=root, stdout=full, stderr=subprocess.PIPE, timeout=120)
    assert result.returncode == 2
    assert result.stderr.decode().strip() == "trace-lint: error: cannot write the output to standard output: No space left on device"


def test_closed_stdout_exits_2(tmp_path):
    root = project(tmp_path)
    result = subprocess.run(f"exec >&-; '{cli_path()}' check .", shell=True, cwd=root, stderr=subprocess.PIPE, timeout=120)
    assert result.returncode == 2
    assert result.stderr.decode().strip() == "trace-lint: error: cannot write the output: standard output is closed"


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path):
    root = project(tmp_path)
    command = f"'{cli_path()}' check . --output-format json | head -c 1"
    result = subprocess.run(["bash", "-c", command + "; echo \" ${PIPESTATUS[0]}\""], cwd=root, capture_output=True, timeout=120)
    assert result.stdout.decode() == "[ 1\n"  # the findings' status, not a crash
    assert result.stderr.decode() == ""


def test_output_file(tmp_path):
    root = project(tmp_path)
    result = run_cli("check", ".", "-o", "reports/out.json", "--output-format", "json", cwd=root)
    assert result.returncode == 1 and result.stdout == b""
    assert [item["code"] for item in json.loads((root / "reports" / "out.json").read_text(encoding="utf-8"))] == ["TRC102"]
    (root / "blocked").write_text("a file, not a folder\n", encoding="utf-8")
    assert_error(run_cli("check", ".", "--output-file", "blocked/out.json", cwd=root), "--output-file", "blocked/out.json")


def test_color(tmp_path):
    root = project(tmp_path)
    assert "\x1b[" in run_cli("check", ".", "--color", "always", cwd=root).stdout.decode()
    assert "\x1b[" not in run_cli("check", ".", "--color", "never", cwd=root).stdout.decode()
    assert "\x1b[" not in run_cli("check", ".", cwd=root).stdout.decode()  # auto: a pipe gets none


# -- settings and files -----------------------------------------------------------------------
def test_show_settings_resolves_src_and_lists_every_key(tmp_path):
    root = project(tmp_path, 'src = ["lib", "."]\ncapture-contexts = ["mylib.traced"]\nextend-exclude = ["gen_*"]\n')
    result = run_cli("check", ".", "--show-settings", "--select", "TRC1", cwd=root)
    assert result.returncode == 0, result.stderr.decode()
    text = result.stdout.decode()
    real = os.path.realpath(root)
    assert f"src = [{os.path.join(real, 'lib')!r}, {real!r}]" in text
    assert "capture-contexts = ['mylib.traced']" in text and "extend-exclude = ['gen_*']" in text
    assert "select = ['TRC1']" in text


def test_show_files_and_exclude_options(tmp_path):
    root = project(tmp_path)
    (root / "gen_model.py").write_text(CAPTURE_READING_HOST, encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "test_model.py").write_text(CAPTURE_READING_HOST, encoding="utf-8")
    listed = run_cli("check", "--show-files", cwd=root).stdout.decode().split()
    assert listed == ["gen_model.py", "model.py", "tests/test_model.py"]
    listed = run_cli("check", "--show-files", "--extend-exclude", "gen_*", "--exclude", "tests", cwd=root).stdout.decode().split()
    assert listed == ["model.py"]
    result = run_cli("check", "--per-file-ignores", "tests/*.py:TRC1", "--per-file-ignores", "gen_*:TRC102", "--output-format", "json", cwd=root)
    assert [item["filename"] for item in json.loads(result.stdout)] == ["model.py"]
