"""A module's text outlined with `ast`, without libcst: its chunks (each top-level def or
class, with its decorators, and the rest of the module), which chunk defines each top-level
name and which hold methods of each name, the module-level imports, names and bindings (the
binder's `outline_bindings`), and what suppressions read. `project.ModuleInfo` parses the
chunks with libcst on top of this; a run the cache settles asks an outline alone, so it
loads no libcst.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Optional

from ..core.file_facts import ActiveFacts
from ..core.lines import split_lines
from ..frontend import syntax_limits
from ..frontend.source import PACKAGE_FILES, ReadError, SourceText, decode, read_bytes
from .bindings import TRY_STAR, outline_bindings

if TYPE_CHECKING:
    import libcst as cst


class SharedParses:
    """While active (`with SharedParses():`), libcst's parse of each chunk of a file, and its
    positions, are kept for every copy of the project in this process (`parallel.fresh_copy`:
    groups of candidate files analysed one after another): the parse and positions pass are
    pure functions of the text, and most of a run's time. Everything else (what a module
    collects from its trees, which modules an engine loads) stays each copy's own. Keyed by
    the file's display path and the chunk's place: two files with the same text never share
    a tree inside one project."""

    active: Optional["SharedParses"] = None

    def __init__(self) -> None:
        # Outlines that cannot be kept as facts (the text was reduced or refused); the rest
        # are kept as their facts, not as `ast` trees (a 50,000-line file's tree is 240 MB).
        self.outlines: dict[tuple[str, str], syntax_limits.Outline] = {}
        self.outline_facts = KnownOutlines()
        self.trees: dict[tuple[str, int, bool, str], cst.Module] = {}
        self.spans: dict[int, tuple[cst.Module, int, dict]] = {}
        # `CallResolver._outside_chunks`: a fact of the text and the prefilter's settings.
        self.outside_chunks: dict[tuple, list[int]] = {}
        self._outer: Optional["SharedParses"] = None

    def __enter__(self) -> "SharedParses":
        # One already active (the language server's, kept across its checks) stays the one.
        self._outer = SharedParses.active
        if self._outer is None:
            SharedParses.active = self
        return SharedParses.active

    def __exit__(self, *exc) -> None:
        if self._outer is None:
            SharedParses.active = None


def _outline(module: "ModuleOutline", text: str, digest: Optional[str] = None):
    """`syntax_limits.read` of a module's text (the `ast` outline; read, never changed;
    `digest`: the text's, where known)."""
    shared = SharedParses.active
    if shared is None:
        return syntax_limits.read(text, digest)
    key = (module.display_path, text)
    checked = shared.outlines.get(key)
    if checked is None:
        checked = syntax_limits.read(text, digest)
        if checked.tree is None or checked.reduced or checked.text != text:
            shared.outlines[key] = checked  # else the loading module keeps its facts
    return checked



class _Chunk:
    """A part of a module that libcst parses on its own: one top-level `def` or `class`
    (with its decorators), or the rest of the module ("module-level code", in which those
    parts are blank lines so that line numbers stay the same)."""

    __slots__ = ("first_line", "text", "is_rest", "tree", "parsed", "positioned", "functions")

    def __init__(self, first_line: int, text: str, is_rest: bool):
        self.first_line = first_line
        self.text = text
        self.is_rest = is_rest
        self.tree: Optional[cst.Module] = None
        self.parsed = False
        self.positioned = False
        # Functions defined in this chunk (`project.FunctionInfo`), in source order.
        self.functions: list = []

    def mentions(self, tokens: "Iterable[str] | Callable[[str], bool]") -> bool:
        if callable(tokens):
            return tokens(self.text)
        return any(token in self.text for token in tokens)



