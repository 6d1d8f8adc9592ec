"""What a file's text may be before a parser that can crash sees it.

libcst's native parser overflows the C stack (a segfault, not an exception) at about 1,300
nested brackets, and its time grows about cubically with long chains (`1 + 1 + ...`,
`a.b.c...`, `x[0][0]...`); libcst's code generation, which positions come from, and our own
walks recurse once per level of the tree. CPython's own parser has hard limits and never
crashes. So, from one pass over the tokens:

- What every supported CPython (3.10 to 3.13, measured with `compile()`) refuses is reported
  as the file's error (TRC001), with the number measured: bracket nesting past 200, more
  than 99 levels of indentation.
- What CPython accepts but is past what the analysis handles is made smaller in the text the
  parsers see, keeping every other character where it was (so every line and column stays
  true): an expression item with more than `CHAIN_LIMIT` operators, trailers or operands in
  one chain, or nested past `DEPTH_LIMIT`, becomes the name `_` padded with blanks (its
  newlines, comments and line continuations kept); an `if`/`elif` chain of more than
  `ELIF_LIMIT` branches becomes independent `if` statements. Code like that is generated
  data or formulas, not capture code; what is lost is the inside of that one expression.
- Two spellings libcst's tokenizer refuses but CPython reads the same way are rewritten:
  tabs in indentation become spaces (an equal count, so columns stay), and a line
  continuation followed by a blank or comment-only line becomes a space (that line ends the
  statement either way, and a definition split out of its module would end on the
  backslash).

The text is never run; `ast.parse` is CPython's own parser, which refuses cleanly.
"""

from __future__ import annotations

import ast
import re
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Optional

from ..core.file_facts import ActiveFacts, content_digest

# CPython's tokenizer: MAXLEVEL 200 brackets, MAXINDENT 100 indentation stack entries (the
# first is column 0), the same in 3.10, 3.11, 3.12 and 3.13.
MAX_BRACKETS = 200
MAX_INDENT_LEVELS = 99
# Past these, an expression is replaced in the parse text (see the module docstring). libcst
# parses 150 chained subscripts in about 0.05 s; positions and walks stay far inside the
# default recursion limit.
CHAIN_LIMIT = 150
DEPTH_LIMIT = 300
ELIF_LIMIT = 50

_KEYWORDS = frozenset(
    "as assert async break class continue def del elif except finally for from global import "
    "nonlocal pass raise return try while with yield".split()
)
_WORD_OPERATORS = frozenset({"and", "or", "not", "await", "lambda"})
_BINARY = frozenset({"+", "-", "*", "/", "//", "%", "@", "**", "<<", ">>", "&", "|", "^", "~"})
_DELIMITERS = frozenset({",", ";", "=", ":=", "->"} | {op + "=" for op in ("+", "-", "*", "/", "//", "%", "@", "**", "<<", ">>", "&", "|", "^")})
_OPEN = {"(": ")", "[": "]", "{": "}"}

_STRING = r"""(?:[rRbBuUfF]{1,2})?(?:'''(?:[^'\\]|\\.|'(?!''))*(?:'''|\Z)|\"\"\"(?:[^"\\]|\\.|"(?!""))*(?:\"\"\"|\Z)|'(?:[^'\\\r\n]|\\(?:\r\n|.))*'?|"(?:[^"\\\r\n]|\\(?:\r\n|.))*"?)"""
# Whitespace before a token is part of its match (half the matches); `ws` only at the end.
_TOKEN = re.compile(
    r"[ \t\f]*(?:(?P<comment>\#[^\r\n]*)"
    r"|(?P<cont>\\(?:\r\n|\r|\n))"
    r"|(?P<nl>\r\n|\r|\n)"
    rf"|(?P<string>{_STRING})"
    r"|(?P<number>(?:\d|\.\d)(?:[\w.]|(?<=[eE])[-+])*)"
    r"|(?P<name>[^\W\d]\w*)"
    r"|(?P<op>\*\*=?|//=?|>>=?|<<=?|->|:=|!=|\.\.\.|[-+*/%@&|^<>=]=?|[~.,:;()\[\]{}])"
    r"|(?P<other>.)"
    r"|(?P<ws>(?<=[ \t\f])\Z))",
    re.DOTALL,
)
_LINE_END = re.compile(r"\r\n|\r|\n")
_FSTRING_PREFIX = re.compile(r"[rRbBuU]?[fF]|[fF][rR]")


@dataclass(frozen=True)
class Refusal:
    """What CPython's parser refuses, with where (1-based line and column)."""

    message: str
    line: int
    column: int


