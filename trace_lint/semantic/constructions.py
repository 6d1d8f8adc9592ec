"""What an unannotated constructor parameter holds, from every construction in the project.

`Generator(model, ...)` stores `self.model = model`; the class of `self.model` is the union,
over every call in the project that runs `Generator.__init__` (constructions of the class and
of subclasses that inherit it, `super().__init__(...)` and `Base.__init__(self, ...)` in
subclasses, `cls(...)` in class methods), of the classes of the argument each one passes
for that parameter. The answer is whole-program by construction: the calls are found by
searching every file's text (searches the cache records), so it is the same whatever
part of the project an analysis is rooted in. It is unknown (empty) when any call passes
something whose class is unknown, when a construction is at module level or spread from
`*args`, when the class is named other than as a call (`factory = Generator`: a call
through the alias cannot be found), or when the class is never constructed.
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from .project import ClassInfo, FunctionInfo, ModuleInfo, _container_items

# One argument a call passes: the expression and the function it is written in.
Argument = tuple[cst.BaseExpression, FunctionInfo]

# Calls whose class arguments are no instance made: `isinstance(x, Generator)`.
_CLASS_TESTS = frozenset({"isinstance", "issubclass", "super", "type"})


class ConstructionArguments:
    """The arguments every construction passes to each parameter of an `__init__`, and the
    classes they can hold."""

    def __init__(self, resolver):
        # The resolver that owns this (`calls.CallResolver`, which imports this module).
        self.resolver = resolver
        self._calls: dict[int, Optional[list[tuple[cst.Call, FunctionInfo]]]] = {}
        self._classes: dict[tuple[int, str, bool], list[ClassInfo]] = {}
        # Parameters being answered, outermost first; a cycle back to one is unknown, and
        # what was answered through the cycle is not kept (it depends on where it began).
        self._stack: list[tuple[int, str, bool]] = []
        self._lowest_hit: list[int] = []
        # `__init__`s whose calls are being found, with the stack's depth then.
        self._finding: dict[int, int] = {}
        self._constructed_by: dict[int, list[ClassInfo]] = {}
        self._named: dict[int, bool] = {}
        self._subclasses_of: dict[int, list[ClassInfo]] = {}
        self._spelled_by: dict[str, list[tuple[cst.Call, Optional[FunctionInfo], ModuleInfo]]] = {}
        self._naming_by: dict[str, list[ClassInfo]] = {}
        self._references_by: dict[str, list[tuple[cst.CSTNode, ModuleInfo, Optional[FunctionInfo]]]] = {}

    # -- classes ---------------------------------------------------------------------------
    def classes(self, function: FunctionInfo, param: cst.Param, elements: bool = False) -> list[ClassInfo]:
        """The project classes the parameter can hold (`elements`: of the elements of the
        list or tuple it holds); empty when unknown."""
        if not _answerable(function, param):
            return []
        key = (id(function), param.name.value, elements)
        found = self._classes.get(key)
        if found is not None:
            return found
        if key in self._stack:
            index = self._stack.index(key)
            self._lowest_hit[-1] = min(self._lowest_hit[-1], index)
            return []
        self._stack.append(key)
        self._lowest_hit.append(len(self._stack))
        try:
            found = self._union(function, param, elements)
        finally:
            self._stack.pop()
            lowest = self._lowest_hit.pop()
        if lowest >= len(self._stack):  # no cycle back past this parameter
            self._classes[key] = found
        elif self._lowest_hit:
            self._lowest_hit[-1] = min(self._lowest_hit[-1], lowest)
        return found

    def _union(self, function: FunctionInfo, param: cst.Param, elements: bool) -> list[ClassInfo]:
        arguments = self.arguments(function, param)
        if not arguments:
            return []
        resolver = self.resolver
        out: list[ClassInfo] = []
        for value, caller in arguments:
            if isinstance(value, cst.Name) and value.value == "None":
                continue  # no instance: nothing is called on it
            if not elements:
                found = resolver.value_classes(value, caller, None)
            elif isinstance(value, (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp)):
                # `[Transformer(...) for ...]`: every element must be known.
                found = []
                for item in _container_items(value):
                    classes = resolver.value_classes(item, caller, None)
                    if not classes:
                        return []
                    found.extend(c for c in classes if c not in found)
            else:
                found = resolver.element_classes(value, caller, None)
            if not found:
                return []
            out.extend(c for c in found if c not in out)
        if out and any(self._named_otherwise(cls) for cls in self._constructed(function)):
            return []
        return out

    # -- arguments -------------------------------------------------------------------------
    def arguments(self, function: FunctionInfo, param: cst.Param) -> Optional[list[Argument]]:
        """What each call of the `__init__` passes for the parameter (its default where a
        call passes none); None when some call's argument cannot be told."""
        calls = self.calls(function)
        if calls is None:
            return None
        name = param.name.value
        out: list[Argument] = []
        for call, caller in calls:
            _, mapping = self.resolver.arguments(call, caller, function)
            value = mapping.get(name)
            if value is None:
                if any(a.star for a in call.args) or param.default is None:
                    return None  # spread from `*args` / `**kwargs`, or not told
                value, caller = param.default, function
            out.append((value, caller))
        return out

    def calls(self, init: FunctionInfo) -> Optional[list[tuple[cst.Call, FunctionInfo]]]:
        """Every call in the project that runs the `__init__`, with the function it is in;
        None when one may run it unseen (module-level code, the class named other than as a
        call) or there is none."""
        key = id(init)
        if key in self._finding:
            if self._lowest_hit:
                self._lowest_hit[-1] = min(self._lowest_hit[-1], self._finding[key] - 1)
            return None
        if key in self._calls:
            return self._calls[key]
        # A construction reached while finding constructions is unknown, and so is what was
        # answered through it.
        self._calls[key] = None
        self._finding[key] = len(self._stack)
        try:
            found = self._find_calls(init)
        finally:
            del self._finding[key]
        self._calls[key] = found
        return found

    def _constructed(self, init: FunctionInfo) -> list[ClassInfo]:
        """The class of the `__init__` and its subclasses that inherit it."""
        found = self._constructed_by.get(id(init))
        if found is None:
            owner = init.cls
            assert owner is not None
            family = [owner, *self._subclasses(owner)]
            found = self._constructed_by[id(init)] = [c for c in family if self.resolver.method(c, "__init__") is init]
        return found

    def _find_calls(self, init: FunctionInfo) -> Optional[list[tuple[cst.Call, FunctionInfo]]]:
        resolver = self.resolver
        owner = init.cls
        assert owner is not None
        constructed = self._constructed(init)
        calls: list[tuple[cst.Call, FunctionInfo]] = []
        for name in sorted({c.name for c in constructed}):
            for call, caller, module in self._spelled(name):
                if caller is None:
                    if resolver.class_of(call.func, module, None) in constructed:
                        return None  # a module-level construction: its argument is not told here
                elif any(t.function is init for t in resolver.resolve_all(call, caller)) or any(
                    c in constructed for c in resolver.classes_of(call.func, module, caller)
                ):
                    # (The second: a class imported inside the function, `from .g import Generator`.)
                    calls.append((call, caller))
        # `super().__init__(...)` and `Base.__init__(self, ...)` in the subclasses.
        for cls in self._subclasses(owner):
            for method in cls.methods.values():
                for node in method.nodes:
                    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "__init__":
                        if any(t.function is init for t in resolver.resolve_all(node, method)):
                            calls.append((node, method))
        # `cls(...)` in a class method called on one of the classes constructs it.
        for cls in constructed:
            for base in resolver.mro(cls):
                for method in base.methods.values():
                    if not method.params or not _is_classmethod(method):
                        continue
                    for node in method.nodes:
                        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == method.params[0]:
                            if (node, method) not in calls:
                                calls.append((node, method))
        return calls or None

    def _subclasses(self, cls: ClassInfo) -> list[ClassInfo]:
        """The project's subclasses of `cls`, transitively (each spells its base's name)."""
        cached = self._subclasses_of.get(id(cls))
        if cached is not None:
            return cached
        out: list[ClassInfo] = []
        self._subclasses_of[id(cls)] = out
        frontier = [cls]
        while frontier:
            base = frontier.pop()
            for candidate in self._naming(base.name):
                if candidate is not cls and candidate not in out and base in self.resolver.bases(candidate):
                    out.append(candidate)
                    frontier.append(candidate)
        return out

    # -- the text searches, one per name (classes of one name in many models share them) ----
    def _spelled(self, name: str) -> list[tuple[cst.Call, Optional[FunctionInfo], ModuleInfo]]:
        """Calls spelled `name(...)` or `x.name(...)`, with the function each is in (None:
        module level)."""
        found = self._spelled_by.get(name)
        if found is None:
            found = self._spelled_by[name] = []
            for module in self.resolver.project.modules_calling(name):
                for call, caller in module.iter_calls(_word_test([name])):
                    func = call.func
                    if (func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else None) == name:
                        found.append((call, caller, module))
        return found

    def _naming(self, name: str) -> list[ClassInfo]:
        """Classes with a base spelled `name` or `x.name`."""
        found = self._naming_by.get(name)
        if found is None:
            found = self._naming_by[name] = []
            test = _word_test([name])
            for module in self.resolver.project.modules_mentioning(name.encode()):
                list(module.iter_functions(test))  # parses the chunks naming it
                for candidate in list(module.classes.values()):
                    if any(base.keyword is None and _spells(base.value, name) for base in candidate.node.bases):
                        found.append(candidate)
        return found

    def _named_otherwise(self, cls: ClassInfo) -> bool:
        """The class is named somewhere other than as the callee of a call, an attribute's
        owner (`Generator.make()`), a base, an annotation, an import or a class test: a
        call through that name (an alias, a factory argument) would not be found."""
        known = self._named.get(id(cls))
        if known is None:
            resolver = self.resolver
            known = self._named[id(cls)] = any(
                resolver.class_of(reference, module, function) is cls for reference, module, function in self._references(cls.name)  # type: ignore[arg-type]
            )
        return known

    def _references(self, name: str) -> list[tuple[cst.CSTNode, ModuleInfo, Optional[FunctionInfo]]]:
        """Where code names `name` other than as a class only (see `_names_a_class_only`)."""
        found = self._references_by.get(name)
        if found is None:
            found = self._references_by[name] = []
            test = _word_test([name])
            for module in self.resolver.project.modules_mentioning(name.encode()):
                scopes: list[tuple[list[cst.CSTNode], Optional[FunctionInfo]]] = [(module.nodes, None)]
                scopes.extend((f.nodes, f) for f in module.iter_functions(test))
                for nodes, function in scopes:
                    for node in nodes:
                        if isinstance(node, (cst.Name, cst.Attribute)) and _spells(node, name) and not _names_a_class_only(node, module):
                            found.append((node, module, function))
        return found


