"""A finding reached from two captures carries two chains, and every output format shows
them as two separate paths, never one path through both captures."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from .cli_helpers import CHAIN_HELPERS as HELPERS, REPO, run_cli

# Two captures, each calling `step` (lines 7 and 15), and a host read lexically inside the first.
MAIN = textwrap.dedent(
    """\
    import ttnn
    from pkg.helpers import step


    def first(device, x):
        step(x)
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        try:
            out = step(x)
            y = ttnn.to_torch(x)
        finally:
            ttnn.end_trace_capture(device, tid, cq_id=0)
        return out, y


    def second(device, x):
        step(x)
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        try:
            out = step(x)
        finally:
            ttnn.end_trace_capture(device, tid, cq_id=0)
        return out
    """
)
FIRST_CAPTURE, SECOND_CAPTURE = 7, 18
FIRST_CALL, SECOND_CALL = 9, 20


@pytest.fixture
def project(tmp_path: Path) -> Path:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "helpers.py").write_text(HELPERS, encoding="utf-8")
    (package / "main.py").write_text(MAIN, encoding="utf-8")
    return tmp_path


def run_format(project: Path, name: str) -> str:
    result = run_cli("check", ".", "--no-cache", "--select", "TRC102", "--output-format", name, cwd=project)
    assert result.returncode == 1, result.stderr.decode()
    return result.stdout.decode()


def test_json_has_one_chain_per_capture_and_related_flattened(project):
    items = json.loads(run_format(project, "json"))
    by_place = {(i["filename"], i["location"]["row"]): i for i in items}
    reached = by_place[("pkg/helpers.py", 5)]
    chains = [[(s["filename"], s["location"]["row"]) for s in chain] for chain in reached["chains"]]
    assert sorted(chains) == [
        [("pkg/main.py", FIRST_CAPTURE), ("pkg/main.py", FIRST_CALL)],
        [("pkg/main.py", SECOND_CAPTURE), ("pkg/main.py", SECOND_CALL)],
    ]
    assert all(set(s) == {"filename", "location", "message"} for chain in reached["chains"] for s in chain)
    flattened = [(s["filename"], s["location"]["row"]) for s in reached["related"]]
    assert sorted(flattened) == sorted(step for chain in chains for step in chain)
    assert len(flattened) == len(set(flattened))
    # A finding lexically inside its region has no chain at all.
    assert by_place[("pkg/main.py", 10)]["chains"] == []


def test_sarif_has_one_code_flow_per_chain_and_is_schema_valid(project):
    import jsonschema

    log = json.loads(run_format(project, "sarif"))
    schema = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    errors = list(jsonschema.Draft7Validator(schema).iter_errors(log))
    assert not errors, errors[0].message
    results = log["runs"][0]["results"]
    [reached] = [r for r in results if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "pkg/helpers.py"]
    flows = reached["codeFlows"]
    assert len(flows) == 2
    starts = []
    for flow in flows:
        [thread] = flow["threadFlows"]
        rows = [step["location"]["physicalLocation"]["region"]["startLine"] for step in thread["locations"]]
        starts.append(rows[0])
        # capture site, the call that reaches the finding, then the finding itself.
        assert len(rows) == 3 and rows[-1] == 5
        assert thread["locations"][-1]["location"]["physicalLocation"]["artifactLocation"]["uri"] == "pkg/helpers.py"
    assert sorted(starts) == [FIRST_CAPTURE, SECOND_CAPTURE]
    # The message links each chain separately.
    assert reached["message"]["text"].count("; and via ") == 1
    [lexical] = [r for r in results if r["locations"][0]["physicalLocation"]["region"]["startLine"] == 10]
    assert "codeFlows" not in lexical

    # A code flow the schema rejects is caught, so the validation above means something.
    del reached["codeFlows"][0]["threadFlows"][0]["locations"]
    assert list(jsonschema.Draft7Validator(schema).iter_errors(log))


def _chain_lines(text: str, marker: str) -> list[str]:
    return [line for line in text.splitlines() if marker in line]


def test_full_names_each_chain(project):
    text = run_format(project, "full")
    assert "captured via chain 1 of 2 (capture site first):" in text
    assert "captured via chain 2 of 2 (capture site first):" in text
    block = text.split("pkg/helpers.py:5:")[1]
    first, second = block.split("captured via chain 2 of 2")
    assert f"pkg/main.py:{FIRST_CAPTURE}:" in first and f"pkg/main.py:{SECOND_CAPTURE}:" not in first
    assert f"pkg/main.py:{SECOND_CAPTURE}:" in second.split("= help")[0]


def test_github_has_one_line_per_chain(project):
    text = run_format(project, "github")
    [annotation] = [line for line in text.splitlines() if "file=pkg/helpers.py" in line]
    lines = annotation.split("::", 2)[2].split("%0A")
    chains = [line for line in lines if line.startswith("captured via")]
    assert len(chains) == 2
    assert f"main.py:{FIRST_CAPTURE}" in chains[0] and f"main.py:{SECOND_CAPTURE}" not in chains[0]
    assert f"main.py:{SECOND_CAPTURE}" in chains[1] and f"main.py:{FIRST_CAPTURE}" not in chains[1]


def test_junit_names_each_chain(project):
    suites = ET.fromstring(run_format(project, "junit"))
    [failure] = [case.find("failure") for case in suites.iter("testcase") if case.get("file") == "pkg/helpers.py"]
    text = failure.text
    assert "captured via chain 1 of 2" in text and "captured via chain 2 of 2" in text
    first = text.split("captured via chain 2 of 2")[0]
    assert f"main.py:{FIRST_CAPTURE}:" in first and f"main.py:{SECOND_CAPTURE}:" not in first


def test_two_findings_of_one_code_on_one_line_are_two(tmp_path):
    source = textwrap.dedent(
        """\
        import ttnn


        def run(device, x, y):
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            try:
                a, b = ttnn.to_torch(x), ttnn.to_torch(y)
            finally:
                ttnn.end_trace_capture(device, tid, cq_id=0)
            return a, b
        """
    )
    (tmp_path / "model.py").write_text(source, encoding="utf-8")
    result = run_cli("check", "model.py", "--no-cache", "--select", "TRC102", "--output-format", "json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr.decode()
    places = [(i["location"]["row"], i["location"]["column"]) for i in json.loads(result.stdout)]
    line = source.splitlines()[6]
    first = line.index("ttnn.to_torch") + 1
    assert places == [(7, first), (7, line.index("ttnn.to_torch", first) + 1)]


def test_rule_links_resolve_to_the_rule_docs_the_package_ships(project):
    items = json.loads(run_format(project, "json"))
    page = REPO / "trace_lint" / "data" / "rules.md"  # no documentation URL is configured
    text = page.read_text(encoding="utf-8")
    for item in items:
        assert item["url"] == f"{page.as_uri()}#{item['code'].lower()}"
        assert f'<a id="{item["code"].lower()}"></a>' in text