@dataclass
class Prepared:
    # What parsers see: the source with the same characters on the same lines and columns,
    # except what the module docstring lists.
    text: str
    refusal: Optional[Refusal] = None
    # Whether an expression or elif chain was replaced (not only spelling rewritten).
    reduced: bool = False


class _Item:
    """One expression item: the tokens between two delimiters at one bracket level."""

    __slots__ = ("start", "end", "ops", "blank", "lambdas", "after_for", "seen_for", "named")

    def __init__(self) -> None:
        self.named = False  # follows `def`/`class`: a name, never replaced
        self.start = -1  # offset of its first token; -1: empty so far
        self.end = -1
        self.ops = 0
        self.blank = False
        self.lambdas = 0  # `lambda` words whose `:` has not come yet
        self.after_for = False  # a `for` came at this level and its `in` has not
        self.seen_for = False  # a comprehension `for` came at this level


def _indent_width(whitespace: str) -> int:
    column = 0
    for char in whitespace:
        if char == " ":
            column += 1
        elif char == "\t":
            column = (column // 8 + 1) * 8
        elif char == "\f":
            column = 0
    return column


def scan(text: str) -> tuple[Optional[Refusal], list[tuple[int, int, str]], bool]:
    """(refusal, edits, reduced): edits are (start, end, kind) over `text`."""
    edits: list[tuple[int, int, str]] = []
    reduced = False
    stack: list[_Item] = []  # enclosing items, one per open bracket
    openers: list[str] = []
    item = _Item()
    blanks: list[tuple[int, int]] = []
    weight_below = 0  # sum of the enclosing items' ops
    previous = ""  # the previous significant token: "atom", "op", "" (item start)
    previous_kind = ""
    line_start = 0  # offset where the current physical line starts
    at_line_start = True  # the next significant token starts a logical line
    indents = [0]
    elif_chains: dict[int, list[int]] = {}  # indentation depth -> offsets of its `elif`s
    line = 1

    def end_item(current: _Item, level_zero: bool = False) -> None:
        nonlocal reduced
        if current.start >= 0 and not current.named and (current.blank or current.ops > CHAIN_LIMIT):
            blanks.append((current.start, current.end))
            reduced = True

    def close_chains(depth: int) -> None:
        nonlocal reduced
        for key in [k for k in elif_chains if k >= depth]:
            offsets = elif_chains.pop(key)
            if len(offsets) > ELIF_LIMIT:
                reduced = True
                edits.extend((offset, offset + 4, "elif") for offset in offsets)

    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        start = match.start(kind)
        value = match.group(kind)
        if kind == "ws":
            continue
        if kind == "comment":
            continue
        if kind == "cont":
            following_end = _LINE_END.search(text, match.end())
            following = text[match.end() : following_end.start() if following_end else len(text)]
            if not following.strip() or following.lstrip().startswith("#"):
                edits.append((start, start + 1, "space"))
            line += 1
            line_start = match.end()
            continue
        if kind == "nl":
            line += 1
            line_start = match.end()
            if not openers and not at_line_start:
                end_item(item)
                item = _Item()
                previous = previous_kind = ""
                at_line_start = True
            continue
        if kind == "string" and ("\n" in value or "\r" in value):
            # A multi-line string: later tokens are on later lines.
            last = max(value.rfind("\n"), value.rfind("\r"))
            line += value.count("\n") + value.count("\r") - value.count("\r\n")
            new_line_start = start + last + 1
        else:
            new_line_start = None
        if at_line_start and not openers:
            at_line_start = False
            indentation = text[line_start:start]
            if indentation and "\t" in indentation:
                edits.append((line_start, start, "indent"))
            width = _indent_width(indentation)
            if width > indents[-1]:
                indents.append(width)
                if len(indents) - 1 > MAX_INDENT_LEVELS:
                    return (
                        Refusal(f"too deeply indented: {len(indents) - 1:,} levels; Python's parser stops at {MAX_INDENT_LEVELS}", line, start - line_start + 1),
                        [],
                        False,
                    )
            else:
                while len(indents) > 1 and width < indents[-1]:
                    indents.pop()
            depth = len(indents) - 1
            close_chains(depth + 1)
            if kind == "name" and value == "elif" and depth in elif_chains:
                elif_chains[depth].append(start)
            elif kind == "name" and value == "if":
                close_chains(depth)
                elif_chains[depth] = []
            elif kind != "name" or value != "else":
                close_chains(depth)
        if new_line_start is not None:
            line_start = new_line_start
        # -- the token inside its expression item
        if kind == "op" and value in _OPEN:
            if previous == "atom":
                item.ops += 1  # a call or subscript
            if item.start < 0:
                item.start = start
            openers.append(value)
            if len(openers) > MAX_BRACKETS:
                return (
                    Refusal(f"too deeply nested: {_depth_of(text, start, len(openers)):,} levels of brackets; Python's parser stops at {MAX_BRACKETS}", line, start - line_start + 1),
                    [],
                    False,
                )
            stack.append(item)
            weight_below += item.ops + 2
            item = _Item()
            previous = previous_kind = ""
            continue
        if kind == "op" and value in (")", "]", "}"):
            if openers:
                openers.pop()
                end_item(item)
                item = stack.pop()
                weight_below -= item.ops + 2
            item.end = match.end()
            previous, previous_kind = "atom", "op"
            continue
        is_delimiter = False
        if kind == "op":
            if value in _DELIMITERS:
                is_delimiter = True
            elif value == ":":
                if item.lambdas:
                    item.lambdas -= 1
                    item.ops += 1
                else:
                    is_delimiter = True
            elif value == "@" and previous != "atom":
                is_delimiter = True  # a decorator
            elif value == "." and previous == "atom":
                item.ops += 1
            elif value in _BINARY:
                if previous == "atom" or value in ("-", "+", "~"):
                    item.ops += 1
            # Comparisons are one flat node in libcst and in `ast`: not counted.
        elif kind == "name":
            if value in _KEYWORDS:
                is_delimiter = True
                if value == "for":
                    item.after_for = True
                    item.seen_for = True
            elif value == "in" and item.after_for:
                is_delimiter = True
                item.after_for = False
            elif value in ("if", "else") and (item.start < 0 or (value == "if" and item.seen_for)):
                is_delimiter = True  # a statement's `if`/`else`, or a comprehension's filter
            elif value in ("if", "else") or value in _WORD_OPERATORS:
                item.ops += 1
                if value == "lambda":
                    item.lambdas += 1
            # `in`/`is` compare (flat); other words are names, soft keywords included.
        elif kind == "string":
            if previous_kind == "string":
                item.ops += 1  # implicit concatenation
            if _FSTRING_PREFIX.match(value):
                item.ops += sum(value.count(c) for c in "+-*/%&|^~.([") // 2
        if is_delimiter:
            seen_for, after_for = item.seen_for, item.after_for
            end_item(item)
            item = _Item()
            item.seen_for, item.after_for = seen_for, after_for
            item.named = kind == "name" and value in ("def", "class")
            previous = previous_kind = ""
            continue
        if item.start < 0:
            item.start = start
        item.end = match.end()
        previous_kind = kind
        previous = "atom" if kind in ("name", "number", "string") and value not in _WORD_OPERATORS and value not in ("if", "else", "in", "is") else "op"
        if weight_below + item.ops > DEPTH_LIMIT:
            # The outermost item that may become `_` (not a def's or class's name).
            for holder in [*stack, item]:
                if not holder.named:
                    holder.blank = True
                    break
    end_item(item)
    for pending in stack:
        end_item(pending)
    close_chains(0)
    edits.extend((begin, end, "blank") for begin, end in _merge(blanks))
    return None, edits, reduced


def _depth_of(text: str, start: int, depth: int) -> int:
    """How deep the brackets go from here on (for the message): counted on to the end."""
    deepest = depth
    for char in text[start + 1:]:
        if char in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]}":
            depth -= 1
            if depth <= 0:
                break
        elif char in "\n\r#'\"":
            if char != "\n" and char != "\r":
                break
    return deepest


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for begin, end in sorted(spans):
        if merged and begin <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((begin, end))
    return merged


