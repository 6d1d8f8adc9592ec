"""docs/rules.md is generated from the rule classes; a change to a rule's docs must come
with the regenerated file."""

from __future__ import annotations

import re
import subprocess
import sys

from trace_lint.docs import render
from trace_lint.rules import ALL_RULES

from .cli_helpers import REPO

RULES_MD = REPO / "docs" / "rules.md"


def test_committed_rules_md_matches_the_code():
    assert RULES_MD.is_file(), "docs/rules.md is missing: run python scripts/gen_rule_docs.py"
    assert RULES_MD.read_text(encoding="utf-8") == render(), (
        "docs/rules.md is out of date with the rule classes: run python scripts/gen_rule_docs.py"
    )


def test_every_rule_has_a_row_an_anchor_and_its_full_docs():
    text = render()
    for rule in ALL_RULES:
        assert f"| [{rule.code}](#{rule.code.lower()}) |" in text
        assert f'<a id="{rule.code.lower()}"></a>' in text
        assert f"## {rule.name} ({rule.code})" in text
        assert rule.explanation("What it does") in text
        # Example code keeps its own `#` comments: only headings outside fences move down.
        assert rule.INVALID[0].source.rstrip("\n") in text
    assert re.findall(r"^# .*", text, re.MULTILINE) == ["# Rules"]  # one top heading


def test_script_check_mode_fails_on_drift_and_regenerates(tmp_path):
    # The script finds the package and docs/ beside itself: give it a stale copy to judge.
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "gen_rule_docs.py"
    script.write_text((REPO / "scripts" / "gen_rule_docs.py").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "trace_lint").symlink_to(REPO / "trace_lint", target_is_directory=True)
    (tmp_path / "docs").mkdir()
    stale = tmp_path / "docs" / "rules.md"
    stale.write_text(render().replace("Host-to-device write", "Something else"), encoding="utf-8")

    drift = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert drift.returncode == 1 and "out of date" in drift.stderr
    fixed = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert fixed.returncode == 0, fixed.stderr
    assert stale.read_text(encoding="utf-8") == render()
    again = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
