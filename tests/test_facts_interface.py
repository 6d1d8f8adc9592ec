"""Rules read the analysis through `capture/facts.py` (ProgramFacts, RuleContext) only: no
rule reaches the engine, the call resolver or the project, and none asks by table name the
questions the framework plug-ins answer (what begins or ends a capture, a tensor's methods)."""

from __future__ import annotations

import ast
from pathlib import Path

import trace_lint.rules

RULES_DIR = Path(trace_lint.rules.__file__).parent

# The engine's internals, whatever a rule names them by.
FORBIDDEN_ATTRIBUTES = {"analysis", "engine", "_engine", "resolver", "project"}
FORBIDDEN_NAMES = {"Engine", "CallResolver", "Project"}
FORBIDDEN_MODULES = {"capture.engine", "semantic.calls.CallResolver"}
# Table entries whose question `ProgramFacts` asks the plug-ins (`begins_capture`,
# `ends_capture`, `is_tensor_method`).
FRAMEWORK_QUESTIONS = {"capture_begin", "capture_end", "graph_context", "graph_begin_methods", "graph_end_methods", "tensor_methods"}


def reaches_past_the_facts(source: str) -> list[str]:
    """Where a module reaches the engine's internals or asks a plug-in's question by table name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRIBUTES | FRAMEWORK_QUESTIONS:
            found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.ImportFrom):
            module = (node.module or "").lstrip(".")
            for alias in node.names:
                if module in FORBIDDEN_MODULES or alias.name in FORBIDDEN_NAMES:
                    found.append(f"line {node.lineno}: from {module} import {alias.name}")
        elif isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            found.append(f"line {node.lineno}: {node.id}")
    return found


def test_no_rule_reaches_the_engine():
    offenders = {
        path.name: found
        for path in sorted(RULES_DIR.glob("*.py"))
        if (found := reaches_past_the_facts(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


def test_the_check_sees_what_it_forbids():
    """The shapes rules used before the facts interface are caught."""
    old = '''
from ..capture.engine import Engine, RuleContext

class R(Rule):
    def check_project(self):
        for module in self.analysis.project.modules:
            targets = self.analysis.resolver.resolve_all(call, function)

def reads(context, call):
    engine = context.engine
    return context.tables.ttnn.capture_end
'''
    found = reaches_past_the_facts(old)
    assert {line.split(": ", 1)[1] for line in found} == {
        "from capture.engine import Engine",
        "from capture.engine import RuleContext",
        ".analysis",
        ".project",
        ".resolver",
        ".engine",
        ".capture_end",
    }
