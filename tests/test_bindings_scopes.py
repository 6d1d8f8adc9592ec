"""The binder's scopes (semantic/bindings.py): a comprehension's targets and a lambda's
parameters are scopes of their own inside a function, a class body is a scope its methods
do not see, and module scope is bound from the `ast` outline. End to end through the real
CLI, and on the binder's own answers."""

from __future__ import annotations

import ast
import textwrap

import libcst as cst

from .cli_helpers import FIXTURES, finding_set
from .test_semantic_model import function, make_project, module_of

from trace_lint.semantic.bindings import ast_target_names, class_bindings, outline_bindings, target_leaves, target_names


def test_a_comprehension_target_is_not_the_functions_binding_end_to_end():
    # model.py:12 reads the comprehension's own `y` (a host flag), not the function's device
    # `y` (before the comprehension scope, a TRC202 there); model.py:14 the lambda's; the
    # hooks called at model.py:16 are the comprehension's `sync`, not the module's function.
    # model.py:19 is the device `y`. masks.py:9 indexes with the mask that reaches it (the
    # binder's reaching definitions; the list bound before it reaches no read).
    assert finding_set(FIXTURES / "scopes", "--select", "ALL") == {("model.py", 19, "TRC202"), ("masks.py", 9, "TRC501")}


def _names(fn, kind=cst.Name):
    return [n for n in fn.nodes if type(n) is kind]


def test_reads_inside_comprehensions_and_lambdas_resolve_to_their_own_scope(tmp_path):
    project = make_project(tmp_path, {"m.py": textwrap.dedent(
        """
        def f(xs, ys):
            y = g(xs)
            a = [y for y in ys]
            b = [y for v in y]
            c = [[y for y in v] for v in y]
            d = {k: y for k, y in ys}
            h = lambda y, *rest: y
            return y, a, b, c, d, h
        """
    )})
    fn = function(project, "m.py", "f")
    bindings = fn.bindings
    kinds = {fn.module.start(n): [b.kind for b in bindings.reaching("y", n)] for n in _names(fn) if n.value == "y"}
    assert kinds == {
        (3, 4): ["assign"],  # y = g(xs)
        (4, 9): ["comprehension"], (4, 15): ["comprehension"],  # [y for y in ys]
        (5, 9): ["assign"], (5, 20): ["assign"],  # [y for v in y]: the function's y twice
        # [[y for y in v] for v in y]: the inner element is the inner target; the outer
        # comprehension's first iterable is read in the function.
        (6, 10): ["comprehension"], (6, 16): ["comprehension"], (6, 33): ["assign"],
        (7, 12): ["comprehension"], (7, 21): ["comprehension"],  # {k: y for k, y in ys}
        (9, 11): ["assign"],  # return y
    }
    reads = [n for n in _names(fn) if n.value == "y" and type(fn.module.parent(n)) is cst.ListComp]
    # The lambda's body is not in the function's node list; its read resolves to the parameter.
    lam = next(n for n in fn.nodes if isinstance(n, cst.Lambda))
    body_read = lam.body
    assert [b.kind for b in bindings.reaching("y", body_read)] == ["lambda"]
    assert bindings.binds("rest", lam.body) and not bindings.binds("rest")
    # The comprehension's binding carries the clause's iterable where the target is plain.
    (own,) = bindings.reaching("y", reads[0])
    assert fn.module.code(own.value).strip() == "ys"


def test_a_class_body_is_its_own_scope(tmp_path):
    project = make_project(tmp_path, {"m.py": textwrap.dedent(
        """
        import math as tn

        class Config:
            import ttnn as tn
            size = 4
            a, (b, *c) = 1, (2, 3)
            with open("f") as handle:
                pass
            def method(self):
                return tn.sqrt(size)
        """
    )})
    module = module_of(project, "m.py")
    method = function(project, "m.py", "Config.method")
    scope = class_bindings(module.classes["Config"].node)
    assert {name: [b.kind for b in found] for name, found in scope.items()} == {
        "tn": ["import"], "size": ["assign"], "a": ["assign"], "b": ["assign"], "c": ["assign"],
        "handle": ["with"], "method": ["def"],
    }
    # The method does not see the class body: `tn` is the module's math, `size` unbound.
    tn_read = next(n for n in method.nodes if isinstance(n, cst.Attribute))
    assert project.qualified_name(tn_read, module, method) == "math.sqrt"
    size_read = next(n for n in method.nodes if isinstance(n, cst.Name) and n.value == "size")
    assert project.qualified_name(size_read, module, method) is None


