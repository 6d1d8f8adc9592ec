"""Where a rule's docs are: the `Rules` or `Documentation` URL of the installed package's
metadata, else the rules page shipped in the package."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from .. import __version__

DISTRIBUTION = "trace-lint"
# The copy of docs/rules.md in the package (package data); scripts/gen_rule_docs.py writes both.
SHIPPED_RULES_PAGE = Path(__file__).resolve().parent.parent / "data" / "rules.md"
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
