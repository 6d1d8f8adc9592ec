"""Fast read-only use of libcst: parsing without per-node validation, walks over trees in
source order, and node positions.

libcst's visitor rebuilds every node it passes (visit-and-replace) and its position provider
visits the whole tree once more through the metadata machinery; on large modules both cost
more than the parse. Analysis only reads trees, so it walks dataclass fields directly and
computes positions with one lean code-generation pass. Both are checked against libcst's own
results in tests/test_syntax_walk.py.
"""

from __future__ import annotations

import dataclasses
import re
from contextlib import nullcontext
from typing import Iterator, NamedTuple

import libcst as cst
from libcst._nodes.internal import CodegenState

# libcst validates every node as it is built (`CSTNode.__post_init__`), which is for trees
# built by hand; the parser's own output is valid by construction, and the checks take about
# an eighth of a parse. None where a libcst version has no such hook.
_VALIDATE = cst.CSTNode.__dict__.get("__post_init__")


def _skip_validation(node: cst.CSTNode) -> None:
    return None


def parse_module(text: str, validate: bool = False) -> cst.Module:
    """`libcst.parse_module` with node validation switched off while it runs (unless
    `validate`: for text CPython's own parser did not accept, where libcst decides alone).
    The text must be within `syntax_limits` (libcst's native parser can overflow the C stack).

    libcst's tokenizer misreads a form feed in indentation that CPython reads as a reset of
    the column: such a prefix is moved to the end of the line before, and `positions` moves
    the columns of that line back."""
    shifts: dict[int, int] = {}
    if "\f" in text:
        text, shifts = _move_form_feeds(text)
    if _VALIDATE is None or validate:
        tree = cst.parse_module(text)
    else:
        cst.CSTNode.__post_init__ = _skip_validation  # type: ignore[method-assign]
        try:
            tree = cst.parse_module(text)
        finally:
            cst.CSTNode.__post_init__ = _VALIDATE  # type: ignore[method-assign]
    if shifts:
        _column_shifts[id(tree)] = (tree, shifts)
    return tree


# id(tree) -> (tree, {1-based line in the tree's text: columns moved}); the tree is held so
# that its id is not reused.
_column_shifts: dict[int, tuple[cst.Module, dict[int, int]]] = {}
_INDENTED_FORM_FEED = re.compile(r"(\r\n|\r|\n)([ \t\f]*\f)(?=[ \t]*[^ \t\f\r\n#])")


def _move_form_feeds(text: str) -> tuple[str, dict[int, int]]:
    """Indentation `<ws>\\f<rest>` -> `<rest>`, `<ws>\\f` going to the end of the line
    before (where it is trailing whitespace). CPython ignores what comes before a form feed
    in indentation, so the blocks stay the same. Returns the text and the moved lines."""
    shifts: dict[int, int] = {}

    def moved(match: re.Match) -> str:
        if text[match.start() - 1 : match.start()] == "\\":
            return match.group()  # a continuation line: its indentation means nothing
        prefix = match.group(2)
        line = text.count("\n", 0, match.start()) + 2 if "\r" not in text else _line_at(text, match.end(1))
        shifts[line] = len(prefix)
        return prefix.replace("\f", " ").replace("\t", " ") + match.group(1)

    return _INDENTED_FORM_FEED.sub(moved, text), shifts


def _line_at(text: str, offset: int) -> int:
    return len(re.findall(r"\r\n|\r|\n", text[:offset])) + 1


# Whitespace, comments and punctuation: never analysed, so never walked.
TRIVIA = (
    cst.SimpleWhitespace, cst.ParenthesizedWhitespace, cst.TrailingWhitespace, cst.EmptyLine,
    cst.Comment, cst.Newline, cst.LeftParen, cst.RightParen, cst.LeftSquareBracket,
    cst.RightSquareBracket, cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.Comma, cst.Dot,
    cst.Colon, cst.AssignEqual, cst.Semicolon, cst.ParamSlash,
)

# Fields that only ever hold trivia (or plain strings); skipped without a look.
_TRIVIA_FIELDS = frozenset({
    "leading_lines", "lines_after_decorators", "trailing_whitespace", "leading_whitespace",
    "lpar", "rpar", "lbracket", "rbracket", "lbrace", "rbrace", "comma", "semicolon", "dot",
    "relative", "colon", "first_colon", "second_colon", "header", "footer", "indent",
    "posonly_ind", "default_indent", "default_newline", "has_trailing_newline", "encoding",
    "value_str",
})

