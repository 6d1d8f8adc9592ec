"""Small queries on a function's nodes and a call's arguments, shared by every stage."""

from __future__ import annotations

import libcst as cst

from .project import FunctionInfo


def iter_body_nodes(function: FunctionInfo) -> list[cst.CSTNode]:
    """Every node of a function's body in source order, not entering nested defs, classes or lambdas."""
    return function.nodes


def call_arguments(call: cst.Call) -> tuple[list[cst.BaseExpression], dict[str, cst.BaseExpression]]:
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    return positional, keywords


def path_to(function: FunctionInfo, target: cst.CSTNode) -> list[cst.CSTNode]:
    """The ancestors of `target` inside the function, outermost first."""
    return function.module.ancestors(target, stop=function.node)


def statements_after(module, node: cst.CSTNode) -> list[cst.CSTNode]:
    """The statements after `node` in its block (empty where it is in none: an `elif` has
    its `if` for a parent, not a block)."""
    block = getattr(module.parents.get(id(node)), "body", ())
    siblings = list(block) if isinstance(block, (list, tuple)) else []
    return siblings[siblings.index(node) + 1 :] if node in siblings else []


def always_leaves(body: cst.BaseSuite) -> bool:
    """The block ends in `raise` or `return` on every path (a plain last statement)."""
    statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
    if not statements:
        return False
    last = statements[-1]
    smalls = last.body if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else []
    return bool(smalls) and isinstance(smalls[-1], (cst.Raise, cst.Return))


def is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def is_sliced(expr: cst.BaseExpression) -> bool:
    """`x[:n]`, `x[a:b, i]`: a subscript with a slice among its parts (a new tensor, or a
    view or sublist, rather than one element)."""
    return isinstance(expr, cst.Subscript) and any(isinstance(e.slice, cst.Slice) for e in expr.slice)
