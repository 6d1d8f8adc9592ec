"""`junit`: JUnit XML for CI test reports. One test suite; one failing test case per finding
(named by code and position, grouped by file as the class name), or a single passing case
when there is nothing to report."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Sequence

from ..core.findings import Finding
from . import OutputContext, rule_help

# Characters XML 1.0 cannot carry at all, even escaped.
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _clean(text: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _details(finding: Finding) -> str:
    lines = [f"{finding.filename}:{finding.location.row}:{finding.location.column}: {finding.code} {finding.message}"]
    for number, chain in enumerate(finding.chains, start=1):
        which = f" {number} of {len(finding.chains)}" if len(finding.chains) > 1 else ""
        lines.append(f"captured via chain{which} (capture site first):")
        lines += [f"  {s.filename}:{s.location.row}:{s.location.column}: {s.message}" for s in chain]
    advice = rule_help(finding)
    if advice:
        lines.append(f"help: {advice}")
    if finding.url:
        lines.append(finding.url)
    return "\n".join(lines)


def format_findings(findings: Sequence[Finding], context: OutputContext) -> str:
    count = str(max(len(findings), 1))
    failures = str(len(findings))
    suites = ET.Element("testsuites", name="trace-lint", tests=count, failures=failures, errors="0")
    suite = ET.SubElement(suites, "testsuite", name="trace-lint", tests=count, failures=failures, errors="0", skipped="0")
    if not findings:
        ET.SubElement(suite, "testcase", name="no findings", classname="trace-lint")
    for finding in findings:
        case = ET.SubElement(
            suite,
            "testcase",
            name=_clean(f"{finding.code} at {finding.location.row}:{finding.location.column}"),
            classname=_clean(finding.filename),
            file=_clean(finding.filename),
            line=str(finding.location.row),
        )
        failure = ET.SubElement(case, "failure", message=_clean(finding.message), type=finding.code)
        failure.text = _clean(_details(finding))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
