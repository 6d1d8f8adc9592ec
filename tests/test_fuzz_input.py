"""Fuzzing the input side: generated programs (hypothesmith), mutations of the fixture
projects, pathological sizes, prefilter on vs off, and edits that change nothing.

Small in CI. The large run is behind the `slow` marker, sized by environment variables:

    TRACE_LINT_FUZZ_LARGE=1 pytest tests/test_fuzz_input.py -m slow -s        # 10,000 / 5,000
    TRACE_LINT_FUZZ_EXAMPLES=500 TRACE_LINT_FUZZ_MUTANTS=300 pytest ... -m slow -s  # other sizes

Each test prints a summary: runs, crashes (an exception out of the checker), hangs (a file
set taking over `HANG_SECONDS` of CPU time), internal errors (errors that are not a finding), TRC001 on
code CPython parses, prefilter on/off differences and no-op edit differences. It fails if
any of them is not 0.
"""

from __future__ import annotations

import ast
import os
import random
import shutil
import textwrap
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings

from trace_lint.driver.checker import check
from trace_lint.core.config import Settings, load_settings

from .cli_helpers import FIXTURES, run_cli

pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")

HANG_SECONDS = 10.0
# The large runs take hours: only when asked for (`-m slow` alone would not size them).
large = pytest.mark.skipif(
    not any(os.environ.get(name) for name in ("TRACE_LINT_FUZZ_LARGE", "TRACE_LINT_FUZZ_EXAMPLES", "TRACE_LINT_FUZZ_MUTANTS")),
    reason="set TRACE_LINT_FUZZ_LARGE=1 (or the sizes) to run the large fuzz",
)
SMALL_EXAMPLES = 8
SMALL_MUTANTS = 24


def _size(variable: str, small: int, slow: bool) -> int:
    value = os.environ.get(variable)
    if value:
        return int(value)
    return {"TRACE_LINT_FUZZ_EXAMPLES": 10_000, "TRACE_LINT_FUZZ_MUTANTS": 5_000}[variable] if slow else small


@dataclass
class Tally:
    name: str
    counts: Counter = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def bad(self, kind: str, example: str) -> None:
        self.counts[kind] += 1
        self.examples.setdefault(kind, example[:300])

    def report(self, capsys) -> None:
        kinds = ("crashes", "hangs", "internal errors", "TRC001 on valid code", "prefilter differences", "no-op differences")
        line = f"fuzz {self.name}: {self.counts['runs']} runs, " + ", ".join(f"{self.counts[k]} {k}" for k in kinds)
        with capsys.disabled():
            print("\n" + line)
            for kind, example in self.examples.items():
                print(f"  first of {kind}: {example!r}")
        assert not any(self.counts[k] for k in kinds), line


def _parses(text: str | bytes) -> bool:
    """Whether CPython's parser accepts the source (a RecursionError while building the
    tree is this interpreter's recursion limit, not the parser's refusal)."""
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, UnicodeDecodeError):
        return False
    except RecursionError:
        return True
    return True


def _dump(findings) -> list:
    return [(f.filename, f.location.row, f.location.column, f.code, f.message, f.noqa_row) for f in findings]


def _run(paths, settings, sources=None, prefilter: bool = True):
    previous = os.environ.get("TRACE_LINT_PREFILTER")
    os.environ["TRACE_LINT_PREFILTER"] = "on" if prefilter else "off"
    try:
        # CPU time of this process: other processes on a shared machine do not count.
        started = time.process_time()
        result = check(paths, settings, sources=sources)
        return result, time.process_time() - started
    finally:
        if previous is None:
            del os.environ["TRACE_LINT_PREFILTER"]
        else:
            os.environ["TRACE_LINT_PREFILTER"] = previous


def _judge(tally: Tally, label: str, paths, settings, texts: dict[str, str | bytes], sources=None, both: bool = True):
    """One check of a file set, prefilter on (and off); tallies what went wrong."""
    tally.counts["runs"] += 1
    try:
        result, elapsed = _run(paths, settings, sources)
        off = _run(paths, settings, sources, prefilter=False)[0] if both else None
    except Exception as error:  # noqa: BLE001 - a crash is what is counted
        tally.bad("crashes", f"{label}: {type(error).__name__}: {error}")
        return None
    if elapsed > HANG_SECONDS:
        tally.bad("hangs", f"{label}: {elapsed:.1f}s")
    internal = [e for e in result.errors if "cannot read" not in e and "no such file" not in e]
    if internal:
        tally.bad("internal errors", f"{label}: {internal[0]}")
    for finding in result.findings:
        if finding.code == "TRC001":
            text = texts.get(Path(finding.filename).name)
            if text is not None and _parses(text):
                tally.bad("TRC001 on valid code", f"{label}: {finding.filename}:{finding.location.row}: {finding.message}")
    if off is not None and _dump(off.findings) != _dump(result.findings):
        only_on = set(_dump(result.findings)) - set(_dump(off.findings))
        only_off = set(_dump(off.findings)) - set(_dump(result.findings))
        tally.bad("prefilter differences", f"{label}: on only {sorted(only_on)[:2]}, off only {sorted(only_off)[:2]}")
    return result


