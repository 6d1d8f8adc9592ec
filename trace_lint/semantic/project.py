"""The project index: every checked file as a module, parsed lazily, with its imports,
functions and classes, and name resolution through imports and aliases.

Nothing here knows about captures or rules.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, Union

import libcst as cst

from .bindings import ScopeBindings, assignment_targets, import_names, names_assigned_with, parameters, target_names
from .cfg import ControlFlowGraph
from .outline import ModuleOutline, SharedParses, _Chunk, _import_from_base
from .receivers import receiver_parameter
from ..frontend.source import PACKAGE_FILES, ReadError, read_bytes
from ..frontend.syntax_walk import Span, children, parse_module, positions
from ..frontend.text_index import called_names, count_words, defined_names

CAPTURED_COMMENT = re.compile(r"#\s*trace-lint:\s*captured\b")


@dataclass(eq=False)
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
    # Every value assigned to `self.attr` in any method, with the method (the resolver
    # infers classes from them: constructors, factories, annotated parameters).
    attribute_values: dict[str, list[tuple["FunctionInfo", cst.BaseExpression]]] = field(default_factory=dict)
    # Values put into the container `self.attr`: list/tuple/dict displays' elements,
    # `self.attr[k] = v`, `self.attr.append(v)`.
    element_values: dict[str, list[tuple["FunctionInfo", cst.BaseExpression]]] = field(default_factory=dict)
    # attribute -> the framework module every value stored in it is, or None
    # (`Project._module_in_attribute`, asked once per attribute).
    framework_attributes: dict[str, Optional[str]] = field(default_factory=dict)

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
    _bindings: Optional["ScopeBindings"] = field(default=None, repr=False)
    _cfg: Optional["ControlFlowGraph"] = field(default=None, repr=False)
    _live: Optional[list] = field(default=None, repr=False)

    @property
    def full_name(self) -> str:
        return f"{self.module.name}.{self.qualname}"

    @property
    def bindings(self) -> "ScopeBindings":
        """Every binding of this function's scope, and which reach each statement."""
        if self._bindings is None:
            module = self.module
            self._bindings = ScopeBindings(self, lambda dots, base: _import_from_base(module, dots, base))
        return self._bindings

    @property
    def cfg(self) -> "ControlFlowGraph":
        """The control-flow graph of this function's body, built when first asked."""
        if self._cfg is None:
            self._cfg = ControlFlowGraph(self.node, self.module)
        return self._cfg

    @property
    def live_nodes(self) -> list[cst.CSTNode]:
        """`nodes` without the statements that never run (no path from the entry reaches
        them: code after a `return` or `raise` in its block, after an `if` whose branches all
        return). A lambda has no statements."""
        if self._live is None:
            dead = self.cfg.unreachable() if isinstance(self.node, cst.FunctionDef) else frozenset()
            graph = self._cfg
            self._live = [n for n in self.nodes if id(graph.statement_of(n)) not in dead] if dead else self.nodes
        return self._live

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other


Definition = Union[FunctionInfo, ClassInfo]

def _parse_chunk(module: "ModuleInfo", chunk: "_Chunk") -> cst.Module:
    shared = SharedParses.active
    if shared is None:
        return parse_module(chunk.text)
    key = (module.display_path, chunk.first_line, chunk.is_rest, chunk.text)
    tree = shared.trees.get(key)
    if tree is None:
        tree = shared.trees[key] = parse_module(chunk.text)
    return tree


def _chunk_positions(tree: cst.Module, first_line: int) -> dict:
    shared = SharedParses.active
    if shared is None:
        return positions(tree, first_line)
    found = shared.spans.get(id(tree))
    if found is None or found[0] is not tree or found[1] != first_line:
        found = shared.spans[id(tree)] = (tree, first_line, positions(tree, first_line))
    return found[2]


class _Positions:
    """Node -> Span, computed per chunk on first use: the position pass costs about as much
    as the parse, and most parsed code never needs positions."""

    def __init__(self, module: "ModuleInfo"):
        self.module = module
        self.spans: dict[int, Span] = {}  # by id(node)

    def __getitem__(self, node: cst.CSTNode) -> Span:
        span = self.spans.get(id(node))
        if span is None:
            self.module._position_chunk_of(node)
            span = self.spans[id(node)]
        return span

    def get(self, node: cst.CSTNode, default=None):
        span = self.spans.get(id(node))
        if span is None:
            try:
                span = self[node]
            except KeyError:
                return default
        return span

    def __contains__(self, node: cst.CSTNode) -> bool:
        return self.get(node) is not None


class _TopLevel(Mapping):
    """Module-level name -> definition; the chunk defining it is parsed on first access."""

    def __init__(self, module: "ModuleInfo"):
        self.module = module
        self.parsed: dict[str, Definition] = {}

    def __getitem__(self, name: str) -> Definition:
        chunk = self.module._owner.get(name)
        if chunk is not None:
            self.module._parse(chunk)
        return self.parsed[name]

    def __contains__(self, name: object) -> bool:
        return name in self.module._owner or name in self.parsed

    def __iter__(self):
        self.module._parse_all()
        return iter(self.parsed)

    def __len__(self) -> int:
        self.module._parse_all()
        return len(self.parsed)


