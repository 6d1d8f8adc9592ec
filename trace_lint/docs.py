"""docs/rules.md, rendered from the rule classes: a table of every rule, then each rule's docs
(the same text as `trace-lint rule CODE`). `python -m trace_lint.docs` prints it.

The same page ships inside the package (`trace_lint/data/rules.md`), so the links findings
carry (`url`, SARIF `helpUri`, the language server's code link) work from a wheel: they point
at the documentation URL of the package metadata (`[project.urls]`) where one is configured,
else at the shipped page. The rules are imported only to render: links stay cheap."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Optional

from . import __version__

DISTRIBUTION = "trace-lint"
# The copy of docs/rules.md in the package (package data); scripts/gen_rule_docs.py writes both.
SHIPPED_RULES_PAGE = Path(__file__).resolve().parent / "data" / "rules.md"
# `[project.urls]` labels, normalized as PEP 753 says: a page holding the rule anchors, or
# the documentation, whose `rules.md` holds them unless the URL is itself a page.
RULES_URL_LABELS = ("rules",)
DOCUMENTATION_URL_LABELS = ("documentation", "docs")
_PAGE_SUFFIXES = (".md", ".html", ".htm")


def _normalized_label(label: str) -> str:
    return re.sub(r"[\s\-_.]", "", label).lower()


def _project_urls() -> dict[str, str]:
    """label (normalized) -> URL from this package's installed metadata; empty when the package
    runs from a checkout that is not installed, or the metadata is of another version."""
    from importlib import metadata

    try:
        distribution = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return {}
    if distribution.version != __version__:
        return {}  # another trace-lint installed beside the one running
    urls: dict[str, str] = {}
    for entry in distribution.metadata.get_all("Project-URL") or []:
        label, _comma, url = entry.partition(",")
        if url.strip():
            urls.setdefault(_normalized_label(label), url.strip())
    return urls


@lru_cache(maxsize=1)
def rules_page_url() -> str:
    """The page that holds every rule's anchor (`#trc101`)."""
    urls = _project_urls()
    for label in RULES_URL_LABELS:
        if label in urls:
            return urls[label]
    for label in DOCUMENTATION_URL_LABELS:
        if label in urls:
            url = urls[label]
            if url.split("#")[0].split("?")[0].lower().endswith(_PAGE_SUFFIXES):
                return url.split("#")[0]
            return url.split("#")[0].rstrip("/") + "/rules.md"
    return SHIPPED_RULES_PAGE.as_uri()


def rule_url(code: str) -> str:
    return f"{rules_page_url()}#{code.lower()}"

HEADER = """\
# Rules

<!-- Generated from the rule classes by `python scripts/gen_rule_docs.py`; do not edit by hand. -->

Every rule, with what it flags and what to write instead. `trace-lint rule CODE` prints the
same text in a terminal. Rules marked opt-in run only when selected by their full code
(`--select TRC204`) or `ALL`.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _demote(markdown: str) -> str:
    """One heading level down, outside fenced code (Python comments start with `#` too)."""
    out = []
    fenced = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            line = "#" + line
        out.append(line)
    return "\n".join(out)


def render() -> str:
    from .rules import ALL_RULES

    parts = [HEADER, "| Code | Name | What it flags | Default |", "|---|---|---|---|"]
    for rule in ALL_RULES:
        default = "on" if rule.default_enabled else "opt-in"
        parts.append(f"| [{rule.code}](#{rule.code.lower()}) | `{rule.name}` | {_cell(rule.summary)} | {default} |")
    for rule in ALL_RULES:
        # An explicit anchor, so the links findings carry (`docs/rules.md#trc101`) land here.
        parts += ["", f'<a id="{rule.code.lower()}"></a>', "", _demote(rule.docs()).rstrip("\n")]
    return "\n".join(parts) + "\n"


README_START, README_END = "<!-- rules-table -->", "<!-- /rules-table -->"


def readme_table() -> str:
    """The rule table of README.md (between its rules-table markers)."""
    from .rules import ALL_RULES

    rows = ["| Code | Name | What it flags |", "|---|---|---|"]
    for rule in ALL_RULES:
        summary = _cell(rule.summary) + ("" if rule.default_enabled else " (opt-in)")
        rows.append(f"| {rule.code} | {rule.name} | {summary} |")
    return "\n".join(rows) + "\n"


def with_readme_table(readme: str) -> str:
    """README text with its rule table replaced by the generated one."""
    start = readme.index(README_START) + len(README_START)
    end = readme.index(README_END)
    return readme[:start] + "\n" + readme_table() + readme[end:]


if __name__ == "__main__":
    print(render(), end="")
