"""Output formats. Each takes the findings and the run's context and returns text."""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, replace
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


# Where each format lives (module in this package, function): a run imports only the one
# it writes, so no run pays for the others' imports (XML, the SARIF schema's URIs).
_FORMATS: dict[str, tuple[str, str]] = {
    "full": ("text", "full"),
    "concise": ("text", "concise"),
    "grouped": ("text", "grouped"),
    "json": ("json_formats", "json_array"),
    "json-lines": ("json_formats", "json_lines"),
    "sarif": ("sarif", "format_findings"),
    "github": ("github", "format_findings"),
    "gitlab": ("gitlab", "format_findings"),
    "junit": ("junit", "format_findings"),
    "pylint": ("text", "pylint"),
    "rdjson": ("rdjson", "format_findings"),
}
FORMAT_NAMES = tuple(_FORMATS)


def formatter(name: str) -> Optional[Formatter]:
    """The formatter of one format, or None: no such format, or its module cannot be imported."""
    place = _FORMATS.get(name)
    if place is None:
        return None
    module_name, function = place
    try:
        module = importlib.import_module(f"{__name__}.{module_name}")
    except ImportError:
        return None
    return _with_printable_names(getattr(module, function))


def formatters() -> dict[str, Formatter]:
    """Every format that can be written, by name."""
    found = {name: formatter(name) for name in FORMAT_NAMES}
    return {name: chosen for name, chosen in found.items() if chosen is not None}


def printable_name(name: str) -> str:
    """A file name as output can carry it: bytes that are not UTF-8 (Python keeps them as
    lone surrogates) and control characters written as `\\xNN` escapes, so that no format
    fails to encode a name, every output stays valid UTF-8 and a name stays on its line."""
    if name.isprintable():
        return name
    try:
        text = name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that stands for no byte
        text = name.encode("utf-8", "backslashreplace").decode("utf-8")
    return _CONTROL.sub(_escape, text)


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


# C0 and C1 controls, DEL and the Unicode line separators: never part of a name that a
# line-based reader can take.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _printable_finding(finding: Finding) -> Finding:
    def step(related):
        name = printable_name(related.filename)
        return related if name == related.filename else replace(related, filename=name)

    return replace(
        finding,
        filename=printable_name(finding.filename),
        chains=[[step(s) for s in chain] for chain in finding.chains],
        related=[step(r) for r in finding.related],
    )


def _with_printable_names(formatter: Formatter) -> Formatter:
    """`formatter` over findings whose file names can be written. One that writes names in
    its own way (`raw_names`: SARIF percent-encodes the bytes of its URIs) gets them as they are."""
    if getattr(formatter, "raw_names", False):
        return formatter

    def render(findings: Sequence[Finding], context: OutputContext) -> str:
        if all(_is_printable(f) for f in findings):
            return formatter(findings, context)
        originals: dict[str, str] = {}
        printable = []
        for finding in findings:
            shown = _printable_finding(finding)
            originals.setdefault(shown.filename, finding.filename)
            printable.append(shown)
        read = context.read_source
        return formatter(printable, replace(context, read_source=lambda name: read(originals.get(name, name))))

    return render


def _is_printable(finding: Finding) -> bool:
    names = [finding.filename, *(s.filename for chain in finding.chains for s in chain), *(r.filename for r in finding.related)]
    return all(printable_name(name) == name for name in names)


def rule_help(finding) -> Optional[str]:
    """The advice of the finding's rule: kept on the finding by the run that reported it
    (the rules are imported, with libcst, only for findings made without it)."""
    if finding.help is not None:
        return finding.help
    from ..core.registry import BY_CODE

    rule = BY_CODE.get(finding.code)
    return rule.help if rule is not None and rule.help else None

