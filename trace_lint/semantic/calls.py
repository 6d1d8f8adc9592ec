"""Call resolution: which project functions a call in captured code reaches.

Only what can be pinned is resolved; anything else is skipped, since a guess that pins a
finding on the wrong function is worse than a miss.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import libcst as cst

from ..core.api_tables import tables
from .library import NO_LIBRARY, Library
from .outline import SharedParses
from .project import ClassInfo, FunctionInfo, ModuleInfo, Project
from .receivers import has_decorator, is_receiver, receiver_parameter
from ..frontend.syntax_walk import children, preorder
from .bindings import assignment_targets, parameters, star_parameters, target_leaves, target_path

@dataclass(frozen=True)
class Target:
    """A function a call runs, with the class of `self` in it when the instance's class is
    known (a base class's `__call__` reached from a subclass instance dispatches
    `self.forward` to the subclass)."""

    function: FunctionInfo
    self_class: Optional[ClassInfo] = None


@dataclass(frozen=True)
class Arguments:
    """How one call fills one target's parameters (`CallResolver.bind_arguments`)."""

    receiver: Optional[str]  # the parameter the receiver or the new instance fills
    constructs: bool  # the receiver is a new instance (`Block(x)` running `__init__`)
    by_parameter: dict[str, cst.BaseExpression]  # each explicit argument, by the parameter it fills
    landing: dict[int, str]  # id of each `cst.Arg` -> the parameter it fills (`*args`, `**kwargs` included)
    # An unpacked `*x` or `**x` may fill any parameter no explicit argument fills.
    unpacked: bool = False

    def parameter_of(self, argument: cst.Arg) -> Optional[str]:
        """The parameter an argument of the call lands in (None: not known, or nowhere)."""
        return self.landing.get(id(argument))


# How deep value inference follows names, attributes and factories.
_DEPTH = 6


