"""Overlapping rules declare which wins (`wins_over` in core/registry.py) and one place of the
capture stage applies it (capture/precedence.py): TRC202 over TRC102 for a device read that is
the condition of control flow (RULES.md, TRC102: "TRC202 instead, not both")."""

from __future__ import annotations

from trace_lint.capture import precedence
from trace_lint.core.registry import BY_CODE, OVERRULED_BY

from tests.conftest import findings_for

BRANCH = """\
import ttnn


def capture(device, x):
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    y = ttnn.relu(x)
    if y.item() > 0:
        z = y.item()
    while ttnn.to_torch(y).any():
        y = ttnn.relu(y)
    ttnn.end_trace_capture(device, tid, cq_id=0)
    return y
"""


def rows(found) -> set[tuple[int, str]]:
    return {(f.location.row, f.code) for f in found}


def test_the_registry_declares_the_overlap():
    assert BY_CODE["TRC202"].wins_over == ("TRC102",)
    assert OVERRULED_BY["TRC102"] == ("TRC202",)
    assert all(not OVERRULED_BY[code] for code in BY_CODE if code != "TRC102")


def test_the_winner_reports_the_read_in_a_test_and_the_loser_the_read_in_the_body(tmp_path):
    # Line 7's test and line 9's test are TRC202's; the read in the body (line 8) is TRC102's.
    assert rows(findings_for(BRANCH, tmp_path, select=("TRC102", "TRC202"))) == {(7, "TRC202"), (8, "TRC102"), (9, "TRC202")}


def test_with_the_winner_deselected_the_read_in_a_test_is_still_not_the_losers(tmp_path):
    # RULES.md: a read that is the condition of control flow "is TRC202 instead": it is
    # TRC202's finding, which the run does not report; TRC102 does not take it over.
    assert rows(findings_for(BRANCH, tmp_path, select=("TRC102",))) == {(8, "TRC102")}
    assert rows(findings_for(BRANCH, tmp_path, select=("TRC1", "TRC202"), ignore=("TRC202",))) == {(8, "TRC102")}


def test_the_precedence_decides_not_the_losing_rule(tmp_path, monkeypatch):
    # Without the declared overlap both rules report the reads in the tests.
    monkeypatch.setattr(precedence, "OVERRULED_BY", {})
    assert rows(findings_for(BRANCH, tmp_path, select=("TRC102", "TRC202"))) == {
        (7, "TRC202"), (7, "TRC102"), (8, "TRC102"), (9, "TRC202"), (9, "TRC102"),
    }


def test_the_command_line_decides_the_same_with_or_without_cache_and_workers(tmp_path):
    from tests.cli_helpers import finding_set

    project = tmp_path / "project"
    project.mkdir()
    (project / "example.py").write_text(BRANCH, encoding="utf-8")
    both = {("example.py", 7, "TRC202"), ("example.py", 8, "TRC102"), ("example.py", 9, "TRC202")}
    for extra in (("--no-cache",), (), (), ("--no-cache", "-j2")):  # cold cache, then warm
        assert finding_set(project, "--select", "TRC102,TRC202", *extra, cwd=project) == both
        assert finding_set(project, "--select", "TRC102,TRC202", "--ignore", "TRC202", *extra, cwd=project) == {("example.py", 8, "TRC102")}
