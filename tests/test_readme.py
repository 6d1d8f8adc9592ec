"""README.md keeps its promises: two Quick start commands, a rule table generated from the rules."""

from __future__ import annotations

import re
from pathlib import Path

from trace_lint.docs import with_readme_table

README = Path(__file__).resolve().parent.parent / "README.md"


def test_rule_table_matches_the_rules():
    text = README.read_text(encoding="utf-8")
    assert with_readme_table(text) == text, "README.md's rule table is stale: run python scripts/gen_rule_docs.py"


def test_quick_start_has_exactly_two_commands():
    text = README.read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    commands = [line for line in block.splitlines() if line.strip()]
    assert len(commands) == 2
    assert "examples/" in commands[0] and "pytest" in commands[1]


def _usage() -> str:
    text = README.read_text(encoding="utf-8")
    return text.split("## Usage", 1)[1].split("\n## ", 1)[0]


def test_usage_names_only_options_the_cli_has():
    from .cli_helpers import run_cli

    helps = "".join(run_cli(*command, "--help").stdout.decode() for command in ((), ("check",), ("rule",)))
    named = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+|-[a-zA-Z])\b", _usage()))
    missing = sorted(option for option in named if not re.search(rf"(?<![\w-]){re.escape(option)}\b", helps))
    assert not missing, f"README Usage names options the CLI does not have: {missing}"


def test_usage_lists_every_output_format():
    from trace_lint.output import FORMAT_NAMES

    listed = re.search(r"`--output-format` \(([^)]*)\)", _usage()).group(1)
    assert re.findall(r"`([a-z-]+)`", listed) == list(FORMAT_NAMES)
