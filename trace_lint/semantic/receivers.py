"""Which parameter of a function the receiver fills: the one answer every stage asks.

A method defined in a class body binds its first positional parameter to the instance (a
class method's to the class); a static method and a plain function bind none.
"""

from __future__ import annotations

from typing import Any, Optional, Protocol

import libcst as cst


class FunctionInfo(Protocol):
    """What these answers read of `project.FunctionInfo` (which imports this module)."""

    node: Any  # cst.FunctionDef, or cst.Lambda
    cls: Any  # the ClassInfo whose body defines it, or None
    bindings: Any


def has_decorator(function: "FunctionInfo", name: str) -> bool:
    """Decorated with `@name` (`staticmethod`, `classmethod`; also spelled `@mod.name` or
    `@name(...)`)."""
    return any(_decorator_name(d) == name for d in getattr(function.node, "decorators", ()))


def receiver_parameter(function: "FunctionInfo") -> Optional[str]:
    """The parameter the receiver fills (`self`, a class method's `cls`), or None."""
    node = function.node
    if function.cls is None or not isinstance(node, cst.FunctionDef):
        return None
    if has_decorator(function, "staticmethod"):
        return None
    positional = (*node.params.posonly_params, *node.params.params)
    return positional[0].name.value if positional else None


def is_receiver(expr: cst.BaseExpression, function: "FunctionInfo", anchor: Optional[cst.CSTNode]) -> bool:
    """The name is the receiver parameter, still bound to it where `anchor` reads it (a class
    method's `cls` counts: the class, whose methods dispatch as an instance's do)."""
    if not isinstance(expr, cst.Name) or expr.value != receiver_parameter(function):
        return False
    return all(b.kind == "param" for b in function.bindings.reaching(expr.value, anchor))


def _decorator_name(decorator: cst.Decorator) -> str:
    expr = decorator.decorator
    if isinstance(expr, cst.Call):
        expr = expr.func
    return expr.value if isinstance(expr, cst.Name) else expr.attr.value if isinstance(expr, cst.Attribute) else ""
