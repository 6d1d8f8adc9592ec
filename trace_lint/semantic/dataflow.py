"""Reads and bindings of names and attribute chains in a function, with positions.

Keys are normalized expressions (`x`, `self.cache.k`), so rules can ask "is this tensor
read after the region" without their own walk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from .bindings import assignment_targets, target_leaves
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


_STATEMENT = (cst.BaseSmallStatement, cst.BaseCompoundStatement)
# Nodes whose targets are stored to (an `AsName` of a with item, an `except` or an import;
# an annotation without a value stores nothing).
_STORES = frozenset({cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.AsName})


def accesses(function: FunctionInfo) -> list[Access]:
    """Every read and binding in the function body, in source order (parameters first)."""
    cached = getattr(function, "_accesses", None)
    if cached is not None:
        return cached
    module = function.module
    nodes = function.nodes
    # Bindings first, so the names and attributes they bind are not also counted as reads.
    binds: dict[int, cst.BaseExpression] = {}
    not_reads: set[int] = set()
    augmented: set[int] = set()
    for node in nodes:
        kind = type(node)  # concrete classes: cheaper than isinstance on libcst's ABCs
        targets: list[cst.BaseExpression] = []
        if kind in _STORES and (kind is not cst.AnnAssign or node.value is not None):
            # Names and attribute chains stored to (`self.x = ...`), from the binder's targets.
            targets = [leaf for target in assignment_targets(node) for leaf in target_leaves(target) if chain_key(leaf) is not None]
            if kind is cst.AugAssign:
                augmented.update(id(t) for t in targets)
        elif kind is cst.Attribute:
            not_reads.add(id(node.attr))
        elif kind is cst.Arg and node.keyword is not None:
            not_reads.add(id(node.keyword))
        for target in targets:
            binds[id(target)] = target
    out: list[Access] = []
    start = module.start(function.node.body)
    out.extend(Access(p, function.node, (start[0] - 1, 0), "bind", None) for p in function.params)

    def statement_of(node: cst.CSTNode) -> Optional[cst.CSTNode]:
        for ancestor in reversed(module.ancestors(node, stop=function.node)):
            if isinstance(ancestor, _STATEMENT):
                return ancestor
        return None

    for node in nodes:
        kind = type(node)
        if (kind is not cst.Name and kind is not cst.Attribute) or id(node) in not_reads:
            continue
        key = chain_key(node)
        if key is None:
            continue
        if id(node) in binds:
            if id(node) in augmented:
                out.append(Access(key, node, module.start(node), "read", statement_of(node)))
            out.append(Access(key, node, module.start(node), "bind", statement_of(node)))
        else:
            out.append(Access(key, node, module.start(node), "read", statement_of(node)))
    function._accesses = out  # type: ignore[attr-defined]
    return out
