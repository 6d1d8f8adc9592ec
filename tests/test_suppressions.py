"""Suppression comments and TRC002, through the real engine."""

from __future__ import annotations

from .conftest import findings_for

HEAD = """import ttnn


def capture(device, x):
    x(device)
    tid = ttnn.begin_trace_capture(device)
    try:
"""
TAIL = """    finally:
        ttnn.end_trace_capture(device, tid)
"""


def _rows(findings):
    return sorted((f.location.row, f.code) for f in findings)


def test_noqa_on_def_line_does_not_silence_the_body(tmp_path):
    source = """import ttnn


def step(x):  # noqa: TRC102
    return ttnn.to_torch(x)


def capture(device, x):
    step(x)
    tid = ttnn.begin_trace_capture(device)
    try:
        step(x)
    finally:
        ttnn.end_trace_capture(device, tid)
"""
    findings = findings_for(source, tmp_path)
    assert _rows(findings) == [(4, "TRC002"), (5, "TRC102")]
    assert [f.noqa_row for f in findings if f.code == "TRC102"] == [5]


def test_multiline_statement_noqa_on_first_line(tmp_path):
    source = HEAD + "        y = ttnn.add(  # noqa: TRC102\n            ttnn.to_torch(x),\n            x,\n        )\n" + TAIL
    assert _rows(findings_for(source, tmp_path)) == []


def test_code_list_ends_at_first_non_code(tmp_path):
    source = HEAD + "        y = ttnn.to_torch(x)  # noqa: TRC101  because TRC102 is on purpose\n" + TAIL
    assert _rows(findings_for(source, tmp_path)) == [(8, "TRC002"), (8, "TRC102")]


def test_ignore_prefix_and_disable_range(tmp_path):
    source = HEAD + (
        "        a = ttnn.to_torch(x)  # trace-lint: ignore[TRC1]\n"
        "        # trace-lint: disable[TRC10]\n"
        "        b = ttnn.to_torch(x)\n"
        "        ttnn.synchronize_device(device)\n"
        "        # trace-lint: enable[TRC10]\n"
        "        c = ttnn.to_torch(x)\n"
    ) + TAIL
    assert _rows(findings_for(source, tmp_path)) == [(13, "TRC102")]


def test_file_level_noqa_before_first_statement(tmp_path):
    source = "# trace-lint: noqa\n" + HEAD + "        y = ttnn.to_torch(x)\n" + TAIL
    assert findings_for(source, tmp_path) == []
    late = HEAD + "        y = ttnn.to_torch(x)\n" + TAIL + "# trace-lint: noqa\n"
    # Too late to apply: the finding stays, and the directive is reported as doing nothing.
    assert _rows(findings_for(late, tmp_path)) == [(8, "TRC102"), (11, "TRC002")]


def test_unused_disable_and_unknown_codes(tmp_path):
    source = HEAD + "        # trace-lint: disable[TRC3]\n        y = ttnn.relu(x)  # trace-lint: ignore[TRC777]\n" + TAIL
    findings = findings_for(source, tmp_path)
    assert _rows(findings) == [(8, "TRC002"), (9, "TRC002")]
    assert "unknown code `TRC777`" in [f.message for f in findings if f.location.row == 9][0]


def test_suppression_of_unselected_rule_is_not_reported(tmp_path):
    source = HEAD + "        y = ttnn.to_torch(x)  # noqa: TRC102\n" + TAIL
    assert _rows(findings_for(source, tmp_path, select=("TRC0", "TRC2"))) == []


def test_file_level_noqa_with_codes_silences_only_those_codes(tmp_path):
    body = "        y = ttnn.to_torch(x)\n        ttnn.synchronize_device(device)\n"
    both = _rows(findings_for(HEAD + body + TAIL, tmp_path))
    assert both == [(8, "TRC102"), (9, "TRC103")]
    # The directive is one line longer than HEAD's, so rows move down by one.
    only = "# trace-lint: noqa: TRC102\n" + HEAD + body + TAIL
    assert _rows(findings_for(only, tmp_path)) == [(10, "TRC103")]
    bracketed = "# trace-lint: noqa[TRC103]\n" + HEAD + body + TAIL
    assert _rows(findings_for(bracketed, tmp_path)) == [(9, "TRC102")]
    listed = "# trace-lint: noqa: TRC102, TRC103  # generated file\n" + HEAD + body + TAIL
    assert _rows(findings_for(listed, tmp_path)) == []
    prefix = "# trace-lint: noqa: TRC1\n" + HEAD + body + TAIL
    assert _rows(findings_for(prefix, tmp_path)) == []


def test_file_level_noqa_with_codes_that_suppress_nothing_is_trc002(tmp_path):
    source = "# trace-lint: noqa: TRC101, TRC999\n" + HEAD + "        y = ttnn.relu(x)\n" + TAIL
    findings = findings_for(source, tmp_path)
    assert _rows(findings) == [(1, "TRC002")]
    assert "unknown code `TRC999`" in findings[0].message and "unused suppression of `TRC101`" in findings[0].message


# -- suppressions that silently did nothing, through the real CLI ---------------------------
def _cli_rows(tmp_path, source: str) -> list[tuple[int, str, str]]:
    import json
    import subprocess

    from .cli_helpers import run_cli

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a.py").write_text(source, encoding="utf-8")
    result = run_cli("check", "--no-cache", "--output-format", "json", "a.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr.decode()
    return sorted((f["location"]["row"], f["code"], f["message"]) for f in json.loads(result.stdout))


def test_misspelt_codes_are_reported(tmp_path):
    source = HEAD + (
        "        a = ttnn.to_torch(x)  # noqa: trc102\n"
        "        b = ttnn.to_torch(x)  # noqa: TRC1O2\n"
        "        c = ttnn.to_torch(x)  # trace-lint: ignore[trc102]\n"
        "        d = ttnn.to_torch(x)  # noqa: TRC102  # why: trc102 in prose is fine\n"
    ) + TAIL
    rows = _cli_rows(tmp_path, source)
    assert [(row, code) for row, code, _ in rows] == [(8, "TRC002"), (8, "TRC102"), (9, "TRC002"), (9, "TRC102"), (10, "TRC002"), (10, "TRC102")]
    messages = {row: message for row, code, message in rows if code == "TRC002"}
    assert "`trc102` is not a code (codes are upper case: `TRC102`)" in messages[8]
    assert "`TRC1O2` is not a code (a letter where a digit belongs: `TRC102`?)" in messages[9]
    assert "`# trace-lint: ignore[...]`" in messages[10]


def test_file_level_noqa_where_it_has_no_effect_is_reported(tmp_path):
    inside = HEAD + "        # trace-lint: noqa\n        y = ttnn.to_torch(x)\n" + TAIL
    rows = _cli_rows(tmp_path, inside)
    assert [(row, code) for row, code, _ in rows] == [(8, "TRC002"), (9, "TRC102")]
    assert "file-level `# trace-lint: noqa` after the first statement has no effect" in rows[0][2]
    last = HEAD + "        y = ttnn.to_torch(x)\n" + TAIL + "# trace-lint: noqa"
    assert [(row, code) for row, code, _ in _cli_rows(tmp_path, last)] == [(8, "TRC102"), (11, "TRC002")]
