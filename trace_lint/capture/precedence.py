"""Overlapping rules: where a rule that wins (`wins_over` in `core/registry.py`) reports, the
findings of the rules it wins over inside what its finding covers are not reported. Applied
once, to a run's findings, whether or not the winner is selected: the overlap belongs to the
winner's code (RULES.md: "a read that is the condition of control flow is TRC202 instead")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ..core.findings import Finding
from ..core.registry import OVERRULED_BY

Position = tuple[int, int]  # (1-based line, 0-based column)


@dataclass(frozen=True)
class Claim:
    """The span a winning rule's finding covers (TRC202: the test of the branch)."""

    code: str
    filename: str
    start: Position
    end: Position


def decide(findings: Iterable[Finding], claims: Iterable[Claim], reported: set[str]) -> list[Finding]:
    """The findings of the `reported` codes that no winner's claim covers."""
    by_file: dict[str, list[Claim]] = {}
    for claim in claims:
        by_file.setdefault(claim.filename, []).append(claim)
    kept = []
    for finding in findings:
        if finding.code not in reported:
            continue  # ran only for what it claims
        winners = OVERRULED_BY.get(finding.code, ())
        at = (finding.location.row, finding.location.column - 1)
        if winners and any(c.code in winners and c.start <= at < c.end for c in by_file.get(finding.filename, ())):
            continue
        kept.append(finding)
    return kept
