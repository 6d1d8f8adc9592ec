"""Reads and bindings of names and attribute chains in a function, with positions.

Keys are normalized expressions (`x`, `self.cache.k`), so rules can ask "is this tensor
read after the region" without their own walk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from .project import FunctionInfo

Position = tuple[int, int]


@dataclass(frozen=True)
class Access:
    key: str
    node: cst.CSTNode
    position: Position
    kind: str  # "read" | "bind"
    statement: Optional[cst.CSTNode]  # the small statement (or compound header) it belongs to


def chain_key(expr: cst.BaseExpression) -> Optional[str]:
    """`self.a.b` -> "self.a.b"; None unless a Name or an attribute chain rooted at a Name."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        base = chain_key(expr.value)
        return f"{base}.{expr.attr.value}" if base else None
    return None


class _AccessCollector(cst.CSTVisitor):
    def __init__(self, function: FunctionInfo):
        super().__init__()
        self.function = function
        self.module = function.module
        self.accesses: list[Access] = []
        self._targets: set[int] = set()
        self._statement: list[cst.CSTNode] = []

    def _add(self, node: cst.CSTNode, kind: str) -> None:
        key = chain_key(node)  # type: ignore[arg-type]
        if key is not None:
            statement = self._statement[-1] if self._statement else None
            self.accesses.append(Access(key, node, self.module.start(node), kind, statement))

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and node is not self.function.node:
            return False
        if isinstance(node, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            self._statement.append(node)
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if isinstance(original_node, (cst.BaseSmallStatement, cst.BaseCompoundStatement)) and self._statement and self._statement[-1] is original_node:
            self._statement.pop()
        super().on_leave(original_node)

    def _bind_target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind_target(element.value)
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value)
        elif chain_key(target) is not None:
            self._add(target, "bind")
            self._targets.add(id(target))
            if isinstance(target, cst.Attribute):
                self._targets.add(id(target.attr))

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._bind_target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind_target(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._add(node.target, "read")
        self._bind_target(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._bind_target(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind_target(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._bind_target(node.name)  # type: ignore[arg-type]
        self._targets.add(id(node.name))

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind_target(node.target)

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._targets.add(id(node.keyword))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._targets.add(id(node.attr))
        if id(node) not in self._targets:
            self._add(node, "read")

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self._targets:
            self._add(node, "read")


def accesses(function: FunctionInfo) -> list[Access]:
    cached = getattr(function, "_accesses", None)
    if cached is None:
        collector = _AccessCollector(function)
        function.node.body.visit(collector)
        start = function.module.start(function.node.body)
        params = [Access(p, function.node, (start[0] - 1, 0), "bind", None) for p in function.params]
        cached = params + collector.accesses
        function._accesses = cached  # type: ignore[attr-defined]
    return cached
