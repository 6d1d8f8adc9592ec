"""docs/rules.md, rendered from the rule classes: a table of every rule, then each rule's docs
(the same text as `trace-lint rule CODE`). `python -m trace_lint.docs` prints it.

The same page ships inside the package (`trace_lint/data/rules.md`), so the links findings
carry (`url`, SARIF `helpUri`, the language server's code link) work from a wheel: they point
at the documentation URL of the package metadata (`[project.urls]`) where one is configured,
else at the shipped page. The rules are imported only to render: links stay cheap."""

from __future__ import annotations



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