class CallResolver:
    """A chain of resolvers: a call's target is found through scopes, imports, classes and
    what values are known to hold; anything else is unknown, never guessed by name."""

    def __init__(self, project: Project, library: Library = NO_LIBRARY):
        self.project = project
        # What the frameworks say their calls do (semantic/ names none of them).
        self.library = library
        # A call's targets, and the depth they were found at when the depth limit cut that
        # search short (None: complete). A cut answer serves only searches as deep or deeper;
        # a shallower one searches again (the limit must not decide the answer of a call that
        # is first met deep in another search).
        self._resolved: dict[tuple[int, int, int], tuple[tuple[Target, ...], Optional[int]]] = {}
        self._cuts = 0  # how many searches the depth limit has cut short
        self._lambdas: dict[int, FunctionInfo] = {}
        self._mro: dict[int, tuple[ClassInfo, ...]] = {}
        self._spelled: dict[tuple[int, bool], list[tuple[cst.Call, Optional[FunctionInfo], ModuleInfo]]] = {}
        # The same, by spelling: methods of one name in many classes share one walk.
        self._spelled_as: dict[tuple, list[tuple[cst.Call, Optional[FunctionInfo], ModuleInfo]]] = {}
        # Per function: whether a local list is used other than to read its elements, and the
        # ids of the nodes its bindings write (`_sequence_escapes`).
        self._escapes: dict[tuple[int, str], bool] = {}
        self._written: dict[int, set[int]] = {}

    # -- classes ---------------------------------------------------------------------------
    def class_of(self, expr: cst.BaseExpression, module: ModuleInfo, function: Optional[FunctionInfo]) -> Optional[ClassInfo]:
        """The project class an expression names (`Model`, `layers.Block`)."""
        name = self.project.qualified_name(expr, module, function)
        if name is None:
            return None
        definition = self.project.lookup(name)
        return definition if isinstance(definition, ClassInfo) else None

    def classes_of(self, expr: cst.BaseExpression, module: ModuleInfo, function: Optional[FunctionInfo]) -> list[ClassInfo]:
        """Every project class an expression can name: one, or each of a class defined on
        several branches of a module-level `if`."""
        name = self.project.qualified_name(expr, module, function)
        if name is None:
            return []
        return [d for d in self.project.lookup_all(name) if isinstance(d, ClassInfo)]

    def bases(self, cls: ClassInfo) -> list[ClassInfo]:
        out = []
        for base in cls.node.bases:
            if base.keyword is not None:
                continue
            found = self.class_of(base.value, cls.module, None)
            if found is not None and found is not cls:
                out.append(found)
        return out

    def mro(self, cls: ClassInfo) -> tuple[ClassInfo, ...]:
        """The project classes of the method resolution order (C3, as Python computes it;
        depth-first where C3 has no answer)."""
        found = self._mro.get(id(cls))
        if found is None:
            self._mro[id(cls)] = (cls,)  # a cycle of bases resolves to the class alone
            found = self._mro[id(cls)] = _c3(cls, [self.mro(b) for b in self.bases(cls)], self.bases(cls))
        return found

    def method(self, cls: ClassInfo, name: str, after: Optional[ClassInfo] = None) -> Optional[FunctionInfo]:
        """Method lookup along the MRO (starting after `after`, as `super()` does)."""
        order = self.mro(cls)
        if after is not None:
            index = next((i for i, c in enumerate(order) if c is after), None)
            if index is None:
                return None
            order = order[index + 1 :]
        for owner in order:
            found = owner.methods.get(name)
            if found is not None:
                return found
        return None

    def call_target_of_instance(self, cls: ClassInfo) -> Optional[FunctionInfo]:
        """What `instance(...)` runs: `__call__`, or `forward` for module-like classes."""
        return self.method(cls, "__call__") or self.method(cls, "forward")

    def attribute_class(self, cls: ClassInfo, attribute: str) -> Optional[ClassInfo]:
        found = self.attribute_classes(cls, attribute)
        return found[0] if len(found) == 1 else None

    def attribute_classes(self, cls: ClassInfo, attribute: str, depth: int = 0) -> list[ClassInfo]:
        """Classes of `self.attribute`, from every value any method of the class (or a base)
        assigns to it."""
        out: list[ClassInfo] = []
        for owner in self.mro(cls):
            for method, value in owner.attribute_values.get(attribute, ()):
                for found in self.value_classes(value, method, cls, depth + 1):
                    if found not in out:
                        out.append(found)
        return out

    def element_classes_of_attribute(self, cls: ClassInfo, attribute: str, depth: int = 0) -> list[ClassInfo]:
        out: list[ClassInfo] = []
        for owner in self.mro(cls):
            for method, value in owner.element_values.get(attribute, ()):
                for found in self.value_classes(value, method, cls, depth + 1):
                    if found not in out:
                        out.append(found)
        return out

    # -- values ----------------------------------------------------------------------------
    def value_classes(self, expr: cst.BaseExpression, function: Optional[FunctionInfo], self_class: Optional[ClassInfo], depth: int = 0) -> list[ClassInfo]:
        """The project classes of the instances an expression can evaluate to (empty:
        unknown). `self_class`: the class of `self` in `function`, when known."""
        if function is None or self._too_deep(depth):
            return []
        module = function.module
        if isinstance(expr, cst.Name):
            return self._name_classes(expr, function, self_class, depth)
        if isinstance(expr, (cst.IfExp, cst.BooleanOperation)):
            # `None if disabled else Graph(...)`, `graph or Graph(...)`: either operand.
            out = []
            for part in (expr.body, expr.orelse) if isinstance(expr, cst.IfExp) else (expr.left, expr.right):
                for found in self.value_classes(part, function, self_class, depth + 1):
                    if found not in out:
                        out.append(found)
            return out
        if isinstance(expr, cst.Call):
            func = expr.func
            classes = self.classes_of(func, module, function)
            if classes:
                return classes
            out = []
            if isinstance(func, cst.Attribute) and self.library.returns_receiver(func.attr.value):
                # `Net().cuda().eval()`: a framework module's methods that return the module itself.
                for cls in self.value_classes(func.value, function, self_class, depth + 1):
                    if self.method(cls, func.attr.value) is None and cls not in out:
                        out.append(cls)
            for target in self.resolve_all(expr, function, self_class, depth + 1):
                returns = target.function.node.returns if isinstance(target.function.node, cst.FunctionDef) else None
                if returns is not None:
                    for found in self._annotation_classes(returns.annotation, target.function):
                        if found not in out:
                            out.append(found)
            return out
        if isinstance(expr, cst.Attribute):
            out = []
            for owner in self.value_classes(expr.value, function, self_class, depth + 1):
                for found in self.attribute_classes(owner, expr.attr.value, depth + 1):
                    if found not in out:
                        out.append(found)
            return out
        if isinstance(expr, cst.Subscript):
            return self.element_classes(expr.value, function, self_class, depth + 1)
        return []

    def element_classes(self, container: cst.BaseExpression, function: FunctionInfo, self_class: Optional[ClassInfo], depth: int = 0) -> list[ClassInfo]:
        """Classes of the elements of a container expression (`self.layers`,
        `reversed(self.layers)`, `self.models.values()`, a local list)."""
        if self._too_deep(depth):
            return []
        if isinstance(container, cst.Call):
            func = container.func
            # `enumerate`, `zip` and `.items()` yield tuples: `loop_target_classes` unpacks them.
            if isinstance(func, cst.Name) and func.value in _ORDER_KEEPING and len(container.args) == 1:
                return self.element_classes(container.args[0].value, function, self_class, depth + 1)
            if isinstance(func, cst.Attribute) and func.attr.value == "values" and not container.args:
                return self.element_classes(func.value, function, self_class, depth + 1)
            return []
        if isinstance(container, cst.Subscript) and all(isinstance(e.slice, cst.Slice) for e in container.slice):
            # `self.layers[1:]`: some of the same elements.
            return self.element_classes(container.value, function, self_class, depth + 1)
        if isinstance(container, cst.Attribute):
            out: list[ClassInfo] = []
            for owner in self.value_classes(container.value, function, self_class, depth + 1):
                for found in self.element_classes_of_attribute(owner, container.attr.value, depth + 1):
                    if found not in out:
                        out.append(found)
            return out
        if isinstance(container, cst.Name) and function.bindings.binds(container.value):
            out = []
            for binding in function.bindings.reaching(container.value, container):
                if binding.kind in ("assign", "annassign") and binding.value is not None:
                    from .project import _container_items

                    for item in _container_items(binding.value):
                        for found in self.value_classes(item, function, self_class, depth + 1):
                            if found not in out:
                                out.append(found)
            return out
        return []

    def loop_target_classes(self, binding, function: FunctionInfo, self_class: Optional[ClassInfo], depth: int = 0) -> list[ClassInfo]:
        """Classes of a name a `for` binds, also where the target unpacks each element:
        `for i, layer in enumerate(self.layers)`, `for a, b in zip(...)`, `for k, v in d.items()`."""
        loop = binding.node
        if not isinstance(loop, cst.For):
            return []
        (target,) = assignment_targets(loop)
        path = target_path(target, binding.name)
        if path is None:
            return []
        return self._element_part(loop.iter, path, function, self_class, depth)

    def _element_part(self, container: cst.BaseExpression, path: tuple[int, ...], function: FunctionInfo, self_class: Optional[ClassInfo], depth: int) -> list[ClassInfo]:
        """Classes of the part `path` (indices into nested tuples) of each element of a container."""
        if not path:
            return self.element_classes(container, function, self_class, depth)
        if self._too_deep(depth) or not isinstance(container, cst.Call) or any(a.star or a.keyword is not None for a in container.args):
            return []
        func, args = container.func, container.args
        head, rest = path[0], path[1:]
        if isinstance(func, cst.Name) and func.value in _ORDER_KEEPING and len(args) == 1:
            return self._element_part(args[0].value, path, function, self_class, depth + 1)
        if isinstance(func, cst.Name) and func.value == "enumerate" and args:
            return self._element_part(args[0].value, rest, function, self_class, depth + 1) if head == 1 else []
        if isinstance(func, cst.Name) and func.value == "zip" and head < len(args):
            return self._element_part(args[head].value, rest, function, self_class, depth + 1)
        if isinstance(func, cst.Attribute) and func.attr.value == "items" and not args and head == 1:
            # The values of a dict: the elements the container's displays and stores record.
            return self._element_part(cst.Call(func=cst.Attribute(func.value, cst.Name("values"))), rest, function, self_class, depth + 1)
        return []

    def _comprehension_target(self, expr: cst.Name, function: FunctionInfo) -> Optional[tuple[cst.CompFor, tuple[int, ...]]]:
        """The `for` clause of an enclosing comprehension that binds the name
        (`[expert(x) for expert in self.experts]`, the binder's comprehension scope), with the
        name's place in its target."""
        own = function.bindings.own_scope(expr.value, expr)
        if own is None or own.kind != "comprehension":
            return None
        (target,) = assignment_targets(own.node)
        path = target_path(target, expr.value)
        return (own.node, path) if path is not None else None

    def _name_classes(self, expr: cst.Name, function: FunctionInfo, self_class: Optional[ClassInfo], depth: int) -> list[ClassInfo]:
        """Classes of a local name, or of a closure's name in the function that binds it."""
        comprehension = self._comprehension_target(expr, function)
        if comprehension is not None:
            clause, path = comprehension
            return self._element_part(clause.iter, path, function, self_class, depth + 1)
        scope: Optional[FunctionInfo] = function
        while scope is not None:
            bindings = scope.bindings
            if expr.value in bindings.declared_global:
                return []
            if bindings.binds(expr.value):
                break
            scope = scope.parent
        if scope is None:
            return []
        # In an enclosing function, a closure sees whatever the name holds when it is called.
        anchor = expr if scope is function else None
        own_self = self_class if scope is function else None
        if is_receiver(expr, scope, anchor):
            return [own_self or scope.cls]  # type: ignore[list-item]
        out: list[ClassInfo] = []
        for binding in scope.bindings.reaching(expr.value, anchor):
            found: list[ClassInfo] = []
            if binding.kind in ("assign", "annassign", "walrus") and binding.value is not None:
                found = self.value_classes(binding.value, scope, own_self, depth + 1)
            elif binding.kind == "annassign" and isinstance(binding.node, cst.AnnAssign):
                found = self._annotation_classes(binding.node.annotation.annotation, scope)
            elif binding.kind == "param" and isinstance(binding.node, cst.Param) and binding.node.annotation is not None:
                found = self._annotation_classes(binding.node.annotation.annotation, scope)
            elif binding.kind == "loop":
                found = self.loop_target_classes(binding, scope, own_self, depth + 1)
            for cls in found:
                if cls not in out:
                    out.append(cls)
        return out

    def _annotation_classes(self, annotation: cst.BaseExpression, function: FunctionInfo) -> list[ClassInfo]:
        """Classes an annotation names: `Worker`, `"Worker"`, `Optional[Worker]`, `Worker | None`."""
        annotation = _unquote(annotation)
        if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
            return [*self._annotation_classes(annotation.left, function), *self._annotation_classes(annotation.right, function)]
        if isinstance(annotation, cst.Subscript):
            name = self.project.qualified_name(annotation.value, function.module, function)
            if name in ("typing.Optional", "typing.Union", "Optional", "Union"):
                out = []
                for element in annotation.slice:
                    if isinstance(element.slice, cst.Index):
                        out.extend(self._annotation_classes(element.slice.value, function))
                return out
            return []
        return self.classes_of(annotation, function.module, function)

    # -- callables -------------------------------------------------------------------------
    def _is_partial(self, expr: cst.BaseExpression, function: FunctionInfo) -> bool:
        return (
            isinstance(expr, cst.Call)
            and bool(expr.args)
            and self.project.qualified_name(expr.func, function.module, function) in tables().python.partial
        )

    def is_partial(self, expr: cst.BaseExpression, function: FunctionInfo) -> bool:
        """`functools.partial(f, ...)` (however imported): calling it runs `f` with more arguments."""
        return self._is_partial(expr, function)

    def lambda_function(self, node: cst.Lambda, module: ModuleInfo, enclosing: Optional[FunctionInfo]) -> FunctionInfo:
        """A lambda as a function of its own: its body is the captured work when it is passed
        to a capture helper or called from captured code."""
        key = id(node)
        if key not in self._lambdas:
            params = [p.name.value for p in parameters(node.params)]  # as a def's: `*args`/`**kwargs` too
            prefix = f"{enclosing.qualname}.<locals>." if enclosing is not None else ""
            info = FunctionInfo("<lambda>", f"{prefix}<lambda>", node, module, parent=enclosing, params=params, cls=None)  # type: ignore[arg-type]
            stack: list[cst.CSTNode] = [node.body]
            while stack:
                current = stack.pop()
                info.nodes.append(current)
                if not isinstance(current, cst.Lambda):
                    stack.extend(reversed(children(current)))
            self._lambdas[key] = info
        return self._lambdas[key]

    def callable_target(self, expr: cst.BaseExpression, function: Optional[FunctionInfo], module: ModuleInfo) -> Optional[FunctionInfo]:
        found = self.callable_targets(expr, function, module)
        return found[0].function if len(found) == 1 else None

    def callable_targets(self, expr: cst.BaseExpression, function: Optional[FunctionInfo], module: ModuleInfo, self_class: Optional[ClassInfo] = None, depth: int = 0) -> list[Target]:
        """What calling `expr` runs: a project function, a bound method, a lambda's body,
        the function a `functools.partial` wraps, an instance's `__call__`/`forward`."""
        if self._too_deep(depth):
            return []
        if isinstance(expr, cst.Lambda):
            return [Target(self.lambda_function(expr, module, function))]
        if function is None:
            if isinstance(expr, (cst.Name, cst.Attribute)):
                name = self.project.qualified_name(expr, module, None)
                definition = self.project.lookup(name) if name else None
                if isinstance(definition, FunctionInfo):
                    return [Target(definition)]
            return []
        if self._is_partial(expr, function):
            return self.callable_targets(expr.args[0].value, function, module, self_class, depth + 1)  # type: ignore[union-attr]
        if isinstance(expr, (cst.Name, cst.Attribute, cst.Subscript)):
            # Calling it is what the capture does: resolve it as the callee of a call.
            return self.resolve_all(cst.Call(func=expr), function, self_class, depth + 1)
        return []

    # -- call sites ------------------------------------------------------------------------
    def spelled_calls(self, function: FunctionInfo, skipped: Optional[Callable[[ModuleInfo, ModuleInfo], Optional[Callable[[str], bool]]]] = None, skipped_key=None) -> list[tuple[cst.Call, Optional[FunctionInfo], ModuleInfo]]:
        """Calls in the project written so that they can run `function` (the caller: None at
        module level): by its name, or for an `__init__` by its class's name (constructions)
        or `__init__` itself (`super().__init__()`). Only a call so spelled can reach it; each
        user still resolves the call. A dunder's explicit calls (`super().__call__()`) sit in
        subclasses, which name the class: modules that do not are not read (a grand-subclass
        in a module that never names the class is missed). `skipped`: per module (and a probe
        of it), a test of the chunks (by their text) not to read: they are neither parsed nor
        searched, and the search is recorded as `Project.searched_outside`."""
        key = (id(function), skipped is not None)
        found = self._spelled.get(key)
        if found is not None:
            return found
        name = function.name
        owner = function.cls
        dunder = owner is not None and name.startswith("__") and name.endswith("__")
        spellings = {name}
        if dunder and name == "__init__":
            spellings.add(owner.name)
        spelled_as = (tuple(sorted(spellings)), owner.name if dunder else None, skipped is not None)
        found = self._spelled_as.get(spelled_as)
        if found is not None:
            self._spelled[key] = found
            return found
        modules: dict[int, ModuleInfo] = {}
        for spelling in spellings:
            for module in self.project.modules_calling(spelling, outside=skipped is not None):
                modules.setdefault(id(module), module)
        if dunder:
            token = owner.name.encode()
            modules = {k: m for k, m in modules.items() if token in self.project.raw_bytes(m)}
        found = []
        tokens = tuple(sorted(spellings))
        for module in modules.values():
            if skipped is None:
                calls = module.iter_calls(tokens)
            else:
                chosen = self._outside_chunks(module, tokens, skipped, skipped_key)
                if not chosen:
                    continue
                calls = module.calls_in_chunks(chosen)
            for call, caller in calls:
                if callee_name(call) in spellings:
                    found.append((call, caller, module))
        self._spelled[key] = self._spelled_as[spelled_as] = found
        return found

    def _outside_chunks(self, module: ModuleInfo, tokens: tuple[str, ...], skipped, skipped_key) -> list[int]:
        """The places of the module's chunks that mention a token and that `skipped` does not
        skip, decided on a probe (the others are not read). The same for every copy of the
        project while `SharedParses` is active and the key (the test's settings) is the same."""
        shared = SharedParses.active
        memo = shared.outside_chunks if shared is not None and skipped_key is not None else None
        key = (module.display_path, module.names, module.is_package, self.project.raw_bytes(module), tokens, skipped_key)
        if memo is not None and key in memo:
            return memo[key]
        probe = module.probe()
        skip = skipped(module, probe)
        chosen = [i for i, text in enumerate(probe.chunk_texts()) if any(t in text for t in tokens) and not (skip is not None and skip(text))]
        if memo is not None:
            memo[key] = chosen
        return chosen

    def bind_arguments(self, call: cst.Call, caller: Optional[FunctionInfo], target: FunctionInfo, module: Optional[ModuleInfo] = None) -> "Arguments":
        """How a call fills the target's parameters, as Python binds them: the receiver or the
        new instance fills the receiver parameter unless the call passes it itself (a
        function, a static method, `Base.__init__(self)`); positional arguments fill the
        positional parameters in order and the rest land in `*args`; a keyword fills the
        parameter of its name (not a positional-only one) or lands in `**kwargs`. Positions
        after an unpacked `*x` are not known; what `*x` / `**x` fill is not known. `module`:
        where a module-level call (no caller) is written."""
        signature = target.node.params
        positional = [p.name.value for p in (*signature.posonly_params, *signature.params)]
        receiver = receiver_parameter(target)
        constructs = target.cls is not None and target.name == "__init__" and callee_name(call) != "__init__"
        if receiver is not None and not constructs and not has_decorator(target, "classmethod") and self._passes_receiver(call, caller, caller.module if caller is not None else module):
            receiver = None
        if receiver is not None:
            positional = positional[1:]
        star_args, star_kwargs = star_parameters(signature)
        by_keyword = {p.name.value for p in (*signature.params, *signature.kwonly_params)} - {receiver}
        return _bind(call, positional, star_args, by_keyword, star_kwargs, receiver, constructs)

    def arguments(self, call: cst.Call, caller: Optional[FunctionInfo], target: FunctionInfo) -> tuple[Optional[str], dict[str, cst.BaseExpression]]:
        """The parameter the receiver or new instance fills (None when the call fills the
        first parameter itself), and the explicit arguments by parameter (`bind_arguments`)."""
        bound = self.bind_arguments(call, caller, target)
        return bound.receiver, bound.by_parameter

    def _passes_receiver(self, call: cst.Call, caller: Optional[FunctionInfo], module: Optional[ModuleInfo]) -> bool:
        """`Class.method(obj, ...)`: the method called through its class, not an instance
        (`super().method()` binds the instance)."""
        func = call.func
        if not isinstance(func, cst.Attribute):
            return False
        if isinstance(func.value, cst.Call) and isinstance(func.value.func, cst.Name) and func.value.func.value == "super":
            return False
        return module is not None and self.class_of(func.value, module, caller) is not None

    # -- calls -----------------------------------------------------------------------------
    def resolve(self, call: cst.Call, function: FunctionInfo) -> Optional[FunctionInfo]:
        """The one function a call runs, or None (unknown, or several)."""
        found = self.resolve_all(call, function)
        return found[0].function if len(found) == 1 else None

    def resolve_all(self, call: cst.Call, function: FunctionInfo, self_class: Optional[ClassInfo] = None, depth: int = 0) -> list[Target]:
        """Every function the call can run (each binding of a local name that can reach it,
        each known class of the receiver)."""
        key = (id(call.func), id(function), id(self_class))
        entry = self._resolved.get(key)
        if entry is not None and (entry[1] is None or entry[1] <= depth):
            if entry[1] is not None:
                self._cuts += 1  # this answer is cut short too
            return list(entry[0])
        if self._too_deep(depth):
            return []
        cuts = self._cuts
        self._resolved[key] = ((), None)  # recursion through a cycle of names resolves to nothing
        found = tuple(_unique(self._resolve(call, function, self_class, depth)))
        self._resolved[key] = (found, None if self._cuts == cuts else depth)
        return list(found)

    def _too_deep(self, depth: int) -> bool:
        """Whether a search has gone past the depth limit (counted: what it was part of is
        cut short)."""
        if depth > _DEPTH:
            self._cuts += 1
            return True
        return False

    def _resolve(self, call: cst.Call, function: FunctionInfo, self_class: Optional[ClassInfo], depth: int) -> list[Target]:
        func = call.func
        module = function.module
        if isinstance(func, cst.Name):
            return self._resolve_name(func, function, self_class, depth)
        if isinstance(func, cst.Subscript):
            out = self._instance_calls(self.element_classes(func.value, function, self_class, depth + 1))
            if not _slices(func):  # `fns[i](x)`: an element of a local list of callables
                sequence = self.sequence_callables(func.value, function, self_class, depth + 1)
                if sequence is not None:
                    out.extend(sequence[0])
            return out
        if isinstance(func, cst.Call):  # `Block()(x)`: the instance made is called
            return self._instance_calls(self.value_classes(func, function, self_class, depth + 1))
        if not isinstance(func, cst.Attribute):
            return []
        receiver, attribute = func.value, func.attr.value
        # super().method()
        if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name) and receiver.func.value == "super":
            if function.cls is None:
                return []
            instance = self_class or function.cls
            found = self.method(instance, attribute, after=function.cls)
            return [Target(found, instance)] if found is not None else []
        if self.project.qualified_name(receiver, module, function) is not None:
            # A module, or a name bound at module level: a dotted global.
            return self._resolve_global(func, module, function)
        out: list[Target] = []
        for cls in self.value_classes(receiver, function, self_class, depth + 1):
            found = self.method(cls, attribute)
            if found is not None:
                out.append(Target(found, cls))
                continue
            # self.attr(...): an instance stored on the object, called.
            out.extend(self._instance_calls(self.attribute_classes(cls, attribute, depth + 1)))
        if not out:
            # A class named through an attribute (`layers.Block.make()`), or a class object.
            out.extend(self._resolve_global(func, module, function))
        return out

    def _resolve_name(self, func: cst.Name, function: FunctionInfo, self_class: Optional[ClassInfo], depth: int) -> list[Target]:
        module = function.module
        comprehension = self._comprehension_target(func, function)
        if comprehension is not None:
            clause, path = comprehension
            out = self._instance_calls(self._element_part(clause.iter, path, function, self_class, depth + 1))
            sequence = self._element_callables(clause.iter, path, function, self_class, depth + 1)
            return out + sequence[0] if sequence is not None else out
        scope: Optional[FunctionInfo] = function
        while scope is not None:
            bindings = scope.bindings
            if func.value in bindings.declared_global:
                break
            if bindings.binds(func.value):
                out: list[Target] = []
                anchor = func if scope is function else None  # a closure reads whatever the name holds when called
                for binding in bindings.reaching(func.value, anchor):
                    out.extend(self._binding_targets(binding, scope, self_class, depth))
                return out
            scope = scope.parent
        return self._resolve_global(func, module, function)

    def _binding_targets(self, binding, scope: FunctionInfo, self_class: Optional[ClassInfo], depth: int) -> list[Target]:
        """What calling a local name runs, for one binding of it."""
        module = scope.module
        if binding.kind == "def":
            nested = module.function_by_node.get(id(binding.node))
            return [Target(nested)] if nested is not None else []
        if binding.kind == "class":
            return []
        if binding.kind == "import":
            definition = self.project.lookup(binding.imported) if binding.imported else None
            return [Target(definition)] if isinstance(definition, FunctionInfo) else []
        if binding.kind in ("assign", "annassign", "walrus") and binding.value is not None:
            value = binding.value
            if isinstance(value, cst.Lambda) or self._is_partial(value, scope):
                return self.callable_targets(value, scope, module, self_class, depth + 1)
            if isinstance(value, (cst.Name, cst.Attribute)):
                # An alias of a function or a bound method.
                targets = self.callable_targets(value, scope, module, self_class, depth + 1)
                if targets:
                    return targets
            return self._instance_calls(self.value_classes(value, scope, self_class, depth + 1))
        if binding.kind == "param" and isinstance(binding.node, cst.Param) and binding.node.annotation is not None:
            return self._instance_calls(self._annotation_classes(binding.node.annotation.annotation, scope))
        if binding.kind == "loop":
            out = self._instance_calls(self.loop_target_classes(binding, scope, self_class, depth + 1))
            sequence = self._loop_callables(binding, scope, self_class, depth + 1)
            return out + sequence[0] if sequence is not None else out
        return []

    # -- local sequences of callables ------------------------------------------------------
    def sequence_callables(self, container: cst.BaseExpression, function: FunctionInfo, self_class: Optional[ClassInfo], depth: int = 0) -> Optional[tuple[list[Target], bool]]:
        """What calling an element of a local list or tuple of callables runs (`fns =
        [self.stage_a, self.stage_b]`; `fns[1:]`, `reversed(fns)`): the targets of its
        elements, and whether they are known exactly (every binding reaching the read is a
        display or list comprehension, each element is resolved, and the name is used only
        to read its elements: never appended to, rebound to another value, or handed
        elsewhere). None: not a local sequence the function builds."""
        if self._too_deep(depth):
            return None
        if isinstance(container, cst.Call):
            func = container.func
            if isinstance(func, cst.Name) and func.value in _ORDER_KEEPING and len(container.args) == 1 and not container.args[0].star:
                return self.sequence_callables(container.args[0].value, function, self_class, depth + 1)
            return None
        if isinstance(container, cst.Subscript) and _slices(container):
            return self.sequence_callables(container.value, function, self_class, depth + 1)
        if not isinstance(container, cst.Name) or not function.bindings.binds(container.value):
            return None
        reaching = function.bindings.reaching(container.value, container)
        displays = [
            b.value for b in reaching
            if b.kind in ("assign", "annassign") and isinstance(b.value, (cst.List, cst.Tuple, cst.ListComp))
        ]
        if not displays:
            return None
        known = len(displays) == len(reaching) and not self._sequence_escapes(function, container.value)
        out: list[Target] = []
        for display in displays:
            if isinstance(display, cst.ListComp):
                items = [display.elt]
            else:
                items = [e.value for e in display.elements]
                known = known and not any(isinstance(e, cst.StarredElement) for e in display.elements)
            for item in items:
                found = self._element_targets(item, function, self_class, depth + 1)
                if found is None:
                    known = False
                else:
                    out.extend(found)
        return _unique(out), known

    def _element_targets(self, item: cst.BaseExpression, function: FunctionInfo, self_class: Optional[ClassInfo], depth: int) -> Optional[list[Target]]:
        """What calling one element runs: a project function or bound method, a lambda or
        partial, an instance of a project class; a library callable runs no project code
        (empty). None: not known."""
        if isinstance(item, (cst.Lambda, cst.Name, cst.Attribute)) or self._is_partial(item, function):
            found = self.callable_targets(item, function, function.module, self_class, depth + 1)
            if found:
                return found
        classes = self.value_classes(item, function, self_class, depth + 1)
        if classes:
            return self._instance_calls(classes)
        named = item.func if isinstance(item, cst.Call) else item
        qualified = self.project.qualified_name(named, function.module, function)
        if qualified is not None and "." in qualified and self.project.lookup(qualified) is None:
            return []  # `torch.relu`, `nn.Linear(...)`: library code
        return None

    def _sequence_escapes(self, function: FunctionInfo, name: str) -> bool:
        """Whether the function uses the local other than to read its elements (indexing,
        slicing, iterating, `len`, `enumerate`, `zip`, `reversed`, a truth test): an element written, a
        method called on it (`fns.append(f)`), the list handed to a call or stored."""
        key = (id(function), name)
        if key in self._escapes:
            return self._escapes[key]
        module = function.module
        written = self._written.get(id(function))
        if written is None:
            written = self._written[id(function)] = {
                id(leaf) for node in function.nodes for target in assignment_targets(node) for leaf in target_leaves(target)
            }
        escapes = False
        for node in function.nodes:
            if type(node) is not cst.Name or node.value != name or id(node) in written:
                continue
            parent = module.parent(node)
            if isinstance(parent, cst.Subscript) and parent.value is node:
                if id(parent) in written:
                    escapes = True  # `fns[0] = other`
                    break
                continue
            if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is node:
                continue
            if isinstance(parent, (cst.If, cst.While, cst.IfExp)) and parent.test is node or isinstance(parent, cst.UnaryOperation):
                continue  # `if not fns:`: a test of its length
            if isinstance(parent, cst.Arg) and not parent.star and parent.keyword is None:
                call = module.parent(parent)
                if isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in _READING_CALLS:
                    continue
            escapes = True
            break
        self._escapes[key] = escapes
        return escapes

    def _element_callables(self, container: cst.BaseExpression, path: tuple[int, ...], function: FunctionInfo, self_class: Optional[ClassInfo], depth: int) -> Optional[tuple[list[Target], bool]]:
        """`sequence_callables` for the part `path` of each element of a container
        (`for i, f in enumerate(fns)`, `for f, x in zip(fns, xs)`)."""
        if not path:
            return self.sequence_callables(container, function, self_class, depth)
        if self._too_deep(depth) or not isinstance(container, cst.Call) or any(a.star or a.keyword is not None for a in container.args):
            return None
        func, args = container.func, container.args
        head, rest = path[0], path[1:]
        if isinstance(func, cst.Name) and func.value in _ORDER_KEEPING and len(args) == 1:
            return self._element_callables(args[0].value, path, function, self_class, depth + 1)
        if isinstance(func, cst.Name) and func.value == "enumerate" and args and head == 1:
            return self._element_callables(args[0].value, rest, function, self_class, depth + 1)
        if isinstance(func, cst.Name) and func.value == "zip" and head < len(args):
            return self._element_callables(args[head].value, rest, function, self_class, depth + 1)
        return None

    def _loop_callables(self, binding, function: FunctionInfo, self_class: Optional[ClassInfo], depth: int) -> Optional[tuple[list[Target], bool]]:
        loop = binding.node
        if not isinstance(loop, cst.For):
            return None
        (target,) = assignment_targets(loop)
        path = target_path(target, binding.name)
        if path is None:
            return None
        return self._element_callables(loop.iter, path, function, self_class, depth)

    def every_element_runs(self, call: cst.Call, function: FunctionInfo) -> Optional[list[Target]]:
        """The targets of the elements of a local list or tuple of callables known exactly,
        where the call runs each of them in turn: its callee is the variable of a `for` loop
        or comprehension over the list (`for f in fns: f(x)`). None: not such a call."""
        func = call.func
        if not isinstance(func, cst.Name):
            return None
        comprehension = self._comprehension_target(func, function)
        if comprehension is not None:
            clause, path = comprehension
            iterated = clause.iter
            sequence = self._element_callables(iterated, path, function, None, 0)
        else:
            if not function.bindings.binds(func.value):
                return None
            reaching = function.bindings.reaching(func.value, func)
            if len(reaching) != 1 or reaching[0].kind != "loop" or not isinstance(reaching[0].node, cst.For):
                return None
            loop = reaching[0].node
            if any(isinstance(node, (cst.Break, cst.Return, cst.Raise)) for node in preorder(loop.body)):
                return None  # it may stop before the last element
            iterated = loop.iter
            sequence = self._loop_callables(reaching[0], function, None, 0)
        if any(isinstance(node, cst.Subscript) or isinstance(node, cst.Name) and node.value == "zip" for node in preorder(iterated)):
            return None  # `fns[1:]`, `zip(fns, xs)`: some of the elements, not known which
        return sequence[0] if sequence is not None and sequence[1] else None

    def runs_unknown_element(self, call: cst.Call, function: FunctionInfo) -> bool:
        """The call runs an element of a local list or tuple of callables whose elements
        are not known exactly (`fns.append(extra)`; `register(fns)`; `[w.apply for w in
        ws]` of an unknown `w`): it may run any callable."""
        func = call.func
        if isinstance(func, cst.Subscript):
            if _slices(func):
                return False
            sequence = self.sequence_callables(func.value, function, None)
            return sequence is not None and not sequence[1]
        if not isinstance(func, cst.Name):
            return False
        comprehension = self._comprehension_target(func, function)
        if comprehension is not None:
            clause, path = comprehension
            sequence = self._element_callables(clause.iter, path, function, None, 0)
            return sequence is not None and not sequence[1]
        if not function.bindings.binds(func.value):
            return False
        for binding in function.bindings.reaching(func.value, func):
            if binding.kind == "loop":
                sequence = self._loop_callables(binding, function, None, 0)
                if sequence is not None and not sequence[1]:
                    return True
        return False

    def _instance_calls(self, classes: list[ClassInfo]) -> list[Target]:
        out = []
        for cls in classes:
            found = self.call_target_of_instance(cls)
            if found is not None:
                out.append(Target(found, cls))
        return out

    def _resolve_global(self, func: cst.BaseExpression, module: ModuleInfo, function: FunctionInfo) -> list[Target]:
        name = self.project.qualified_name(func, module, function)
        if name is None:
            return []
        definitions = self.project.lookup_all(name)
        out: list[Target] = []
        for definition in definitions:
            if isinstance(definition, FunctionInfo):
                if has_decorator(definition, "classmethod") and definition.cls is not None:
                    out.append(Target(definition, definition.cls))
                else:
                    out.append(Target(definition))
            elif isinstance(definition, ClassInfo):
                # Constructing an instance runs its __init__.
                init = self.method(definition, "__init__")
                if init is not None:
                    out.append(Target(init, definition))
        if not definitions and isinstance(func, cst.Attribute):
            # `Buffers.set_len(n)` where a base class defines it: found along the MRO; a class
            # method runs with `cls` bound to the class it is called on.
            owner = self.class_of(func.value, module, function)
            found = self.method(owner, func.attr.value) if owner is not None else None
            if found is not None:
                return [Target(found, owner if has_decorator(found, "classmethod") else None)]
        return out


