"""The rule catalogue: every rule class, by code, and rule selection."""

from __future__ import annotations

from typing import Iterable, Optional

from . import allocation, analysis, cuda_graph, host_logic, lifecycle, transfers
from .base import Invalid, Rule, Valid

ALL_RULES: list[type[Rule]] = sorted(
    [*analysis.RULES, *transfers.RULES, *host_logic.RULES, *allocation.RULES, *lifecycle.RULES, *cuda_graph.RULES],
    key=lambda rule: rule.code,
)
BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}


def _matches(code: str, selector: str, exact_for_opt_in: bool) -> bool:
    if selector == "ALL":
        return True
    if exact_for_opt_in and not BY_CODE[code].default_enabled:
        return code == selector
    return code.startswith(selector)


def selected_codes(select: Optional[Iterable[str]], extend_select: Iterable[str], ignore: Iterable[str]) -> set[str]:
    """ruff's semantics: `select` replaces the default set (None: not given; empty: no
    rules), `extend-select` adds, `ignore` removes. The more specific selector wins
    (`select TRC102` with `ignore TRC1` keeps TRC102; `ALL` is the least specific); between
    equally specific ones, `ignore` does. Opt-in rules are enabled only by their full code
    or `ALL`."""
    chosen = [*(select or ()), *extend_select]
    ignored = list(ignore)
    codes = {c for c, rule in BY_CODE.items() if rule.default_enabled} if select is None else set()
    for level in sorted({_specificity(s) for s in (*chosen, *ignored)}):
        codes |= {c for c in BY_CODE if any(_specificity(s) == level and _matches(c, s, True) for s in chosen)}
        codes -= {c for c in BY_CODE if any(_specificity(s) == level and _matches(c, s, False) for s in ignored)}
    return codes


def _specificity(selector: str) -> int:
    return -1 if selector == "ALL" else len(selector)


def rule_for(code: str) -> Optional[type[Rule]]:
    return BY_CODE.get(code.upper())


__all__ = ["ALL_RULES", "BY_CODE", "Invalid", "Rule", "Valid", "rule_for", "selected_codes"]
