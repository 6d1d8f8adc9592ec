"""Building fixes' edits with libcst's lossless code generation: a rule builds the replacement
as libcst nodes taken from the parsed tree, so comments, blank lines, strings and the author's
formatting inside them come out exactly as written; only the new lines (`try:`, `finally:`)
are generated."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Callable, Optional

import libcst as cst
from libcst._nodes.internal import CodegenState  # the renderer behind Module.code_for_node

from ..core.findings import Edit, Location
from ..core.lines import LINE_END

if TYPE_CHECKING:
    from ..semantic.project import FunctionInfo, ModuleInfo


@lru_cache(maxsize=8)
def _line_starts(text: str) -> tuple[int, ...]:
    # Per text, once: a rule builds one fix per finding, many per file (a str caches its hash).
    return (0, *(m.end() for m in LINE_END.finditer(text)))


def _line_text(text: str, row: int) -> str:
    starts = _line_starts(text)
    if not 1 <= row <= len(starts):
        return ""
    line = text[starts[row - 1] : starts[row] if row < len(starts) else len(text)]
    return line.rstrip("\r\n")


def source_of(module: "ModuleInfo", node: cst.CSTNode) -> str:
    """A node's text as written, sliced from the source by its position."""
    text = module.text
    starts = _line_starts(text)
    (first_row, first_column), (last_row, last_column) = module.start(node), module.end(node)
    return text[starts[first_row - 1] + first_column : starts[last_row - 1] + last_column]


def _leading_space(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t\f"))]


def _default_indent(module: "ModuleInfo", function: "FunctionInfo") -> str:
    """The indent of blocks that libcst stored without their own (`IndentedBlock.indent` is
    None): the one its parse of this code inferred, read back from the function's body."""
    body = function.node.body
    if isinstance(body, cst.IndentedBlock) and body.indent is None and body.body:
        outer = _leading_space(_line_text(module.text, module.start(function.node.name)[0]))
        inner = _leading_space(_line_text(module.text, module.start(body.body[0])[0]))
        if inner.startswith(outer) and len(inner) > len(outer):
            return inner[len(outer) :]
    return "    "


def statements_replacement(
    module: "ModuleInfo",
    function: "FunctionInfo",
    block: cst.IndentedBlock,
    after: cst.BaseStatement,
    through: cst.BaseStatement,
    replacement: Callable[[], cst.BaseStatement],
) -> Optional[Callable[[], Edit]]:
    """The edit that replaces the statements of `block` after `after` up to and including
    `through` (whole lines, with their comments) by the statement `replacement()` builds,
    rendered at the block's indentation. None where the layout is not plain (code before the
    statement on its line). Everything that decides whether there is an edit, and where, is
    read now; what is returned renders it (code generation, the costly part) when called,
    from the statements alone: the module's trees and positions are not needed then."""
    text = module.text
    after_end = module.end(after)[0]
    through_end = module.end(through)[0]
    row, column = module.start(after)
    line = _line_text(text, row)
    indent = line[:column]
    if indent.strip(" \t\f"):
        return None
    default = _default_indent(module, function)
    newline_match = LINE_END.search(text)
    newline = newline_match.group() if newline_match else "\n"
    own = block.indent if block.indent is not None else default

    def render() -> Edit:
        built = replacement()
        if isinstance(built, cst.Try):
            built = built.with_changes(
                body=built.body.with_changes(indent=own),
                finalbody=built.finalbody.with_changes(body=built.finalbody.body.with_changes(indent=own))
                if built.finalbody is not None
                else None,
            )
        state = CodegenState(default_indent=default, default_newline=newline)
        state.indent_tokens.append(indent)
        built._codegen(state)
        content = "".join(state.tokens)
        return Edit(content=content, location=Location(after_end + 1, 1), end_location=Location(through_end + 1, 1))

    return render


# -- applying edits ----------------------------------------------------------------------------
