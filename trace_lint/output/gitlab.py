"""`gitlab`: a GitLab Code Quality report (the `artifacts:reports:codequality` file), a JSON
list of issues with `description`, `check_name`, `fingerprint`, `severity` and
`location {path, lines {begin, end}}`. Paths are relative to the repository root, as the
merge request widget links them."""

from __future__ import annotations

import hashlib
import json
from typing import Sequence

from ..core.findings import Finding
from . import OutputContext
from ._paths import relative_to_root, repository_root

# GitLab's scale is info, minor, major, critical, blocker.
_SEVERITY = {"error": "major", "warning": "minor", "info": "info", "hint": "info"}


def format_findings(findings: Sequence[Finding], context: OutputContext) -> str:
    root = repository_root()
    issues = []
    seen: dict[tuple[str, str, str], int] = {}
    lines_of: dict[str, list[str]] = {}
    for finding in findings:
        path = relative_to_root(finding.filename, root) or finding.filename.replace("\\", "/")
        if finding.filename not in lines_of:
            source = context.read_source(finding.filename)
            lines_of[finding.filename] = source.splitlines() if source is not None else []
        lines = lines_of[finding.filename]
        row = finding.location.row
        # The flagged line's text, not its number: the fingerprint survives edits above it.
        anchor = " ".join(lines[row - 1].split()) if 1 <= row <= len(lines) else str(row)
        key = (finding.code, path, anchor)
        occurrence = seen.get(key, 0)
        seen[key] = occurrence + 1
        digest = hashlib.sha256("\0".join((*key, str(occurrence))).encode("utf-8")).hexdigest()
        issues.append(
            {
                "description": f"{finding.code}: {finding.message}",
                "check_name": finding.code,
                "fingerprint": digest[:32],
                "severity": _SEVERITY.get(finding.severity, "major"),
                "location": {"path": path, "lines": {"begin": row, "end": max(row, finding.end_location.row)}},
            }
        )
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"
