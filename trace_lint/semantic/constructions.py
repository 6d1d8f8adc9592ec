"""What an unannotated constructor (or method) parameter holds, from every call in the project.

`Generator(model, ...)` stores `self.model = model`; the class of `self.model` is the union,
over every call in the project that runs `Generator.__init__` (constructions of the class and
of subclasses that inherit it, `super().__init__(...)` and `Base.__init__(self, ...)` in
subclasses, `cls(...)` in class methods), of the classes of the argument each one passes
for that parameter. The answer is whole-program by construction: the calls are found by
searching every file's text (searches the cache records), so it is the same whatever
part of the project an analysis is rooted in. It is unknown (empty) when any call passes
something whose class is unknown, when a construction is at module level or spread from
`*args`, when the class is named other than as a call (`factory = Generator`: a call
through the alias cannot be found), or when the class is never constructed. A plain method
storing a parameter (`def attach(self, model): self.model = model`) is answered the same way
from its calls, each spelled with its name: unknown if one of them has a receiver of unknown
class (it may be this method) or the name is passed on uncalled.
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator, Optional

import libcst as cst

from .project import ClassInfo, FunctionInfo, ModuleInfo, _container_items
from .receivers import has_decorator, receiver_parameter

# One argument a call passes: the expression and the function it is written in.
Argument = tuple[cst.BaseExpression, FunctionInfo]

# Methods the language or a framework calls without spelling their name (`model(x)` runs
# `forward`).
_CALLED_UNSPELLED = frozenset({"forward"})

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
        self._spelled_by: dict[str, _Kept] = {}
        self._naming_by: dict[str, list[ClassInfo]] = {}
        # Per name: the references found so far, and the modules not yet read for them.
        self._references_by: dict[str, tuple[list, Iterator[ModuleInfo]]] = {}

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
        if function.name == "__init__":
            # The class's own constructions first: where one passes something unknown, the
            # searches for subclasses and other names of the class are not made.
            if self._classes_passed(function, param, elements, self._own_constructions(function)) is None:
                return []
        calls = self.calls(function)
        out = self._classes_passed(function, param, elements, calls) if calls is not None else None
        if not out:
            return []
        if function.name == "__init__" and any(self._named_otherwise(cls) for cls in self._constructed(function)):
            return []
        return out

    def _classes_passed(self, function: FunctionInfo, param: cst.Param, elements: bool, calls: Iterable[Optional[tuple[cst.Call, FunctionInfo]]]) -> Optional[list[ClassInfo]]:
        """The classes the calls pass for the parameter, read one call at a time; None at the
        first that passes something unknown (None in `calls`: a call that cannot be told)."""
        resolver = self.resolver
        out: list[ClassInfo] = []
        for argument in self._arguments(function, param, calls):
            if argument is None:
                return None
            value, caller = argument
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
                        return None
                    found.extend(c for c in classes if c not in found)
            else:
                found = resolver.element_classes(value, caller, None)
            if not found:
                return None
            out.extend(c for c in found if c not in out)
        return out

    # -- arguments -------------------------------------------------------------------------
    def _arguments(self, function: FunctionInfo, param: cst.Param, calls: Iterable[Optional[tuple[cst.Call, FunctionInfo]]]) -> Iterator[Optional[Argument]]:
        """What each call passes for the parameter (its default where a call passes none);
        None for a call whose argument cannot be told."""
        name = param.name.value
        for found in calls:
            if found is None:
                yield None
                continue
            call, caller = found
            _, mapping = self.resolver.arguments(call, caller, function)
            value = mapping.get(name)
            if value is None:
                if any(a.star for a in call.args) or param.default is None:
                    yield None  # spread from `*args` / `**kwargs`, or not told
                    continue
                value, caller = param.default, function
            yield value, caller

    def calls(self, init: FunctionInfo) -> Optional[list[tuple[cst.Call, FunctionInfo]]]:
        """Every call in the project that runs the `__init__` (or the method), with the
        function it is in; None when one may run it unseen (module-level code, the class
        or method named other than as a call, a call of the method's name on a receiver of
        unknown class) or there is none."""
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
            found = self._find_calls(init) if init.name == "__init__" else self._find_method_calls(init)
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

    def _own_constructions(self, init: FunctionInfo) -> Iterator[Optional[tuple[cst.Call, FunctionInfo]]]:
        """The calls of the class's own name that run its `__init__`, as they are read; None
        for one at module level."""
        owner = init.cls
        assert owner is not None
        return self._constructions_named(init, owner.name, [owner])

    def _constructions_named(self, init: FunctionInfo, name: str, constructed: list[ClassInfo]) -> Iterator[Optional[tuple[cst.Call, FunctionInfo]]]:
        resolver = self.resolver
        for call, caller, module in self._spelled(name):
            if caller is None:
                if resolver.class_of(call.func, module, None) in constructed:
                    yield None  # a module-level construction: its argument is not told here
            elif any(t.function is init for t in resolver.resolve_all(call, caller)) or any(
                c in constructed for c in resolver.classes_of(call.func, module, caller)
            ):
                # (The second: a class imported inside the function, `from .g import Generator`.)
                yield call, caller

    def _find_calls(self, init: FunctionInfo) -> Optional[list[tuple[cst.Call, FunctionInfo]]]:
        resolver = self.resolver
        owner = init.cls
        assert owner is not None
        constructed = self._constructed(init)
        calls: list[tuple[cst.Call, FunctionInfo]] = []
        for name in sorted({c.name for c in constructed}):
            for found in self._constructions_named(init, name, constructed):
                if found is None:
                    return None
                if found not in calls:
                    calls.append(found)
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
                    receiver = receiver_parameter(method) if has_decorator(method, "classmethod") else None
                    if receiver is None:
                        continue
                    for node in method.nodes:
                        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == receiver:
                            if (node, method) not in calls:
                                calls.append((node, method))
        return calls or None

    def _find_method_calls(self, method: FunctionInfo) -> Optional[list[tuple[cst.Call, FunctionInfo]]]:
        """The calls of a method other than `__init__` (`runner.attach(model)`): every call
        spelled with its name must resolve, and the name is never passed on uncalled."""
        resolver = self.resolver
        calls: list[tuple[cst.Call, FunctionInfo]] = []
        for call, caller, _module in self._spelled(method.name):
            if caller is None:
                return None
            found = resolver.resolve_all(call, caller)
            if any(t.function is method for t in found):
                calls.append((call, caller))
            elif not found:
                return None  # a receiver of unknown class: it may be this method
        if next(self._references(method.name), None) is not None:
            return None  # `hook = runner.attach`: a call through it would not be found
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
    def _spelled(self, name: str) -> "_Kept":
        """Calls spelled `name(...)` or `x.name(...)`, with the function each is in (None:
        module level), read module by module as asked."""
        found = self._spelled_by.get(name)
        if found is None:
            found = self._spelled_by[name] = _Kept(self._read_spelled(name))
        return found

    def _read_spelled(self, name: str) -> Iterator[tuple[cst.Call, Optional[FunctionInfo], ModuleInfo]]:
        called = re.compile(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"\s*\(")
        test = lambda text: called.search(text) is not None  # noqa: E731 (the chunks calling it)
        for module in self.resolver.project.modules_calling(name):
            for call, caller in module.iter_calls(test):
                func = call.func
                if (func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else None) == name:
                    yield call, caller, module

    def _naming(self, name: str) -> list[ClassInfo]:
        """Classes with a base spelled `name` or `x.name`."""
        found = self._naming_by.get(name)
        if found is None:
            found = self._naming_by[name] = []
            header = _class_header(name)
            project = self.resolver.project
            for module in project.modules_mentioning(name.encode()):
                if header.search(project.raw_bytes(module).decode("utf-8", "replace")) is None:
                    continue
                # Every chunk naming it is parsed (not only those whose header the text test
                # finds): the classes read below are then the same whatever was parsed before.
                list(module.iter_functions(_word_test([name])))
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

    def _references(self, name: str) -> Iterator[tuple[cst.CSTNode, ModuleInfo, Optional[FunctionInfo]]]:
        """Where code names `name` other than as a class only (see `_names_a_class_only`),
        module by module as asked (the first that is the class settles it); what was found
        is kept for the next class of the same name."""
        state = self._references_by.get(name)
        if state is None:
            project = self.resolver.project
            state = self._references_by[name] = ([], iter(project.modules_mentioning(name.encode())))
        found, modules = state
        yield from list(found)
        test = _uncalled_test(name)
        project = self.resolver.project
        for module in modules:
            if not test(project.raw_bytes(module).decode("utf-8", "replace")):
                continue  # every mention is a call, an attribute's owner or an import
            scopes: list[tuple[list[cst.CSTNode], Optional[FunctionInfo]]] = [(module.nodes, None)]
            scopes.extend((f.nodes, f) for f in module.iter_functions(test))
            here = [
                (node, module, function)
                for nodes, function in scopes
                for node in nodes
                if isinstance(node, (cst.Name, cst.Attribute)) and _spells(node, name) and not _names_a_class_only(node, module)
            ]
            found.extend(here)
            yield from here


class _Kept:
    """A sequence read from its source only as far as some reader has gone, and kept for the
    next reader (a search stops at its first unknown call)."""

    def __init__(self, source: Iterator):
        self._items: list = []
        self._source = source

    def __iter__(self):
        index = 0
        while True:
            if index == len(self._items):
                try:
                    self._items.append(next(self._source))
                except StopIteration:
                    return
            yield self._items[index]
            index += 1


def _spells(expr: cst.BaseExpression, name: str) -> bool:
    """`name` or `x.name`."""
    return (isinstance(expr, cst.Name) and expr.value == name) or (isinstance(expr, cst.Attribute) and expr.attr.value == name)


def _class_header(name: str) -> re.Pattern:
    """A `class X(...):` header whose bases (one level of brackets inside) spell the name as
    a word: what makes a chunk worth parsing for subclasses (the parse decides)."""
    word = r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])"
    return re.compile(r"^[ \t]*class\s+\w+\s*\((?:[^()]|\([^()]*\))*?" + word, re.MULTILINE)


def _uncalled_test(name: str):
    """Whether a text mentions the name as a word other than called (`name(`), as an
    attribute's owner (`name.`), defined (`class name`) or imported: what makes a chunk worth
    parsing for other references (the parse decides)."""
    pattern = re.compile(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])(?!\s*[(.])")

    def test(text: str) -> bool:
        for match in pattern.finditer(text):
            start = text.rfind("\n", 0, match.start()) + 1
            line = text[start : match.start()].lstrip()
            if not line.startswith(("from ", "import ")) and not line.endswith("class "):
                return True
        return False

    return test


def _word_test(names: list[str]):
    """Whether a chunk's text has one of the names as a whole word (`Model`, not `ModelArgs`)."""
    pattern = re.compile(r"(?<![A-Za-z0-9_])(?:" + "|".join(re.escape(n) for n in names) + r")(?![A-Za-z0-9_])")
    return lambda text: pattern.search(text) is not None


def _answerable(function: FunctionInfo, param: cst.Param) -> bool:
    """A named parameter of `__init__` or of a plain method (no other dunder, whose calls are
    not spelled with its name; no static or class method), not `self`, not `*args` /
    `**kwargs`."""
    if function.cls is None or not isinstance(function.node, cst.FunctionDef):
        return False
    name = function.name
    if name != "__init__" and (name.startswith("__") and name.endswith("__") or name in _CALLED_UNSPELLED):
        return False
    if any(isinstance(d.decorator, cst.Name) and d.decorator.value in ("staticmethod", "classmethod", "property") for d in function.node.decorators):
        return False
    if name != "__init__":
        if function.node.decorators:
            return False  # a decorator may call it otherwise
        # Only a parameter the method stores (`self.model = model`): the searches for a
        # method's calls are not made for every parameter a method calls something on.
        stored = [v for m, v in (item for values in function.cls.attribute_values.values() for item in values) if m is function]
        if not any(isinstance(v, cst.Name) and v.value == param.name.value for v in stored):
            return False
    parameters = function.node.params
    if param is parameters.star_arg or param is parameters.star_kwarg:
        return False
    return param.name.value != receiver_parameter(function)


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