class ModuleInfo(ModuleOutline):
    """One source file. Read and outlined with `ast` on first use (`outline.ModuleOutline`);
    libcst parses each top-level def or class, and the module-level code, only when
    something needs it."""

    def __init__(self, path: Path, name: "str | tuple[str, ...]", display_path: str, text: Optional[str] = None):
        super().__init__(path, name, display_path, text)
        # The name this module's own definitions are qualified by (the project sets another
        # where two files claim `name`).
        self.own_name = self.name
        self._chunk_by_root: dict[int, _Chunk] = {}
        # What the analysis read of the text (`read_parts`): the chunks it parsed or searched
        # (by id), and whether it read the text whole (`text`, `outline`).
        self._chunks_read: set[int] = set()
        self._text_read = False
        self.positions = _Positions(self)
        self.functions: dict[str, FunctionInfo] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.top_level = _TopLevel(self)
        # Top-level name -> every definition of it in one chunk, in source order, where there
        # are several (`if fast: class Step: ... else: class Step: ...`); top_level has the last.
        self.alternatives: dict[str, list[Definition]] = {}
        self.function_by_node: dict[int, FunctionInfo] = {}
        # Parent of every parsed node (by id).
        self.parents: dict[int, cst.CSTNode] = {}
        # What each module-level name means once the module has run (`global_meaning`).
        self._global_meanings: dict[str, tuple[str, Optional[str]]] = {}
        self._rest_nodes: list[cst.CSTNode] = []

    # -- loading -------------------------------------------------------------------------
    def _parse_whole(self, text: str) -> None:
        """A text `ast` refuses (it may be newer syntax that libcst knows): libcst parses
        it whole, one chunk."""
        chunk = _Chunk(1, text, is_rest=True)
        try:
            chunk.tree = parse_module(text, validate=True)
        except cst.ParserSyntaxError as error:
            self.parse_error = _syntax_error_position(text, error)
            return
        except (RecursionError, MemoryError, ValueError) as error:
            self.parse_error = (f"cannot parse: {type(error).__name__}", 1, 1)
            return
        self._chunks = [chunk]
        self._rest = chunk
        if self._parse(chunk):
            self._ok = True

    def _parse(self, chunk: _Chunk) -> bool:
        """Parse and index one chunk (once). False when it cannot be analysed."""
        self._chunks_read.add(id(chunk))
        if chunk.parsed:
            return chunk.tree is not None
        chunk.parsed = True
        if chunk.tree is None:
            try:
                chunk.tree = _parse_chunk(self, chunk)
            except cst.ParserSyntaxError as error:
                # Valid for this Python, not for libcst (newer syntax).
                message, line, column = _syntax_error_position(chunk.text, error)
                self._record_error((message, line + chunk.first_line - 1 if not chunk.is_rest else line, column))
                return False
            except (RecursionError, MemoryError, ValueError) as error:
                self._record_error((f"cannot parse: {type(error).__name__}", chunk.first_line, 1))
                chunk.tree = None
                return False
        self._chunk_by_root[id(chunk.tree)] = chunk
        try:
            _Collector(self, chunk).collect(chunk.tree)
        except (RecursionError, KeyError):
            # libcst re-raises a RecursionError in position tracking as a KeyError.
            self._record_error(("cannot analyse: code nested too deeply", chunk.first_line, 1))
            chunk.tree = None
            chunk.functions = []
            return False
        return True

    def _parse_all(self, tokens=None) -> list[_Chunk]:
        """Parse the chunks that mention any of the tokens, or whose text the test accepts
        (all chunks without either)."""
        self.load()
        if tokens is not None and not callable(tokens):
            tokens = tuple(tokens)  # read once per chunk
        chosen = []
        for chunk in self._chunks:
            self._chunks_read.add(id(chunk))
            if tokens is None or chunk.mentions(tokens):
                if self._parse(chunk):
                    chosen.append(chunk)
        return chosen

    def _positions_of(self, chunk: _Chunk) -> None:
        if chunk.positioned or chunk.tree is None:
            return
        chunk.positioned = True
        try:
            spans = _chunk_positions(chunk.tree, 1 if chunk.is_rest else chunk.first_line)
        except (RecursionError, KeyError):
            self._record_error(("cannot analyse: code nested too deeply", chunk.first_line, 1))
            return
        self.positions.spans.update(spans)

    def _chunk_of(self, node: cst.CSTNode) -> Optional[_Chunk]:
        """The parsed chunk a node belongs to (None: a node built by the analysis)."""
        root = node
        parents = self.parents
        while id(root) in parents:
            root = parents[id(root)]
        return self._chunk_by_root.get(id(root))

    def _position_chunk_of(self, node: cst.CSTNode) -> None:
        chunk = self._chunk_of(node)
        if chunk is not None:
            self._positions_of(chunk)

    @property
    def outline(self) -> Optional[ast.Module]:
        """The module's `ast` tree (None: libcst alone parsed it), parsed again for each
        caller: the few that read it after loading (suppressions) keep it no longer than they
        need it."""
        self.load()
        self._text_read = True
        if not self.has_outline:
            return None
        return ast.parse(self._outline_text if self._outline_text is not None else self.source.text)

    # -- parts -----------------------------------------------------------------------------
    @property
    def tree(self) -> Optional[cst.Module]:
        """The module-level code (top-level defs and classes are parsed separately)."""
        self.load()
        if self._rest is None or not self._parse(self._rest):
            return None
        return self._rest.tree

    @property
    def nodes(self) -> list[cst.CSTNode]:
        """Every node of module-level code in source order, not entering defs or classes."""
        self.load()
        if self._rest is None or not self._parse(self._rest):
            return []
        return self._rest_nodes

    @property
    def text(self) -> str:
        self.load()
        self._text_read = True
        return self.source.text if self.source else ""

    def read_parts(self) -> Optional[tuple[str, tuple[tuple[int, str], ...]]]:
        """What the analysis read of this module where that is less than its whole text:
        the digest of its outline facts (the suppressions' aside: a file's suppressions are
        read again whenever it changes) and the digest of each chunk it parsed or searched, by
        chunk number (0: the module-level code). None where it read the text whole, or the
        module was not outlined as it is written (unreadable, not parsed, limits applied)."""
        if not self._loaded or self._text_read:
            return None
        return self.parts_signature([index for index, chunk in enumerate(self._chunks) if id(chunk) in self._chunks_read])

    # -- positions -----------------------------------------------------------------------
    def range(self, node: cst.CSTNode) -> Span:
        return self.positions[node]

    def start(self, node: cst.CSTNode) -> tuple[int, int]:
        r = self.positions[node]
        return (r.start.line, r.start.column)

    def end(self, node: cst.CSTNode) -> tuple[int, int]:
        r = self.positions[node]
        return (r.end.line, r.end.column)

    def code(self, node: cst.CSTNode) -> str:
        chunk = self._chunk_of(node)
        tree = chunk.tree if chunk is not None and chunk.tree is not None else _EMPTY_MODULE
        return tree.code_for_node(node)

    def normalized(self, node: cst.CSTNode) -> str:
        """Source of an expression with whitespace removed, for comparing expressions."""
        return re.sub(r"\s+", "", self.code(node))

    # -- functions -----------------------------------------------------------------------
    def iter_functions(self, tokens: "Optional[Iterable[str] | Callable[[str], bool]]" = None) -> Iterator[FunctionInfo]:
        """Functions in source order; with tokens (or a test of a chunk's text), only those
        of the chunks that mention one."""
        return (f for chunk in self._parse_all(tokens) for f in chunk.functions)

    def tokens_for(self, names: Iterable[str]) -> tuple[str, ...]:
        """Strings that code calling one of these dotted names must contain: the last part,
        or a local name this module imports as the name itself."""
        self.load()
        names = set(names)
        tokens = {name.rsplit(".", 1)[-1] for name in names}
        tokens.update(local for local, full in self.imports.items() if full in names)
        return tuple(sorted(tokens))

    def classes_defining(self, method: str) -> list[ClassInfo]:
        """Classes (parsed on demand) that define a method of this name."""
        self.load()
        for chunk in self._method_chunks.get(method, ()):
            self._parse(chunk)
        return [cls for cls in self.classes.values() if method in cls.methods]

    def global_meaning(self, name: str) -> tuple[str, Optional[str]]:
        """What a module-level name holds after the module ran: ("import", dotted name),
        ("def", None) for a top-level def or class, ("other", None), or ("unbound", None).
        A later unconditional binding shadows earlier ones; conditional ones after it are
        alternatives; `name = None` fallbacks (`except ImportError: ttnn = None`) do not
        count against an import."""
        self.load()
        found = self._global_meanings.get(name)
        if found is not None:
            return found
        bindings = self.global_bindings.get(name)
        if not bindings:
            found = ("unbound", None)
        else:
            last = max((i for i, b in enumerate(bindings) if not b[2]), default=0)
            alive = bindings[last:]
            if len(alive) > 1:
                alive = [b for b in alive if not b[3]] or alive
            kinds = {b[0] for b in alive}
            if kinds == {"import"} and len({b[1] for b in alive}) == 1:
                found = ("import", alive[0][1])
            elif kinds <= {"def", "class"}:
                found = ("def", None)
            else:
                found = ("other", None)
        self._global_meanings[name] = found
        return found

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

    def probe(self) -> "ModuleInfo":
        """A copy of this module that nothing has read: what it is asked (its outline, its
        chunks' texts) is not a read of this one (the cache's dependencies)."""
        copy = ModuleInfo(self.path, self.names, self.display_path, text=self._text)
        copy.is_package, copy.own_name = self.is_package, self.own_name
        return copy

    def calls_in_chunks(self, indexes: Iterable[int]) -> Iterator[tuple[cst.Call, Optional[FunctionInfo]]]:
        """`iter_calls` of the chunks at these places (`chunk_texts`), reading only them."""
        self.load()
        chunks = [self._chunks[i] for i in sorted(set(indexes)) if 0 <= i < len(self._chunks)] if self.ok else []
        return self._calls_of([chunk for chunk in chunks if self._parse(chunk)])

    def iter_calls(self, tokens: Optional[Iterable[str]] = None) -> Iterator[tuple[cst.Call, Optional[FunctionInfo]]]:
        """Every call in the module with the function it is written in (None: module level);
        with tokens, only in the chunks that mention one (a call spelled with them)."""
        return self._calls_of(self._parse_all(tokens))

    def _calls_of(self, chunks: list[_Chunk]) -> Iterator[tuple[cst.Call, Optional[FunctionInfo]]]:
        for chunk in chunks:
            if chunk.is_rest:
                for node in self._rest_nodes:
                    if isinstance(node, cst.Call):
                        yield node, None
        for chunk in chunks:
            for function in chunk.functions:
                for node in function.nodes:
                    if isinstance(node, cst.Call):
                        yield node, function

    def __repr__(self) -> str:
        return f"ModuleInfo({self.name!r}, {self.display_path!r})"


