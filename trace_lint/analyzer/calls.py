"""Call resolution: which project functions a call in captured code reaches.

Only what can be pinned is resolved; anything else is skipped, since a guess that pins a
finding on the wrong function is worse than a miss.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from ..api_tables import tables
from .project import ClassInfo, FunctionInfo, ModuleInfo, Project
from .regions import iter_body_nodes
from .syntax_walk import children

# Method names of builtin containers and strings: `x.append()` on an unknown receiver is
# far more likely a list than the one project class that happens to define `append`.
_BUILTIN_METHODS = frozenset(
    name
    for kind in (list, dict, set, str, bytes, tuple, int, float, object, frozenset, bytearray)
    for name in dir(kind)
)


class CallResolver:
    def __init__(self, project: Project):
        self.project = project
        self._methods_by_name: dict[str, list[FunctionInfo]] = {}
        self._local_classes: dict[int, dict[str, tuple[str, cst.BaseExpression]]] = {}
        self._resolved: dict[tuple[int, int], Optional[FunctionInfo]] = {}
        self._lambdas: dict[int, FunctionInfo] = {}
        self._local_callables: dict[int, dict[str, cst.BaseExpression]] = {}

    # -- classes ---------------------------------------------------------------------------
    def class_of(self, expr: cst.BaseExpression, module: ModuleInfo, function: Optional[FunctionInfo]) -> Optional[ClassInfo]:
        name = self.project.qualified_name(expr, module, function)
        if name is None:
            return None
        definition = self.project.lookup(name)
        return definition if isinstance(definition, ClassInfo) else None

    def bases(self, cls: ClassInfo) -> list[ClassInfo]:
        out = []
        for base in cls.node.bases:
            found = self.class_of(base.value, cls.module, None)
            if found is not None and found is not cls:
                out.append(found)
        return out

    def method(self, cls: ClassInfo, name: str, _seen: Optional[set[int]] = None) -> Optional[FunctionInfo]:
        """Method lookup through project base classes (depth-first, as simple MROs go)."""
        seen = _seen if _seen is not None else set()
        if id(cls) in seen:
            return None
        seen.add(id(cls))
        if name in cls.methods:
            return cls.methods[name]
        for base in self.bases(cls):
            found = self.method(base, name, seen)
            if found is not None:
                return found
        return None

    def call_target_of_instance(self, cls: ClassInfo) -> Optional[FunctionInfo]:
        """What `instance(...)` runs: `__call__`, or `forward` for module-like classes."""
        return self.method(cls, "__call__") or self.method(cls, "forward")

    def attribute_class(self, cls: ClassInfo, attribute: str) -> Optional[ClassInfo]:
        """The class of `self.attribute` from `self.attribute = SomeClass(...)` or a factory."""
        for owner in (cls, *self.bases(cls)):
            constructor = owner.attribute_types.get(attribute)
            if constructor is None:
                continue
            found = self.class_of(constructor, owner.module, None)
            if found is not None:
                return found
            # self.attr = self.make(): the factory's return annotation names the class.
            if isinstance(constructor, cst.Attribute) and isinstance(constructor.value, cst.Name):
                factory = self.method(owner, constructor.attr.value)
                if factory is not None and factory.node.returns is not None:
                    found = self.class_of(_unquote(factory.node.returns.annotation), factory.module, factory)
                    if found is not None:
                        return found
        return None

    def element_class(self, container: cst.BaseExpression, function: FunctionInfo) -> Optional[ClassInfo]:
        """The class of the elements of `self.layers` (built as a list of one class's instances)."""
        if (
            isinstance(container, cst.Attribute)
            and isinstance(container.value, cst.Name)
            and function.cls is not None
            and function.params
            and container.value.value == function.params[0]
        ):
            for owner in (function.cls, *self.bases(function.cls)):
                constructor = owner.element_types.get(container.attr.value)
                if constructor is not None:
                    return self.class_of(constructor, owner.module, None)
        if isinstance(container, cst.Call) and isinstance(container.func, cst.Name) and container.func.value in ("enumerate", "reversed") and container.args:
            return self.element_class(container.args[0].value, function)
        return None

    def local_constructions(self, function: FunctionInfo) -> dict[str, tuple[str, cst.BaseExpression]]:
        """Names bound once in the function to an instance of a knowable class:
        `v = SomeClass(...)` -> ("call", SomeClass); `for v in self.layers` -> ("element", self.layers)."""
        key = id(function)
        if key not in self._local_classes:
            seen: dict[str, Optional[tuple[str, cst.BaseExpression]]] = {}

            def bind(name: str, value: Optional[tuple[str, cst.BaseExpression]]) -> None:
                seen[name] = value if name not in seen else None

            for node in iter_body_nodes(function):
                kind = type(node)  # concrete classes: cheaper than isinstance on libcst's ABCs
                if kind is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                    bind(node.targets[0].target.value, ("call", node.value.func) if isinstance(node.value, cst.Call) else None)
                elif kind is cst.For:
                    target = node.target
                    if isinstance(target, cst.Tuple) and len(target.elements) == 2 and isinstance(node.iter, cst.Call) and isinstance(node.iter.func, cst.Name) and node.iter.func.value == "enumerate":
                        target = target.elements[1].value
                    if isinstance(target, cst.Name):
                        bind(target.value, ("element", node.iter))
            self._local_classes[key] = {k: v for k, v in seen.items() if v is not None}
        return self._local_classes[key]

    def local_callables(self, function: FunctionInfo) -> dict[str, cst.BaseExpression]:
        """Names bound once in the function to a lambda or a `functools.partial(...)`."""
        key = id(function)
        if key not in self._local_callables:
            seen: dict[str, Optional[cst.BaseExpression]] = {}
            for node in function.nodes:
                if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                    name = node.targets[0].target.value
                    value = node.value if isinstance(node.value, cst.Lambda) or self._is_partial(node.value, function) else None
                    seen[name] = value if name not in seen else None
            self._local_callables[key] = {k: v for k, v in seen.items() if v is not None}
        return self._local_callables[key]

    def _is_partial(self, expr: cst.BaseExpression, function: FunctionInfo) -> bool:
        return (
            isinstance(expr, cst.Call)
            and bool(expr.args)
            and self.project.qualified_name(expr.func, function.module, function) in tables().python.partial
        )

    def lambda_function(self, node: cst.Lambda, module: ModuleInfo, enclosing: Optional[FunctionInfo]) -> FunctionInfo:
        """A lambda as a function of its own: its body is the captured work when it is passed
        to a capture helper or called from captured code."""
        key = id(node)
        if key not in self._lambdas:
            params = [p.name.value for p in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params)]
            prefix = f"{enclosing.qualname}.<locals>." if enclosing is not None else ""
            info = FunctionInfo("<lambda>", f"{prefix}<lambda>", node, module, parent=enclosing, params=params)  # type: ignore[arg-type]
            stack: list[cst.CSTNode] = [node.body]
            while stack:
                current = stack.pop()
                info.nodes.append(current)
                if not isinstance(current, cst.Lambda):
                    stack.extend(reversed(children(current)))
            self._lambdas[key] = info
        return self._lambdas[key]

    def callable_target(self, expr: cst.BaseExpression, function: Optional[FunctionInfo], module: ModuleInfo) -> Optional[FunctionInfo]:
        """What calling `expr` runs: a project function, a bound method, a lambda's body,
        the function a `functools.partial` wraps, an instance's `__call__`/`forward`."""
        if isinstance(expr, cst.Lambda):
            return self.lambda_function(expr, module, function)
        if function is None:
            if isinstance(expr, (cst.Name, cst.Attribute)):
                name = self.project.qualified_name(expr, module, None)
                definition = self.project.lookup(name) if name else None
                return definition if isinstance(definition, FunctionInfo) else None
            return None
        if self._is_partial(expr, function):
            return self.callable_target(expr.args[0].value, function, module)  # type: ignore[union-attr]
        if isinstance(expr, cst.Name):
            bound = self.local_callables(function).get(expr.value)
            if bound is not None:
                return self.callable_target(bound, function, module)
        if isinstance(expr, (cst.Name, cst.Attribute, cst.Subscript)):
            # Calling it is what the capture does: resolve it as the callee of a call.
            return self.resolve(cst.Call(func=expr), function)
        return None

    def _local_class(self, name: str, function: FunctionInfo) -> Optional[ClassInfo]:
        binding = self.local_constructions(function).get(name)
        if binding is None:
            return None
        kind, expr = binding
        if kind == "call":
            return self.class_of(expr, function.module, function)
        return self.element_class(expr, function)

    def _receiver_class(self, receiver: cst.BaseExpression, function: FunctionInfo) -> Optional[ClassInfo]:
        if isinstance(receiver, cst.Name):
            if function.cls is not None and function.params and receiver.value == function.params[0]:
                return function.cls
            return self._local_class(receiver.value, function)
        if isinstance(receiver, cst.Subscript):
            return self.element_class(receiver.value, function)
        if (
            isinstance(receiver, cst.Attribute)
            and isinstance(receiver.value, cst.Name)
            and function.cls is not None
            and function.params
            and receiver.value.value == function.params[0]
        ):
            return self.attribute_class(function.cls, receiver.attr.value)
        return None

    def unique_method(self, name: str) -> Optional[FunctionInfo]:
        """The method `name` when exactly one class in the project defines it."""
        if name.startswith("__") or name in _BUILTIN_METHODS:
            return None
        if name not in self._methods_by_name:
            # Count definitions in the raw text first: two or more `def name(` cannot be one
            # method, and nothing needs parsing to know it.
            holders = self.project.modules_defining(name)
            found: list[FunctionInfo] = []
            if len(holders) == 1:
                found = [cls.methods[name] for cls in holders[0].classes_defining(name)]
            self._methods_by_name[name] = found
        candidates = self._methods_by_name[name]
        return candidates[0] if len(candidates) == 1 else None

    # -- calls -----------------------------------------------------------------------------
    def resolve(self, call: cst.Call, function: FunctionInfo) -> Optional[FunctionInfo]:
        key = (id(call.func), id(function))
        if key not in self._resolved:
            self._resolved[key] = self._resolve(call, function)
        return self._resolved[key]

    def _resolve(self, call: cst.Call, function: FunctionInfo) -> Optional[FunctionInfo]:
        func = call.func
        module = function.module
        if isinstance(func, cst.Name):
            scope: Optional[FunctionInfo] = function
            while scope is not None:
                if func.value in scope.nested:
                    return scope.nested[func.value]
                scope = scope.parent
            bound = self.local_callables(function).get(func.value)
            if bound is not None:
                return self.callable_target(bound, function, module)
            if func.value in self.local_constructions(function):
                cls = self._local_class(func.value, function)
                return self.call_target_of_instance(cls) if cls is not None else None
            return self._resolve_global(func, module, function)
        if isinstance(func, cst.Subscript):
            cls = self.element_class(func.value, function)
            return self.call_target_of_instance(cls) if cls is not None else None
        if not isinstance(func, cst.Attribute):
            return None
        receiver, attribute = func.value, func.attr.value
        # super().method()
        if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name) and receiver.func.value == "super":
            if function.cls is None:
                return None
            for base in self.bases(function.cls):
                found = self.method(base, attribute)
                if found is not None:
                    return found
            return None
        cls = self._receiver_class(receiver, function)
        if cls is not None:
            found = self.method(cls, attribute)
            if found is not None:
                return found
        # self.attr(...): an instance stored on self, called.
        if (
            isinstance(receiver, cst.Name)
            and function.cls is not None
            and function.params
            and receiver.value == function.params[0]
        ):
            attribute_cls = self.attribute_class(function.cls, attribute)
            if attribute_cls is not None:
                return self.call_target_of_instance(attribute_cls)
            return None
        resolved = self._resolve_global(func, module, function)
        if resolved is not None:
            return resolved
        if self.project.qualified_name(receiver, module, function) is not None:
            return None  # a module or known global: not a method call on an instance
        return self.unique_method(attribute)

    def _resolve_global(self, func: cst.BaseExpression, module: ModuleInfo, function: FunctionInfo) -> Optional[FunctionInfo]:
        name = self.project.qualified_name(func, module, function)
        if name is None:
            return None
        definition = self.project.lookup(name)
        if isinstance(definition, FunctionInfo):
            return definition
        return None


def _unquote(annotation: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(annotation, cst.SimpleString):
        try:
            return cst.parse_expression(annotation.evaluated_value)
        except Exception:
            return annotation
    return annotation