def callee_name(call: cst.Call) -> Optional[str]:
    """The name a call is spelled with: `f` in `f()` and `a.f()`."""
    func = call.func
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


def bind_record_fields(call: cst.Call, fields: list[str]) -> Arguments:
    """How a construction fills the fields of a class whose `__init__` Python generates (a
    dataclass, a NamedTuple): in order, or by name."""
    return _bind(call, fields, None, set(fields), None, None, True)


def _bind(
    call: cst.Call,
    positional: list[str],
    star_args: Optional[str],
    by_keyword: set[str],
    star_kwargs: Optional[str],
    receiver: Optional[str],
    constructs: bool,
) -> Arguments:
    """Python's binding of a call's arguments to parameters (the receiver's already taken)."""
    by_parameter: dict[str, cst.BaseExpression] = {}
    landing: dict[int, str] = {}
    index = 0
    for argument in call.args:
        if argument.star == "*":
            break
        if argument.star or argument.keyword is not None:
            continue
        name = positional[index] if index < len(positional) else star_args
        if name is not None:
            landing[id(argument)] = name
            if name != star_args:
                by_parameter[name] = argument.value
        index += 1
    for argument in call.args:
        if argument.keyword is None:
            continue
        keyword = argument.keyword.value
        name = keyword if keyword in by_keyword else star_kwargs
        if name is not None:
            landing[id(argument)] = name
            if name == keyword:
                by_parameter[name] = argument.value
    return Arguments(receiver, constructs, by_parameter, landing, any(argument.star for argument in call.args))