def _spells(expr: cst.BaseExpression, name: str) -> bool:
    """`name` or `x.name`."""
    return (isinstance(expr, cst.Name) and expr.value == name) or (isinstance(expr, cst.Attribute) and expr.attr.value == name)


def _word_test(names: list[str]):
    """Whether a chunk's text has one of the names as a whole word (`Model`, not `ModelArgs`)."""
    pattern = re.compile(r"(?<![A-Za-z0-9_])(?:" + "|".join(re.escape(n) for n in names) + r")(?![A-Za-z0-9_])")
    return lambda text: pattern.search(text) is not None


def _answerable(function: FunctionInfo, param: cst.Param) -> bool:
    """A named parameter of a method `__init__`, not `self` and not `*args` / `**kwargs`."""
    if function.cls is None or function.name != "__init__" or not isinstance(function.node, cst.FunctionDef):
        return False
    parameters = function.node.params
    if param is parameters.star_arg or param is parameters.star_kwarg:
        return False
    positional = [*parameters.posonly_params, *parameters.params]
    return not (positional and positional[0] is param)


def _is_classmethod(function: FunctionInfo) -> bool:
    return any(isinstance(d.decorator, cst.Name) and d.decorator.value == "classmethod" for d in getattr(function.node, "decorators", ()))


