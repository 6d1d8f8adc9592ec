"""`sarif`: SARIF 2.1.0, in the shape GitHub code scanning accepts.

Locations are relative to the repository root (`%SRCROOT%`); regions are 1-based with an
exclusive `endColumn`, columns counted in code points (`columnKind`). Each call chain of a
finding (one per capture that reaches it) becomes a `codeFlow` with one `threadFlow` from
the capture site down to the finding; its steps are also `relatedLocations`, linked from
the message chain by chain.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Optional, Sequence
from urllib.parse import quote

from .. import __version__
from ..core.findings import Finding, Location, Related
from ..core.rule_links import rule_url, rules_page_url
from . import OutputContext, printable_name
from ._paths import relative_to_root, repository_root

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
FINGERPRINT = "traceLintFinding/v1"

_LEVEL = {"error": "error", "warning": "warning", "info": "note", "hint": "note"}
_LINE_END = re.compile(r"\r\n|\r|\n")


def _text(text: str) -> str:
    # In SARIF message text, brackets start links: literal ones are escaped.
    return text.replace("[", "\\[").replace("]", "\\]")


def _rule_descriptor(rule) -> dict:
    what = rule.explanation("What it does") or rule.summary
    why = rule.explanation("Why is this bad")
    plain = what + (f"\n\nWhy is this bad? {why}" if why else "") + (f"\n\n{rule.help}" if rule.help else "")
    descriptor = {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": what},
        "help": {"text": plain, "markdown": rule.docs()},
        "defaultConfiguration": {"level": _LEVEL.get(rule.severity, "error"), "enabled": bool(rule.default_enabled)},
        "properties": {"tags": ["trace-safety", f"TRC{rule.code[3]}xx"]},
    }
    descriptor["helpUri"] = rule_url(rule.code)
    return descriptor


def _artifact(filename: str, root: Path) -> dict:
    relative = relative_to_root(filename, root)
    if relative is None:  # outside the repository: an absolute URI, no base
        return {"uri": Path(filename).resolve().as_uri()}
    # The name's own bytes, percent-encoded: a name that is not UTF-8 still names its file.
    return {"uri": quote(os.fsencode(relative)), "uriBaseId": SRCROOT}


def _region(start: Location, end: Optional[Location]) -> dict:
    region = {"startLine": start.row, "startColumn": start.column}
    if end is not None and (end.row, end.column) > (start.row, start.column):
        region["endLine"] = end.row
        region["endColumn"] = end.column
    elif end is not None:
        region["endLine"] = start.row  # a point: SARIF extends it to the end of the line
    return region


def _fingerprint(finding: Finding, line_text: Optional[str], occurrence: int, uri: str) -> str:
    """Stable while the flagged line's text is unchanged, even when lines move above it."""
    anchor = " ".join(line_text.split()) if line_text is not None else str(finding.location.row)
    digest = hashlib.sha256("\0".join((finding.code, uri, anchor)).encode("utf-8")).hexdigest()
    return f"{digest[:32]}:{occurrence}"


def _code_flow(chain: list[Related], finding: Finding, artifact: dict, root: Path) -> dict:
    """One capture's path: its steps, then the finding itself as the last location."""

    def flow_location(artifact_location: dict, start: Location, end: Optional[Location], text: str) -> dict:
        return {
            "location": {
                "physicalLocation": {"artifactLocation": artifact_location, "region": _region(start, end)},
                "message": {"text": _text(text)},
            }
        }

    locations = [flow_location(_artifact(step.filename, root), step.location, None, step.message) for step in chain]
    locations.append(flow_location(artifact, finding.location, finding.end_location, f"{finding.code}: {finding.message}"))
    return {
        "message": {"text": f"captured at {printable_name(chain[0].filename)}:{chain[0].location.row}"},
        "threadFlows": [{"locations": locations}],
    }


def sarif_log(findings: Sequence[Finding], context: OutputContext, root: Optional[Path] = None) -> dict:
    from ..rules import ALL_RULES  # lazy: libcst loads only when SARIF is asked for

    root = root or repository_root()
    index = {rule.code: position for position, rule in enumerate(ALL_RULES)}
    lines_cache: dict[str, Optional[list[str]]] = {}
    seen: dict[tuple[str, str, str], int] = {}
    results = []
    for finding in findings:
        if finding.filename not in lines_cache:
            source = context.read_source(finding.filename)
            lines_cache[finding.filename] = None if source is None else _LINE_END.split(source)
        lines = lines_cache[finding.filename]
        line_text = lines[finding.location.row - 1] if lines and 1 <= finding.location.row <= len(lines) else None
        artifact = _artifact(finding.filename, root)
        key = (finding.code, artifact["uri"], " ".join((line_text or "").split()))
        occurrence = seen.get(key, 0)
        seen[key] = occurrence + 1

        related: list[dict] = []
        ids: dict[Related, int] = {}
        for chain in finding.chains or [finding.related]:
            for step in chain:
                if step not in ids:
                    ids[step] = len(ids) + 1
                    related.append(
                        {
                            "id": ids[step],
                            "physicalLocation": {
                                "artifactLocation": _artifact(step.filename, root),
                                "region": _region(step.location, None),
                            },
                            "message": {"text": _text(step.message)},
                        }
                    )
        message = _text(finding.message)
        paths = [" → ".join(f"[{_text(step.message)}]({ids[step]})" for step in chain) for chain in finding.chains if chain]
        if paths:
            message += " (captured via " + "; and via ".join(paths) + ")"
        code_flows = [_code_flow(chain, finding, artifact, root) for chain in finding.chains if chain]

        result = {
            "ruleId": finding.code,
            "level": _LEVEL.get(finding.severity, "error"),
            "message": {"text": message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": artifact,
                        "region": _region(finding.location, finding.end_location),
                    }
                }
            ],
            "partialFingerprints": {FINGERPRINT: _fingerprint(finding, line_text, occurrence, artifact["uri"])},
        }
        if finding.code in index:
            result["ruleIndex"] = index[finding.code]
        if related:
            result["relatedLocations"] = related
        if code_flows:
            result["codeFlows"] = code_flows
        results.append(result)

    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "trace-lint",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": [_rule_descriptor(rule) for rule in ALL_RULES],
                        "informationUri": rules_page_url(),
                    }
                },
                "originalUriBaseIds": {SRCROOT: {"uri": root.as_uri().rstrip("/") + "/"}},
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def format_findings(findings: Sequence[Finding], context: OutputContext) -> str:
    return json.dumps(sarif_log(findings, context), indent=2, ensure_ascii=False) + "\n"


format_findings.raw_names = True  # type: ignore[attr-defined]  # URIs carry the bytes
