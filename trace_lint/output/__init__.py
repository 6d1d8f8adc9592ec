"""Output formats. Each takes the findings and the run's context and returns text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from ..core.findings import Finding


@dataclass(frozen=True)
class OutputContext:
    # Source text by display path, for code frames; missing files get no frame.
    read_source: Callable[[str], str | None]
    files_checked: int = 0
    color: bool = False
    # Errors the run reported besides findings: a run with errors never says "All checks passed!".
    errors: int = 0
    # The closing "Found N errors." / "All checks passed!" line of the text formats (--quiet drops it).
    summary: bool = True
    # Unsafe fixes count as available (`--unsafe-fixes`): marked `[*]` like safe ones.
    unsafe_fixes: bool = False


Formatter = Callable[[Sequence[Finding], OutputContext], str]


def formatters() -> dict[str, Formatter]:
    from . import json_formats, text

    return {
        "full": text.full,
        "concise": text.concise,
        "json": json_formats.json_array,
        "json-lines": json_formats.json_lines,
        **_extra_formatters(),
    }


def _extra_formatters() -> dict[str, Formatter]:
    """Formats for CI systems, each in its own module."""
    found: dict[str, Formatter] = {}
    for module_name, names in (("sarif", ("sarif",)), ("github", ("github",)), ("junit", ("junit",))):
        try:
            module = __import__(f"{__name__}.{module_name}", fromlist=["format_findings"])
        except ImportError:
            continue
        for name in names:
            found[name] = module.format_findings
    return found


FORMAT_NAMES = ("full", "concise", "json", "json-lines", "sarif", "github", "junit")


def rule_help(finding) -> Optional[str]:
    """The advice of the finding's rule: kept on the finding by the run that reported it
    (the rules are imported, with libcst, only for findings made without it)."""
    if finding.help is not None:
        return finding.help
    from ..core.registry import BY_CODE

    rule = BY_CODE.get(finding.code)
    return rule.help if rule is not None and rule.help else None

