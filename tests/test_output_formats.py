"""The CI formats: SARIF (checked against the OASIS schema and what GitHub code scanning
needs), GitHub workflow annotations and JUnit XML."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


from trace_lint.core.findings import Finding, Location, Related
from trace_lint.driver.checker import check
from trace_lint.core.config import Settings
from trace_lint.output import OutputContext, formatters
from trace_lint.output.github import annotation
from trace_lint.rules import ALL_RULES

from .cli_helpers import CHAIN_MAIN as MAIN, REPO, write_chain_package

# The OASIS SARIF 2.1.0 schema, kept with the tests so that they never depend on the network.
SARIF_SCHEMA = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"



def make_repo(root: Path) -> Path:
    """A git work tree whose Python project sits in a subfolder with a space in its name."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return write_chain_package(root / "my project")


def run_format(name: str, project: Path, monkeypatch) -> tuple[str, list[Finding]]:
    monkeypatch.chdir(project)
    result = check([Path(".")], Settings(root=project))
    assert not result.errors

    def read_source(filename: str):
        try:
            return Path(filename).read_text(encoding="utf-8")
        except OSError:
            return None

    context = OutputContext(read_source=read_source, files_checked=result.files_checked)
    return formatters()[name](result.findings, context), result.findings


def sarif_schema() -> dict:
    return json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))