# -- generated programs ------------------------------------------------------------------------

def _in_region(source: str) -> str:
    body = textwrap.indent(source, "        ")
    return (
        "import ttnn\n\ndef captured(device, model, x):\n    tid = ttnn.begin_trace_capture(device, cq_id=0)\n"
        "    try:\n" + body + "\n        pass\n    finally:\n        ttnn.end_trace_capture(device, tid, cq_id=0)\n"
        "    ttnn.execute_trace(device, tid)\n"
    )


def _as_callee(source: str) -> str:
    body = textwrap.indent(source, "    ")
    return (
        "import ttnn\n\ndef callee(device, x):\n" + body + "\n    pass\n\n"
        "def captured(device, x):\n    callee(device, x)\n    tid = ttnn.begin_trace_capture(device, cq_id=0)\n"
        "    try:\n        callee(device, x)\n    finally:\n        ttnn.end_trace_capture(device, tid, cq_id=0)\n"
    )


def _generated(tally: Tally, source: str, tmp_path: Path) -> None:
    everything = Settings(select=("ALL",), root=tmp_path)
    for label, text in (("as is", source), ("in a region", _in_region(source)), ("as a callee", _as_callee(source))):
        if label != "as is" and not _parses(text):
            continue  # `return` outside a function and the like: not valid once placed there
        path = tmp_path / "generated.py"
        _judge(tally, f"{label}: {source[:200]}", [path], everything, {"generated.py": text}, sources={path: text})


def _generated_suite(slow: bool, strategy, name: str, tmp_path_factory, capsys) -> None:
    tally = Tally(name)
    examples = _size("TRACE_LINT_FUZZ_EXAMPLES", SMALL_EXAMPLES, slow)

    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(source=strategy)
    def run(source):
        _generated(tally, source, tmp_path_factory.mktemp("gen"))

    run()
    tally.report(capsys)


def test_generated_programs(tmp_path_factory, capsys):
    _generated_suite(False, hypothesmith.from_grammar(), "generated programs", tmp_path_factory, capsys)


@pytest.mark.slow
@large
def test_generated_programs_large(tmp_path_factory, capsys):
    _generated_suite(True, hypothesmith.from_grammar(), "generated programs (large)", tmp_path_factory, capsys)


