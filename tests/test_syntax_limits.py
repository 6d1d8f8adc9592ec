"""Hostile and unlucky input: what CPython refuses is TRC001 before any parser that can crash
sees it; what CPython accepts is never TRC001, never an internal error, never slow."""

from __future__ import annotations

import ast
import json
import time
from pathlib import Path

import pytest

from trace_lint.frontend import syntax_limits
from trace_lint.semantic.project import ModuleInfo, Project
from trace_lint.driver.checker import check
from trace_lint.core.config import Settings

from .cli_helpers import run_cli

CAPTURE = """import ttnn

def capture(device, x):
    x(device)
    tid = ttnn.begin_trace_capture(device)
    try:
        y = ttnn.to_torch(x)
    finally:
        ttnn.end_trace_capture(device, tid)
    return y
"""
GOOD = ("good.py", 7, "TRC102")


def _captured_function(statement: str) -> str:
    """A capture whose region holds `statement` (indented 8) and a host read on line 8."""
    return (
        "import ttnn\n\ndef capture(device, x, y):\n    x(device)\n    tid = ttnn.begin_trace_capture(device)\n    try:\n"
        + statement
        + "        z = ttnn.to_torch(x)\n    finally:\n        ttnn.end_trace_capture(device, tid)\n"
    )


def _findings(tmp_path: Path, files: dict[str, str | bytes], *args: str, timeout: float = 120):
    for name, text in files.items():
        data = text.encode() if isinstance(text, str) else text
        (tmp_path / name).write_bytes(data)
    started = time.perf_counter()
    result = run_cli("check", str(tmp_path), "--output-format", "json", "--no-cache", *args, timeout=timeout)
    elapsed = time.perf_counter() - started
    stderr = result.stderr.decode(errors="replace")
    assert result.returncode in (0, 1), stderr[-3000:]
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr[-3000:]
    items = json.loads(result.stdout)
    return {(Path(i["filename"]).name, i["location"]["row"], i["code"]): i["message"] for i in items}, elapsed


def _compiles(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, MemoryError):
        return False
    except RecursionError:
        return True  # the parser accepted it; building the tree ran out of recursion
    return True


def test_what_cpython_refuses_is_trc001_with_the_measure_and_nothing_crashes(tmp_path):
    # Each opens a capture: files that can hold captured code are the ones TRC001 covers.
    head = "import ttnn\ntid = ttnn.begin_trace_capture(d)\n"
    files = {
        "parens.py": head + "x = " + "(" * 1312 + "1" + ")" * 1312 + "\n",
        "lists.py": head + "x = " + "[" * 5000 + "]" * 5000 + "\n",
        "indent.py": head + "".join("    " * i + "if x:\n" for i in range(120)) + "    " * 120 + "pass\n",
        "nots.py": head + "x = " + "not " * 20_000 + "y\n",
        "good.py": CAPTURE,
    }
    found, _ = _findings(tmp_path, files)
    assert found[("parens.py", 3, "TRC001")] == "too deeply nested: 1,312 levels of brackets; Python's parser stops at 200"
    assert "too deeply nested: 5,000 levels" in found[("lists.py", 3, "TRC001")]
    assert found[("indent.py", 103, "TRC001")] == "too deeply indented: 100 levels; Python's parser stops at 99"
    assert "too complex for Python's parser" in found[("nots.py", 1, "TRC001")]
    assert GOOD in found


def test_long_chains_and_deep_expressions_in_captured_code_are_analysed(tmp_path):
    """About 500 levels inside a function holding a capture: no internal error, the rest of
    the function still checked, and nothing called unparsable."""
    statements = {
        "sums.py": "        w = " + " + ".join(["y"] * 480) + "\n",
        "strings.py": "        w = " + " ".join(["'a'"] * 500) + "\n",
        "attrs.py": "        w = y" + ".a" * 500 + "\n",
        "calls.py": "        w = y" + "()" * 500 + "\n",
        "subscripts.py": "        w = y" + "[0]" * 500 + "\n",
        "elifs.py": "        if y == -1:\n            pass\n" + "".join(f"        elif y == {i}:\n            pass\n" for i in range(500)),
    }
    files = {name: _captured_function(statement) for name, statement in statements.items()}
    found, _ = _findings(tmp_path, files)
    for name, text in files.items():
        assert _compiles(text)
        row = text.count("\n") - 2  # `z = ttnn.to_torch(x)`
        assert (name, row, "TRC102") in found, (name, sorted(found))
        assert not any(key[0] == name and key[2] == "TRC001" for key in found), name


def test_huge_elif_chain_and_operator_chain_do_not_crash_the_run(tmp_path):
    files = {
        "elif10k.py": "import ttnn\ntid = ttnn.begin_trace_capture(d)\nif x:\n    pass\n" + "".join(f"elif x == {i}:\n    pass\n" for i in range(10_000)),
        "sum20k.py": "import ttnn\ntid = ttnn.begin_trace_capture(d)\nx = " + " + ".join(["x"] * 20_000) + "\n",
        "good.py": CAPTURE,
    }
    found, _ = _findings(tmp_path, files, timeout=300)
    assert GOOD in found
    for name in ("elif10k.py", "sum20k.py"):
        refused = not _compiles(files[name])
        assert any(k[0] == name and k[2] == "TRC001" for k in found) is refused, (name, found)