def _blanked(segment: str) -> str:
    """`_` and blanks in place of an expression, keeping its line structure and comments."""
    out = []
    for match in _TOKEN.finditer(segment):
        kind = match.lastgroup
        value = match.group(kind)
        out.append(" " * (match.start(kind) - match.start()))
        if kind in ("nl", "cont", "comment"):
            out.append(value)
        elif kind == "string" and ("\n" in value or "\r" in value):
            out.append(re.sub(r"[^\r\n]", " ", value))
        else:
            out.append(" " * len(value))
    result = "".join(out)
    return "_" + result[1:] if result else result


def apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    if not edits:
        return text
    parts = []
    cursor = 0
    for begin, end, kind in sorted(edits):
        if begin < cursor:
            continue  # inside a blanked expression already
        parts.append(text[cursor:begin])
        segment = text[begin:end]
        if kind == "blank":
            parts.append(_blanked(segment))
        elif kind == "indent":
            parts.append(segment.replace("\t", " "))
        elif kind == "elif":
            parts.append("if  ")
        else:  # "space"
            parts.append(" ")
        cursor = end
    parts.append(text[cursor:])
    return "".join(parts)


Scan = tuple[Optional[Refusal], list[tuple[int, int, str]], bool]


def text_digest(text: str) -> str:
    return content_digest(text.encode("utf-8", "surrogatepass"))


