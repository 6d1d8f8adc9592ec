"""Which expressions are ttnn device tensors.

Conservative: a local name read at a point is a device tensor only if every binding of it
that can reach that point is a device value. Unknown stays unknown, and rules stay silent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from ...core.api_tables import tables
from ...semantic.attribute_kinds import attribute_kind
from ...semantic.nodes import call_arguments, is_none
from ...semantic.project import FunctionInfo, Project

if TYPE_CHECKING:
    from ...semantic.calls import CallResolver as ValueClasses


class TensorFacts:
    def __init__(self, project: Project, function: Optional[FunctionInfo], module, classes: Optional[ValueClasses] = None):
        self.project = project
        self.function = function
        self.module = module
        # The project classes an expression's value can have (`self.state.hyps`); None: unknown.
        self.classes = classes
        self._device_bindings: dict[int, bool] = {}

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
            return "device" in keywords and not is_none(keywords["device"])
        if name in api.host_to_device:
            return True
        return name in api.registered_ops

    def is_device_value(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Call):
            return self.is_device_call(expr)
        if isinstance(expr, cst.Name):
            return self._name_is_device(expr)
        if isinstance(expr, cst.BinaryOperation):
            return self.is_device_value(expr.left) or self.is_device_value(expr.right)
        if isinstance(expr, cst.UnaryOperation) and not isinstance(expr.operator, cst.Not):
            return self.is_device_value(expr.expression)
        if isinstance(expr, cst.Subscript):
            return self.is_device_value(expr.value)
        if isinstance(expr, cst.Attribute):
            return attribute_kind(self.function, expr, self._stored_kind, "ttnn", self.classes) == "device"
        return False

    def _stored_kind(self, method: FunctionInfo, value: cst.BaseExpression) -> Optional[str]:
        return "device" if TensorFacts(self.project, method, method.module, self.classes).is_device_value(value) else None

    def _name_is_device(self, name: cst.Name) -> bool:
        """Every binding of the name that can reach this read is a device value."""
        function = self.function
        if function is None or not function.bindings.binds(name.value):
            return False
        reaching = function.bindings.reaching(name.value, name)
        return bool(reaching) and all(self._binding_is_device(b) for b in reaching)

    def _binding_is_device(self, binding) -> bool:
        known = self._device_bindings.get(id(binding))
        if known is not None:
            return known
        self._device_bindings[id(binding)] = False  # a cycle of names proves nothing
        found = False
        if binding.kind == "param":
            annotation = binding.node.annotation if isinstance(binding.node, cst.Param) else None
            found = annotation is not None and self.qualified(annotation.annotation) in tables().ttnn.tensor_types
        elif binding.kind in ("assign", "annassign", "walrus") and binding.value is not None:
            found = self.is_device_value(binding.value)
        elif binding.kind == "augassign" and isinstance(binding.node, cst.AugAssign):
            # `p += q` keeps a device tensor, or makes one from a device operand.
            statement = binding.node
            found = self.is_device_value(statement.value) or self.is_device_value(statement.target)
        self._device_bindings[id(binding)] = found
        return found
