"""Bad input gets a clear message naming the file, and the rest is still checked."""

from __future__ import annotations

import json
import os
from pathlib import Path

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


def _codes(stdout: bytes) -> set[tuple[str, int, str]]:
    return {(Path(i["filename"]).name, i["location"]["row"], i["code"]) for i in json.loads(stdout)}


def test_syntax_error_is_trc001_and_other_files_are_checked(tmp_path):
    (tmp_path / "good.py").write_text(CAPTURE)
    (tmp_path / "bad.py").write_text("import ttnn\nttnn.begin_trace_capture(d)\nif x\n    pass\n")
    result = run_cli("check", str(tmp_path), "--output-format", "json")
    assert result.returncode == 1
    assert _codes(result.stdout) == {("bad.py", 3, "TRC001"), ("good.py", 7, "TRC102")}
    assert b"Traceback" not in result.stderr


def test_undecodable_bytes_and_nul_byte(tmp_path):
    # In a string: CPython refuses it (in a comment it would not: see test_syntax_limits).
    (tmp_path / "latin.py").write_bytes(b"import ttnn\nx = 'caf\xe9'\nttnn.begin_trace_capture(d)\n")
    (tmp_path / "nul.py").write_bytes(b"import ttnn\nx = 1\x00\nttnn.begin_trace_capture(d)\n")
    (tmp_path / "good.py").write_text(CAPTURE)
    result = run_cli("check", str(tmp_path), "--output-format", "json")
    items = json.loads(result.stdout)
    by_file = {(Path(i["filename"]).name, i["code"]): i for i in items}
    assert by_file[("latin.py", "TRC001")]["location"]["row"] == 2
    assert "cannot decode as utf-8" in by_file[("latin.py", "TRC001")]["message"]
    assert by_file[("nul.py", "TRC001")]["location"] == {"row": 2, "column": 6}
    assert "NUL byte" in by_file[("nul.py", "TRC001")]["message"]
    assert ("good.py", "TRC102") in by_file
    assert b"Traceback" not in result.stderr


def test_encoding_cookie_is_honoured(tmp_path):
    source = "# -*- coding: latin-1 -*-\n" + CAPTURE.replace("import ttnn", "import ttnn  # café")
    (tmp_path / "cookie.py").write_bytes(source.encode("latin-1"))
    result = run_cli("check", str(tmp_path), "--output-format", "json")
    assert _codes(result.stdout) == {("cookie.py", 8, "TRC102")}


def test_missing_path_is_named_and_the_rest_checked(tmp_path):
    (tmp_path / "good.py").write_text(CAPTURE)
    missing = tmp_path / "nope.py"
    result = run_cli("check", str(missing), str(tmp_path / "good.py"), "--output-format", "json")
    assert result.returncode == 2
    assert f"{missing}: no such file or directory" in result.stderr.decode()
    assert _codes(result.stdout) == {("good.py", 7, "TRC102")}


