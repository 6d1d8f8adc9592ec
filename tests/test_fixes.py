"""Fixes through the real command line: `--fix`, `--unsafe-fixes`, `--diff`, `--add-noqa`.

A fixed file must compile, check clean for the fixed rule, and run the same statements in
the same order on the normal path: with every `try:`/`finally:` flattened into its body
followed by its final block, the fixed module's syntax tree equals the original's."""

from __future__ import annotations

import ast
import difflib
import json
import textwrap
from pathlib import Path

import pytest

from trace_lint.report.fixes import apply_edit_list
from trace_lint.core.findings import Edit, Location

from .cli_helpers import run_cli

# Each: source whose TRC401 findings all have a safe fix.
SAFE_CASES = {
    "comments": """\
        import ttnn


        def capture(device, model, x):
            model(x)
            tid = ttnn.begin_trace_capture(device, cq_id=0)  # start recording
            # the model's forward pass
            out = model(x)  # recorded

            # and one more op
            out = ttnn.relu(out)
            # about to stop
            ttnn.end_trace_capture(device, tid, cq_id=0)  # stop recording
            return tid, out
        """,
    "nested_blocks": """\
        import ttnn


        class Runner:
            def capture(self, device, layers, x):
                for layer in layers:
                    layer(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                for layer in layers:
                    if layer is not None:
                        x = layer(x)
                    else:
                        continue
                    while False:
                        break
                note = '''a string
        that spans lines'''
                total = (1 +
                         2)
                ttnn.end_trace_capture(device, tid, cq_id=0)
                return tid, x, note, total
        """,
    "with_statements": """\
        import ttnn


        def capture(device, model, x, lock):
            with lock:
                model(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                with open("log.txt", "a") as log:
                    log.write("captured")
                    out = model(x)
                ttnn.end_trace_capture(device, tid, cq_id=0)
            return tid, out
        """,
    "cuda_graph": """\
        import torch


        def capture(model, static_in):
            model(static_in)
            graph = torch.cuda.CUDAGraph()
            graph.capture_begin()
            out = model(static_in)
            graph.capture_end()
            return graph, out
        """,
    "two_captures_in_one_function": """\
        import ttnn


        def capture(device, model, x):
            model(x)
            first = ttnn.begin_trace_capture(device, cq_id=0)
            a = model(x)
            ttnn.end_trace_capture(device, first, cq_id=0)
            second = ttnn.begin_trace_capture(device, cq_id=0)
            b = model(a)
            ttnn.end_trace_capture(device, second, cq_id=0)
            return first, second, b
        """,
    "tabs": "import ttnn\n\n\ndef capture(device, model, x):\n\tmodel(x)\n\ttid = ttnn.begin_trace_capture(device, cq_id=0)\n\tif x:\n\t\tout = model(x)\n\tttnn.end_trace_capture(device, tid, cq_id=0)\n\treturn tid\n",
}

EARLY_RETURN = textwrap.dedent(
    """\
    import ttnn


    def capture(device, model, x):
        model(x)
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        out = model(x)
        if out is None:
            return None  # leaves the capture open today
        ttnn.end_trace_capture(device, tid, cq_id=0)
        return tid, out
    """
)

NOT_OFFERED = textwrap.dedent(
    """\
    import ttnn


    def capture(device, model, x, ok):
        model(x)
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        out = model(x)
        if ok:
            ttnn.end_trace_capture(device, tid, cq_id=0)
        return tid, out
    """
)


def _flattened(source: str) -> str:
    """The module's tree with every try/finally replaced by its body then its final block."""

    class Flatten(ast.NodeTransformer):
        def visit_Try(self, node: ast.Try):
            self.generic_visit(node)
            if node.handlers or node.orelse:
                return node
            return [*node.body, *node.finalbody]

    return ast.dump(Flatten().visit(ast.parse(source)))


