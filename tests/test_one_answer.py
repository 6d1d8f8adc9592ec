"""One answer to each question of the model (SPEC.md, Layout): how a call's arguments fill
a function's parameters is `CallResolver.bind_arguments`, which parameter the receiver fills
is `semantic/receivers.py`, and whether one statement runs before another is a query on the
control-flow graph (`semantic/cfg.py`); no other module works any of them out itself."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import libcst as cst

from trace_lint import frameworks
from trace_lint.semantic.calls import CallResolver
from trace_lint.semantic.module_names import module_names, source_roots
from trace_lint.semantic.project import ModuleInfo, Project
from trace_lint.semantic.receivers import receiver_parameter

PACKAGE = Path(__file__).resolve().parent.parent / "trace_lint"
MAPPER = PACKAGE / "semantic" / "calls.py"
RECEIVERS = PACKAGE / "semantic" / "receivers.py"

# A definition's parameter lists, as libcst spells them.
PARAMETER_LISTS = {"posonly_params", "kwonly_params", "star_arg", "star_kwarg"}
# Reviewed functions that read both a call's arguments and a parameter list without mapping
# one onto the other: name -> why.
ALLOWED: dict[str, str] = {}


def _reads_parameter_list(node: ast.AST) -> bool:
    """`x.params` (a FunctionInfo's names, libcst's `Parameters`), `x.params.params`, and
    libcst's other parameter lists."""
    return isinstance(node, ast.Attribute) and (node.attr in PARAMETER_LISTS or node.attr == "params")


def _reads_call_arguments(node: ast.AST) -> bool:
    """`call.args`, or the split `call_arguments(call)` returns."""
    if isinstance(node, ast.Attribute) and node.attr == "args" and not (isinstance(node.value, ast.Name) and node.value.id == "self"):
        return True
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "call_arguments"


def _aligns(node: ast.AST) -> bool:
    """What lines arguments up with parameters: `zip(...)`, `.index(...)` or a subscript by a
    computed position."""
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id == "zip":
            return True
        if isinstance(func, ast.Attribute) and func.attr == "index":
            return True
    return isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name)


def own_argument_mappers(source: str) -> list[str]:
    """Functions that read a call's arguments and a parameter list and line them up."""
    found = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        nodes = [node for statement in function.body for node in ast.walk(statement)]  # not the annotations
        if any(map(_reads_parameter_list, nodes)) and any(map(_reads_call_arguments, nodes)) and any(map(_aligns, nodes)):
            found.append(function.name)
    return found