def test_module_scope_comes_from_the_outline_binder():
    tree = ast.parse(textwrap.dedent(
        """
        import a.b
        import c.d as e
        from . import f
        from .g import h as i
        x, [y, *z] = 1, [2, 3]
        w: int
        v: int = None
        v += 1
        for k in range(3):
            pass
        with open("f") as (p, q):
            pass
        del x
        print(n := 1)
        """
    ))
    base = lambda dots, module: None if dots else module  # noqa: E731 (no package: relative imports do not resolve)
    found = [(b.name, b.kind, b.imported) for statement in tree.body for b in outline_bindings(statement, base)]
    assert found == [
        ("a", "import", "a"), ("e", "import", "c.d"), ("f", "unresolved-import", None), ("i", "unresolved-import", None),
        ("x", "assign", None), ("y", "assign", None), ("w", "annotation", None), ("v", "annassign", None),
        ("v", "augassign", None), ("k", "loop", None), ("p", "with", None), ("q", "with", None), ("x", "del", None),
        ("n", "walrus", None),
    ]
    # The outline's flattener does not follow a starred name; libcst's does (both as before).
    assert ast_target_names(tree.body[4].targets[0]) == ["x", "y"]


def test_one_flattener_for_libcst_targets():
    target = cst.parse_statement("a, (self.b, *c), d[0] = v").body[0].targets[0].target
    assert [cst.Module([]).code_for_node(t) for t in target_leaves(target)] == ["a", "self.b", "c", "d[0]"]
    assert target_names(target) == ["a", "c"]


def test_a_lambdas_star_parameters_bind_in_its_own_scope(tmp_path):
    # A lambda analysed as a function of its own (captured work handed to a helper) binds
    # `*rest` and `**kw` as parameters, as a def does; they do not fall through to the
    # enclosing function's `rest`.
    from trace_lint.semantic.calls import CallResolver

    project = make_project(tmp_path, {"m.py": textwrap.dedent(
        """
        def f(rest):
            h = lambda y, *rest, **kw: (y, rest, kw)
            return h
        """
    )})
    fn = function(project, "m.py", "f")
    lam = next(n for n in fn.nodes if isinstance(n, cst.Lambda))
    own = CallResolver(project).lambda_function(lam, fn.module, fn)
    reads = {n.value: n for n in own.nodes if type(n) is cst.Name and fn.module.parent(n) is not None and type(fn.module.parent(n)) is cst.Element}
    assert {name: [b.kind for b in own.bindings.reaching(name, node)] for name, node in reads.items()} == {
        "y": ["param"], "rest": ["param"], "kw": ["param"],
    }


def test_a_lambda_and_a_def_of_one_signature_have_the_same_parameters(tmp_path):
    # Every reader of `FunctionInfo.params` (summaries of what a callee does to its
    # parameters, argument landing) sees a lambda's `*rest`/`**kw` as it sees a def's.
    from trace_lint.semantic.calls import CallResolver

    project = make_project(tmp_path, {"m.py": textwrap.dedent(
        """
        def f():
            h = lambda y, *rest, z=1, **kw: (y, rest, kw)
            return h

        def g(y, *rest, z=1, **kw):
            return (y, rest, kw)
        """
    )})
    fn = function(project, "m.py", "f")
    lam = next(n for n in fn.nodes if isinstance(n, cst.Lambda))
    own = CallResolver(project).lambda_function(lam, fn.module, fn)
    assert list(own.params) == list(function(project, "m.py", "g").params) == ["y", "z", "rest", "kw"]