def _names_a_class_only(reference: cst.CSTNode, module: ModuleInfo) -> bool:
    """The reference calls the class, reads one of its attributes, or names it as a base, in
    an annotation, an import or a class test: no instance is made through it unseen."""
    parent = module.parents.get(id(reference))
    if isinstance(reference, cst.Name) and isinstance(parent, cst.Attribute) and parent.attr is reference:
        return True  # `obj.Generator`: the Attribute is the reference
    if isinstance(parent, cst.Call) and parent.func is reference:
        return True
    if isinstance(parent, cst.Attribute) and parent.value is reference:
        return True
    if isinstance(parent, (cst.ImportAlias, cst.ImportFrom, cst.Import)):
        return True
    if isinstance(parent, cst.Arg):
        holder = module.parents.get(id(parent))
        if isinstance(holder, cst.ClassDef):
            return True
        if isinstance(holder, cst.Call) and isinstance(holder.func, cst.Name) and holder.func.value in _CLASS_TESTS:
            return True
    if isinstance(parent, (cst.Tuple, cst.Element)):
        # `isinstance(x, (A, Generator))`
        current = parent
        while isinstance(current, (cst.Tuple, cst.Element)):
            current = module.parents.get(id(current))
        if isinstance(current, cst.Arg):
            holder = module.parents.get(id(current))
            if isinstance(holder, cst.Call) and isinstance(holder.func, cst.Name) and holder.func.value in _CLASS_TESTS:
                return True
    current = parent
    while current is not None and not isinstance(current, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        if isinstance(current, cst.Annotation):
            return True
        current = module.parents.get(id(current))
    return False
