"""Configuration: every key checked, codes checked against the rule catalogue, `src`
resolved against the configuration file, `select = []` meaning no rules."""

from __future__ import annotations

import pytest

from trace_lint.core.config import OPT_IN_CODES, RULE_CODES, ConfigError, Settings, glob_problem, read_config_file, with_cli_overrides
from trace_lint.rules import BY_CODE, selected_codes


def test_rule_codes_match_the_rule_catalogue():
    # config.py reads the registry, never the rules: a run with nothing to analyse loads no libcst.
    assert set(RULE_CODES) == set(BY_CODE)
    assert set(OPT_IN_CODES) == {code for code, rule in BY_CODE.items() if not rule.default_enabled}


def write(tmp_path, body: str):
    path = tmp_path / "pyproject.toml"
    path.write_text("[tool.trace-lint]\n" + body, encoding="utf-8")
    return path


def test_every_new_key_is_read(tmp_path):
    (tmp_path / "lib").mkdir()
    settings = read_config_file(write(tmp_path, 'src = ["lib", "../elsewhere"]\nextend-exclude = ["gen/**/*.py"]\ncapture-contexts = ["mylib.traced", "traced"]\n'))
    assert settings.src == ((tmp_path / "lib").resolve(), (tmp_path.parent / "elsewhere").resolve())
    assert settings.extend_exclude == ("gen/**/*.py",)
    assert settings.capture_contexts == ("mylib.traced", "traced")
    # Keys that can change a finding are part of the result cache's key.
    assert "mylib.traced" in settings.cache_key() and str(tmp_path / "lib") in settings.cache_key()


def test_select_absent_empty_and_given(tmp_path):
    assert read_config_file(write(tmp_path, "")).select is None
    empty = read_config_file(write(tmp_path, "select = []\n"))
    assert empty.select == ()
    assert selected_codes(empty.select, (), ()) == set()
    assert selected_codes(None, (), ()) == {code for code, rule in BY_CODE.items() if rule.default_enabled}
    # A prefix selects its family, whatever the family holds.
    family = selected_codes((), ("TRC1",), ())
    assert {"TRC101", "TRC102", "TRC103"} <= family == {code for code in BY_CODE if code.startswith("TRC1")}


@pytest.mark.parametrize(
    "glob, problem",
    [("", "empty"), ("gen[abc", "unclosed"), ("a**b/x", "whole path component"), ("src/**x", "whole path component")],
)
def test_bad_globs(glob, problem):
    assert problem in glob_problem(glob)


@pytest.mark.parametrize("glob", ["gen_*.py", "src/**/gen/*.py", "**", "[!a]*.py", "[]]x", "tests/"])
def test_good_globs(glob):
    assert glob_problem(glob) is None


def test_cli_overrides_replace_and_extend():
    base = Settings(select=("TRC1",), extend_select=("TRC204",), exclude=("a",), extend_exclude=("b",), per_file_ignores=(("x", ("TRC1",)),))
    changed = with_cli_overrides(base, ["TRC2"], ["TRC301"], ["TRC201"], exclude=["c"], extend_exclude=["d"], per_file_ignores=["t/*.py:TRC101,TRC2"])
    assert changed.select == ("TRC2",) and changed.extend_select == ("TRC301",)
    assert changed.ignore == ("TRC201",) and changed.exclude == ("c",) and changed.extend_exclude == ("b", "d")
    assert changed.per_file_ignores == (("t/*.py", ("TRC101", "TRC2")),)
    with pytest.raises(ConfigError, match="--ignore: unknown rule code or prefix 'TRC6'"):
        with_cli_overrides(base, ignore=["TRC6"])


def test_trace_lint_toml_is_found_and_wins_in_its_folder(tmp_path):
    from trace_lint.core.config import find_config_file, load_settings

    (tmp_path / "pkg").mkdir()
    write(tmp_path, 'select = ["TRC1"]\n')
    assert find_config_file(tmp_path / "pkg") == (tmp_path / "pyproject.toml").resolve()
    (tmp_path / "trace-lint.toml").write_text('select = ["TRC2"]\n', encoding="utf-8")
    assert load_settings(tmp_path / "pkg").select == ("TRC2",)
    (tmp_path / "trace-lint.toml").write_text('selekt = ["TRC2"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown key `selekt`"):
        load_settings(tmp_path / "pkg")


def test_a_config_file_not_named_pyproject_holds_its_keys_at_the_top_level(tmp_path):
    # `--config ci-pyproject.toml` is read as a trace-lint.toml (as ruff reads a config not
    # named pyproject.toml as ruff.toml): its `[tool.trace-lint]` table is an unknown key
    # `tool`, and the message says why, without claiming the key sat in that table.
    path = tmp_path / "ci-pyproject.toml"
    path.write_text('[tool.trace-lint]\nselect = ["TRC1"]\n', encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        read_config_file(path)
    message = str(raised.value)
    assert "unknown key `tool` (only a file named pyproject.toml is read through [tool.trace-lint]" in message
    assert "in [tool.trace-lint]" not in message
    named = tmp_path / "pyproject.toml"
    named.write_text('[tool.trace-lint]\nselekt = ["TRC1"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unknown key `selekt` in \[tool.trace-lint\]"):
        read_config_file(named)