# -- SARIF ----------------------------------------------------------------------------------
def test_sarif_is_valid_against_the_oasis_schema(tmp_path, monkeypatch):
    import jsonschema  # a test dependency (the `test` extra): a missing one fails, never skips
    schema = sarif_schema()
    text, findings = run_format("sarif", make_repo(tmp_path), monkeypatch)
    assert findings
    log = json.loads(text)
    validator = jsonschema.Draft7Validator(schema)
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])

    # The schema is permissive; an invalid log must be caught by it, or this test proves little.
    broken = json.loads(text)
    broken["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    assert list(validator.iter_errors(broken))


def test_sarif_has_what_github_code_scanning_needs(tmp_path, monkeypatch):
    project = make_repo(tmp_path)
    text, findings = run_format("sarif", project, monkeypatch)
    log = json.loads(text)
    assert log["version"] == "2.1.0" and log["$schema"]
    [run] = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "trace-lint" and driver["version"]
    # Links point at the rule docs the package ships (no documentation URL is configured).
    assert driver["informationUri"] == (REPO / "trace_lint" / "data" / "rules.md").as_uri()
    rules = driver["rules"]
    assert [r["id"] for r in rules] == [r.code for r in ALL_RULES]
    for descriptor, rule in zip(rules, ALL_RULES):
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.summary
        assert descriptor["fullDescription"]["text"] == rule.explanation("What it does")
        assert descriptor["help"]["markdown"] == rule.docs()
        assert rule.explanation("Why is this bad") in descriptor["help"]["text"]
        assert descriptor["helpUri"] == (REPO / "trace_lint" / "data" / "rules.md").as_uri() + "#" + rule.code.lower()
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.resolve().as_uri() + "/"

    results = run["results"]
    assert [r["ruleId"] for r in results] == [f.code for f in findings]
    for result in results:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["message"]["text"] and result["level"] in ("error", "warning", "note")
        [location] = result["locations"]
        artifact = location["physicalLocation"]["artifactLocation"]
        # Relative to the git root, not to the working folder; forward slashes, URI-escaped.
        assert artifact["uriBaseId"] == "%SRCROOT%"
        assert artifact["uri"].startswith("my%20project/pkg/")
        assert ":" not in artifact["uri"] and "\\" not in artifact["uri"]
        assert location["physicalLocation"]["region"]["startLine"] >= 1
        assert result["partialFingerprints"]


def test_sarif_regions_are_one_based_with_exclusive_end_columns(tmp_path, monkeypatch):
    text, findings = run_format("sarif", make_repo(tmp_path), monkeypatch)
    run = json.loads(text)["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    by_rule = {r["ruleId"]: r for r in run["results"]}
    line = MAIN.splitlines()[9]
    region = by_rule["TRC103"]["locations"][0]["physicalLocation"]["region"]
    start = line.index("ttnn.synchronize_device") + 1
    assert region == {"startLine": 10, "startColumn": start, "endLine": 10, "endColumn": start + len("ttnn.synchronize_device(device)")}


def test_sarif_call_chain_is_related_locations_linked_from_the_message(tmp_path, monkeypatch):
    text, findings = run_format("sarif", make_repo(tmp_path), monkeypatch)
    [result] = [r for r in json.loads(text)["runs"][0]["results"] if r["ruleId"] == "TRC102"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "my%20project/pkg/helpers.py"
    related = result["relatedLocations"]
    ids = [r["id"] for r in related]
    assert len(set(ids)) == len(ids)
    lines = sorted(r["physicalLocation"]["region"]["startLine"] for r in related)
    assert 7 in lines and 9 in lines  # the begin call and the call of `step` in main.py
    assert all(r["physicalLocation"]["artifactLocation"]["uri"] == "my%20project/pkg/main.py" for r in related)
    for step_id in ids:
        assert f"]({step_id})" in result["message"]["text"]


def test_sarif_fingerprints_survive_lines_moving(tmp_path, monkeypatch):
    project = make_repo(tmp_path)
    first = json.loads(run_format("sarif", project, monkeypatch)[0])["runs"][0]["results"]
    main = project / "pkg" / "main.py"
    main.write_text("# a new comment\n\n" + main.read_text(encoding="utf-8"), encoding="utf-8")
    second = json.loads(run_format("sarif", project, monkeypatch)[0])["runs"][0]["results"]
    assert [r["partialFingerprints"] for r in first] == [r["partialFingerprints"] for r in second]
    moved = [r for r in second if r["ruleId"] == "TRC103"][0]["locations"][0]["physicalLocation"]["region"]
    assert moved["startLine"] == 12
    prints = [next(iter(r["partialFingerprints"].values())) for r in second]
    assert len(set(prints)) == len(prints)


def test_cli_writes_sarif_and_exits_1(tmp_path):
    project = make_repo(tmp_path)
    completed = subprocess.run(
        [sys.executable, "-m", "trace_lint", "check", "--output-format", "sarif", "."],
        cwd=project, capture_output=True, text=True, encoding="utf-8",
    )
    assert completed.returncode == 1, completed.stderr
    assert {r["ruleId"] for r in json.loads(completed.stdout)["runs"][0]["results"]} == {"TRC102", "TRC103"}


# -- GitHub annotations -----------------------------------------------------------------------
def _parse_annotation(line: str) -> tuple[str, dict[str, str], str]:
    """Read a workflow command back the way the runner does."""
    assert line.startswith("::")
    head, _, data = line[2:].partition("::")
    command, _, props = head.partition(" ")

    def unescape(value: str) -> str:
        for escaped, raw in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
            value = value.replace(escaped, raw)
        return value

    properties = dict(item.split("=", 1) for item in props.split(",")) if props else {}
    return command, {k: unescape(v) for k, v in properties.items()}, unescape(data)


def test_github_annotations_for_real_findings(tmp_path, monkeypatch):
    text, findings = run_format("github", make_repo(tmp_path), monkeypatch)
    lines = text.splitlines()
    assert len(lines) == len(findings)
    parsed = [_parse_annotation(line) for line in lines]
    by_title = {props["title"]: (command, props, data) for command, props, data in parsed}
    command, props, data = by_title["trace-lint (TRC103)"]
    assert command == "error"
    start = MAIN.splitlines()[9].index("ttnn.synchronize_device") + 1
    assert props == {
        "file": "my project/pkg/main.py", "line": "10", "col": str(start), "endLine": "10",
        "endColumn": str(start + len("ttnn.synchronize_device(device)")), "title": "trace-lint (TRC103)",
    }
    assert data.splitlines()[0] == findings[[f.code for f in findings].index("TRC103")].message
    assert "my project/pkg/main.py:9" in by_title["trace-lint (TRC102)"][2]  # the call chain


def test_github_escapes_data_and_properties():
    finding = Finding(
        code="TRC102",
        message="100% sure,\r\nreally: yes",
        filename="odd,name:here.py",
        location=Location(3, 5),
        end_location=Location(3, 9),
        related=[Related("odd,name:here.py", Location(1, 1), "capture begins here")],
    )
    line = annotation(finding, "odd,name:here.py")
    assert "\n" not in line and "\r" not in line
    head, _, data = line[2:].partition("::")
    assert "file=odd%2Cname%3Ahere.py," in head
    assert data.startswith("100%25 sure,%0D%0Areally: yes%0A")
    command, props, message = _parse_annotation(line)
    assert props["file"] == "odd,name:here.py" and props["col"] == "5" and props["endColumn"] == "9"
    assert message.startswith("100% sure,\r\nreally: yes\n")


def test_github_multi_line_spans_have_no_columns():
    finding = Finding(code="TRC201", message="m", filename="a.py", location=Location(3, 5), end_location=Location(6, 2))
    _command, props, _data = _parse_annotation(annotation(finding, "a.py"))
    assert props == {"file": "a.py", "line": "3", "endLine": "6", "title": "trace-lint (TRC201)"}


# -- JUnit ---------------------------------------------------------------------------------------
def test_junit_one_failing_case_per_finding(tmp_path, monkeypatch):
    text, findings = run_format("junit", make_repo(tmp_path), monkeypatch)
    root = ET.fromstring(text.encode("utf-8"))
    [suite] = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == len(findings) == int(suite.get("tests")) == int(suite.get("failures"))
    for case, finding in zip(cases, findings):
        failure = case.find("failure")
        assert failure.get("type") == finding.code and failure.get("message") == finding.message
        assert case.get("classname") == finding.filename and case.get("line") == str(finding.location.row)
        assert finding.url in failure.text


def test_junit_escapes_markup_and_control_characters():
    finding = Finding(
        code="TRC201", message='if a < b && c > "d" \x07', filename="x&y.py",
        location=Location(1, 1), end_location=Location(1, 2),
    )
    text = formatters()["junit"]([finding], OutputContext(read_source=lambda name: None))
    case = ET.fromstring(text.encode("utf-8")).find("testsuite/testcase")
    assert case.get("classname") == "x&y.py"
    assert case.find("failure").get("message") == 'if a < b && c > "d" \\x07'


def test_junit_without_findings_is_one_passing_case():
    text = formatters()["junit"]([], OutputContext(read_source=lambda name: None))
    suite = ET.fromstring(text.encode("utf-8")).find("testsuite")
    assert suite.get("failures") == "0"
    [case] = suite.findall("testcase")
    assert case.find("failure") is None


# -- grouped, pylint, gitlab, rdjson; the code frame after wide characters -------------------
def cli_output(project: Path, fmt: str) -> str:
    from .cli_helpers import run_cli

    result = run_cli("check", "--no-cache", "--output-format", fmt, ".", cwd=project)
    assert result.returncode == 1, result.stderr.decode()
    return result.stdout.decode("utf-8")


WIDE = (
    "import ttnn\n\n\ndef run(device, x):\n"
    "    tid = ttnn.begin_trace_capture(device, cq_id=0)\n"
    "    try:\n"
    "        名前 = 'データ'; y = ttnn.to_torch(x)\n"
    "    finally:\n"
    "        ttnn.end_trace_capture(device, tid, cq_id=0)\n"
    "    return y, 名前\n"
)


def wide_project(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "wide.py").write_text(WIDE, encoding="utf-8")
    return tmp_path


def test_code_frame_caret_sits_under_the_call_after_wide_characters(tmp_path):
    text = cli_output(wide_project(tmp_path), "full")
    lines = text.splitlines()
    code_line = next(i for i, line in enumerate(lines) if "ttnn.to_torch" in line and "|" in line)
    caret_line = lines[code_line + 1]
    # Each CJK character takes two terminal columns: 名前 and データ are 4 + 6 columns wide.
    source = lines[code_line].split("| ", 1)[1]
    prefix = source[: source.index("ttnn.to_torch")]
    columns = len(prefix) + sum(1 for c in prefix if ord(c) > 0x2E80)
    caret = caret_line.split("| ", 1)[1]
    assert caret.index("^") == columns
    assert caret.count("^") == len("ttnn.to_torch(x)")


def test_ascii_widths_and_blanks_are_wcwidth_s():
    """The ASCII shortcut of the code frame gives what wcwidth gives, character by
    character and for mixed text (tabs and control characters included)."""
    from wcwidth import wcwidth

    from trace_lint.output.text import _blank, _display_width

    def slow_width(text):
        return sum(max(wcwidth(c), 0) for c in text)

    def slow_blank(text):
        return "".join(c if c == "\t" else " " * max(wcwidth(c), 0) for c in text)

    samples = [chr(code) for code in range(128)] + ["x = ttnn.to_torch(y)", "\tif a:\t b", "a\x1bb", "名前 = 1", "e\u0301", ""]
    for text in samples:
        assert _display_width(text) == slow_width(text), repr(text)
        assert _blank(text) == slow_blank(text), repr(text)


def test_grouped_and_pylint_formats(tmp_path):
    project = wide_project(tmp_path)
    grouped = cli_output(project, "grouped").splitlines()
    assert grouped[0] == "wide.py:"
    assert re.match(r"^  7:\d+ +TRC102 `ttnn.to_torch`", grouped[1])
    assert grouped[-1] == "Found 1 error."
    assert cli_output(project, "pylint").splitlines() == [
        "wide.py:7: [TRC102] `ttnn.to_torch` reads a device tensor back to the host inside a capture; read it after `execute_trace`"
    ]


def test_gitlab_code_quality_report(tmp_path):
    project = write_chain_package(tmp_path)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    issues = json.loads(cli_output(project, "gitlab"))
    assert issues
    for issue in issues:
        # The fields GitLab's Code Quality widget requires, with its severity names.
        assert set(issue) == {"description", "check_name", "fingerprint", "severity", "location"}
        assert issue["severity"] in ("info", "minor", "major", "critical", "blocker")
        assert issue["description"].startswith(issue["check_name"] + ": ")
        assert isinstance(issue["location"]["lines"]["begin"], int)
        assert not issue["location"]["path"].startswith(("/", "./"))
    assert len({issue["fingerprint"] for issue in issues}) == len(issues)
    assert {"pkg/main.py", "pkg/helpers.py"} == {issue["location"]["path"] for issue in issues}


def test_rdjson_diagnostic_result_with_utf8_byte_columns(tmp_path):
    result = json.loads(cli_output(wide_project(tmp_path), "rdjson"))
    assert result["source"]["name"] == "trace-lint"
    [diagnostic] = result["diagnostics"]
    assert diagnostic["severity"] in ("ERROR", "WARNING", "INFO")
    assert diagnostic["code"]["value"] == "TRC102"
    assert diagnostic["location"]["path"] == "wide.py"
    start, end = diagnostic["location"]["range"]["start"], diagnostic["location"]["range"]["end"]
    line = WIDE.splitlines()[6]
    byte_column = len(line[: line.index("ttnn.to_torch")].encode("utf-8")) + 1
    assert start == {"line": 7, "column": byte_column}
    assert end == {"line": 7, "column": byte_column + len("ttnn.to_torch(x)")}