def test_generated_programs_through_the_cli(tmp_path):
    """A batch of generated programs, each as is and in a region, in one CLI run."""
    tally = Tally("generated programs, CLI")
    sources: list[str] = []

    @settings(max_examples=SMALL_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(source=hypothesmith.from_grammar())
    def collect(source):
        sources.append(source)

    collect()
    texts = {}
    for index, source in enumerate(sources):
        texts[f"plain_{index}.py"] = source
        texts[f"region_{index}.py"] = _in_region(source)
    for name, text in texts.items():
        (tmp_path / name).write_text(text, encoding="utf-8", newline="")
    tally.counts["runs"] += 1
    result = run_cli("check", str(tmp_path), "--output-format", "json-lines", "--no-cache", "--select", "ALL", timeout=300)
    stderr = result.stderr.decode(errors="replace")
    if result.returncode not in (0, 1) or "Traceback" in stderr:
        tally.bad("crashes", stderr[-300:])
    import json

    for line in result.stdout.decode().splitlines():
        item = json.loads(line)
        name = Path(item["filename"]).name
        if item["code"] == "TRC001" and _parses(texts[name]):
            tally.bad("TRC001 on valid code", f"{name}: {item['message']}")
    tally.report(_NoCapture())


class _NoCapture:
    """Stands in for capsys where the test has none."""

    def disabled(self):
        from contextlib import nullcontext

        return nullcontext()


# -- mutations of the fixture projects -------------------------------------------------------

_TOKENS = [
    "(", ")", "[", "]", "{", "}", ":", ",", "\\", "'", '"', '"""', "#", "if ", "else", "elif x:", "lambda", "yield",
    "await ", "not ", "ttnn.begin_trace_capture(device)", "ttnn.end_trace_capture(device, tid)", "= ", "return",
    "\t", "    ", "\f", "@", "*", "**", ".", "async ", "def f(:", "class", "try:", "finally:", "with torch.cuda.graph(g):",
]


def _mutate(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    text = data.decode("utf-8")
    lines = text.splitlines(keepends=True) or ["\n"]
    kind = rng.choice([
        "delete", "duplicate", "swap", "token", "indent", "truncate", "bad bytes", "nul", "long line",
        "deep nesting", "crlf", "cr", "bom", "form feeds", "chain", "elif chain",
    ])
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    if kind == "delete":
        del lines[i]
    elif kind == "duplicate":
        lines.insert(i, lines[j])
    elif kind == "swap":
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "token":
        line = lines[i]
        at = rng.randrange(len(line) + 1)
        lines[i] = line[:at] + rng.choice(_TOKENS) + line[at:]
    elif kind == "indent":
        lines[i] = rng.choice(["", " ", "    ", "\t", "        "]) + lines[i].lstrip(" \t") if rng.random() < 0.5 else "    " + lines[i]
    elif kind == "truncate":
        text = "".join(lines)
        return kind, text[: rng.randrange(len(text) + 1)].encode()
    elif kind == "bad bytes":
        raw = "".join(lines).encode()
        at = rng.randrange(len(raw) + 1)
        return kind, raw[:at] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xfe\xff"]) + raw[at:]
    elif kind == "nul":
        raw = "".join(lines).encode()
        at = rng.randrange(len(raw) + 1)
        return kind, raw[:at] + b"\x00" + raw[at:]
    elif kind == "long line":
        indent = lines[i][: len(lines[i]) - len(lines[i].lstrip(" \t"))]
        lines.insert(i, indent + "x = " + " + ".join(["1"] * rng.choice([300, 3000, 25_000])) + "\n")
    elif kind == "deep nesting":
        indent = lines[i][: len(lines[i]) - len(lines[i].lstrip(" \t"))]
        depth = rng.choice([150, 200, 201, 1400])
        opener = rng.choice("([{")
        closer = {"(": ")", "[": "]", "{": "}"}[opener]
        lines.insert(i, indent + "x = " + opener * depth + "1" + closer * depth + "\n")
    elif kind == "crlf":
        return kind, "".join(lines).replace("\n", "\r\n").encode()
    elif kind == "cr":
        return kind, "".join(lines).replace("\n", "\r").encode()
    elif kind == "bom":
        return kind, b"\xef\xbb\xbf" + "".join(lines).encode()
    elif kind == "form feeds":
        lines = [("\f" + line if rng.random() < 0.3 else line) for line in lines]
    elif kind == "chain":
        indent = lines[i][: len(lines[i]) - len(lines[i].lstrip(" \t"))]
        part = rng.choice(["y", "'a'", ".a", "()", "[0]"])
        joined = (" + " if part == "y" else " " if part == "'a'" else "").join([part] * 500)
        lines.insert(i, indent + "w = " + ("y" if part[0] in ".([" else "") + joined + "\n")
    elif kind == "elif chain":
        indent = lines[i][: len(lines[i]) - len(lines[i].lstrip(" \t"))]
        chain = indent + "if w:\n" + indent + "    pass\n" + "".join(f"{indent}elif w == {k}:\n{indent}    pass\n" for k in range(500))
        lines.insert(i, chain)
    return kind, "".join(lines).encode()


def _fixture_projects(tmp_path: Path) -> list[tuple[Path, list[Path]]]:
    projects = []
    for config in sorted(FIXTURES.glob("*/pyproject.toml")):
        target = tmp_path / config.parent.name
        shutil.copytree(config.parent, target)
        projects.append((target, sorted(p for p in target.rglob("*.py"))))
    return projects


def _mutant_suite(slow: bool, tmp_path: Path, capsys) -> None:
    tally = Tally("fixture mutants" + (" (large)" if slow else ""))
    rng = random.Random(int(os.environ.get("TRACE_LINT_FUZZ_SEED", "15")))
    projects = _fixture_projects(tmp_path)
    for _ in range(_size("TRACE_LINT_FUZZ_MUTANTS", SMALL_MUTANTS, slow)):
        root, files = rng.choice(projects)
        victim = rng.choice(files)
        original = victim.read_bytes()
        kind, mutated = _mutate(original, rng)
        victim.write_bytes(mutated)
        try:
            settings = load_settings(root)
            texts = {p.name: p.read_bytes() for p in files}
            _judge(tally, f"{kind} in {victim.relative_to(tmp_path)}", [root], settings, texts)
        finally:
            victim.write_bytes(original)
        tally.counts[f"kind {kind}"] += 1
    tally.report(capsys)


def test_fixture_mutants(tmp_path, capsys):
    _mutant_suite(False, tmp_path, capsys)


@pytest.mark.slow
@large
def test_fixture_mutants_large(tmp_path, capsys):
    _mutant_suite(True, tmp_path, capsys)


# -- edits that change nothing -------------------------------------------------------------------

def _trailing_comments(text: str) -> str:
    """`  # note` after every line that ends a statement outside brackets and strings."""
    import io
    import tokenize

    ends = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.NEWLINE and token.string:
                ends.add(token.start[0])
    except (tokenize.TokenError, SyntaxError):
        return text  # a broken fixture: where a comment would go is not known
    lines = text.split("\n")
    return "\n".join(line + "  # note" if number in ends and "#" not in line else line for number, line in enumerate(lines, 1))


_NO_OP_EDITS = {
    "crlf": lambda text: text.replace("\n", "\r\n").encode(),
    "cr": lambda text: text.replace("\n", "\r").encode(),
    "bom": lambda text: b"\xef\xbb\xbf" + text.encode(),
    "form feed on blank lines": lambda text: "\n".join("\f" if line == "" else line for line in text.split("\n")).encode(),
    "trailing comments": lambda text: _trailing_comments(text).encode(),
}


def test_edits_that_change_nothing_change_no_finding(tmp_path, capsys):
    tally = Tally("no-op edits")
    for root, files in _fixture_projects(tmp_path):
        settings = load_settings(root)
        before = _dump(check([root], settings).findings)
        for path in files:
            original = path.read_bytes()
            for name, edit in _NO_OP_EDITS.items():
                path.write_bytes(edit(original.decode("utf-8")))
                tally.counts["runs"] += 1
                try:
                    after = _dump(check([root], settings).findings)
                finally:
                    path.write_bytes(original)
                if after != before:
                    changed = sorted(set(after) ^ set(before))[:2]
                    tally.bad("no-op differences", f"{name} in {path.name}: {changed}")
    tally.report(capsys)


# -- pathological sizes --------------------------------------------------------------------------

_HEAD = "import ttnn\ntid = ttnn.begin_trace_capture(d)\n"


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("x = " + "(" * n + "1" + ")" * n + "\n", id=f"parens-{n}") for n in (200, 201, 1300)
    ]
    + [pytest.param("x = " + "[" * n + "]" * n + "\n", id=f"lists-{n}") for n in (150, 200, 201)]
    + [pytest.param("x = " + "not " * n + "y\n", id=f"not-{n}") for n in (151, 3000, 20_000)]
    + [pytest.param("x = " + " ** ".join(["2"] * n) + "\n", id=f"pow-{n}") for n in (151, 2000)]
    + [pytest.param("x = " + "lambda: " * n + "1\n", id=f"lambda-{n}") for n in (151, 2000)]
    + [pytest.param("x = " + "".join("a if b else " for _ in range(n)) + "c\n", id=f"ternary-{n}") for n in (151, 2000)]
    + [pytest.param("x = [" + ", ".join(["-1"] * 5_000) + "]\n", id="flat-list-5000")]
    + [pytest.param("".join("    " * i + "if x:\n" for i in range(n)) + "    " * n + "pass\n", id=f"indent-{n}") for n in (98, 99, 100)]
    + [pytest.param("if x:\n    pass\n" + "".join(f"elif x == {k}:\n    pass\n" for k in range(n)) + "else:\n    pass\n", id=f"elif-{n}") for n in (51, 3000)]
    + [pytest.param("x = f'{" + " + ".join(["y"] * 400) + "}'\n", id="fstring-chain-400")],
)
def test_pathological_sizes(body, tmp_path, capsys):
    tally = Tally("pathological size")
    text = _HEAD + body
    path = tmp_path / "size.py"
    path.write_text(text)
    result = _judge(tally, body[:60], [path], Settings(root=tmp_path), {"size.py": text})
    tally.report(capsys)
    refused = not _parses(text)
    assert result is not None
    assert any(f.code == "TRC001" for f in result.findings) is refused, [f.message for f in result.findings]
