"""What the analyzer knows about values: which expressions are device tensors.

Flow-insensitive and conservative: a local name is a device tensor only if every binding
of it in the function is a device value. Unknown stays unknown, and rules stay silent.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from ..api_tables import tables
from .project import FunctionInfo, Project
from .regions import call_arguments, iter_body_nodes


class TensorFacts:
    def __init__(self, project: Project, function: Optional[FunctionInfo], module):
        self.project = project
        self.function = function
        self.module = module
        self._device_names: Optional[frozenset[str]] = None

    def qualified(self, expr: cst.BaseExpression) -> Optional[str]:
        return self.project.qualified_name(expr, self.module, self.function)

    def is_device_call(self, call: cst.Call) -> bool:
        """A ttnn call that returns a device tensor."""
        name = self.qualified(call.func)
        if name is None or not name.startswith("ttnn."):
            return False
        api = tables().ttnn
        if name in api.non_device_results:
            return False
        _, keywords = call_arguments(call)
        if name in api.host_to_device_if_device_kwarg or name in api.creators:
            return "device" in keywords and not _is_none(keywords["device"])
        if name in api.host_to_device:
            return True
        return name in api.registered_ops

    def is_device_value(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Call):
            return self.is_device_call(expr)
        if isinstance(expr, cst.Name):
            return expr.value in self.device_names()
        if isinstance(expr, cst.BinaryOperation):
            return self.is_device_value(expr.left) or self.is_device_value(expr.right)
        if isinstance(expr, cst.UnaryOperation) and not isinstance(expr.operator, cst.Not):
            return self.is_device_value(expr.expression)
        if isinstance(expr, cst.Subscript):
            return self.is_device_value(expr.value)
        return False

    def device_names(self) -> frozenset[str]:
        if self._device_names is not None:
            return self._device_names
        self._device_names = frozenset()  # guards recursion through aliases
        if self.function is None:
            return self._device_names
        other: set[str] = set()
        bindings: list[tuple[str, Optional[cst.BaseExpression]]] = []
        for param in (*self.function.node.params.params, *self.function.node.params.kwonly_params, *self.function.node.params.posonly_params):
            if param.annotation is not None and self.qualified(param.annotation.annotation) == "ttnn.Tensor":
                bindings.append((param.name.value, _ANNOTATED_DEVICE))
            else:
                other.add(param.name.value)
        for node in iter_body_nodes(self.function):
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    if isinstance(target.target, cst.Name):
                        bindings.append((target.target.value, node.value))
                    else:
                        for name in _names_in_target(target.target):
                            bindings.append((name, None))
            elif isinstance(node, cst.AnnAssign) and isinstance(node.target, cst.Name):
                bindings.append((node.target.value, node.value))
            elif isinstance(node, (cst.For, cst.CompFor)):
                for name in _names_in_target(node.target):
                    bindings.append((name, None))
            elif isinstance(node, cst.AsName):
                for name in _names_in_target(node.name):
                    bindings.append((name, None))
            elif isinstance(node, cst.NamedExpr) and isinstance(node.target, cst.Name):
                bindings.append((node.target.value, node.value))
        # A name is a device tensor when all its bindings are device values; iterate to a
        # fixed point so `y = x + 1` after `x = ttnn.add(...)` is known too.
        by_name: dict[str, list[Optional[cst.BaseExpression]]] = {}
        for name, value in bindings:
            by_name.setdefault(name, []).append(value)
        known: frozenset[str] = frozenset()
        for _ in range(8):
            self._device_names = known
            grown = set()
            for name, values in by_name.items():
                if name in other:
                    continue
                if all(v is _ANNOTATED_DEVICE or (v is not None and self.is_device_value(v)) for v in values):
                    grown.add(name)
            if frozenset(grown) == known:
                break
            known = frozenset(grown)
        self._device_names = known
        return self._device_names


_ANNOTATED_DEVICE = cst.Name("__device_tensor__")


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _names_in_target(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        out: list[str] = []
        for element in target.elements:
            out.extend(_names_in_target(element.value))
        return out
    if isinstance(target, cst.StarredElement):
        return _names_in_target(target.value)
    return []
