"""Text may decide what is parsed, never what is found: comments and strings naming every API
in the tables change no finding."""

from __future__ import annotations

import io
import json
import re
import shutil
import textwrap
import tokenize
from pathlib import Path

import pytest

from .cli_helpers import FIXTURES, REPO, run_cli

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

DOTTED = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)+$")


def _api_names() -> list[str]:
    names: set[str] = set()

    def collect(value) -> None:
        if isinstance(value, str) and DOTTED.match(value):
            names.add(value)
        elif isinstance(value, list):
            for item in value:
                collect(item)
        elif isinstance(value, dict):
            for item in value.values():
                collect(item)

    collect(tomllib.loads((REPO / "trace_lint" / "data" / "api.toml").read_text(encoding="utf-8")))
    return sorted(names)


def decorate(text: str, names: list[str]) -> str:
    """A comment naming every API at the end of each logical line that has none, and a string
    statement naming them all at the end of the module; no line moves."""
    mention = " ".join(names)
    lines = text.splitlines(keepends=True)
    ends: set[int] = set()
    commented: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.NEWLINE:
                ends.add(token.start[0])
            elif token.type == tokenize.COMMENT:
                commented.add(token.start[0])
    except (tokenize.TokenError, SyntaxError):
        return text
    out = []
    for number, line in enumerate(lines, start=1):
        if number in ends and number not in commented:
            body = line.rstrip("\r\n")
            line = f"{body}  # {mention}{line[len(body):]}"
        out.append(line)
    tail = "" if text.endswith("\n") or not text else "\n"
    return "".join(out) + tail + f'\n"""{mention}"""\n'


def _findings(root: Path) -> set[tuple]:
    result = run_cli("check", ".", "--no-cache", "--output-format", "json", cwd=root)
    assert result.returncode in (0, 1), result.stderr.decode()
    return {(f["filename"], f["location"]["row"], f["location"]["column"], f["code"]) for f in json.loads(result.stdout)}


PROJECTS = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir() and any(p.rglob("*.py")))


@pytest.mark.parametrize("name", [*PROJECTS, "examples"])
def test_comments_and_strings_naming_every_api_change_no_finding(name, tmp_path):
    source = REPO / "examples" if name == "examples" else FIXTURES / name
    plain = tmp_path / "plain"
    decorated = tmp_path / "decorated"
    shutil.copytree(source, plain)
    shutil.copytree(source, decorated)
    names = _api_names()
    for path in decorated.rglob("*.py"):
        path.write_text(decorate(path.read_text(encoding="utf-8"), names), encoding="utf-8")
    expected = _findings(plain)
    # TRC002 is about comments: a suppression comment stays used or unused as it was.
    assert _findings(decorated) == expected


def test_decorating_keeps_lines_and_parses():
    text = "def f(x):\n    return (x +\n            1)  # kept\n"
    out = decorate(text, ["ttnn.to_torch"])
    compile(out, "m.py", "exec")
    assert out.splitlines()[:3] == ["def f(x):  # ttnn.to_torch", "    return (x +", "            1)  # kept"]


def _check(tmp_path: Path, source: str) -> set[tuple]:
    (tmp_path / "pyproject.toml").write_text("[tool.trace-lint]\n")
    (tmp_path / "m.py").write_text(textwrap.dedent(source))
    return {(f[0], f[1], f[3]) for f in _findings(tmp_path)}


def test_a_comment_naming_the_default_device_setter_keeps_a_host_creation(tmp_path):
    found = _check(
        tmp_path,
        """\
        import torch

        # torch.set_default_device("cuda") is what we would call, but we do not.


        def step(static_x):
            return static_x + torch.zeros(4)


        def capture(static_x):
            step(static_x)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                out = step(static_x)
            return g, out
        """,
    )
    assert ("m.py", 7, "TRC301") in found


def test_a_returned_name_that_contains_the_trace_id_is_not_the_trace_id(tmp_path):
    found = _check(
        tmp_path,
        """\
        import ttnn


        def run(device, x, tid_list):
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            try:
                out = ttnn.relu(x)
            finally:
                ttnn.end_trace_capture(device, tid, cq_id=0)
            ttnn.execute_trace(device, tid, cq_id=0)
            result = ttnn.to_torch(out)
            ttnn.deallocate(out)
            return result, tid_list
        """,
    )
    # Freed after the last replay, and the trace id never leaves the function: no TRC302.
    assert not {f for f in found if f[2] == "TRC302"}