def own_receiver_answers(source: str) -> list[str]:
    """`x.params[0]`, `x.params[1:]`, `params[1:]`: the first parameter taken as `self`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Subscript):
            continue
        value, index = node.value, node.slice
        first = isinstance(index, ast.Constant) and index.value == 0
        rest = isinstance(index, ast.Slice) and isinstance(index.lower, ast.Constant) and index.lower.value == 1 and index.upper is None
        named = (isinstance(value, ast.Attribute) and value.attr == "params") or (isinstance(value, ast.Name) and value.id == "params")
        if named and (first or rest):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def _package_files():
    for path in sorted(PACKAGE.rglob("*.py")):
        if "runtime_guard" not in path.parts:  # the guard reads live frames, not trees
            yield path, path.relative_to(PACKAGE).as_posix()


def test_no_module_maps_arguments_to_parameters_itself():
    offenders = {}
    for path, relative in _package_files():
        if path == MAPPER:
            continue
        names = [n for n in own_argument_mappers(path.read_text(encoding="utf-8")) if f"{relative}:{n}" not in ALLOWED]
        if names:
            offenders[relative] = names
    assert offenders == {}


def test_no_module_takes_the_first_parameter_as_self_itself():
    offenders = {}
    for path, relative in _package_files():
        if path in (MAPPER, RECEIVERS):
            continue
        found = own_receiver_answers(path.read_text(encoding="utf-8"))
        if found:
            offenders[relative] = found
    assert offenders == {}


# Comparisons of two nodes' positions outside semantic/ that are not about which runs first:
# "module:function" -> why.
ORDERED_BY_TEXT = {
    "rules/lifecycle.py:capture_left_open_fix": "the edit needs the begin to end its line: text layout, not execution order",
}


def orders_by_position(source: str) -> list[str]:
    """Functions comparing two nodes' positions (`a.position < b.position`,
    `module.start(a) < module.start(b)`); a region's bounds (`region.start`, `region.stop`:
    what lies inside its span, by position by design) are attributes and not counted."""

    def positional(expr: ast.AST) -> bool:
        if isinstance(expr, ast.Attribute) and expr.attr == "position":
            return True
        return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in ("start", "end")

    found = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Compare) and all(isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in node.ops):
                if all(positional(operand) for operand in (node.left, *node.comparators)):
                    found.append(function.name)
                    break
    return found


def test_no_module_orders_statements_by_position():
    offenders = {}
    for path, relative in _package_files():
        if relative.startswith(("semantic/", "frameworks/")):  # the graph itself; the plug-ins find regions' spans
            continue
        names = [n for n in orders_by_position(path.read_text(encoding="utf-8")) if f"{relative}:{n}" not in ORDERED_BY_TEXT]
        if names:
            offenders[relative] = names
    assert offenders == {}


POSITION_ORDERINGS = '''
def _read_in_region_before(region, binding):
    return any(a.position < binding.position for a in accesses(region.function))

def _later(module, a, b):
    return module.start(a) >= module.end(b)

def _after_the_region(module, region, node):
    return module.start(node) >= region.stop
'''


def test_the_scans_see_the_shapes_they_forbid():
    """The mappers and receiver answers the code had before the one mapper are caught."""
    mapper = '''
def _parameter_arguments(helper, call):
    params = list(helper.function.params)
    if helper.cls is not None and params:
        params = params[1:]
    positional, keywords = call_arguments(call)
    return [value for name, value in zip(params, positional) if name in helper.params]

def _argument_captures(self, call, arg, function):
    params = list(target.params)
    positional = [a for a in call.args if a.keyword is None and not a.star]
    index = positional.index(arg)
    return params[index]
'''
    assert own_argument_mappers(mapper) == ["_parameter_arguments", "_argument_captures"]
    assert own_receiver_answers(mapper) == ["line 5: params[1:]"]
    receiver = "receiver = method.params[0] if method.params else None\n"
    assert own_receiver_answers(receiver) == ["line 1: method.params[0]"]
    # Reading a call's keywords alone, or a function's names alone, maps nothing.
    assert own_argument_mappers("def f(call):\n    return call_arguments(call)[1].get('device')\n") == []
    assert own_argument_mappers("def f(function, name):\n    return name in function.params\n") == []
    # Two nodes ordered by their text; a node against a region's bound is span membership.
    assert orders_by_position(POSITION_ORDERINGS) == ["_read_in_region_before", "_later"]


# -- the mapper ------------------------------------------------------------------------------


def _project(tmp_path: Path, source: str) -> Project:
    path = tmp_path / "code.py"
    path.write_text(textwrap.dedent(source))
    roots = source_roots((), tmp_path, ())
    module = ModuleInfo(path.resolve(), module_names(path.resolve(), roots), "code.py")
    project = Project([module], frameworks.module_names())
    module.load()
    list(module.iter_functions())
    return project


def _bound(project: Project, caller: str, call_text: str, target: str):
    module = project.modules[0]
    function = module.functions[caller]
    call = next(n for n in function.nodes if isinstance(n, cst.Call) and module.code(n) == call_text)
    bound = CallResolver(project).bind_arguments(call, function, module.functions[target])
    landing = {module.code(a.value): bound.parameter_of(a) for a in call.args}
    return bound, landing


SOURCE = """
class Block:
    def __init__(self, device, *, size=1):
        self.device = device

    def run(self, x, y=None, *rest, scale, **options):
        return x

    @staticmethod
    def make(device, size):
        return device

    @classmethod
    def build(cls, device):
        return cls(device)

    class Inner:
        def __init__(self, device):
            self.device = device