# Classes whose fields are not declared in source order (the rest are).
_SOURCE_ORDER = {
    cst.FunctionDef: ("decorators", "asynchronous", "name", "type_parameters", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "type_parameters", "bases", "keywords", "body"),
    cst.IfExp: ("body", "test", "orelse"),
    cst.Arg: ("keyword", "value"),
    cst.Parameters: ("posonly_params", "params", "star_arg", "kwonly_params", "star_kwarg"),
    cst.MatchCase: ("pattern", "guard", "body"),
    cst.ExceptHandler: ("type", "name", "body"),
    cst.ExceptStarHandler: ("type", "name", "body"),
    cst.For: ("asynchronous", "target", "iter", "body", "orelse"),
    cst.With: ("asynchronous", "items", "body"),
    cst.CompFor: ("asynchronous", "target", "iter", "ifs", "inner_for_in"),
    cst.FormattedStringExpression: ("expression", "format_spec"),
}

_fields_by_class: dict[type, tuple[str, ...]] = {}


def concrete_types(base: type) -> frozenset[type]:
    """The concrete libcst classes that are `base` or derive from it: `type(n) in ...` is much
    cheaper than `isinstance` against libcst's abstract base classes."""
    found = set()
    stack = [base]
    while stack:
        cls = stack.pop()
        if not getattr(cls, "__abstractmethods__", None):
            found.add(cls)
        stack.extend(cls.__subclasses__())
    return frozenset(found)


SMALL_STATEMENTS = concrete_types(cst.BaseSmallStatement)
# Trivia is never walked, so never asked for; but a parenthesis anchors the end of
# `from m import (a, b)` for libcst, so parentheses keep their spans.
_UNRECORDED = frozenset().union(*(concrete_types(cls) for cls in TRIVIA)) - concrete_types(cst.LeftParen) - concrete_types(cst.RightParen)


def _child_fields(cls: type) -> tuple[str, ...]:
    fields = _SOURCE_ORDER.get(cls)
    if fields is None:
        fields = tuple(
            f.name for f in dataclasses.fields(cls)
            if f.name not in _TRIVIA_FIELDS and not f.name.startswith("whitespace")
        )
    _fields_by_class[cls] = fields
    return fields


# type -> whether its instances are walked (a node that is not trivia); isinstance against
# libcst's abstract classes is slow, a dict of concrete types is not.
_walked: dict[type, bool] = {}


def _is_walked(cls: type) -> bool:
    walked = _walked.get(cls)
    if walked is None:
        walked = _walked[cls] = issubclass(cls, cst.CSTNode) and not issubclass(cls, TRIVIA)
    return walked


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The node's children that are not trivia, in source order."""
    cls = type(node)
    fields = _fields_by_class.get(cls) or _child_fields(cls)
    out: list[cst.CSTNode] = []
    walked = _walked
    for name in fields:
        value = getattr(node, name)
        kind = type(value)
        if kind is list or kind is tuple:
            for item in value:
                item_kind = type(item)
                flag = walked.get(item_kind)
                if flag is None:
                    flag = _is_walked(item_kind)
                if flag:
                    out.append(item)
        else:
            flag = walked.get(kind)
            if flag is None:
                flag = _is_walked(kind)
            if flag:
                out.append(value)
    return out


def preorder(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The node and every non-trivia node below it, in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(children(current)))


# -- positions -------------------------------------------------------------------------------

class Point(NamedTuple):
    line: int  # 1-based
    column: int  # 0-based


class Span(NamedTuple):
    """A node's syntactic range, as libcst's PositionProvider gives it."""

    start: Point
    end: Point


_NEWLINE = re.compile(r"\r\n?|\n")
# NamedTuple's own __new__ is a Python function; tuple.__new__ builds the same value in C.
_new = tuple.__new__


