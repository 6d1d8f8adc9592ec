"""The project index: every checked file as a module, parsed lazily, with its imports,
functions and classes, and name resolution through imports and aliases.

Nothing here knows about captures or rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, Optional, Union

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from .source import ReadError, SourceText, decode, read_bytes

CAPTURED_COMMENT = re.compile(r"#\s*trace-lint:\s*captured\b")


@dataclass
class ClassInfo:
    name: str
    qualname: str  # within the module: "Outer.Inner"
    node: cst.ClassDef
    module: "ModuleInfo"
    methods: dict[str, "FunctionInfo"] = field(default_factory=dict)
    # self.attr = SomeClass(...) / self.attr = self.make() -> the expression naming the class
    attribute_types: dict[str, cst.BaseExpression] = field(default_factory=dict)
    # self.layers = [Layer(...) for ...] / ModuleList([...]) -> the element constructor
    element_types: dict[str, cst.BaseExpression] = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        return f"{self.module.name}.{self.qualname}"


@dataclass
class FunctionInfo:
    name: str
    qualname: str  # within the module: "Class.method", "outer.<locals>.inner"
    node: cst.FunctionDef
    module: "ModuleInfo"
    cls: Optional[ClassInfo] = None
    parent: Optional["FunctionInfo"] = None
    params: list[str] = field(default_factory=list)
    imports: dict[str, str] = field(default_factory=dict)
    # Declared with `# trace-lint: captured` on its def line.
    declared_captured: bool = False
    nested: dict[str, "FunctionInfo"] = field(default_factory=dict)
    # Every node of the body in source order, not entering nested defs, classes or lambdas
    # (the nested def, class or lambda node itself is included). Built in the parse pass.
    nodes: list[cst.CSTNode] = field(default_factory=list)

    @property
    def full_name(self) -> str:
        return f"{self.module.name}.{self.qualname}"

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other


Definition = Union[FunctionInfo, ClassInfo]


class ModuleInfo:
    """One source file. Parsed on first use of `tree`."""

    # Files parsed in this process, for progress on a terminal.
    parsed_count = 0

    def __init__(self, path: Path, name: str, display_path: str, text: Optional[str] = None):
        self.path = path
        self.name = name
        self.display_path = display_path
        self.is_package = path.name in ("__init__.py", "__init__.pyi")
        self._text = text
        self._loaded = False
        self.source: Optional[SourceText] = None
        self.read_error: Optional[str] = None
        self.tree: Optional[cst.Module] = None
        self.parse_error: Optional[tuple[str, int, int]] = None
        # Node -> CodeRange, computed on first use: libcst's position pass costs as much as
        # the parse, and modules loaded only to look names up never need it.
        self._positions: Optional[Mapping] = None
        self._positioned_tree: Optional[cst.Module] = None
        self.imports: dict[str, str] = {}
        self.functions: dict[str, FunctionInfo] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.top_level: dict[str, Definition] = {}
        self.function_by_node: dict[int, FunctionInfo] = {}
        # Parent of every node (by id), and the nodes of module-level code in source order.
        self.parents: dict[int, cst.CSTNode] = {}
        self.nodes: list[cst.CSTNode] = []
        # Module-level names bound to mutable values (containers) and all module-level names.
        self.globals: set[str] = set()

    # -- loading -------------------------------------------------------------------------
    def load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        if self._text is not None:
            self.source = SourceText(self._text)
        else:
            try:
                self.source = decode(read_bytes(self.path))
            except ReadError as error:
                self.read_error = str(error)
                self.source = SourceText("")
                return
        if self.source.error:
            self.parse_error = (self.source.error, self.source.error_line, self.source.error_column)
            return
        ModuleInfo.parsed_count += 1
        try:
            tree = cst.parse_module(self.source.text)
        except cst.ParserSyntaxError as error:
            self.parse_error = _syntax_error_position(self.source.text, error)
            return
        except (RecursionError, MemoryError, ValueError) as error:
            self.parse_error = (f"cannot parse: {type(error).__name__}", 1, 1)
            return
        self._positioned_tree = tree
        try:
            _Collector(self).collect(tree)
        except (RecursionError, KeyError):
            # libcst re-raises a RecursionError in position tracking as a KeyError.
            self._positions = {}
            self.parse_error = ("cannot analyse: code nested too deeply", 1, 1)
            return
        self.tree = tree

    @property
    def positions(self) -> Mapping:
        if self._positions is None:
            self._positions = {}
            if self._positioned_tree is not None:
                try:
                    self._positions = MetadataWrapper(self._positioned_tree, unsafe_skip_copy=True).resolve(PositionProvider)
                except (RecursionError, KeyError):
                    if self.parse_error is None:
                        self.parse_error = ("cannot analyse: code nested too deeply", 1, 1)
        return self._positions

    @positions.setter
    def positions(self, value: Mapping) -> None:
        self._positions = value

    @property
    def text(self) -> str:
        self.load()
        return self.source.text if self.source else ""

    @property
    def ok(self) -> bool:
        self.load()
        return self.tree is not None

    # -- positions -----------------------------------------------------------------------
    def range(self, node: cst.CSTNode) -> CodeRange:
        return self.positions[node]

    def start(self, node: cst.CSTNode) -> tuple[int, int]:
        r = self.positions[node]
        return (r.start.line, r.start.column)

    def end(self, node: cst.CSTNode) -> tuple[int, int]:
        r = self.positions[node]
        return (r.end.line, r.end.column)

    def code(self, node: cst.CSTNode) -> str:
        assert self.tree is not None
        return self.tree.code_for_node(node)

    def normalized(self, node: cst.CSTNode) -> str:
        """Source of an expression with whitespace removed, for comparing expressions."""
        return re.sub(r"\s+", "", self.code(node))

    # -- functions -----------------------------------------------------------------------
    def iter_functions(self) -> Iterator[FunctionInfo]:
        self.load()
        return iter(self.functions.values())

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self.parents.get(id(node))

    def ancestors(self, node: cst.CSTNode, stop: Optional[cst.CSTNode] = None) -> list[cst.CSTNode]:
        """Ancestors of a node, outermost first, up to (not including) `stop`."""
        chain = []
        current = self.parents.get(id(node))
        while current is not None and current is not stop:
            chain.append(current)
            current = self.parents.get(id(current))
        chain.reverse()
        return chain

    def iter_calls(self) -> Iterator[tuple[cst.Call, Optional[FunctionInfo]]]:
        """Every call in the module with the function it is written in (None: module level)."""
        self.load()
        if self.tree is None:
            return
        for node in self.nodes:
            if isinstance(node, cst.Call):
                yield node, None
        for function in self.functions.values():
            for node in function.nodes:
                if isinstance(node, cst.Call):
                    yield node, function

    def __repr__(self) -> str:
        return f"ModuleInfo({self.name!r}, {self.display_path!r})"


def _syntax_error_position(text: str, error: cst.ParserSyntaxError) -> tuple[str, int, int]:
    """libcst places tokenizer errors at 1:1; CPython's parser (no code is run) knows better."""
    import ast

    try:
        ast.parse(text)
    except SyntaxError as python_error:
        return (f"syntax error: {python_error.msg}", python_error.lineno or 1, python_error.offset or 1)
    except (ValueError, RecursionError, MemoryError):
        pass
    message = re.sub(r"^(parser error: )?error at \d+:\d+: ", "", error.message)
    return (f"syntax error: {message}", error.editor_line, error.editor_column)


