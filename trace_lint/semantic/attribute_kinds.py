"""What kind of value an attribute holds, from every value its class's methods store in it.

The kinds themselves (a device tensor, a host tensor, a framework module) are the framework
plug-ins' (`frameworks/ttnn/tensors.py`, `frameworks/torch/tensors.py`): each hands in how it
judges one stored value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from .bindings import class_bindings
from .project import FunctionInfo
from .receivers import is_receiver

if TYPE_CHECKING:
    from .calls import CallResolver as ValueClasses


def attribute_kind(
    function: Optional[FunctionInfo],
    expr: cst.Attribute,
    kind_of,
    framework: str,
    classes: Optional[ValueClasses] = None,
    declared_kind=None,
) -> Optional[str]:
    """The kind of `self.attr` in a method from every value the class's methods assign to
    it, or of `obj.attr` from every value the classes `obj` can be an instance of (with their
    bases) assign to it (all must agree; None: unknown). `kind_of(method, value)` judges one
    value. An attribute no method assigns but a class body annotates (a dataclass or
    NamedTuple field, `ids: torch.Tensor`) holds what its constructor is given: of the
    declared type, judged by `declared_kind(cls, annotation)`."""
    if function is None:
        return None
    receiver = expr.value
    attribute = expr.attr.value
    if function.cls is not None and is_receiver(receiver, function, expr):
        return _class_attribute_kind(function.cls, (function.cls,), attribute, kind_of, framework, declared_kind)
    if classes is None or not isinstance(receiver, (cst.Name, cst.Attribute)):
        return None
    owners = classes.value_classes(receiver, function, None)
    kinds = {_class_attribute_kind(cls, classes.mro(cls), attribute, kind_of, framework, declared_kind) for cls in owners}
    return kinds.pop() if len(kinds) == 1 else None


def _class_attribute_kind(cls, owners, attribute: str, kind_of, framework: str, declared_kind=None) -> Optional[str]:
    """What every value `owners` (a class, or its MRO) assign to `self.<attribute>` agrees on;
    with none assigned, what the class bodies' annotations of it agree on."""
    cache = cls.__dict__.setdefault("_attribute_kinds", {})
    key = (framework, attribute, len(owners), declared_kind is not None)
    if key in cache:
        return cache[key]
    cache[key] = None  # an attribute assigned from itself proves nothing
    values = [pair for owner in owners for pair in owner.attribute_values.get(attribute, [])]
    kinds = {kind_of(method, value) for method, value in values}
    if not values and declared_kind is not None:
        kinds = {declared_kind(owner, annotation) for owner, annotation in _declared(owners, attribute)}
    found = kinds.pop() if len(kinds) == 1 else None
    cache[key] = found
    return found


def _declared(owners, attribute: str) -> list[tuple[object, cst.BaseExpression]]:
    """(class, annotation) for each `attribute: T` written in the owners' class bodies."""
    found = []
    for owner in owners:
        for binding in class_bindings(owner.node).get(attribute, ()):
            if isinstance(binding.node, cst.AnnAssign):
                found.append((owner, binding.node.annotation.annotation))
    return found
