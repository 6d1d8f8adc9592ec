"""Captured code reached through calls, helpers and declarations: exact sets and chains."""

from __future__ import annotations

import json

from trace_lint.driver.checker import check
from trace_lint.core.config import Settings

from .cli_helpers import FIXTURES, finding_set, run_cli

PROJECT = FIXTURES / "interprocedural"

EXPECTED = {
    # Declared captured: decorator, def-line comment, config key, decorated class.
    ("app/declared.py", 11, "TRC102"),
    ("app/declared.py", 15, "TRC103"),
    ("app/declared.py", 19, "TRC301"),
    ("app/declared.py", 25, "TRC203"),
    # Capture helpers: a partial, a lambda, a nested def passed through a second helper, a bound method.
    ("app/helpers.py", 20, "TRC102"),
    ("app/helpers.py", 24, "TRC203"),
    ("app/run.py", 20, "TRC102"),
    ("app/run.py", 37, "TRC101"),
    ("app/run.py", 37, "TRC301"),
    # TRC404 judged at the helper's call site (run.py:25 captures `bump`, a host helper: not judged).
    ("app/run.py", 40, "TRC404"),
    # Re-export through __init__ with an alias, __call__, super(), a function in that module.
    ("app/layers/attention.py", 5, "TRC102"),
    ("app/layers/attention.py", 10, "TRC203"),
    # self.attr.method() on an imported class. `helper.only_here_method(x)` on an unannotated
    # parameter is unknown: a method is never found by its name alone (RULES: receivers whose
    # class is known), so mlp.py:13 is not reached.
    ("app/layers/mlp.py", 8, "TRC203"),
    # self.attr = self.make() with a return annotation; mutual recursion.
    ("app/model.py", 9, "TRC203"),
    ("app/model.py", 39, "TRC103"),
}


def test_exact_findings():
    assert finding_set(PROJECT) == EXPECTED


def test_unreached_code_has_no_finding():
    lines = {(f, line) for f, line, _ in finding_set(PROJECT)}
    assert ("app/model.py", 43) not in lines  # not_reached()
    assert ("app/layers/attention.py", 21) not in lines  # Attention.unused
    assert ("app/declared.py", 29) not in lines  # TracedModule.helper


def test_call_chain_through_reexport_and_super():
    result = run_cli("check", str(PROJECT), "--output-format", "json", cwd=PROJECT)
    items = {(i["filename"], i["location"]["row"], i["code"]): i for i in json.loads(result.stdout)}
    finding = items[("app/layers/attention.py", 10, "TRC203")]
    assert [(r["filename"], r["location"]["row"], r["message"]) for r in finding["related"]] == [
        ("app/run.py", 12, "capture begins here, in `generate`"),
        ("app/run.py", 14, "calls `Model.forward`"),
        ("app/model.py", 22, "calls `Attention.__call__`"),
        ("app/layers/attention.py", 16, "calls `Base.norm`"),
    ]
    helper = items[("app/run.py", 20, "TRC102")]
    assert [r["message"] for r in helper["related"]] == [
        "`nested` is captured by the helper `capture_with` here, in `generate`"
    ]


def test_each_finding_once_with_every_chain(tmp_path):
    source = """import ttnn


def shared(x):
    return ttnn.to_torch(x)


def first(device, x):
    shared(x)
    tid = ttnn.begin_trace_capture(device)
    try:
        shared(x)
    finally:
        ttnn.end_trace_capture(device, tid)


def second(device, x):
    shared(x)
    tid = ttnn.begin_trace_capture(device)
    try:
        shared(x)
    finally:
        ttnn.end_trace_capture(device, tid)
"""
    path = tmp_path / "two.py"
    findings = check([path], Settings(root=tmp_path), sources={path: source}).findings
    assert [(f.location.row, f.code) for f in findings] == [(5, "TRC102")]
    assert [[step.location.row for step in chain] for chain in findings[0].chains] == [[10, 12], [19, 21]]


def test_deep_chains_and_large_call_graphs_terminate(tmp_path):
    functions = [f"def f{i}(x):\n    return f{i + 1}(x) + f{(i * 7) % 400}(x)\n" for i in range(400)]
    functions.append("def f400(x):\n    return ttnn.to_torch(x)\n")
    source = "import ttnn\n\n" + "\n".join(functions) + (
        "\ndef capture(device, x):\n    f0(x)\n    tid = ttnn.begin_trace_capture(device)\n"
        "    try:\n        f0(x)\n    finally:\n        ttnn.end_trace_capture(device, tid)\n"
    )
    path = tmp_path / "deep.py"
    findings = check([path], Settings(root=tmp_path), sources={path: source}).findings
    # The chain is a shortest path: the capture site, then one step per call.
    distance, frontier = {0: 0}, [0]
    while frontier:
        node = frontier.pop(0)
        for nxt in (node + 1, (node * 7) % 400) if node < 400 else ():
            if nxt not in distance:
                distance[nxt] = distance[node] + 1
                frontier.append(nxt)
    assert [f.code for f in findings] == ["TRC102"]
    chain = findings[0].chains[0]
    assert len(chain) == 2 + distance[400]
    assert chain[-1].message == "calls `f400`"