def _write(folder: Path, name: str, source: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def _json(path: Path, *extra: str) -> list[dict]:
    result = run_cli("check", str(path), "--no-cache", "--output-format", "json", *extra)
    assert result.returncode in (0, 1), result.stderr.decode()
    return json.loads(result.stdout)


@pytest.mark.parametrize("case", sorted(SAFE_CASES))
def test_fix_wraps_the_region_and_the_result_checks_clean_and_compiles(tmp_path: Path, case: str):
    path = _write(tmp_path / case, "model.py", SAFE_CASES[case])
    before = path.read_text(encoding="utf-8")
    findings = _json(path, "--select", "TRC401")
    assert findings and all(f["fix"]["applicability"] == "safe" for f in findings), findings

    fixed = run_cli("check", str(path), "--no-cache", "--select", "TRC401", "--fix")
    assert fixed.returncode == 0, fixed.stdout.decode() + fixed.stderr.decode()
    assert f"({len(findings)} fixed, 0 remaining)" in fixed.stdout.decode()
    after = path.read_text(encoding="utf-8")
    compile(after, str(path), "exec")
    assert "finally:" in after
    assert _flattened(after) == _flattened(before)
    assert run_cli("check", str(path), "--no-cache", "--select", "TRC401").returncode == 0
    # Comments and the author's own layout inside the region survive.
    for line in before.splitlines():
        if "#" in line:
            assert line.strip() in after


def test_json_fix_edits_reproduce_the_fixed_file(tmp_path: Path):
    path = _write(tmp_path, "model.py", SAFE_CASES["comments"])
    before = path.read_text(encoding="utf-8")
    [finding] = _json(path, "--select", "TRC401")
    fix = finding["fix"]
    assert set(fix) == {"applicability", "message", "edits"}
    assert "finally: ttnn.end_trace_capture(device, tid, cq_id=0)" in fix["message"]
    edits = [Edit(e["content"], Location(**e["location"]), Location(**e["end_location"])) for e in fix["edits"]]
    by_hand = apply_edit_list(before, edits)
    assert run_cli("check", str(path), "--no-cache", "--select", "TRC401", "--fix").returncode == 0
    assert path.read_text(encoding="utf-8") == by_hand


def test_diff_prints_the_fix_and_writes_nothing(tmp_path: Path):
    path = _write(tmp_path / "a", "model.py", SAFE_CASES["nested_blocks"])
    twin = _write(tmp_path / "b", "model.py", SAFE_CASES["nested_blocks"])
    before = path.read_bytes()
    stamp = path.stat().st_mtime_ns
    shown = run_cli("check", str(path), "--no-cache", "--select", "TRC401", "--diff")
    assert shown.returncode == 1, shown.stderr.decode()
    assert path.read_bytes() == before and path.stat().st_mtime_ns == stamp
    assert "Would fix 1 error." in shown.stderr.decode()

    assert run_cli("check", str(twin), "--no-cache", "--select", "TRC401", "--fix").returncode == 0
    name = shown.stdout.decode().splitlines()[0][len("--- ") :]
    expected = "".join(
        difflib.unified_diff(
            before.decode().splitlines(keepends=True), twin.read_text(encoding="utf-8").splitlines(keepends=True), fromfile=name, tofile=name
        )
    )
    assert shown.stdout.decode() == expected
    # Nothing to fix: no diff, exit 0.
    clean = run_cli("check", str(twin), "--no-cache", "--select", "TRC401", "--diff")
    assert clean.returncode == 0 and clean.stdout == b""


def test_an_early_return_makes_the_fix_unsafe(tmp_path: Path):
    path = _write(tmp_path, "model.py", EARLY_RETURN)
    [finding] = _json(path, "--select", "TRC401")
    assert finding["fix"]["applicability"] == "unsafe"
    assert "`return`" in finding["fix"]["message"]

    shown = run_cli("check", str(path), "--no-cache", "--select", "TRC401", "--output-format", "concise")
    out = shown.stdout.decode()
    assert "TRC401 [*]" not in out
    assert "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option)." in out
    marked = run_cli("check", str(path), "--no-cache", "--select", "TRC401", "--output-format", "concise", "--unsafe-fixes")
    assert "TRC401 [*]" in marked.stdout.decode()

    kept = run_cli("check", str(path), "--no-cache", "--select", "TRC401", "--fix")
    assert kept.returncode == 1
    assert path.read_text(encoding="utf-8") == EARLY_RETURN

    applied = run_cli("check", str(path), "--no-cache", "--select", "TRC401", "--fix", "--unsafe-fixes")
    assert applied.returncode == 0, applied.stdout.decode()
    after = path.read_text(encoding="utf-8")
    compile(after, str(path), "exec")
    assert _flattened(after) == _flattened(EARLY_RETURN)


def test_an_end_inside_a_branch_gets_no_fix(tmp_path: Path):
    path = _write(tmp_path, "model.py", NOT_OFFERED)
    [finding] = _json(path, "--select", "TRC401")
    assert finding["fix"] is None
    assert run_cli("check", str(path), "--no-cache", "--select", "TRC401", "--fix").returncode == 1
    assert path.read_text(encoding="utf-8") == NOT_OFFERED


def test_an_end_reading_a_name_the_region_binds_is_unsafe(tmp_path: Path):
    source = NOT_OFFERED.replace(
        "    if ok:\n        ttnn.end_trace_capture(device, tid, cq_id=0)\n",
        "    queue = 0\n    ttnn.end_trace_capture(device, tid, cq_id=queue)\n",
    )
    path = _write(tmp_path, "model.py", source)
    [finding] = _json(path, "--select", "TRC401")
    assert finding["fix"]["applicability"] == "unsafe" and "`queue`" in finding["fix"]["message"]


UNUSED_SUPPRESSIONS = """\
    import ttnn


    def prepare(device, host):
        a = ttnn.from_torch(host, device=device)  # noqa: TRC101
        b = ttnn.from_torch(host, device=device)  # noqa: TRC101, E501  # long line
        c = ttnn.from_torch(host, device=device)  # noqa: TRC999
        return a, b, c
    """


def test_unused_suppression_fix_removes_only_trace_lint_codes(tmp_path: Path):
    path = _write(tmp_path, "prep.py", UNUSED_SUPPRESSIONS)
    assert {f["fix"]["applicability"] for f in _json(path)} == {"safe"}
    result = run_cli("check", str(path), "--no-cache", "--fix")
    assert result.returncode == 0, result.stdout.decode()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[4] == "    a = ttnn.from_torch(host, device=device)"
    assert lines[5] == "    b = ttnn.from_torch(host, device=device)  # noqa: E501  # long line"
    assert lines[6] == "    c = ttnn.from_torch(host, device=device)"


ADOPTION = """\
    import ttnn


    def capture(device, model, x):
        model(x)
        tid = ttnn.begin_trace_capture(device, cq_id=0)  # noqa: E501
        y = ttnn.to_torch(x)
        z = ttnn.from_torch(
            y, device=device
        )
        if z is not None: w = ttnn.to_torch(z); v = ttnn.to_torch(w)
        ttnn.end_trace_capture(device, tid, cq_id=0)
        return y
    """


def test_add_noqa_silences_every_finding_merges_and_is_idempotent(tmp_path: Path):
    path = _write(tmp_path, "model.py", ADOPTION)
    findings = _json(path)
    codes = {(f["noqa_row"], f["code"]) for f in findings}
    assert (6, "TRC401") in codes and (8, "TRC101") in codes and (11, "TRC102") in codes

    first = run_cli("check", str(path), "--no-cache", "--add-noqa")
    assert first.returncode == 0, first.stderr.decode()
    assert f"Added {len(codes)} noqa directives." in first.stderr.decode()
    text = path.read_text(encoding="utf-8")
    compile(text, str(path), "exec")
    lines = text.splitlines()
    # Merged into the comment already on the begin line; a multi-line call gets its first line.
    assert lines[5].endswith("# noqa: E501, TRC401")
    assert "from_torch(  # noqa: TRC101" in lines[7]
    assert run_cli("check", str(path), "--no-cache").returncode == 0

    second = run_cli("check", str(path), "--no-cache", "--add-noqa")
    assert second.returncode == 0 and "Added 0 noqa directives." in second.stderr.decode()
    assert path.read_text(encoding="utf-8") == text


def test_fix_and_add_noqa_refuse_nothing_silently_on_stdin(tmp_path: Path):
    source = textwrap.dedent(SAFE_CASES["comments"]).encode()
    fixed = run_cli("check", "-", "--stdin-filename", str(tmp_path / "m.py"), "--select", "TRC401", "--fix", "--no-cache", stdin=source)
    assert fixed.returncode == 0, fixed.stderr.decode()
    compile(fixed.stdout.decode(), "m.py", "exec")
    assert "finally:" in fixed.stdout.decode()
    refused = run_cli("check", "-", "--add-noqa", stdin=source)
    assert refused.returncode == 2 and "--add-noqa" in refused.stderr.decode()


@pytest.mark.parametrize(
    ("region", "reason"),
    [
        ("        if x is None:\n            break\n", "`break`"),
        ("        if x is None:\n            continue\n", "`continue`"),
        ("        yield x\n", "`yield`"),
    ],
)
def test_leaving_an_outer_loop_or_yielding_makes_the_fix_unsafe(tmp_path: Path, region: str, reason: str):
    source = (
        "import ttnn\n\n\ndef capture(device, model, xs):\n"
        "    for x in xs:\n"
        "        model(x)\n"
        "        tid = ttnn.begin_trace_capture(device, cq_id=0)\n"
        "        model(x)\n"  # can raise: the capture can be left open (TRC401)
        f"{region}"
        "        ttnn.end_trace_capture(device, tid, cq_id=0)\n"
    )
    path = _write(tmp_path, "model.py", source)
    [finding] = _json(path, "--select", "TRC401")
    assert finding["fix"]["applicability"] == "unsafe" and reason in finding["fix"]["message"]


def test_a_statement_after_the_begin_on_its_line_gets_no_fix(tmp_path: Path):
    source = NOT_OFFERED.replace("    if ok:\n        ttnn.end_trace_capture", "    ttnn.end_trace_capture").replace(
        "tid = ttnn.begin_trace_capture(device, cq_id=0)", "tid = ttnn.begin_trace_capture(device, cq_id=0); out = None"
    )
    path = _write(tmp_path, "model.py", source)
    [finding] = _json(path, "--select", "TRC401")
    assert finding["fix"] is None


def test_no_fix_is_built_from_a_tree_whose_text_was_reduced(tmp_path: Path):
    # An over-long expression is a placeholder in the parse text (syntax_limits): a fix
    # generated from that tree would write the placeholder into the user's file.
    chain = " + ".join(["x"] * 400)
    source = (
        "import ttnn\n\n\ndef capture(device, model, x):\n    model(x)\n"
        "    tid = ttnn.begin_trace_capture(device, cq_id=0)\n"
        f"    y = model(x)\n    z = {chain}\n"
        "    ttnn.end_trace_capture(device, tid, cq_id=0)\n    return y, z\n"
    )
    path = _write(tmp_path, "model.py", source)
    [finding] = _json(path, "--select", "TRC401")
    assert finding["fix"] is None
    before = path.read_text()
    run_cli("check", str(path), "--select", "TRC401", "--fix", "--unsafe-fixes")
    assert path.read_text() == before