# Builtins whose elements are those of their one argument, in some order.
_ORDER_KEEPING = frozenset({"reversed", "list", "tuple", "iter", "sorted"})
# Builtins that read a sequence's elements without keeping or changing it.
_READING_CALLS = frozenset({"len", "enumerate", "zip", "reversed", "list", "tuple", "iter", "sorted"})


def _slices(subscript: cst.Subscript) -> bool:
    """`fns[1:]`: a subscript all of whose parts are slices."""
    return all(isinstance(e.slice, cst.Slice) for e in subscript.slice)


def _unique(targets: list[Target]) -> list[Target]:
    out: list[Target] = []
    for target in targets:
        if target not in out:
            out.append(target)
    return out


def _c3(cls: ClassInfo, base_orders: list[tuple[ClassInfo, ...]], bases: list[ClassInfo]) -> tuple[ClassInfo, ...]:
    sequences = [list(order) for order in base_orders if order] + [list(bases)]
    out = [cls]
    while True:
        sequences = [s for s in sequences if s]
        if not sequences:
            return tuple(out)
        for sequence in sequences:
            head = sequence[0]
            if not any(head in s[1:] for s in sequences):
                break
        else:
            # No consistent order: depth-first, without repeats.
            for order in base_orders:
                for c in order:
                    if c not in out:
                        out.append(c)
            return tuple(out)
        out.append(head)
        for s in sequences:
            if s and s[0] is head:
                del s[0]


def _unquote(annotation: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(annotation, cst.SimpleString):
        try:
            return cst.parse_expression(annotation.evaluated_value)
        except Exception:
            return annotation
    return annotation