_EMPTY_MODULE = cst.Module([])


def _syntax_error_position(text: str, error: cst.ParserSyntaxError) -> tuple[str, int, int]:
    """libcst places tokenizer errors at 1:1; CPython's parser (no code is run) knows better."""
    try:
        ast.parse(text)
    except SyntaxError as python_error:
        return (f"syntax error: {python_error.msg}", python_error.lineno or 1, python_error.offset or 1)
    except (ValueError, RecursionError, MemoryError):
        pass
    message = re.sub(r"^(parser error: )?error at \d+:\d+: ", "", error.message)
    return (f"syntax error: {message}", error.editor_line, error.editor_column)


# Node types the collector does more for than recording them.
_COLLECTED = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.Import, cst.ImportFrom, cst.Assign, cst.AnnAssign})


class _Collector:
    """One pass over a chunk: functions, classes, function-level imports, parent links and
    each function's node list."""

    def __init__(self, module: ModuleInfo, chunk: _Chunk):
        self.module = module
        self.chunk = chunk
        self.function_stack: list[FunctionInfo] = []
        # Innermost last: the class or function whose body we are in.
        self.enclosing: list[Definition] = []
        # qualname prefixes
        self.scope: list[str] = []
        # The list that collects the nodes of the innermost open function (None: not a body).
        self.owner: Optional[list[cst.CSTNode]] = None
        self.rest_nodes: list[cst.CSTNode] = []
        self.body_owner: dict[int, list[cst.CSTNode]] = {}
        self.has_marker: Optional[bool] = None  # does the chunk mention `trace-lint` at all
        # A definition registers its name only if this chunk is the one whose definition
        # of the top-level name wins (a later `def f` hides an earlier one).
        self.registering = True

    def collect(self, tree: cst.Module) -> None:
        self.owner = self.rest_nodes if self.chunk.is_rest else None
        parents = self.module.parents
        for statement in tree.body:
            self._walk(statement, tree, parents)
        if self.chunk.is_rest:
            self.module._rest_nodes = self.rest_nodes

    def _walk(self, node: cst.CSTNode, parent: cst.CSTNode, parents: dict) -> None:
        owner = self.owner
        if owner is not None:
            owner.append(node)
        parents[id(node)] = parent
        kind = type(node)  # libcst's classes are ABCs: `type(...) is` is much cheaper
        if kind not in _COLLECTED:
            for child in children(node):
                self._walk(child, node, parents)
            return
        if kind is cst.FunctionDef:
            info = self._enter_function(node)
            # Decorators, defaults and annotations are not the body.
            self.owner = None
            self.body_owner[id(node.body)] = info.nodes
            for child in children(node):
                if child is node.body:
                    self.owner = info.nodes
                    self._walk_block(child, node, parents, info.nodes)
                    self.owner = None
                else:
                    self._walk(child, node, parents)
            self._leave_function(info)
            self.owner = owner
            return
        if kind is cst.ClassDef:
            self._enter_class(node)
            if self.function_stack:
                self.owner = None  # a class inside a function: not that function's code
            for child in children(node):
                self._walk(child, node, parents)
            self._leave_class()
            self.owner = owner
            return
        if kind is cst.Lambda:
            self.owner = None
        elif kind is cst.Import or kind is cst.ImportFrom:
            self._import(node)
        elif (kind is cst.Assign or kind is cst.AnnAssign) and not self.enclosing:
            for target in assignment_targets(node):
                self.module.globals.update(target_names(target))
        for child in children(node):
            self._walk(child, node, parents)
        self.owner = owner

    def _walk_block(self, block: cst.CSTNode, parent: cst.CSTNode, parents: dict, nodes: list) -> None:
        # The block itself is in no node list; its statements are the function's.
        parents[id(block)] = parent
        for child in children(block):
            self._walk(child, block, parents)

    def _import(self, node: cst.CSTNode) -> None:
        """Imports in a function bind there; module-level ones come from the outline, unless
        there is none (libcst alone parsed the module)."""
        if not self.function_stack and self.module.has_outline:
            return
        # An unresolvable relative import binds nothing known here.
        mapping = {local: imported for local, imported in import_names(node, lambda dots, base: _import_from_base(self.module, dots, base)) if imported is not None}
        if self.function_stack:
            self.function_stack[-1].imports.update(mapping)
        elif not self.enclosing:  # a class body's imports are the class's own
            self.module.imports.update(mapping)
            self.module.globals.update(mapping)

    def _top_level_name(self, name: str) -> None:
        """Entering a definition at module scope: does this chunk own the name?"""
        if not self.scope:
            owner = self.module._owner.get(name)
            self.registering = owner is None or owner is self.chunk

    def _enter_class(self, node: cst.ClassDef) -> None:
        self._top_level_name(node.name.value)
        qualname = ".".join([*self.scope, node.name.value])
        info = ClassInfo(node.name.value, qualname, node, self.module)
        if self.registering:
            self.module.classes[qualname] = info
            if not self.scope:
                self._alternative(node.name.value, info)
                self.module.top_level.parsed[node.name.value] = info
                self.module.globals.add(node.name.value)
        self.enclosing.append(info)
        self.scope.append(node.name.value)

    def _alternative(self, name: str, info: "Definition") -> None:
        """A second definition of a top-level name in the chunk being parsed: both are kept."""
        earlier = self.module.top_level.parsed.get(name)
        if earlier is not None and earlier.module is self.module and earlier.node is not info.node:
            found = self.module.alternatives.setdefault(name, [earlier])
            if info not in found:
                found.append(info)

    def _leave_class(self) -> None:
        self.enclosing.pop()
        self.scope.pop()

    def _enter_function(self, node: cst.FunctionDef) -> FunctionInfo:
        self._top_level_name(node.name.value)
        qualname = ".".join([*self.scope, node.name.value])
        parent = self.function_stack[-1] if self.function_stack else None
        cls = self.enclosing[-1] if self.enclosing and isinstance(self.enclosing[-1], ClassInfo) else None
        params = [p.name.value for p in parameters(node.params)]
        info = FunctionInfo(node.name.value, qualname, node, self.module, cls=cls, parent=parent, params=params)
        info.declared_captured = self._has_captured_comment(node)
        self.module.function_by_node[id(node)] = info
        if self.registering:
            self.module.functions[qualname] = info
            self.chunk.functions.append(info)
            if cls is not None:
                cls.methods[node.name.value] = info
            elif parent is not None:
                parent.nested[node.name.value] = info
            elif not self.scope:
                self._alternative(node.name.value, info)
                self.module.top_level.parsed[node.name.value] = info
                self.module.globals.add(node.name.value)
        elif parent is not None:
            parent.nested[node.name.value] = info
        self.function_stack.append(info)
        self.enclosing.append(info)
        self.scope.extend([node.name.value, "<locals>"])
        return info

    def _leave_function(self, info: FunctionInfo) -> None:
        self.function_stack.pop()
        self.enclosing.pop()
        self.scope.pop()
        self.scope.pop()
        if info.cls is not None:
            _record_attribute_types(info)

    def _has_captured_comment(self, node: cst.FunctionDef) -> bool:
        """A `# trace-lint: captured` comment on the def line or the lines of its signature
        (a comment token: the same words in a docstring or a string do not count)."""
        if self.has_marker is None:
            self.has_marker = "trace-lint" in self.chunk.text
        if not self.has_marker:
            return False
        return any(CAPTURED_COMMENT.search(comment) for comment in _signature_comments(node))


