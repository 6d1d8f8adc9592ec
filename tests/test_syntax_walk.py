"""The fast tree walk, the lean position pass and per-chunk parsing give what libcst's own
visitor, PositionProvider and a whole-module parse give."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from trace_lint.semantic import outline as outline_module
from trace_lint.semantic import project as project_module
from trace_lint.semantic.project import ModuleInfo
from trace_lint.report.suppressions import statement_first_lines
from trace_lint.frontend.syntax_walk import TRIVIA, parse_module, positions, preorder

ROOT = Path(__file__).parent.parent

TRICKY = '''\
"""Docstring."""
from __future__ import annotations
import os, sys as system
from . import sibling
from .sibling import (first,
    second as other)
try:
    import fast
except ImportError:  # pragma: no cover
    fast = None

if fast:
    def helper(a, /, b=lambda x: x + 1, *args, c: int = 2, **kw) -> "int":
        return a
else:
    def helper(a, /, b=None, *args, c=2, **kw):
        return b

@decorator(1,
           2)
@other
async def run(x):
    async with open(x) as f, other() as g:
        async for line in f:
            if (n := len(line)) > 3: print(n); continue
            elif n == 2:
                pass
            else:
                y = [i for i in range(n) if i if not i] + {k: v for k, v in {}.items()}
    match x:
        case [1, *rest] if rest:
            return f"{x!r:>{n}} {x=}"
        case {"a": 1, **kw}:
            return x if x else -x
        case Point(x=0) | None:
            return (yield x)
    return await g


class Outer(Base, metaclass=Meta):
    attr: int = 3
    def method(self): return self.attr
    class Inner:
        def deep(self, s=slice(1, 2), t=x[1:2:3, ::2]):
            global G
            def inner():
                nonlocal s
                del s
                raise ValueError() from None
            return inner
    x = 1; y = (2,
        3)


def helper():  # the winning definition
    assert x, "message"
    with (a as b,
          c):
        pass
    return ~x ** -y @ z
'''


# Tabs, non-ASCII names and strings, line continuations, f-strings (nested, multi-line,
# with format specs), decorators over several lines, comments in odd places, an empty
# class body footer and a file without a final newline.
VARIED = (
    "import ttnn  # \u00fcber\n"
    "\n"
    "\n"
    "@decorate(\n"
    "    \"\u00e9t\u00e9\",\n"
    ")\n"
    "@ other . attr\n"
    "def f\u00fcr(\u03b1, \u03b2=\"\u2603\"):\n"
    "\tx = \u03b1 + \\\n"
    "\t\t\u03b2\n"
    "\tif x and \\\n"
    "\t   \u03b2:\n"
    "\t\ty = f\"{x!r:>{len(\u03b2)}} {'\u00fc'} {x=}\"\n"
    "\t\tz = f\"\"\"\n"
    "{y}\n"
    "  \u2603 {f'{x}'}\"\"\"\n"
    "\t\treturn ttnn.relu(y, \\\n"
    "\t\t\tz)  # tr\u00e4iling\n"
    "\t# a comment at the block's end\n"
    "\treturn [\n"
    "\t\t\u03b1,  # \u00e9\n"
    "\t\t(\u03b2),\n"
    "\t]\n"
    "\n"
    "class K:\n"
    "    def m(self): return '\U0001f600' ; pass\n"
    "    # footer comment\n"
    "x = (1 +\n"
    "     2)  \\\n"
    "    if True else 3"
)


def _corpus() -> list[tuple[str, str]]:
    files = [
        *sorted((ROOT / "tests" / "fixtures").rglob("*.py")),
        *sorted((ROOT / "examples").rglob("*.py")),
        ROOT / "trace_lint" / "semantic" / "project.py",
        ROOT / "trace_lint" / "rules" / "lifecycle.py",
        Path(inspect.getfile(ast)),
        Path(inspect.getfile(inspect)),
    ]
    texts = [
        ("tricky.py", TRICKY), ("tricky_crlf.py", TRICKY.replace("\n", "\r\n")),
        ("varied.py", VARIED), ("varied_crlf.py", VARIED.replace("\n", "\r\n")),
    ]
    for path in files:
        text = path.read_text(encoding="utf-8")
        try:
            cst.parse_module(text)
            ast.parse(text)
        except Exception:
            continue  # fixtures with syntax errors on purpose
        texts.append((str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name), text))
    return texts


CORPUS = _corpus()


class _Reference(cst.CSTVisitor):
    def __init__(self):
        super().__init__()
        self.nodes: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, TRIVIA):
            return False
        self.nodes.append(node)
        return True


@pytest.mark.parametrize("name,text", CORPUS, ids=[name for name, _ in CORPUS])
def test_walk_and_positions_match_libcst(name, text):
    tree = cst.parse_module(text)
    reference = _Reference()
    tree.visit(reference)
    assert [type(n).__name__ for n in preorder(tree)] == [type(n).__name__ for n in reference.nodes]
    assert all(a is b for a, b in zip(preorder(tree), reference.nodes))
    expected = MetadataWrapper(tree, unsafe_skip_copy=True).resolve(PositionProvider)
    walked = {node: span for node, span in expected.items() if not isinstance(node, TRIVIA) or isinstance(node, (cst.LeftParen, cst.RightParen))}
    mine = positions(tree)
    assert len(mine) == len(walked)  # every walked node and every parenthesis, no other trivia
    for node, span in walked.items():
        got = mine[id(node)]
        assert (got.start.line, got.start.column, got.end.line, got.end.column) == (
            span.start.line, span.start.column, span.end.line, span.end.column,
        ), (type(node).__name__, span)


@pytest.mark.parametrize("name,text", CORPUS, ids=[name for name, _ in CORPUS])
def test_parse_without_validation_builds_the_same_tree(name, text):
    fast = parse_module(text)
    assert fast.deep_equals(cst.parse_module(text))
    assert fast.code == text


def test_validation_is_back_after_a_parse_even_a_failed_one():
    hook = cst.CSTNode.__post_init__
    parse_module("x = 1\n")
    assert cst.CSTNode.__post_init__ is hook
    with pytest.raises(cst.ParserSyntaxError):
        parse_module("def (:\n")
    assert cst.CSTNode.__post_init__ is hook
    # A node built by hand is still checked.
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")


def _whole(text: str, monkeypatch) -> ModuleInfo:
    """A module parsed by libcst in one piece, as when this Python's parser refuses it."""
    def refuse(*args, **kwargs):
        raise SyntaxError("refused for the test")

    with monkeypatch.context() as patch:
        patch.setattr(project_module.ast, "parse", refuse)
        module = ModuleInfo(Path("m.py"), "pkg.m", "m.py", text=text)
        module.load()
        module._parse_all()
    assert module.outline is None and module.ok
    return module