def plain(a, /, b, *more, c, **extra):
    return a


def caller(block, xs, kw):
    block.run(1, 2, 3, 4, scale=5, colour=6)
    Block.run(block, 1, scale=2)
    Block.make(7, size=8)
    Block.build(9)
    Block(10, size=11)
    Block.Inner(12)
    plain(1, 2, 3, a=4, c=5)
    plain(*xs, 6, b=7)
    plain(1, **kw)
"""


def test_positional_keyword_only_and_star_parameters(tmp_path):
    project = _project(tmp_path, SOURCE)
    bound, landing = _bound(project, "caller", "block.run(1, 2, 3, 4, scale=5, colour=6)", "Block.run")
    assert bound.receiver == "self" and not bound.constructs
    assert landing == {"1": "x", "2": "y", "3": "rest", "4": "rest", "5": "scale", "6": "options"}
    assert set(bound.by_parameter) == {"x", "y", "scale"}
    # A positional-only parameter is not filled by its keyword: that lands in `**extra`.
    bound, landing = _bound(project, "caller", "plain(1, 2, 3, a=4, c=5)", "plain")
    assert bound.receiver is None
    assert landing == {"1": "a", "2": "b", "3": "more", "4": "extra", "5": "c"}
    # After `*xs` no position is known; keywords still are.
    _, landing = _bound(project, "caller", "plain(*xs, 6, b=7)", "plain")
    assert landing == {"xs": None, "6": None, "7": "b"}
    _, landing = _bound(project, "caller", "plain(1, **kw)", "plain")
    assert landing == {"1": "a", "kw": None}


def test_the_receiver_is_bound_unless_the_call_passes_it(tmp_path):
    project = _project(tmp_path, SOURCE)
    bound, landing = _bound(project, "caller", "Block.run(block, 1, scale=2)", "Block.run")
    assert bound.receiver is None and landing == {"block": "self", "1": "x", "2": "scale"}
    bound, landing = _bound(project, "caller", "Block.make(7, size=8)", "Block.make")
    assert bound.receiver is None and landing == {"7": "device", "8": "size"}
    bound, landing = _bound(project, "caller", "Block.build(9)", "Block.build")
    assert bound.receiver == "cls" and landing == {"9": "device"}
    bound, landing = _bound(project, "caller", "Block(10, size=11)", "Block.__init__")
    assert bound.receiver == "self" and bound.constructs and landing == {"10": "device", "11": "size"}
    # A nested class constructed through its outer class: still a construction.
    bound, landing = _bound(project, "caller", "Block.Inner(12)", "Block.Inner.__init__")
    assert bound.receiver == "self" and bound.constructs and landing == {"12": "device"}


def test_which_parameter_the_receiver_fills(tmp_path):
    project = _project(
        tmp_path,
        """
        class C:
            def method(this, x):
                def nested(y):
                    return y
                return nested

            @staticmethod
            def static(x):
                return x

            @classmethod
            def factory(klass, x):
                return x

            def only_star(*args):
                return args

            def only_keywords(*, key):
                return key

            def positional_only(me, /, x):
                return x


        def function(x):
            return x
        """,
    )
    functions = project.modules[0].functions
    answers = {name: receiver_parameter(functions[name]) for name in functions}
    assert answers == {
        "C.method": "this",
        "C.method.<locals>.nested": None,
        "C.static": None,
        "C.factory": "klass",
        "C.only_star": None,
        "C.only_keywords": None,
        "C.positional_only": "me",
        "function": None,
    }