def _signature_comments(node: cst.FunctionDef) -> Iterator[str]:
    """Comments from `def` to the colon, and after the colon on that line."""
    above = {id(n) for n in (*node.leading_lines, *node.lines_after_decorators, *node.decorators, node.body)}
    body = node.body
    stack: list[cst.CSTNode] = [c for c in node.children if id(c) not in above]
    stack.append(body.header if isinstance(body, cst.IndentedBlock) else body.trailing_whitespace)
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Comment):
            yield current.value
        stack.extend(current.children)


def _record_attribute_types(method: FunctionInfo) -> None:
    """`self.attr = value`, `self.attr[k] = value` and `self.attr.append(value)` inside a method."""
    receiver = receiver_parameter(method)
    if receiver is None:
        return
    cls = method.cls
    assert cls is not None

    def self_attribute(expr: cst.BaseExpression) -> Optional[str]:
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == receiver:
            return expr.attr.value
        return None

    for statement in method.nodes:
        kind = type(statement)
        if kind is cst.Call:
            func = statement.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("append", "insert", "add") and statement.args:
                attribute = self_attribute(func.value)
                if attribute is not None:
                    cls.element_values.setdefault(attribute, []).append((method, statement.args[-1].value))
            continue
        if (kind is cst.AnnAssign and statement.value is not None) or kind is cst.Assign:
            pairs = [(t, statement.value) for t in assignment_targets(statement)]
        else:
            continue
        value = statement.value
        constructor = value.func if isinstance(value, cst.Call) else None
        element = element_constructor(value)
        for t, value in pairs:
            attribute = self_attribute(t)
            if attribute is not None:
                cls.attribute_values.setdefault(attribute, []).append((method, value))
                for item in _container_items(value):
                    cls.element_values.setdefault(attribute, []).append((method, item))
                # __init__ wins over other methods.
                if constructor is not None and (attribute not in cls.attribute_types or method.name == "__init__"):
                    cls.attribute_types[attribute] = constructor
                if element is not None and (attribute not in cls.element_types or method.name == "__init__"):
                    cls.element_types[attribute] = element
            elif isinstance(t, cst.Subscript):
                attribute = self_attribute(t.value)
                if attribute is not None:
                    cls.element_values.setdefault(attribute, []).append((method, value))