def test_unreadable_file_is_named(tmp_path, monkeypatch):
    good, locked = tmp_path / "good.py", tmp_path / "locked.py"
    good.write_text(CAPTURE)
    locked.write_text(CAPTURE)
    real_read = Path.read_bytes

    def read_bytes(self):
        if self.name == "locked.py":
            raise PermissionError(13, "Permission denied")
        return real_read(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    result = check([tmp_path], Settings(root=tmp_path))
    assert any("locked.py: permission denied" in e for e in result.errors)
    assert [(Path(f.filename).name, f.code) for f in result.findings] == [("good.py", "TRC102")]


def test_symlink_loop_terminates_with_a_message(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "good.py").write_text(CAPTURE)
    os.symlink(tmp_path, tmp_path / "pkg" / "loop")
    os.symlink(tmp_path / "self_link.py", tmp_path / "self_link.py")
    result = run_cli("check", str(tmp_path), "--output-format", "json", timeout=60)
    assert "symbolic link loop" in result.stderr.decode()
    assert _codes(result.stdout) == {("good.py", 7, "TRC102")}
    assert b"Traceback" not in result.stderr


def test_empty_file_is_clean(tmp_path):
    (tmp_path / "empty.py").write_text("")
    result = run_cli("check", str(tmp_path / "empty.py"), "--output-format", "json")
    assert result.returncode == 0 and json.loads(result.stdout) == []


def test_hundred_thousand_line_file(tmp_path):
    body = "".join(f"    y{i} = ttnn.relu(x)\n" for i in range(100_000))
    source = "import ttnn\n\ndef capture(device, x):\n    x(device)\n    tid = ttnn.begin_trace_capture(device)\n    try:\n" + body.replace("    y", "        y") + "        print(ttnn.to_torch(x))\n    finally:\n        ttnn.end_trace_capture(device, tid)\n"
    (tmp_path / "huge.py").write_text(source)
    result = run_cli("check", str(tmp_path), "--output-format", "json", timeout=600)
    assert result.returncode == 1, result.stderr.decode()
    assert _codes(result.stdout) == {("huge.py", 100_007, "TRC102")}


def test_deeply_nested_expression_does_not_crash(tmp_path):
    deep = "(" * 150 + "x" + ")" * 150
    chain = " + ".join(["x"] * 5000)
    (tmp_path / "deep.py").write_text(f"import ttnn\n\ndef f(d, x):\n    tid = ttnn.begin_trace_capture(d)\n    y = {deep}\n    z = {chain}\n    ttnn.end_trace_capture(d, tid)\n")
    (tmp_path / "good.py").write_text(CAPTURE)
    result = run_cli("check", str(tmp_path), "--output-format", "json")
    assert b"Traceback" not in result.stderr, result.stderr.decode()[-2000:]
    assert ("good.py", 7, "TRC102") in _codes(result.stdout)


def test_checked_code_is_never_imported_or_run(tmp_path):
    marker = tmp_path / "ran"
    (tmp_path / "evil.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\nimport ttnn\nttnn.begin_trace_capture(None)\n"
    )
    (tmp_path / "__init__.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n")
    run_cli("check", str(tmp_path))
    assert not marker.exists()


def test_bad_config_names_the_key_and_exits_2(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.trace-lint]\nselect = ["TRC1"]\nbogus-key = 1\n')
    (tmp_path / "good.py").write_text(CAPTURE)
    result = run_cli("check", str(tmp_path))
    assert result.returncode == 2
    assert "unknown key `bogus-key`" in result.stderr.decode()
    assert str(tmp_path / "pyproject.toml") in result.stderr.decode()


def test_bad_config_values(tmp_path):
    cases = {
        'select = "TRC1"': "`select` must be a list of strings",
        'ignore = ["E501"]': "`ignore` has an invalid entry 'E501'",
        'per-file-ignores = ["x"]': "`per-file-ignores` must be a table",
        'captured-functions = ["not a name"]': "`captured-functions` has an invalid entry",
        "cache-dir = 3": "`cache-dir` must be a non-empty string",
        "select = [": "invalid TOML",
    }
    for line, message in cases.items():
        (tmp_path / "pyproject.toml").write_text(f"[tool.trace-lint]\n{line}\n")
        result = run_cli("check", str(tmp_path))
        assert result.returncode == 2, line
        assert message in result.stderr.decode(), (line, result.stderr.decode())


def test_bad_cli_selector_and_format(tmp_path):
    (tmp_path / "good.py").write_text(CAPTURE)
    result = run_cli("check", str(tmp_path), "--select", "X1")
    assert result.returncode == 2 and "--select: invalid rule selector 'X1'" in result.stderr.decode()
    result = run_cli("check", str(tmp_path), "--output-format", "yaml")
    assert result.returncode == 2 and "unknown format 'yaml'" in result.stderr.decode()