def _facts(module: ModuleInfo) -> dict:
    functions = {}
    for function in module.iter_functions():
        functions[function.qualname] = (
            function.params,
            sorted(function.imports.items()),
            sorted(function.nested),
            function.cls.qualname if function.cls else None,
            [(type(n).__name__, module.start(n), module.end(n)) for n in function.nodes if n in module.positions],
        )
    return {
        "imports": sorted(module.imports.items()),
        "globals": sorted(module.globals),
        "top_level": sorted((name, type(module.top_level[name]).__name__, module.top_level[name].qualname) for name in module.top_level),
        "classes": sorted((q, sorted(c.methods), sorted(c.attribute_types)) for q, c in module.classes.items()),
        "functions": functions,
        "module_nodes": [(type(n).__name__, module.start(n)) for n in module.nodes],
    }


@pytest.mark.parametrize("name,text", CORPUS, ids=[name for name, _ in CORPUS])
def test_chunked_module_gives_what_a_whole_parse_gives(name, text, monkeypatch):
    chunked = ModuleInfo(Path("m.py"), "pkg.m", "m.py", text=text)
    chunked.load()
    assert chunked.outline is not None
    whole = _whole(text, monkeypatch)
    facts, expected = _facts(chunked), _facts(whole)
    # Module-level code: a whole parse also walks the bodies of top-level classes.
    whole_rest = [entry for entry in expected.pop("module_nodes")]
    chunk_rest = facts.pop("module_nodes")
    assert set(chunk_rest) <= set(whole_rest)
    assert facts == expected


@pytest.mark.parametrize("name,text", CORPUS, ids=[name for name, _ in CORPUS])
def test_statement_lines_from_the_outline_match_libcst(name, text, monkeypatch):
    chunked = ModuleInfo(Path("m.py"), "pkg.m", "m.py", text=text)
    assert statement_first_lines(chunked) == statement_first_lines(_whole(text, monkeypatch))


def test_only_chunks_that_need_it_are_parsed():
    text = "import ttnn\n\ndef unrelated():\n    return 1\n\ndef capture(d):\n    return ttnn.begin_trace_capture(d)\n"
    module = ModuleInfo(Path("m.py"), "m", "m.py", text=text)
    assert [f.name for f in module.iter_functions(("begin_trace_capture",))] == ["capture"]
    assert "unrelated" not in module.functions
    # Looking a name up parses its definition then.
    assert module.top_level["unrelated"].name == "unrelated"
    assert module.start(module.top_level["unrelated"].node) == (3, 0)


def test_a_later_definition_wins_whatever_is_parsed_first():
    text = "def f():\n    return 1\n\ndef f():\n    return 2\n"
    module = ModuleInfo(Path("m.py"), "m", "m.py", text=text)
    module.load()
    module._parse(module._chunks[1])  # the first `def f` (the hidden one)
    assert "f" not in module.top_level.parsed
    assert module.start(module.top_level["f"].node) == (4, 0)
    assert [module.start(f.node) for f in module.iter_functions()] == [(4, 0)]


@pytest.mark.parametrize("name,text", CORPUS[:4], ids=[name for name, _ in CORPUS[:4]])
def test_a_loaded_module_keeps_no_ast_tree(name, text):
    """The `ast` outline is read at load and dropped (kept for every module a run loads, it
    held more memory than the libcst trees analysed); what suppressions read of it is the
    same as from the outline parsed again."""
    from trace_lint.report.suppressions import _first_code_line

    module = ModuleInfo(Path("m.py"), "pkg.m", "m.py", text=text)
    module.load()
    assert module.has_outline
    assert not any(isinstance(value, ast.AST) for value in vars(module).values())
    again = ModuleInfo(Path("m.py"), "pkg.m", "m.py", text=text)
    again.load()
    outline = again.outline  # parsed again on request
    assert isinstance(outline, ast.Module)
    assert ast.dump(outline) == ast.dump(ast.parse(text))
    assert statement_first_lines(module) == outline_module._outline_statement_lines(outline, text)
    assert _first_code_line(module) == outline_module._outline_first_code_line(outline)
