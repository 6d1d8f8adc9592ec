"""The installed CLI on CUDA-graph fixture projects: exact (file, line, code) sets."""

from __future__ import annotations

import json

from .cli_helpers import FIXTURES, finding_set, run_cli


def test_correct_cuda_graph_program_has_no_finding():
    project = FIXTURES / "torch_correct"
    result = run_cli("check", str(project), "--output-format", "json")
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
    assert json.loads(result.stdout) == []


def test_torch_rules_on_a_fixture_project():
    assert finding_set(FIXTURES / "torch_rules") == {
        # Router.forward, graphed through make_graphed_callables(Router(...).cuda().eval(), ...)
        ("app/layers.py", 14, "TRC203"),
        ("app/layers.py", 16, "TRC501"),
        ("app/layers.py", 17, "TRC501"),
        ("app/layers.py", 18, "TRC202"),
        ("app/layers.py", 20, "TRC203"),
        # reached from a CUDA graph and from a ttnn trace: TRC501 applies
        ("app/layers.py", 25, "TRC501"),
        # `with cuda.graph(g):` (from torch import cuda)
        # run.py:10: `capture` calls its parameter in the graph: a capture helper nobody
        # calls, so no TRC404 there.
        ("app/run.py", 12, "TRC201"),
        ("app/run.py", 13, "TRC101"),
        ("app/run.py", 14, "TRC301"),
        ("app/run.py", 15, "TRC103"),
        ("app/run.py", 16, "TRC102"),
        # g.capture_begin() ... g.capture_end() without try/finally
        ("app/run.py", 23, "TRC401"),
    }


def test_graphed_callable_chain_in_json_related():
    result = run_cli("check", str(FIXTURES / "torch_rules"), "--output-format", "json")
    items = {(i["filename"].replace("\\", "/").rsplit("torch_rules/", 1)[-1], i["location"]["row"], i["code"]): i for i in json.loads(result.stdout)}
    related = items[("app/layers.py", 16, "TRC501")]["related"]
    assert [(r["filename"].rsplit("torch_rules/", 1)[-1], r["location"]["row"]) for r in related] == [("app/run.py", 32)]
    assert "`Router.forward` is captured into a CUDA graph here" in related[0]["message"]