def test_a_hundred_thousand_character_sum_is_fast_and_not_unparsable(tmp_path):
    line = "x = " + " + ".join(["1"] * 25_000) + "\n"
    assert len(line) > 100_000
    found, elapsed = _findings(tmp_path, {"sum.py": "import ttnn\n" + line + CAPTURE.replace("import ttnn\n", "")})
    assert ("sum.py", 8, "TRC102") in found and not any(k[2] == "TRC001" for k in found), found
    assert elapsed < 10, elapsed


def test_thousand_term_sums_in_a_capture_are_not_nested_too_deeply():
    text = _captured_function("        w = " + " + ".join(["y"] * 1000) + "\n        v = " + " * ".join(["y"] * 1000) + "\n")
    module = ModuleInfo(Path("sums.py"), "sums", "sums.py", text=text)
    result = check([Path("sums.py")], Settings(root=Path.cwd()), sources={Path("sums.py"): text})
    assert [(f.code, f.location.row) for f in result.findings] == [("TRC102", 9)], result.findings
    assert module.ok and module.parse_error is None


@pytest.mark.parametrize(
    "indentation",
    ["\f\t", "\t\f\t", "\f    ", "  \f\t"],
)
def test_form_feed_and_tab_indentation_is_valid_code(indentation):
    """CPython resets the column at a form feed in indentation; libcst's tokenizer does not."""
    # The read inside a nested block whose first line is indented with a form feed and tabs.
    text = (
        "import ttnn\n\ndef capture(device, x):\n\tx(device)\n\ttid = ttnn.begin_trace_capture(device)\n\ttry:\n"
        f"\t\tif True:\n{indentation}\t\t\ty = ttnn.to_torch(x)\n\tfinally:\n\t\tttnn.end_trace_capture(device, tid)\n"
    )
    assert _compiles(text)
    result = check([Path("ff.py")], Settings(root=Path.cwd()), sources={Path("ff.py"): text})
    found = [(f.code, f.location.row, f.location.column) for f in result.findings if f.code != "TRC201"]
    column = len(indentation) + 3 + len("y = ") + 1
    assert found == [("TRC102", 8, column)], found


def test_trailing_backslash_continuation_at_the_end_of_a_definition():
    text = "import ttnn\n\ndef helper():\n    return 1\\\n\n" + CAPTURE.replace("import ttnn\n", "")
    assert _compiles(text)
    result = check([Path("bs.py")], Settings(root=Path.cwd()), sources={Path("bs.py"): text})
    assert [(f.code, f.location.row) for f in result.findings] == [("TRC102", 11)]


def test_line_endings_bom_and_form_feeds_change_no_finding(tmp_path):
    base = CAPTURE.replace("y = ttnn.to_torch(x)", "y = ttnn.to_torch(x)  # noqa: TRC102\n        w = ttnn.to_torch(x)")
    variants = {
        "lf": base,
        "crlf": base.replace("\n", "\r\n"),
        "cr": base.replace("\n", "\r"),
        "bom": "\ufeff" + base,
        "formfeed": base.replace("\n\ndef", "\n\f\ndef"),
        "comments": base.replace("def capture(device, x):", "def capture(device, x):  # why"),
    }
    results = {}
    for name, text in variants.items():
        path = tmp_path / f"{name}.py"
        path.write_bytes(text.encode())
        findings = check([path], Settings(root=tmp_path)).findings
        results[name] = [(f.code, f.location.row, f.location.column, f.noqa_row, f.message) for f in findings]
    assert [found[:4] for found in results["lf"]] == [("TRC102", 8, 13, 8)]
    for name, found in results.items():
        assert found == results["lf"], name


def test_reduced_text_keeps_every_position():
    text = "x = " + " + ".join(["a"] * 300) + "  # noqa\ny = f(\n    " + " * ".join(["b"] * 200) + ",\n    c)\n"
    prepared = syntax_limits.prepare(text)
    assert prepared.reduced and len(prepared.text) == len(text)
    assert [len(line) for line in prepared.text.split("\n")] == [len(line) for line in text.split("\n")]
    assert prepared.text.startswith("x = _ ") and "# noqa" in prepared.text
    assert "f(\n    _ " in prepared.text and "    c)" in prepared.text
    ast.parse(prepared.text)


def test_chains_a_hidden_syntax_error_is_still_reported():
    text = "x = " + " + ".join(["a"] * 300) + " +\n"
    outline = syntax_limits.read(text)
    assert outline.error is not None and outline.error[0].startswith("syntax error")


