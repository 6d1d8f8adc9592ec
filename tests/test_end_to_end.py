"""The installed CLI on fixture projects: exact (file, line, code) sets."""

from __future__ import annotations

import json

from .cli_helpers import FIXTURES, REPO, finding_set, run_cli

EXAMPLES = {
    ("tinydecoder/generate.py", 8, "TRC405"),
    ("tinydecoder/generate.py", 14, "TRC401"),
    ("tinydecoder/generate.py", 14, "TRC404"),
    ("tinydecoder/generate.py", 30, "TRC403"),
    ("tinydecoder/layers.py", 20, "TRC203"),
    ("tinydecoder/layers.py", 30, "TRC202"),
    ("tinydecoder/model.py", 25, "TRC102"),
}


def test_bundled_examples():
    assert finding_set(REPO / "examples", cwd=REPO) == EXAMPLES


def test_correct_trace_code_has_no_finding():
    project = FIXTURES / "correct_trace"
    result = run_cli("check", str(project), "--output-format", "json")
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
    assert json.loads(result.stdout) == []


def test_every_lexical_rule_on_a_fixture_project():
    assert finding_set(FIXTURES / "lexical_rules") == {
        ("broken.py", 3, "TRC001"),
        ("capture_rules.py", 10, "TRC405"),
        ("capture_rules.py", 14, "TRC203"),
        ("capture_rules.py", 15, "TRC202"),
        ("capture_rules.py", 22, "TRC401"),
        ("capture_rules.py", 23, "TRC101"),
        ("capture_rules.py", 23, "TRC301"),
        ("capture_rules.py", 24, "TRC102"),
        ("capture_rules.py", 25, "TRC103"),
        ("capture_rules.py", 26, "TRC201"),
        ("capture_rules.py", 28, "TRC204"),
        ("capture_rules.py", 30, "TRC406"),
        ("capture_rules.py", 31, "TRC302"),
        ("capture_rules.py", 34, "TRC408"),
        # capture_rules.py:40 `replay` calls its parameter `model` in its region: a capture
        # helper nobody calls; its callers own the warm-up (no TRC404).
        ("capture_rules.py", 45, "TRC403"),
        ("capture_rules.py", 53, "TRC303"),
        ("suppressed.py", 8, "TRC102"),
        ("suppressed.py", 8, "TRC002"),
        ("suppressed.py", 14, "TRC102"),
    }


def test_call_chain_in_json_related_and_full_output():
    result = run_cli("check", "examples", "--output-format", "json", cwd=REPO)
    items = {(i["filename"], i["location"]["row"], i["code"]): i for i in json.loads(result.stdout)}
    finding = items[("examples/tinydecoder/layers.py", 20, "TRC203")]
    messages = [(r["filename"], r["location"]["row"], r["message"]) for r in finding["related"]]
    assert messages == [
        ("examples/tinydecoder/generate.py", 14, "capture begins here, in `Generator.capture`"),
        ("examples/tinydecoder/generate.py", 15, "calls `Decoder.forward`"),
        ("examples/tinydecoder/model.py", 14, "calls `DecoderLayer.forward`"),
        ("examples/tinydecoder/layers.py", 41, "calls `Attention.__call__`"),
        ("examples/tinydecoder/generate.py", 21, "capture begins here, in `Generator.generate`"),
        ("examples/tinydecoder/generate.py", 23, "calls `Decoder.forward`"),
    ]
    full = run_cli("check", "examples", cwd=REPO).stdout.decode()
    block = full.split("examples/tinydecoder/layers.py:20:9: TRC203")[1].split("\n\n")[0]
    assert "captured via chain 1 of 2 (capture site first):" in block and "captured via chain 2 of 2" in block
    assert block.index("generate.py:14:25") < block.index("model.py:14:17") < block.index("layers.py:41:25")
    assert "^^^^" in block and "= help:" in block