# Calls that build a container of their arguments' elements (torch's module containers).
_CONTAINER_CALLS = frozenset({"list", "tuple", "dict", "ModuleList", "ModuleDict", "Sequential", "ParameterList"})


def _container_items(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The element expressions of a list, tuple, set or dict display or comprehension, and
    of a call wrapping one (`ModuleList([...])`, `nn.Sequential(A(), B())`)."""
    if isinstance(value, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
        return [value.elt]
    if isinstance(value, cst.DictComp):
        return [value.value]
    if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
        return [e.value for e in value.elements if not isinstance(e, cst.StarredElement)]
    if isinstance(value, cst.Dict):
        return [e.value for e in value.elements if isinstance(e, cst.DictElement)]
    func = value.func if isinstance(value, cst.Call) else None
    callee = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    if callee in _CONTAINER_CALLS and value.args and all(a.keyword is None and not a.star for a in value.args):
        if len(value.args) == 1 and not isinstance(value.args[0].value, cst.Call):
            return _container_items(value.args[0].value)
        if all(isinstance(a.value, cst.Call) for a in value.args):
            return [a.value for a in value.args]
    return []


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






_SCANS_BEFORE_INDEX = 32


BUILTIN_NAMES = frozenset(dir(__import__("builtins")))
# Re-exports one dotted name may be followed through. A package that imports a name from its
# own submodule of the same name (`from .driver import driver` in `runtime/__init__.py`)
# makes `runtime.driver.x` expand to `runtime.driver.driver.x`, and again, without end; real
# re-export chains are a few hops long.
_REEXPORT_HOPS = 16


def _meaning_of_local(name: str, reaching, stand_ins: frozenset[str]) -> Optional[str]:
    """A local name is an import's dotted name when every binding reaching it imports the
    same thing; a parameter or variable named like a framework module stands for it."""
    imported = {b.imported for b in reaching if b.kind == "import"}
    if reaching and len(imported) == 1 and all(b.kind == "import" for b in reaching):
        return imported.pop()
    return name if name in stand_ins else None


def _chained_stand_in(method: FunctionInfo, value: cst.BaseExpression, stand_ins: frozenset[str]) -> Optional[str]:
    """`self.ttnn = ttnn = load()`: the attribute holds what the plain name beside it holds,
    and a variable named like a framework module stands for it."""
    names = set(names_assigned_with(method.nodes, value)) & stand_ins
    return names.pop() if len(names) == 1 else None


def _stem_only(module: ModuleInfo, name: str, packages: dict[Path, bool]) -> bool:
    """The name is the file's stem alone, its folder not a package. `packages`: whether each
    folder asked about so far is one (every file of a folder asks the same)."""
    path = module.path
    if name != path.stem or path.name in PACKAGE_FILES:
        return False
    folder = path.parent
    package = packages.get(folder)
    if package is None:
        package = packages[folder] = any((folder / f).is_file() for f in PACKAGE_FILES)
    return not package


class Project:
    """All modules of the checked tree, indexed by dotted name."""

    def __init__(self, modules: list[ModuleInfo], module_stand_ins: frozenset[str] = frozenset()):
        self.modules = modules
        self.by_name: dict[str, list[ModuleInfo]] = {}
        # A file's bare stem, when a source root names it otherwise, is a script's sibling
        # import (`import helpers` beside it): it gives way to a file a root names so.
        by_stem: dict[str, list[ModuleInfo]] = {}
        packages: dict[Path, bool] = {}
        for module in modules:
            for name in module.names:
                claims = by_stem if name != module.name and _stem_only(module, name, packages) else self.by_name
                claims.setdefault(name, []).append(module)
        for name, claimants in by_stem.items():
            if name not in self.by_name:
                self.by_name[name] = claimants
        # Two files can claim one dotted name (the same relative path under two named
        # folders): imports of it stay unresolved, but a module still names its own
        # definitions, through a name no import can spell.
        for index, module in enumerate(modules):
            if len(self.by_name[module.name]) > 1:
                module.own_name = f"{module.name}@{index}"
                self.by_name[module.own_name] = [module]
        # Module names a parameter or local variable may stand for (tt-check passes `ttnn`
        # in): the frameworks' modules, handed in by whoever builds the analysis from the
        # plug-ins (`capture/engine.py`).
        self.module_stand_ins = module_stand_ins
        self._alias_guard: set[tuple[int, ...]] = set()
        self._raw: dict[int, bytes] = {}
        self._lookups: dict[str, Optional[Definition]] = {}
        self._lookup_depth = 0
        self._defs: Optional[dict[str, list[ModuleInfo]]] = None
        self._calls: Optional[dict[str, list[ModuleInfo]]] = None
        self._calling_asked = 0
        # What the analysis learnt from files without parsing them: the tokens it searched
        # every file's raw text for, and the files a search returned. A file outside both
        # (and never parsed) cannot have changed a finding (see cache.AnalysisRecord).
        self.searched_tokens: set[bytes] = set()
        self.searched_calls: set[str] = set()
        self.searched_defs: set[str] = set()
        self.searched_outside: set[str] = set()
        self.search_hits: set[int] = set()

    def _searched(self, found: list[ModuleInfo]) -> list[ModuleInfo]:
        self.search_hits.update(id(m) for m in found)
        return found

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
        self.searched_tokens.update(tokens)
        return self._searched([m for m in self.modules if any(t in self.raw_bytes(m) for t in tokens)])

    def modules_defining(self, name: str) -> list[ModuleInfo]:
        """One entry per `def name(` in the raw text of the project (one scan, on first use)."""
        if self._defs is None:
            self._defs = {}
            for module in self.modules:
                data = self.raw_bytes(module)
                for name_defined in defined_names(data):
                    self._defs.setdefault(name_defined, []).append(module)
        self.searched_defs.add(name)
        return self._searched(self._defs.get(name, []))

    def modules_calling(self, name: str, outside: bool = False) -> list[ModuleInfo]:
        """Modules whose text has `name(`: the only ones that can call a function by that name.
        `outside`: the search is for calls outside the chunks some run searches as candidates
        (`CallResolver.spelled_calls` with `skipped`); it is kept apart, and its hits are not
        dependencies by themselves: a changed file is found by it only if it calls the name
        outside such chunks."""
        if outside:
            self.searched_outside.add(name)
            return self._calling(name)
        self.searched_calls.add(name)
        return self._searched(self._calling(name))

    def _calling(self, name: str) -> list[ModuleInfo]:
        self._calling_asked += 1
        if self._calls is None and self._calling_asked > _SCANS_BEFORE_INDEX:
            # Asked often (trace-dense code): one pass over every file beats a pass per name.
            self._calls = {}
            for module in self.modules:
                for called in called_names(self.raw_bytes(module)):
                    self._calls.setdefault(called, []).append(module)
        if self._calls is not None:
            return list(self._calls.get(name, []))
        token = name.encode()
        pattern = re.compile(re.escape(token) + rb"\s*\(")
        return [m for m in self.modules if token in self.raw_bytes(m) and count_words(pattern, self.raw_bytes(m), limit=1)]

    # -- names -----------------------------------------------------------------------------
    def qualified_name(self, expr: cst.BaseExpression, module: ModuleInfo, function: Optional[FunctionInfo]) -> Optional[str]:
        """The dotted name an expression refers to through imports, or None if unknown.

        `tt.to_torch` -> "ttnn.to_torch" after `import ttnn as tt`; a project function -> its
        module-qualified name; a builtin -> its bare name; a local variable -> None.
        """
        kind = type(expr)
        if kind is cst.Attribute:
            base = self.qualified_name(expr.value, module, function)
            if base:
                return f"{base}.{expr.attr.value}"
            return self._module_in_attribute(expr, function)
        if kind is not cst.Name:
            return None
        name = expr.value
        scope = function
        while scope is not None:
            bindings = scope.bindings
            if name in bindings.declared_global:
                break
            # Read at `expr`: a comprehension or lambda around it may bind the name itself.
            if bindings.binds(name, expr if scope is function else None):
                reaching = bindings.reaching(name, expr)
                meaning = _meaning_of_local(name, reaching, self.module_stand_ins)
                if meaning is None and scope is function:
                    meaning = self._module_alias(reaching, function)
                return self.framework_reexport(meaning)
            scope = scope.parent
        if module.has_outline:
            kind, imported = module.global_meaning(name)
            if kind == "import":
                return self.framework_reexport(imported)
            if kind == "def":
                return f"{module.own_name}.{name}"
            if kind == "other":
                return name if name in self.module_stand_ins else None
        else:  # libcst alone parsed the module: no outline of module-level bindings
            if name in module.imports:
                return self.framework_reexport(module.imports[name])
            if name in module.top_level:
                return f"{module.own_name}.{name}"
            if name in module.globals:
                return name if name in self.module_stand_ins else None
        if name in self.module_stand_ins or name in BUILTIN_NAMES:
            return name
        return None

    def _framework_meaning(self, value: Optional[cst.BaseExpression], function: FunctionInfo) -> Optional[str]:
        """What a stored or assigned value names when it is a framework module or one of its
        members (`ttnn`, `torch.cuda`, `ttnn.to_torch`), else None. Only a name or an
        attribute chain is followed: a call's result is a value, not a module."""
        if not isinstance(value, (cst.Name, cst.Attribute)):
            return None
        meaning = self.qualified_name(value, function.module, function)
        if meaning is None or meaning.partition(".")[0] not in self.module_stand_ins:
            return None
        return meaning

    def _module_alias(self, reaching, function: FunctionInfo) -> Optional[str]:
        """A local every reaching binding of which assigns the same framework module (or
        member) is that module: `nn = ttnn`, `nn = self.ttnn` (Values, not names)."""
        if not reaching or any(b.kind != "assign" or b.value is None for b in reaching):
            return None
        guard = self._alias_guard
        key = tuple(id(b) for b in reaching)
        if key in guard:
            return None  # `x = x.y` in a loop: a binding reached from itself proves nothing
        guard.add(key)
        try:
            meanings = {self._framework_meaning(b.value, function) for b in reaching}
        finally:
            guard.discard(key)
        return meanings.pop() if len(meanings) == 1 else None

    def _module_in_attribute(self, expr: cst.Attribute, function: Optional[FunctionInfo]) -> Optional[str]:
        """`self.ttnn` in a method, where every value the class's methods store in that
        attribute is the same framework module (`self.ttnn = ttnn` after a lazy `import
        ttnn`): that module. A stored `None` (the slot before it is filled) does not count."""
        if function is None or function.cls is None:
            return None
        receiver = receiver_parameter(function)
        if receiver is None or not (isinstance(expr.value, cst.Name) and expr.value.value == receiver):
            return None
        cls = function.cls
        attribute = expr.attr.value
        values = cls.attribute_values.get(attribute)
        if not values:
            return None
        cache = cls.framework_attributes
        if attribute in cache:
            return cache[attribute]
        cache[attribute] = None  # an attribute stored from itself proves nothing
        meanings = {
            self._framework_meaning(value, method) or _chained_stand_in(method, value, self.module_stand_ins)
            for method, value in values
            if not (isinstance(value, cst.Name) and value.value == "None")
        }
        found = meanings.pop() if len(meanings) == 1 else None
        cache[attribute] = found
        return found

    def framework_reexport(self, imported: Optional[str]) -> Optional[str]:
        """A framework module imported through another package is the framework module:
        `from bos_metal import ttnn` binds a name `ttnn` (RULES: a variable named `ttnn`
        counts), so `ttnn.begin_trace_capture` is ttnn's. That holds where the package is
        outside the project, and where a project package re-exports the framework (its own
        `import ttnn`); a project module or definition of that name stays the project's."""
        if imported is None or "." not in imported:
            return imported
        seen: set[str] = set()
        current = imported
        while "." in current and current not in seen:
            seen.add(current)
            parent, _, last = current.rpartition(".")
            if last not in self.module_stand_ins or self.module(current) is not None:
                return imported
            owner = self.module(parent)
            if owner is None:
                return imported if self.by_name.get(parent) else last
            owner.load()
            if last in owner.top_level or owner.global_meaning(last)[0] != "import":
                return imported
            current = owner.imports.get(last) or imported
        return current if current in self.module_stand_ins else imported

    def lookup(self, qualified: str) -> Optional[Definition]:
        """The project function or class a dotted name designates, following re-exports."""
        if qualified in self._lookups:
            return self._lookups[qualified]
        if self._lookup_depth >= _REEXPORT_HOPS:
            return None  # a chain of re-exports this long only grows a name (see _REEXPORT_HOPS)
        self._lookups[qualified] = None  # an import cycle resolves to nothing
        self._lookup_depth += 1
        try:
            found = self._lookup(qualified)
        finally:
            self._lookup_depth -= 1
        self._lookups[qualified] = found
        return found

    def lookup_all(self, qualified: str) -> list[Definition]:
        """Every definition a dotted name can designate: `lookup`'s, and where the top-level
        name it goes through is defined on several branches (`if fast: class Step` / `else:
        class Step`), the same path through each of them."""
        found = self.lookup(qualified)
        if found is None:
            return []
        top: Definition = found
        while isinstance(top, FunctionInfo) and top.cls is not None:
            top = top.cls
        while isinstance(top, ClassInfo) and "." in top.qualname:
            outer = top.module.classes.get(top.qualname.rsplit(".", 1)[0])
            if outer is None:
                break
            top = outer
        alternatives = top.module.alternatives.get(top.qualname) if top.qualname == getattr(top, "name", None) else None
        if not alternatives:
            return [found]
        path = found.qualname.split(".")[1:]
        out: list[Definition] = []
        for definition in alternatives:
            current: Optional[Definition] = definition
            for attr in path:
                if isinstance(current, ClassInfo):
                    current = current.methods.get(attr) or current.module.classes.get(f"{current.qualname}.{attr}")
                else:
                    current = None
            if current is not None and current not in out:
                out.append(current)
        return out or [found]

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
