"""Every rule's own VALID and INVALID examples, run through the real engine (as in Fixit).

The same examples feed `trace-lint rule CODE` and docs/rules.md."""

from __future__ import annotations

import pytest

from trace_lint.rules import ALL_RULES

from .conftest import findings_for

CASES = [
    pytest.param(rule, example, id=f"{rule.code}-{kind}-{index}")
    for rule in ALL_RULES
    for kind, examples in (("valid", rule.VALID), ("invalid", rule.INVALID))
    for index, example in enumerate(examples)
]


def test_every_rule_has_examples_and_docs():
    for rule in ALL_RULES:
        assert rule.VALID and rule.INVALID, rule.code
        assert rule.explanation("What it does") and rule.explanation("Why is this bad"), rule.code
        assert rule.help and rule.summary and rule.name, rule.code


@pytest.mark.parametrize("rule, example", CASES)
def test_rule_example(rule, example, tmp_path):
    findings = findings_for(example.source, tmp_path, select=("ALL",))
    lines = sorted(f.location.row for f in findings if f.code == rule.code)
    expected = sorted(getattr(example, "lines", ()))
    assert lines == expected, "\n".join(f"{f.location.row}: {f.code} {f.message}" for f in findings)


@pytest.mark.parametrize("rule", ALL_RULES, ids=[r.code for r in ALL_RULES])
def test_use_instead_example_is_clean(rule, tmp_path):
    """The "Use instead" code that `trace-lint rule CODE` prints passes every default rule."""
    assert rule.VALID, rule.code
    findings = findings_for(rule.VALID[0].source, tmp_path, select=None)
    assert not findings, "\n".join(f"{f.location.row}: {f.code} {f.message}" for f in findings)