class _Record:
    """`record_syntactic_position` without a generator per call: one object per pass, its
    pending nodes on a stack (the records nest as the nodes do)."""

    __slots__ = ("state", "pending")

    def __init__(self, state):
        self.state = state
        self.pending: list = []

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        state = self.state
        node, start_node, end_node, start = self.pending.pop()
        spans = state.spans
        if start_node is not None:
            start = spans[id(start_node)][0]
        end = spans[id(end_node)][1] if end_node is not None else state.here()
        spans[id(node)] = state.span(start, end)
        return False


_NOTHING = nullcontext()


class _PositionState(CodegenState):
    """Code generation that only tracks where each node starts and ends: no text is kept
    (`tokens` holds one placeholder while anything was written, which is all the module's
    own code generation asks of it).

    Nested nodes often start or end at one place (`a.b(c)`: the call, the attribute and the
    name start together) or span the same range: such nodes share one Point or Span, which
    roughly halves what a module's positions hold."""

    def __init__(self, module: cst.Module, first_line: int):
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.line = first_line
        self.column = 0
        self.point = _new(Point, (first_line, 0))
        self.last_span = _new(Span, (self.point, self.point))
        self.starts: list[Point] = []
        # By id(node): libcst nodes hash in Python, ids do not.
        self.spans: dict[int, Span] = {}
        self.record = _Record(self)

    def here(self) -> Point:
        """The current place, as the Point made last where nothing was written since."""
        point = self.point
        if point[1] != self.column or point[0] != self.line:
            point = self.point = _new(Point, (self.line, self.column))
        return point

    def span(self, start: Point, end: Point) -> Span:
        span = self.last_span
        if span[0] is not start or span[1] is not end:
            span = self.last_span = _new(Span, (start, end))
        return span

    def _advance(self, value: str) -> None:
        if "\r" not in value:
            self.line += value.count("\n")
            self.column = len(value) - value.rfind("\n") - 1
        else:
            segments = _NEWLINE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])

    def add_token(self, value: str) -> None:
        if not self.tokens:
            self.tokens.append("")
        if "\n" in value or "\r" in value:
            self._advance(value)
        else:
            self.column += len(value)

    def add_indent_tokens(self) -> None:
        # Indentation never holds a line break.
        for token in self.indent_tokens:
            self.column += len(token)

    def pop_trailing_newline(self) -> None:
        pass  # the text is not kept; positions are what was written

    # No span for what is never asked for (over half of all nodes).
    # `here` and `span` written out: these run for every node.
    def before_codegen(self, node: cst.CSTNode) -> None:
        if type(node) not in _UNRECORDED:
            point = self.point
            if point[1] != self.column or point[0] != self.line:
                point = self.point = _new(Point, (self.line, self.column))
            self.starts.append(point)

    def after_codegen(self, node: cst.CSTNode) -> None:
        if type(node) in _UNRECORDED:
            return
        start = self.starts.pop()
        key = id(node)
        spans = self.spans
        if key not in spans:
            end = self.point
            if end[1] != self.column or end[0] != self.line:
                end = self.point = _new(Point, (self.line, self.column))
            span = self.last_span
            if span[0] is not start or span[1] is not end:
                span = self.last_span = _new(Span, (start, end))
            spans[key] = span

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        if type(node) in _UNRECORDED:
            return _NOTHING
        record = self.record
        record.pending.append((node, start_node, end_node, self.here()))
        return record


def positions(module: cst.Module, first_line: int = 1) -> dict[int, Span]:
    """Every node's syntactic range (1-based lines, 0-based columns), as PositionProvider
    gives it, by id(node); `first_line`: where the module's text starts in its file."""
    state = _PositionState(module, first_line)
    # One Python frame or two per level of the tree: `syntax_limits` bounds the levels,
    # this gives them room whatever the caller's own depth.
    from .syntax_limits import recursion_room

    with recursion_room():
        module._codegen(state)
    moved = _column_shifts.get(id(module))
    if moved is not None and moved[0] is module:
        offset = first_line - 1
        shifts = {line + offset: count for line, count in moved[1].items()}
        spans = state.spans
        for key, span in spans.items():
            start, end = span
            if start.line in shifts or end.line in shifts:
                spans[key] = Span(
                    Point(start.line, start.column + shifts.get(start.line, 0)),
                    Point(end.line, end.column + shifts.get(end.line, 0)),
                )
    return state.spans