class KnownScans(ActiveFacts[str, Scan]):
    """Scans of texts seen before, by the text's digest (`text_digest`): a scan is a pure
    function of the text, so the driver keeps them between runs (its cache) and a run scans
    only texts it has not seen."""

    active: Optional["KnownScans"] = None

    def scan(self, text: str, digest: Optional[str] = None) -> Scan:
        """`digest`: the text's `text_digest`, where the caller has it."""
        return self.get(digest or text_digest(text), lambda: scan(text))


def prepare(text: str, digest: Optional[str] = None) -> Prepared:
    """The text parsers may see, or what CPython refuses in it (`digest`: as for `scan`)."""
    known = KnownScans.active
    refusal, edits, reduced = known.scan(text, digest) if known is not None else scan(text)
    if refusal is not None:
        return Prepared("", refusal)
    return Prepared(apply(text, edits), None, reduced)


def python_refusal(text: str) -> Optional[Refusal]:
    """What CPython's own parser says about the original text: None when it parses. A
    RecursionError there is this interpreter's recursion limit while building the tree (3.11
    and 3.12 at about 3,000 levels, 3.10 and 3.13 far more), not a syntax error: the parser
    itself accepted the text."""
    try:
        ast.parse(text)
    except SyntaxError as error:
        return Refusal(f"syntax error: {error.msg}", error.lineno or 1, error.offset or 1)
    except MemoryError:
        return Refusal(_TOO_COMPLEX, 1, 1)
    except (RecursionError, ValueError) as error:
        if isinstance(error, ValueError):
            return Refusal(f"syntax error: {error}", 1, 1)
        return None
    return None


@dataclass
class Outline:
    """A source read for analysis: the text parsers may see and CPython's outline of it."""

    text: str
    tree: Optional[ast.Module]
    # (message, line, column): the file is unparsable (TRC001).
    error: Optional[tuple[str, int, int]] = None
    # Some expression or elif chain was replaced in `text`: code generated from the tree
    # there is not the user's (fixes must not be built from it).
    reduced: bool = False


def read(text: str, digest: Optional[str] = None) -> Outline:
    """Measure, reduce and outline a source. `tree` is None where this interpreter's parser
    refuses text that may be newer syntax: then only libcst can tell, and the text it would
    get (`text`) is within the limits above. `digest`: the text's `text_digest`, where known."""
    prepared = prepare(text, digest)
    if prepared.refusal is not None:
        refusal = prepared.refusal
        return Outline("", None, (refusal.message, refusal.line, refusal.column))
    tree: Optional[ast.Module] = None
    try:
        tree = ast.parse(prepared.text)
    except MemoryError:
        return Outline("", None, (_TOO_COMPLEX, 1, 1))
    except (SyntaxError, RecursionError, ValueError):
        tree = None
    if prepared.reduced:
        # What was replaced could hide a syntax error: CPython judges the original.
        refusal = python_refusal(text)
        if refusal is not None:
            return Outline("", None, (refusal.message, refusal.line, refusal.column))
    return Outline(prepared.text, tree, reduced=prepared.reduced)


_TOO_COMPLEX = "too complex for Python's parser: nested too deeply (its stack holds 6,000 levels)"


# Python frames the analysis may need: one to three per level of a tree that the limits
# above keep under about 700 levels (99 levels of blocks, 300 of expression), with room for
# the callers. Pure-Python recursion, so the C stack is not what runs out first.
ANALYSIS_RECURSION = 6000


_room_lock = threading.Lock()
_room_users = 0
_room_restore = 0


@contextmanager
def recursion_room() -> Iterator[None]:
    """Raise the recursion limit to `ANALYSIS_RECURSION` while analysing (never lower it).
    Counted, so that one thread's analysis ending does not lower it under another's."""
    global _room_users, _room_restore
    with _room_lock:
        if _room_users == 0:
            _room_restore = sys.getrecursionlimit()
            if _room_restore < ANALYSIS_RECURSION:
                sys.setrecursionlimit(ANALYSIS_RECURSION)
        _room_users += 1
    try:
        yield
    finally:
        with _room_lock:
            _room_users -= 1
            if _room_users == 0 and _room_restore < ANALYSIS_RECURSION:
                sys.setrecursionlimit(_room_restore)