_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class OutlineFacts:
    """A module's outline as data (`ModuleOutline._outline_data`): the (first, last) lines of
    each top-level definition's chunk in order; which chunk defines each top-level name and
    which hold methods of each name (0: the rest of the module, then the definitions in
    order); the module-level imports, names and bindings; the suppressions' first code line
    and statement lines."""

    spans: tuple[tuple[int, int], ...]
    owner: dict[str, int]
    method_chunks: dict[str, tuple[int, ...]]
    imports: dict[str, str]
    globals: frozenset[str]
    bindings: dict[str, tuple[tuple[str, Optional[str], bool, bool], ...]]
    first_code_line: Optional[int]
    statement_lines: dict[int, int]


class KnownOutlines(ActiveFacts[tuple[str, tuple[str, ...], bool], OutlineFacts]):
    """Outlines of modules seen before, by (text digest, the module's names, package flag):
    what loading reads from `ast` is a pure function of these (relative imports resolve
    from the names), so the driver keeps them between runs and a run outlines only texts it
    has not seen."""

    active: Optional["KnownOutlines"] = None


class ModuleOutline:
    """One source file, read and outlined with `ast` on first use (`load`)."""

    # Texts outlined in this process, for progress on a terminal.
    parsed_count = 0

    def __init__(self, path: Path, name: "str | tuple[str, ...]", display_path: str, text: Optional[str] = None):
        self.path = path
        # Every dotted name the file can be imported by (one per source root holding it);
        # the first is the primary one, used in qualified names.
        self.names: tuple[str, ...] = (name,) if isinstance(name, str) else tuple(name)
        self.name = self.names[0]
        # The parse text had over-long expressions replaced (syntax_limits): no fix is built
        # from this module's tree.
        self.text_reduced = False
        self.display_path = display_path
        self.is_package = path.name in PACKAGE_FILES
        self._text = text
        self._loaded = False
        self._ok = False
        self.source: Optional[SourceText] = None
        self.read_error: Optional[str] = None
        self.parse_error: Optional[tuple[str, int, int]] = None
        # Whether `ast` outlined the module (else only libcst can, as a whole: `_parse_whole`); the
        # outline's text where it is not the source's (over-long expressions replaced).
        self.has_outline = False
        self._outline_text: Optional[str] = None
        # `ast` refused the text and libcst was not asked (`_parse_whole`).
        self.needs_parser = False
        # With an outline: the first line of code that is not a docstring or an import, and
        # the first line of the statement holding each line inside a multi-line statement.
        self.outline_facts: tuple[Optional[int], dict[int, int]] = (None, {})
        self._chunks: list[_Chunk] = []
        self._rest: Optional[_Chunk] = None
        # The (first, last) lines of each top-level definition's chunk.
        self._spans: tuple[tuple[int, int], ...] = ()
        # Module-level name -> the chunk whose definition of it wins (the last one).
        self._owner: dict[str, _Chunk] = {}
        # Method name -> the chunks of classes that define it.
        self._method_chunks: dict[str, list[_Chunk]] = {}
        self.imports: dict[str, str] = {}
        # Module-level names bound to mutable values (containers) and all module-level names.
        self.globals: set[str] = set()
        # Module-level bindings in source order: name -> [(kind, imported, conditional, is_none)]
        # (from the outline).
        self.global_bindings: dict[str, list[tuple[str, Optional[str], bool, bool]]] = {}

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
        ModuleOutline.parsed_count += 1
        known = KnownOutlines.active
        if known is None and SharedParses.active is not None:
            known = SharedParses.active.outline_facts  # kept for the run's other copies
        digest = syntax_limits.text_digest(self.source.text) if known is not None else None
        key = (digest, self.names, self.is_package)
        if known is not None and self._install_outline(known.lookup(key)):
            self._ok = True
            return
        facts = _outline_in_parts(self, self.source.text, digest)
        if facts is not None and self._install_outline(facts):
            self._ok = True
            if known is not None:
                known.put(key, facts)
            return
        # Measured before any parser that can crash sees it; `text` keeps every position.
        checked = _outline(self, self.source.text, digest)
        if checked.error is not None:
            self.parse_error = checked.error
            return
        text, outline = checked.text, checked.tree
        self.text_reduced = checked.reduced
        if outline is not None:
            self.has_outline = True
            self._split(outline, text)
            # What suppressions read of the outline, taken now (from the source's text).
            self.outline_facts = (_outline_first_code_line(outline), _outline_statement_lines(outline, self.source.text))
            # The `ast` tree is dropped once read: kept for every module a run loads, the
            # outlines took more memory than libcst's trees of what is analysed.
            self._outline_text = None if text == self.source.text else text
            self._ok = True
            if known is not None and self._outline_text is None and not self.text_reduced:
                known.put(key, self._outline_data())
            return
        # This Python's parser refuses it: only libcst can decide, on the whole module (it
        # may be newer syntax that libcst knows).
        self._parse_whole(text)

    def _parse_whole(self, text: str) -> None:
        """A text `ast` refuses: only libcst can say whether it parses, which an outline
        does not ask (a `project.ModuleInfo` does)."""
        self.needs_parser = True

    def _split(self, outline: ast.Module, text: str) -> None:
        """Chunks from the outline: every top-level def and class, and the rest."""
        defined = [s for s in outline.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        spans = [(min([s.lineno, *(d.lineno for d in s.decorator_list)]), s.end_lineno or s.lineno) for s in defined]
        chunks = self._cut(text, spans)
        _OutlineReader(self, {id(statement): chunk for statement, chunk in zip(defined, chunks)}).read(outline)

    def _cut(self, text: str, spans: list[tuple[int, int]]) -> list[_Chunk]:
        """The chunks of these (first, last) line spans of top-level definitions, in order,
        and the rest (`_rest`, where they are blank lines); the definitions' chunks."""
        ends = [m.end() for m in _LINE_END.finditer(text)]
        offsets = [0, *ends]  # offsets[n - 1]: where line n starts

        def line_start(line: int) -> int:
            return offsets[line - 1] if line - 1 < len(offsets) else len(text)

        rest_parts: list[str] = []
        cursor = 0
        chunks: list[_Chunk] = []
        for first, last in spans:
            begin, end = line_start(first), line_start(last + 1)
            chunks.append(_Chunk(first, text[begin:end], is_rest=False))
            rest_parts.append(text[cursor:begin])
            # Blank lines keep every later line where it was.
            rest_parts.append("".join(m.group() for m in _LINE_END.finditer(text, begin, end)))
            cursor = end
        rest_parts.append(text[cursor:])
        self._rest = _Chunk(1, "".join(rest_parts), is_rest=True)
        self._chunks = [self._rest, *chunks]
        self._spans = tuple(spans)
        return chunks

    def _outline_data(self) -> "OutlineFacts":
        """What loading read from the `ast` outline (`_split`, the outline reader, the
        suppressions' facts), as data: a fact of the text, the module's names and package
        flag, which `_install_outline` puts back without parsing."""
        number = {id(chunk): index for index, chunk in enumerate(self._chunks)}  # 0: the rest
        return OutlineFacts(
            self._spans,
            {name: number[id(chunk)] for name, chunk in self._owner.items()},
            {name: tuple(number[id(chunk)] for chunk in chunks) for name, chunks in self._method_chunks.items()},
            dict(self.imports),
            frozenset(self.globals),
            {name: tuple(found) for name, found in self.global_bindings.items()},
            self.outline_facts[0],
            dict(self.outline_facts[1]),
        )

    def _install_outline(self, facts: Optional["OutlineFacts"]) -> bool:
        """Load from outline facts of this text (False: none, or not of this text's lines)."""
        if facts is None:
            return False
        text = self.source.text
        lines = len(_LINE_END.findall(text)) + 1
        numbers = (*facts.owner.values(), *(i for held in facts.method_chunks.values() for i in held))
        if any(not 1 <= first <= last <= lines for first, last in facts.spans) or any(not 0 <= i <= len(facts.spans) for i in numbers):
            return False
        defined = self._cut(text, list(facts.spans))
        chunks = [self._rest, *defined]
        self.has_outline = True
        self._owner = {name: chunks[i] for name, i in facts.owner.items()}
        self._method_chunks = {name: [chunks[i] for i in held] for name, held in facts.method_chunks.items()}
        self.imports = dict(facts.imports)
        self.globals = set(facts.globals)
        self.global_bindings = {name: list(found) for name, found in facts.bindings.items()}
        self.outline_facts = (facts.first_code_line, dict(facts.statement_lines))
        return True

    def _record_error(self, error: tuple[str, int, int]) -> None:
        if self.parse_error is None:
            self.parse_error = error

    def parts_signature(self, indexes: Iterable[int]) -> Optional[tuple[str, tuple[tuple[int, str], ...]]]:
        """(outline digest, ((chunk number, text digest), ...)) for these chunks, or None
        (see `read_parts`); loads the module, reads nothing the analysis tracks."""
        self.load()
        if self.read_error or self.parse_error is not None or not self._ok or not self.has_outline or self.text_reduced or self._outline_text is not None:
            return None
        facts = self._outline_data()
        outline = [
            [list(span) for span in facts.spans],
            sorted(facts.owner.items()),
            sorted((name, list(held)) for name, held in facts.method_chunks.items()),
            sorted(facts.imports.items()),
            sorted(facts.globals),
            sorted((name, [list(binding) for binding in found]) for name, found in facts.bindings.items()),
        ]
        chunks = []
        for index in indexes:
            if not 0 <= index < len(self._chunks):
                return None
            chunks.append((index, syntax_limits.text_digest(self._chunks[index].text)))
        return syntax_limits.text_digest(repr(outline)), tuple(chunks)

    @property
    def ok(self) -> bool:
        self.load()
        return self._ok

    def chunk_texts(self) -> list[str]:
        """Each chunk's text, the module-level rest first (the order of `calls_in_chunks`)."""
        self.load()
        return [chunk.text for chunk in self._chunks] if self.ok else []


def _package_of(module: ModuleOutline, name: Optional[str] = None) -> str:
    name = module.name if name is None else name
    return name if module.is_package else name.rpartition(".")[0]


def _import_from_base(module: ModuleOutline, dots: int, base: str) -> Optional[str]:
    """The dotted name a relative import names, from the first of the module's names whose
    package is deep enough for the dots (a shallower root names more parents)."""
    if not dots:
        return base
    for name in module.names:
        package = _package_of(module, name).split(".") if _package_of(module, name) else []
        if dots - 1 >= len(package):
            continue
        anchor = package[: len(package) - (dots - 1)]
        return ".".join([*anchor, base] if base else anchor)
    return None


_HEADED = (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _outline_statement_lines(tree: ast.Module, text: str) -> dict[int, int]:
    """For lines inside multi-line statements, from the `ast` outline (suppressions'
    `statement_first_lines`): each line after the first of a simple statement (on its own
    line) or of a compound statement's header maps to the first."""
    mapping: dict[int, int] = {}
    _statement_lines_of(text, mapping)(tree.body)
    return mapping


def _statement_lines_of(text: str, mapping: dict[int, int]) -> Callable[[list], None]:
    """What `_outline_statement_lines` does to a list of top-level statements, into
    `mapping`: called once with the module's body, or with its parts in order."""
    lines = split_lines(text)
    if lines and lines[-1] == "":
        lines.pop()

    def on_header_line(statement: ast.stmt) -> bool:
        # `if x: y` puts the body on the header's line (a suite, not a block).
        line = lines[statement.lineno - 1] if statement.lineno <= len(lines) else ""
        return bool(line[: statement.col_offset].strip())

    def add(start: int, end: int) -> None:
        for line in range(start + 1, end + 1):
            mapping.setdefault(line, start)

    def block(statements: list) -> None:
        if statements and on_header_line(statements[0]):
            for statement in statements:
                inner(statement)  # small statements of a suite: no lines of their own
            return
        for statement in statements:
            visit(statement)

    def inner(statement: ast.stmt) -> None:
        for child in ast.iter_child_nodes(statement):
            if isinstance(child, ast.stmt):
                visit(child)

    def visit(statement: ast.stmt) -> None:
        if isinstance(statement, _HEADED):
            body = statement.body
            end = body[0].lineno if on_header_line(body[0]) else body[0].lineno - 1
            add(statement.lineno, end)
        elif isinstance(statement, ast.Match):
            if statement.cases:
                add(statement.lineno, statement.cases[0].pattern.lineno - 1)
        elif not hasattr(statement, "body"):
            add(statement.lineno, statement.end_lineno or statement.lineno)
            return
        for name in ("body", "orelse", "finalbody"):
            block(getattr(statement, name, []))
        for handler in getattr(statement, "handlers", []):
            block(handler.body)
        for case in getattr(statement, "cases", []):
            block(case.body)

    return block


# Texts longer than this are outlined by `ast` a part at a time (`_outline_in_parts`): a
# 50,000-line file's whole tree takes 240 MB at once.
OUTLINE_PART_LINES = 2000
_PART_START = re.compile(r"(?:async[ \t]+def|def|class)[ \t]|@")


def _outline_in_parts(module: ModuleOutline, text: str, digest: Optional[str]) -> Optional[OutlineFacts]:
    """The outline facts of a long text (what `_split` and the suppressions read, as
    `_outline_data` gives them), from `ast` trees of its parts, each dropped once read: the
    text is cut before a top-level `def`, `class` or first decorator at least
    `OUTLINE_PART_LINES` lines after the last cut. A part that does not parse on its own (a
    cut inside a string, a text with a syntax error), a text the syntax limits refuse, reduce
    or rewrite, or one without a cut: None (the whole text is outlined at once). A cut
    inside a statement leaves the part before it unfinished, which `ast` refuses."""
    starts = [0, *(m.end() for m in _LINE_END.finditer(text))]  # starts[n - 1]: line n
    if len(starts) <= OUTLINE_PART_LINES:
        return None
    cuts = [1]
    decorated = False  # the last line of code began with a decorator
    for number in range(2, len(starts) + 1):
        begin = starts[number - 1]
        head = text[begin : begin + 6]
        if not head or head[0] in " \t\f\r\n#":
            continue
        if number - cuts[-1] >= OUTLINE_PART_LINES and not decorated and _PART_START.match(text, begin):
            cuts.append(number)
        decorated = head[0] == "@"
    if len(cuts) == 1:
        return None
    scratch = _OutlineScratch(module)
    reader = _OutlineReader(scratch, {})
    statement_lines: dict[int, int] = {}
    lines_of = _statement_lines_of(text, statement_lines)
    spans: list[tuple[int, int]] = []
    first_code_line: Optional[int] = None
    index = 0
    bounds = [*(starts[cut - 1] for cut in cuts), len(text)]
    for cut, begin, end in zip(cuts, bounds, bounds[1:]):
        try:
            part = ast.parse("\n" * (cut - 1) + text[begin:end])
        except (SyntaxError, RecursionError, ValueError, MemoryError):
            return None
        for statement in part.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                spans.append((min([statement.lineno, *(d.lineno for d in statement.decorator_list)]), statement.end_lineno or statement.lineno))
                chunk: object = len(spans)
            else:
                chunk = 0  # the rest of the module
            reader._statement(statement, chunk, in_class=False)  # type: ignore[arg-type]
            if first_code_line is None and _is_code_line(statement, index):
                first_code_line = statement.lineno
            index += 1
        lines_of(part.body)
        del part
    # Asked last (`ast` refuses cleanly whatever the text): where a part fails, the whole
    # outline scans the text once, not twice.
    prepared = syntax_limits.prepare(text, digest)
    if prepared.refusal is not None or prepared.reduced or prepared.text != text:
        return None
    return OutlineFacts(
        tuple(spans),
        dict(scratch._owner),
        {name: tuple(held) for name, held in scratch._method_chunks.items()},
        dict(scratch.imports),
        frozenset(scratch.globals),
        {name: tuple(found) for name, found in scratch.global_bindings.items()},
        first_code_line,
        statement_lines,
    )


class _OutlineScratch:
    """What `_OutlineReader` writes, for `_outline_in_parts`: chunks are their numbers in
    `OutlineFacts` (0: the rest of the module)."""

    def __init__(self, module: ModuleOutline):
        self.names, self.name, self.is_package = module.names, module.name, module.is_package
        self._rest = 0
        self._owner: dict[str, int] = {}
        self._method_chunks: dict[str, list[int]] = {}
        self.imports: dict[str, str] = {}
        self.globals: set[str] = set()
        self.global_bindings: dict[str, list] = {}


def _is_code_line(node: ast.stmt, index: int) -> bool:
    """Whether the module's `index`-th statement is code `_outline_first_code_line` stops at."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return False
    return not (index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str))


def _outline_first_code_line(tree: ast.Module) -> Optional[int]:
    """The first line of code that is not a docstring or an import (suppressions: where a
    file-level directive may stand)."""
    for index, node in enumerate(tree.body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue
        return node.lineno
    return None


class _OutlineReader:
    """From the `ast` outline: module-level imports and names, which chunk defines each
    top-level name, and which chunks define methods of each name. The same facts as the
    libcst collector gives for module scope, without libcst."""

    def __init__(self, module: ModuleOutline, chunk_of_statement: dict[int, _Chunk]):
        self.module = module
        self.chunk_of_statement = chunk_of_statement

    def read(self, outline: ast.Module) -> None:
        module = self.module
        rest = module._rest
        assert rest is not None
        for statement in outline.body:
            chunk = self.chunk_of_statement.get(id(statement), rest)
            self._statement(statement, chunk, in_class=False)

    def _global(self, name: str, kind: str, imported: Optional[str] = None, is_none: bool = False) -> None:
        self.module.global_bindings.setdefault(name, []).append((kind, imported, self.conditional, is_none))

    conditional = False

    def _statement(self, node: ast.stmt, chunk: _Chunk, in_class: bool) -> None:
        module = self.module
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not in_class:
                module._owner[node.name] = chunk
                module.globals.add(node.name)
                self._global(node.name, "def")
            return  # imports inside a function are the function's own
        if isinstance(node, ast.ClassDef):
            if not in_class:
                module._owner[node.name] = chunk
                module.globals.add(node.name)
                self._global(node.name, "class")
            self._class_methods(node, chunk)
            for child in node.body:
                self._statement(child, chunk, in_class=True)
            return
        if not in_class:
            found = outline_bindings(node, lambda dots, base: _import_from_base(module, dots, base))
            for binding in found:
                if binding.kind == "annotation":
                    continue
                value = binding.value if binding.kind in ("assign", "annassign", "augassign") else None
                is_none = isinstance(value, ast.Constant) and value.value is None
                self._global(binding.name, "import" if binding.kind == "import" else "other", binding.imported, is_none)
            # A class body's imports are the class's own: methods do not see them.
            module.imports.update({b.name: b.imported for b in found if b.kind == "import"})
            module.globals.update(b.name for b in found if b.kind in ("import", "assign", "annassign", "annotation"))
        outer = self.conditional
        for field_name in ("body", "orelse", "finalbody", "handlers", "cases"):
            # Branches and loop bodies may not run; a try body, a with body and a finally do.
            runs_always = field_name == "finalbody" or (field_name == "body" and isinstance(node, (ast.Try, ast.With, ast.AsyncWith, *TRY_STAR)))
            self.conditional = outer or not runs_always
            for child in getattr(node, field_name, ()):
                if isinstance(child, ast.stmt):
                    self._statement(child, chunk, in_class)
                else:  # an except handler or a match case
                    for grandchild in child.body:
                        self._statement(grandchild, chunk, in_class)
        self.conditional = outer

    def _class_methods(self, node: ast.ClassDef, chunk: _Chunk) -> None:
        # Nested classes come through `_statement`; classes inside functions are not seen
        # (a method found nowhere resolves to nothing).
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                holders = self.module._method_chunks.setdefault(item.name, [])
                if chunk not in holders:
                    holders.append(chunk)
