"""Small questions several rules ask about captured code."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from ..frameworks.effects import Effect
from ..semantic.nodes import call_arguments
from ..frontend.syntax_walk import children

if TYPE_CHECKING:
    from ..capture.facts import RuleContext

def enclosing_statement(context: RuleContext, node: cst.CSTNode) -> cst.CSTNode:
    """The small statement holding a node, or the compound statement whose header holds it."""
    if isinstance(node, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
        return node
    for ancestor in reversed(context.ancestors):
        if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return ancestor
    return node


def device_value_in(context: RuleContext, expr: cst.BaseExpression) -> Optional[cst.CSTNode]:
    """The first sub-expression that reads a device tensor's value, skipping host metadata
    (shape, dtype, layout, len(), isinstance(), `is None`)."""
    tensor = context.tables.tensor
    metadata = context.tables.host_metadata
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Lambda, cst.FunctionDef)):
            continue
        if isinstance(node, cst.Attribute) and (node.attr.value in tensor.metadata_attributes or node.attr.value in metadata.attributes):
            continue
        if isinstance(node, cst.Comparison) and all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in node.comparisons):
            continue
        if isinstance(node, cst.Call):
            name = context.qualified_name(node.func)
            if name in tensor.metadata_functions or name in metadata.functions:
                continue  # `len(t)`, `ttnn.get_memory_config(t)`: host metadata
            if isinstance(node.func, cst.Attribute) and (
                node.func.attr.value in tensor.metadata_attributes or node.func.attr.value in metadata.methods
            ):
                continue  # `t.size(0)`, `t.dim()`, `t.is_allocated()`: host metadata
            if context.effect(node, Effect.READ) is not None or context.is_device_value(node):
                return node
            # A method of a device tensor (`t.sum()`) computes on its value.
            if isinstance(node.func, cst.Attribute) and context.is_device_value(node.func.value):
                return node
            reads = project_call_reads(context, node)
            if reads is not None:
                if reads:
                    return node
                # A project function that only inspects its tensors' metadata: what the
                # other arguments compute still counts.
                stack.extend(reversed([a.value for a in node.args if not context.is_device_value(a.value)]))
                continue
        elif isinstance(node, cst.Name) and context.is_device_value(node):
            return node
        elif isinstance(node, cst.Subscript) and context.is_device_value(node.value):
            return node
        stack.extend(reversed(children(node)))
    return None


def project_call_reads(context: RuleContext, call: cst.Call) -> Optional[bool]:
    """For a call of project functions given device tensors (`self._fits(x, L)`): whether one
    of them uses a tensor argument's value, not only its host metadata. None: not such a
    call (unresolved, or no device tensor among the arguments)."""
    function = context.function
    if function is None:
        return None
    facts = context.facts
    targets = facts.targets(call, function)
    if not targets:
        return None
    given = [a.value for a in call.args if context.is_device_value(a.value)]
    if not given or any(a.star for a in call.args if context.is_device_value(a.value)):
        return None
    for target in targets:
        arguments = facts.arguments_landing(call, function, target.function)
        received = {name for name, value in arguments.items() if any(value is g for g in given)}
        if len(received) < len(given) or any(facts.reads_value(target.function, name) for name in received):
            return True
    return False


def keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    return call_arguments(call)[1].get(name)


def has_star_kwargs(call: cst.Call) -> bool:
    return any(arg.star == "**" for arg in call.args)


def is_none(expr: Optional[cst.BaseExpression]) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


_LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.Ellipsis)


def fixed_for_the_program(context: RuleContext, expr: cst.BaseExpression) -> bool:
    """Whether a test reads only what cannot differ between capture and replay: host
    metadata of tensors (`x.shape[-1] > 32`, `t.is_allocated()`), types (`isinstance`),
    literals, and module-level constants or imported names (`x.layout == ttnn.TILE_LAYOUT`)."""
    return _fixed(context, context.function, context.module, expr, set())


def _fixed(context: RuleContext, function, module, expr: cst.BaseExpression, attributes: set) -> bool:
    """`fixed_for_the_program` of an expression read in `function` of `module`; `attributes`:
    the (class, attribute) pairs already being judged (an attribute stored from itself)."""
    from ..semantic.bindings import local_names

    metadata = context.tables.host_metadata
    locals_ = local_names(function) if function is not None else frozenset()
    stack: list[cst.CSTNode] = [expr]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if isinstance(node, _LITERALS):
            continue
        if isinstance(node, cst.Name):
            if node.value in ("True", "False", "None"):
                continue
            if node.value in locals_:
                # Metadata follows values: `addr = t.buffer_address()` is host metadata where
                # it is read, when every binding that reaches the read holds metadata or constants.
                values = _bound_values(function, node)
                if values is None:
                    return False
                stack.extend(v for v in values if id(v) not in seen)
                seen.update(id(v) for v in values)
                continue
            if node.value in module.globals or node.value in module.imports or node.value in module.top_level:
                continue
            return False
        if isinstance(node, cst.Attribute):
            if _metadata_read(context, node, function):
                continue  # the receiver's metadata, whatever the receiver
            if context.facts.qualified_name(node, module, function) is not None:
                continue  # a module attribute: `ttnn.TILE_LAYOUT`, `config.DEBUG`
            if _metadata_attribute(context, function, node, attributes):
                continue  # `self.addr`, every value of which is `t.buffer_address()`
            return False
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in metadata.methods:
                stack.extend(a.value for a in node.args)
                continue
            if context.facts.qualified_name(func, module, function) in metadata.functions:
                continue  # `ttnn.get_memory_config(t)`: the function form of a metadata method
            if isinstance(func, cst.Name) and func.value in metadata.type_tests and func.value not in locals_:
                continue  # `isinstance(x, T)`: types are fixed
            return False
        if isinstance(node, cst.Comparison):
            stack.append(node.left)
            stack.extend(c.comparator for c in node.comparisons)
        elif isinstance(node, cst.BooleanOperation) or isinstance(node, cst.BinaryOperation):
            stack.extend((node.left, node.right))
        elif isinstance(node, cst.UnaryOperation):
            stack.append(node.expression)
        elif isinstance(node, cst.Subscript):
            stack.append(node.value)
            for element in node.slice:
                part = element.slice
                if isinstance(part, cst.Index):
                    stack.append(part.value)
                else:
                    stack.extend(p for p in (part.lower, part.upper, part.step) if p is not None)
        elif isinstance(node, (cst.Tuple, cst.List, cst.Set)):
            stack.extend(e.value for e in node.elements)
        elif isinstance(node, cst.IfExp):
            stack.extend((node.test, node.body, node.orelse))
        else:
            return False
    return True


def _metadata_attribute(context: RuleContext, function, node: cst.Attribute, attributes: set) -> bool:
    """`self.<attribute>` every value of which, in every method of the class that stores it, is
    host metadata (`self.addr = t.buffer_address()`; a `None` placeholder aside): metadata
    follows values, as for a local. Literals alone do not make one: two of them are a switch
    (`self.fast = True`, later `False`) that can differ at replay."""
    from ..semantic.receivers import is_receiver

    if function is None or function.cls is None or not is_receiver(node.value, function, node):
        return False
    key = (id(function.cls), node.attr.value)
    if key in attributes:
        return False
    attributes.add(key)
    values = function.cls.attribute_values.get(node.attr.value, ())
    stored = [(method, value) for method, value in values if not is_none(value)]
    return bool(stored) and all(
        _reads_metadata(context, method, value) and _fixed(context, method, method.module, value, attributes)
        for method, value in stored
    )


def _reads_metadata(context: RuleContext, function, expr: cst.BaseExpression) -> bool:
    """The expression reads some host metadata of a tensor (`t.buffer_address()`, `x.shape[0]`),
    not only literals and constants."""
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if _metadata_read(context, node, function):
            return True
        if not isinstance(node, (cst.Lambda, cst.BaseComp)):
            stack.extend(children(node))
    return False


def _metadata_read(context: RuleContext, node: cst.CSTNode, function) -> bool:
    """`x.shape`, `t.buffer_address()`, `ttnn.get_memory_config(t)` read in `function`: what
    the tables call host metadata, in attribute, method or function form."""
    metadata = context.tables.host_metadata
    if isinstance(node, cst.Attribute):
        return node.attr.value in metadata.attributes or node.attr.value in context.tables.tensor.metadata_attributes
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value in metadata.methods:
        return True
    return context.facts.qualified_name(func, function.module, function) in metadata.functions


def _bound_values(function, name: cst.Name) -> Optional[list[cst.BaseExpression]]:
    """The values every binding of a local name that reaches this read assigns; None when
    one of them is not a plain assignment (a parameter, a loop target, `+=`)."""
    reaching = function.bindings.reaching(name.value, name) if function.bindings.binds(name.value) else ()
    if not reaching:
        return None
    values = []
    for binding in reaching:
        if binding.kind not in ("assign", "annassign", "walrus") or binding.value is None:
            return None
        values.append(binding.value)
    return values
