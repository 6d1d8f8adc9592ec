"""The rule catalogue: every rule class, by code, and rule selection."""

from __future__ import annotations

from typing import Iterable, Optional

from ..core import registry
from . import allocation, analysis, cuda_graph, host_logic, lifecycle, transfers
from .base import Invalid, Rule, Valid

ALL_RULES: list[type[Rule]] = sorted(
    [*analysis.RULES, *transfers.RULES, *host_logic.RULES, *allocation.RULES, *lifecycle.RULES, *cuda_graph.RULES],
    key=lambda rule: rule.code,
)
BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}
for _rule in ALL_RULES:
    # The registry's precedence, as the classes the engine runs beside a rule.
    _rule.overruled_by = tuple(BY_CODE[code] for code in registry.OVERRULED_BY.get(_rule.code, ()) if code in BY_CODE)


def selected_codes(select: Optional[Iterable[str]], extend_select: Iterable[str], ignore: Iterable[str]) -> set[str]:
    """The enabled codes (`config.selected_rule_codes`: ruff's semantics and precedence)."""
    from ..core.config import selected_rule_codes

    return selected_rule_codes(select, extend_select, ignore)


def rule_for(code: str) -> Optional[type[Rule]]:
    return BY_CODE.get(code.upper())


__all__ = ["ALL_RULES", "BY_CODE", "Invalid", "Rule", "Valid", "rule_for", "selected_codes"]
