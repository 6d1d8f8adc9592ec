"""The command line: formats, exit codes, stdin, statistics, selection, rule docs."""

from __future__ import annotations

import json

from trace_lint import __version__
from trace_lint.rules import ALL_RULES

from .cli_helpers import REPO, run_cli

SOURCE = b"""import ttnn


def capture(device, x):
    x(device)
    tid = ttnn.begin_trace_capture(device)
    try:
        y = ttnn.to_torch(x)
        ttnn.synchronize_device(device)
    finally:
        ttnn.end_trace_capture(device, tid)
    return y
"""


def test_stdin_with_filename_and_json_fields():
    result = run_cli("check", "-", "--stdin-filename", "pkg/model.py", "--output-format", "json", stdin=SOURCE)
    assert result.returncode == 1, result.stderr.decode()
    items = json.loads(result.stdout)
    assert [(i["filename"], i["location"]["row"], i["code"]) for i in items] == [
        ("pkg/model.py", 8, "TRC102"),
        ("pkg/model.py", 9, "TRC103"),
    ]
    first = items[0]
    assert set(first) == {"code", "message", "severity", "filename", "location", "end_location", "noqa_row", "url", "fix", "chains", "related"}
    assert first["location"] == {"row": 8, "column": 13} and first["end_location"] == {"row": 8, "column": 29}
    assert first["noqa_row"] == 8 and first["fix"] is None and first["related"] == []
    assert first["url"].endswith("#trc102")


def test_json_lines_and_concise():
    lines = run_cli("check", "-", "--output-format", "json-lines", stdin=SOURCE).stdout.decode().splitlines()
    assert [json.loads(line)["code"] for line in lines] == ["TRC102", "TRC103"]
    concise = run_cli("check", "-", "--stdin-filename", "m.py", "--output-format", "concise", stdin=SOURCE)
    assert concise.stdout.decode().splitlines()[0].startswith("m.py:8:13: TRC102 ")


def test_exit_codes_select_ignore_and_exit_zero(tmp_path):
    clean = run_cli("check", "-", "--select", "TRC2", stdin=SOURCE)
    assert clean.returncode == 0 and "All checks passed!" in clean.stdout.decode()
    assert run_cli("check", "-", "--ignore", "TRC1", stdin=SOURCE).returncode == 0
    assert run_cli("check", "-", "--exit-zero", stdin=SOURCE).returncode == 0
    both = run_cli("check", "-", "--select", "TRC102,TRC103", "--output-format", "json", stdin=SOURCE)
    assert [i["code"] for i in json.loads(both.stdout)] == ["TRC102", "TRC103"]


def test_statistics():
    result = run_cli("check", "examples", "--statistics", cwd=REPO)
    rows = [line.split("\t") for line in result.stdout.decode().splitlines()]
    assert ["1", "TRC102", "device-to-host-in-capture"] in [[c.strip() for c in row] for row in rows]
    assert result.returncode == 1


def test_quiet_drops_the_summary():
    result = run_cli("check", "-", "--output-format", "concise", "--quiet", stdin=SOURCE)
    assert "Found" not in result.stdout.decode() and result.stdout.decode().count("TRC10") == 2


def test_rule_docs_and_version():
    docs = run_cli("rule", "TRC404").stdout.decode()
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
        assert heading in docs
    every = run_cli("rule", "--all").stdout.decode()
    assert all(f"({rule.code})" in every for rule in ALL_RULES)
    unknown = run_cli("rule", "TRC999")
    assert unknown.returncode == 2 and "unknown rule code" in unknown.stderr.decode()
    assert run_cli("--version").stdout.decode().strip() == f"trace-lint {__version__}"


def test_force_exclude_applies_to_named_files(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.trace-lint]\nexclude = ["generated_*.py"]\n')
    (tmp_path / "generated_model.py").write_bytes(SOURCE)
    named = str(tmp_path / "generated_model.py")
    assert run_cli("check", named).returncode == 1
    assert run_cli("check", named, "--force-exclude").returncode == 0
    assert run_cli("check", str(tmp_path)).returncode == 0


def test_gitignore_is_respected(tmp_path):
    (tmp_path / ".gitignore").write_text("build_out/\n")
    (tmp_path / "build_out").mkdir()
    (tmp_path / "build_out" / "model.py").write_bytes(SOURCE)
    assert run_cli("check", str(tmp_path)).returncode == 0
    (tmp_path / "model.py").write_bytes(SOURCE)
    assert run_cli("check", str(tmp_path)).returncode == 1