def _import_alias_name(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_import_alias_name(node.value)}.{node.attr.value}"
    raise ValueError(node)


class _Collector(cst.CSTVisitor):
    """One pass over a module: imports, functions, classes, module-level names."""

    def __init__(self, module: ModuleInfo):
        super().__init__()
        self.module = module
        self.function_stack: list[FunctionInfo] = []
        # Innermost last: the class or function whose body we are in.
        self.enclosing: list[Definition] = []
        # qualname prefixes
        self.scope: list[str] = []
        self.lines: Optional[list[str]] = None
        # Node index: the open nodes, and the list that collects each open node's children.
        self.open_nodes: list[cst.CSTNode] = []
        self.owners: list[Optional[list[cst.CSTNode]]] = [module.nodes]
        self.body_owner: dict[int, list[cst.CSTNode]] = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        owner = self.owners[-1]
        if owner is not None:
            owner.append(node)
        if self.open_nodes:
            self.module.parents[id(node)] = self.open_nodes[-1]
        self.open_nodes.append(node)
        descend = super().on_visit(node)
        if isinstance(node, cst.FunctionDef):
            info = self.module.function_by_node[id(node)]
            self.body_owner[id(node.body)] = info.nodes
            child_owner = None  # decorators, defaults and annotations are not the body
        elif isinstance(node, cst.Lambda) or (isinstance(node, cst.ClassDef) and self.function_stack):
            child_owner = None
        else:
            child_owner = self.body_owner.pop(id(node), owner)
        self.owners.append(child_owner)
        return descend

    def on_leave(self, original_node: cst.CSTNode) -> None:
        super().on_leave(original_node)
        self.owners.pop()
        self.open_nodes.pop()

    def collect(self, tree: cst.Module) -> None:
        tree.visit(self)

    def _package(self) -> str:
        name = self.module.name
        return name if self.module.is_package else name.rpartition(".")[0]

    def _bind_imports(self, mapping: dict[str, str]) -> None:
        target = self.function_stack[-1].imports if self.function_stack else self.module.imports
        target.update(mapping)
        if not self.enclosing:
            self.module.globals.update(mapping)

    def visit_Import(self, node: cst.Import) -> None:
        mapping = {}
        for alias in node.names:
            full = _import_alias_name(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                mapping[alias.asname.name.value] = full
            else:
                head = full.split(".")[0]
                mapping[head] = head
        self._bind_imports(mapping)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        dots = len(node.relative)
        base = _import_alias_name(node.module) if node.module is not None else ""
        if dots:
            package = self._package().split(".") if self._package() else []
            if dots - 1 > len(package):
                return
            anchor = package[: len(package) - (dots - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        if isinstance(node.names, cst.ImportStar):
            return
        mapping = {}
        for alias in node.names:
            name = _import_alias_name(alias.name)
            local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else name
            mapping[local] = f"{base}.{name}" if base else name
        self._bind_imports(mapping)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        qualname = ".".join([*self.scope, node.name.value])
        info = ClassInfo(node.name.value, qualname, node, self.module)
        self.module.classes[qualname] = info
        if not self.scope:
            self.module.top_level[node.name.value] = info
            self.module.globals.add(node.name.value)
        self.enclosing.append(info)
        self.scope.append(node.name.value)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.enclosing.pop()
        self.scope.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        qualname = ".".join([*self.scope, node.name.value])
        parent = self.function_stack[-1] if self.function_stack else None
        cls = self.enclosing[-1] if self.enclosing and isinstance(self.enclosing[-1], ClassInfo) else None
        params = [p.name.value for p in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params)]
        for star in (node.params.star_arg, node.params.star_kwarg):
            if isinstance(star, cst.Param):
                params.append(star.name.value)
        info = FunctionInfo(node.name.value, qualname, node, self.module, cls=cls, parent=parent, params=params)
        info.declared_captured = self._has_captured_comment(node)
        self.module.functions[qualname] = info
        self.module.function_by_node[id(node)] = info
        if cls is not None:
            cls.methods[node.name.value] = info
        elif parent is not None:
            parent.nested[node.name.value] = info
        elif not self.scope:
            self.module.top_level[node.name.value] = info
            self.module.globals.add(node.name.value)
        self.function_stack.append(info)
        self.enclosing.append(info)
        self.scope.extend([node.name.value, "<locals>"])

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        info = self.function_stack.pop()
        self.enclosing.pop()
        self.scope.pop()
        self.scope.pop()
        if info.cls is not None:
            self._record_attribute_types(info)

    def _has_captured_comment(self, node: cst.FunctionDef) -> bool:
        """`# trace-lint: captured` on the def line (or the lines of its signature)."""
        text = self.module.text
        if "trace-lint" not in text:
            return False
        if self.lines is None:
            self.lines = text.splitlines()
        first = self.module.positions[node.name].start.line
        last = self.module.positions[node.body].start.line
        return any(CAPTURED_COMMENT.search(self.lines[n - 1]) for n in range(first, min(last, len(self.lines)) + 1))

    def _record_attribute_types(self, method: FunctionInfo) -> None:
        """`self.attr = SomeClass(...)` or `self.attr = self.make()` inside a method."""
        if not method.params:
            return
        receiver = method.params[0]
        cls = method.cls
        assert cls is not None
        for statement in method.nodes:
            if not isinstance(statement, cst.Assign):
                continue
            constructor = statement.value.func if isinstance(statement.value, cst.Call) else None
            element = element_constructor(statement.value)
            for target in statement.targets:
                t = target.target
                if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == receiver:
                    # __init__ wins over other methods.
                    if constructor is not None and (t.attr.value not in cls.attribute_types or method.name == "__init__"):
                        cls.attribute_types[t.attr.value] = constructor
                    if element is not None and (t.attr.value not in cls.element_types or method.name == "__init__"):
                        cls.element_types[t.attr.value] = element

    def visit_Assign(self, node: cst.Assign) -> None:
        if not self.enclosing:
            for target in node.targets:
                for name in _target_names(target.target):
                    self.module.globals.add(name)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if not self.enclosing:
            self.module.globals.update(_target_names(node.target))


def element_constructor(value: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """The constructor of every element of a list built from calls of one class:
    `[Layer(i) for i in ...]`, `[Layer(0), Layer(1)]`, `ModuleList([...])`, `Sequential(A(), A())`."""
    if isinstance(value, cst.ListComp) or isinstance(value, cst.GeneratorExp):
        return value.elt.func if isinstance(value.elt, cst.Call) else None
    if isinstance(value, (cst.List, cst.Tuple)):
        constructors = [e.value.func for e in value.elements if isinstance(e.value, cst.Call)]
        if constructors and len(constructors) == len(value.elements):
            texts = {cst.Module([]).code_for_node(c) for c in constructors}
            return constructors[0] if len(texts) == 1 else None
        return None
    if isinstance(value, cst.Call) and value.args:
        if len(value.args) == 1 and value.args[0].star == "":
            return element_constructor(value.args[0].value)
        if all(isinstance(a.value, cst.Call) and a.keyword is None for a in value.args):
            return element_constructor(cst.List([cst.Element(a.value) for a in value.args]))
    return None


def _target_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        names = []
        for element in target.elements:
            names.extend(_target_names(element.value))
        return names
    return []




BUILTIN_NAMES = frozenset(dir(__import__("builtins")))
# Module names a parameter or local variable may stand for (tt-check passes `ttnn` in).
MODULE_STAND_INS = frozenset({"ttnn", "torch"})


def local_names(function: FunctionInfo) -> frozenset[str]:
    """Names bound inside the function body (parameters included), not counting imports."""
    cached = getattr(function, "_local_names", None)
    if cached is not None:
        return cached
    names: set[str] = set(function.params)
    names.update(function.nested)
    for node in function.nodes:
        if isinstance(node, cst.ClassDef):
            names.add(node.name.value)
        elif isinstance(node, cst.AssignTarget):
            names.update(_target_names(node.target))
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign, cst.NamedExpr)):
            names.update(_target_names(node.target))
        elif isinstance(node, (cst.For, cst.CompFor)):
            names.update(_target_names(node.target))
        elif isinstance(node, cst.AsName):
            names.update(_target_names(node.name))
    names.difference_update(function.imports)
    result = frozenset(names)
    function._local_names = result  # type: ignore[attr-defined]
    return result


class Project:
    """All modules of the checked tree, indexed by dotted name."""

    def __init__(self, modules: list[ModuleInfo]):
        self.modules = modules
        self.by_name: dict[str, list[ModuleInfo]] = {}
        for module in modules:
            self.by_name.setdefault(module.name, []).append(module)
        self._raw: dict[int, bytes] = {}
        self._lookups: dict[str, Optional[Definition]] = {}

    def module(self, name: str) -> Optional[ModuleInfo]:
        candidates = self.by_name.get(name)
        if candidates and len(candidates) == 1:
            return candidates[0]
        return None  # absent, or ambiguous: two files claim the name

    def raw_bytes(self, module: ModuleInfo) -> bytes:
        data = self._raw.get(id(module))
        if data is None:
            if module._text is not None:
                data = module._text.encode("utf-8", "surrogatepass")
            else:
                try:
                    data = read_bytes(module.path)
                except ReadError as error:
                    module.read_error = str(error)
                    data = b""
            self._raw[id(module)] = data
        return data

    def modules_mentioning(self, *tokens: bytes) -> list[ModuleInfo]:
        """Modules whose raw text contains any of the tokens (a cheap textual prefilter)."""
        return [m for m in self.modules if any(t in self.raw_bytes(m) for t in tokens)]

    def modules_calling(self, name: str) -> list[ModuleInfo]:
        """Modules whose text has `name(`: the only ones that can call a function by that name."""
        pattern = re.compile(rb"\b" + re.escape(name.encode()) + rb"\s*\(")
        token = name.encode()
        return [m for m in self.modules if token in self.raw_bytes(m) and pattern.search(self.raw_bytes(m))]

    # -- names -----------------------------------------------------------------------------
    def qualified_name(self, expr: cst.BaseExpression, module: ModuleInfo, function: Optional[FunctionInfo]) -> Optional[str]:
        """The dotted name an expression refers to through imports, or None if unknown.

        `tt.to_torch` -> "ttnn.to_torch" after `import ttnn as tt`; a project function -> its
        module-qualified name; a builtin -> its bare name; a local variable -> None.
        """
        if isinstance(expr, cst.Attribute):
            base = self.qualified_name(expr.value, module, function)
            return f"{base}.{expr.attr.value}" if base else None
        if not isinstance(expr, cst.Name):
            return None
        name = expr.value
        scope = function
        while scope is not None:
            if name in scope.imports:
                return scope.imports[name]
            if name in local_names(scope):
                return name if name in MODULE_STAND_INS else None
            scope = scope.parent
        if name in module.imports:
            return module.imports[name]
        if name in module.top_level:
            return f"{module.name}.{name}"
        if name in module.globals:
            return name if name in MODULE_STAND_INS else None
        if name in MODULE_STAND_INS or name in BUILTIN_NAMES:
            return name
        return None

    def lookup(self, qualified: str) -> Optional[Definition]:
        """The project function or class a dotted name designates, following re-exports."""
        if qualified in self._lookups:
            return self._lookups[qualified]
        self._lookups[qualified] = None  # an import cycle resolves to nothing
        found = self._lookup(qualified)
        self._lookups[qualified] = found
        return found

    def _lookup(self, qualified: str) -> Optional[Definition]:
        parts = qualified.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = self.module(".".join(parts[:cut]))
            if module is None:
                continue
            module.load()
            rest = parts[cut:]
            head = rest[0]
            definition: Optional[Definition] = module.top_level.get(head)
            if definition is None and head in module.imports:
                target = module.imports[head]
                if target != qualified:
                    found = self.lookup(".".join([target, *rest[1:]]))
                    if found is not None:
                        return found
                continue
            for attr in rest[1:]:
                if isinstance(definition, ClassInfo):
                    definition = definition.methods.get(attr) or definition.module.classes.get(f"{definition.qualname}.{attr}")
                else:
                    definition = None
                if definition is None:
                    break
            if definition is not None:
                return definition
        return None