def test_a_file_name_that_is_not_utf8(tmp_path):
    (tmp_path / "x\udcff.py").write_bytes(CAPTURE.encode())
    (tmp_path / "good.py").write_text(CAPTURE)
    result = run_cli("check", str(tmp_path), "--output-format", "json", "--no-cache")
    assert result.returncode == 1, result.stderr.decode(errors="replace")
    rows = sorted((i["location"]["row"], i["code"]) for i in json.loads(result.stdout))
    assert rows == [(7, "TRC102"), (7, "TRC102")]


def test_project_parse_error_message_for_deep_nesting_in_the_api():
    module = ModuleInfo(Path("m.py"), "m", "m.py", text="x = " + "[" * 300 + "]" * 300 + "\n")
    Project([module])
    module.load()
    assert module.parse_error == ("too deeply nested: 300 levels of brackets; Python's parser stops at 200", 1, 205)


def _check_with_prefilter(monkeypatch, paths, settings, mode: str):
    monkeypatch.setenv("TRACE_LINT_PREFILTER", mode)
    result = check(paths, settings)
    return [(Path(f.filename).name, f.location.row, f.location.column, f.code, f.message) for f in result.findings], result.errors


def test_prefilter_off_gives_the_same_findings_on_the_fixtures(monkeypatch):
    from trace_lint.core.config import load_settings

    from .cli_helpers import FIXTURES

    compared = 0
    for config in sorted(FIXTURES.glob("*/pyproject.toml")):
        settings = load_settings(config.parent)
        on = _check_with_prefilter(monkeypatch, [config.parent], settings, "on")
        off = _check_with_prefilter(monkeypatch, [config.parent], settings, "off")
        assert on == off, config.parent.name
        compared += len(on[0])
    assert compared > 20


def test_broken_files_are_reported_where_the_run_needs_them_whatever_the_prefilter(tmp_path, monkeypatch):
    """TRC001 covers files that can hold captured code (and named or reached ones); a broken
    file that cannot is left alone with the prefilter on and off alike."""
    capture_line = "import ttnn\nttnn.begin_trace_capture(d)\n"
    (tmp_path / "good.py").write_text(CAPTURE)
    (tmp_path / "nul_plain.py").write_bytes(b"x = 1\x00\n")
    (tmp_path / "latin_plain.py").write_bytes(b"# caf\xe9\nx = 1\n")
    (tmp_path / "syntax_plain.py").write_text("def f(:\n")
    (tmp_path / "deep_plain.py").write_text("x = " + "(" * 1400 + ")" * 1400 + "\n")
    (tmp_path / "nul_capture.py").write_bytes(capture_line.encode() + b"x = 1\x00\n")
    (tmp_path / "syntax_capture.py").write_text(capture_line + "def f(:\n")
    (tmp_path / "deep_capture.py").write_text(capture_line + "x = " + "(" * 1400 + ")" * 1400 + "\n")
    settings = Settings(root=tmp_path)
    on = _check_with_prefilter(monkeypatch, [tmp_path], settings, "on")
    off = _check_with_prefilter(monkeypatch, [tmp_path], settings, "off")
    assert on == off
    unparsable = {name for name, _, _, code, _ in on[0] if code == "TRC001"}
    assert unparsable == {"nul_capture.py", "syntax_capture.py", "deep_capture.py"}
    assert ("good.py", 7, 13, "TRC102") in {item[:4] for item in on[0]}
    # Named on the command line, a broken file is needed: reported either way.
    for mode in ("on", "off"):
        named = _check_with_prefilter(monkeypatch, [tmp_path / "nul_plain.py"], settings, mode)
        assert [(name, code) for name, _, _, code, _ in named[0]] == [("nul_plain.py", "TRC001")]


def test_recursion_room_is_counted_across_nested_and_overlapping_users():
    import sys
    import threading

    before = sys.getrecursionlimit()
    entered, release = threading.Event(), threading.Event()

    def other_analysis():
        with syntax_limits.recursion_room():
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=other_analysis)
    with syntax_limits.recursion_room():
        thread.start()
        entered.wait(10)
    # This analysis ended while the other still runs: its room stays.
    assert sys.getrecursionlimit() >= syntax_limits.ANALYSIS_RECURSION
    release.set()
    thread.join(10)
    assert sys.getrecursionlimit() == before


def test_bad_bytes_in_a_comment_are_valid_code_as_for_cpython(tmp_path):
    """CPython 3.10 to 3.13 never decode comments; bytes that do not decode there are not
    TRC001. In code they are."""
    capture = CAPTURE.encode()
    files = {
        "comment_first_line.py": capture.replace(b"import ttnn\n", b"import ttnn  # caf\xc3\n", 1),
        "comment_later.py": capture.replace(b"    return y\n", b"    return y  # \xff\xfe\n"),
        "in_a_string.py": capture.replace(b"    return y\n", b"    return 'caf\xe9'\n"),
    }
    found, _ = _findings(tmp_path, files)
    assert ("comment_first_line.py", 7, "TRC102") in found and ("comment_later.py", 7, "TRC102") in found
    assert not any(key[2] == "TRC001" and key[0].startswith("comment") for key in found), found
    assert "cannot decode as utf-8" in found[("in_a_string.py", 10, "TRC001")]
