"""The control-flow graph of a function (semantic/cfg.py) and its queries, on small functions:
branches, loops with break/continue/else, try/except/else/finally, with, match, early
returns, and reaching definitions read off the graph."""

from __future__ import annotations

import textwrap

import libcst as cst

from .test_semantic_model import function, make_project


def graph_of(tmp_path, source: str, name: str = "f"):
    project = make_project(tmp_path, {"m.py": textwrap.dedent(source)})
    fn = function(project, "m.py", name)
    calls = {}
    for node in fn.nodes:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
            calls.setdefault(node.func.value, node)
    return fn, fn.cfg, calls


def values(fn, name: str, node) -> set[str]:
    return {fn.module.code(b.node).strip() if b.kind != "param" else "param" for b in fn.bindings.reaching(name, node)}


def test_branches(tmp_path):
    _, g, c = graph_of(tmp_path, """
        def f(p):
            a()
            if p:
                b()
            else:
                d()
            e()
    """)
    assert g.runs_before(c["a"], c["b"]) and g.runs_before(c["b"], c["e"]) and g.runs_before(c["d"], c["e"])
    assert not g.runs_before(c["b"], c["d"]) and not g.runs_before(c["d"], c["b"])
    assert g.exclusive(c["b"], c["d"]) and not g.exclusive(c["a"], c["b"])
    assert g.reached_without(c["e"], [c["b"]])  # through the else
    assert not g.reached_without(c["b"], [c["a"]])
    assert g.runs_only_after(c["a"], c["e"]) and not g.runs_only_after(c["b"], c["e"])


def test_early_return_ends_the_path(tmp_path):
    _, g, c = graph_of(tmp_path, """
        def f(p):
            a()
            if p:
                b()
                return
            d()
    """)
    assert g.exclusive(c["b"], c["d"])  # not branches of one `if`: the return ends the path
    assert g.runs_before(c["a"], c["d"]) and g.reached_without(c["d"], [c["b"]])
    assert not g.runs_only_after(c["b"], c["d"])


def test_loop_with_break_continue_and_else(tmp_path):
    fn, g, c = graph_of(tmp_path, """
        def f(xs):
            for x in xs:
                a()
                if x:
                    continue
                b()
                if x > 1:
                    h()
                    break
                k()
            else:
                d()
            e()
    """)
    loop = next(n for n in fn.nodes if isinstance(n, cst.For))
    assert g.runs_before(c["k"], c["a"])  # the next turn
    assert g.runs_before(c["b"], c["d"]) and g.runs_before(c["a"], c["d"])  # the iterator runs out
    assert not g.runs_before(c["h"], c["d"]) and g.runs_before(c["h"], c["e"])  # break skips the else
    assert not g.runs_before(c["h"], c["a"])
    assert g.same_iteration(c["a"], c["k"], loop) and not g.same_iteration(c["k"], c["a"], loop)
    assert g.same_iteration(loop.target, c["a"], loop)  # the head binds each turn
    assert g.in_loop(c["k"], loop) and not g.in_loop(c["d"], loop) and not g.in_loop(c["e"], loop)
    assert g.loops_holding(c["k"]) == [loop] and g.loops_holding(c["e"]) == []


def test_while_true_leaves_only_by_break(tmp_path):
    fn, g, c = graph_of(tmp_path, """
        def f():
            while True:
                a()
                if p():
                    b()
                    break
            e()
    """)
    assert g.runs_before(c["a"], c["a"]) and g.runs_before(c["a"], c["e"])
    assert not g.runs_before(c["b"], c["a"])
    assert g.runs_only_after(c["b"], c["e"])  # no exit when the test is false: there is none


def test_try_except_else_finally(tmp_path):
    _, g, c = graph_of(tmp_path, """
        def f():
            a()
            try:
                b()
            except ValueError:
                d()
            except Exception:
                h()
            else:
                e()
            finally:
                z()
            k()
    """)
    assert g.runs_before(c["b"], c["d"]) and g.runs_before(c["b"], c["h"])  # exceptional edges
    assert g.exclusive(c["d"], c["e"]) and g.exclusive(c["d"], c["h"])  # the else raises past the handlers
    assert all(g.runs_before(c[x], c["z"]) for x in "bdhe") and g.runs_before(c["z"], c["k"])
    assert len(g.nodes_of(c["z"])) == 2  # the finally's normal and abrupt copies
    assert g.exceptions_pass(c["b"], [c["z"]])
    assert not g.exceptions_pass(c["b"], [c["d"]]) and g.exceptions_pass(c["b"], [c["d"], c["h"]])
    assert not g.exceptions_pass(c["a"], [c["z"]])  # outside the try: raises out of the function
    assert not g.exceptions_pass(c["e"], [c["d"], c["h"]])


def test_a_narrow_handler_lets_other_exceptions_through(tmp_path):
    _, g, c = graph_of(tmp_path, """
        def f():
            try:
                b()
            except ValueError:
                d()
            k()
    """)
    assert not g.exceptions_pass(c["b"], [c["d"]])
    assert not g.exceptions_pass(c["b"], [c["d"], c["k"]])


def test_a_swallowed_exception_goes_on_to_the_code_after(tmp_path):
    _, g, c = graph_of(tmp_path, """
        def f():
            try:
                b()
            except Exception:
                pass
            k()
    """)
    assert g.exceptions_pass(c["b"], [c["k"]])


def test_a_reraise_goes_on_raising(tmp_path):
    _, g, c = graph_of(tmp_path, """
        def f():
            try:
                b()
            except Exception:
                raise
            k()
    """)
    assert not g.exceptions_pass(c["b"], [c["k"]])


def test_with_body_raises_out_of_the_with(tmp_path):
    _, g, c = graph_of(tmp_path, """
        def f(cm):
            with cm() as v:
                a()
            b()
    """)
    assert g.runs_before(c["cm"], c["a"]) and g.runs_before(c["a"], c["b"])
    assert not g.exceptions_pass(c["a"], [c["b"]])


def test_return_through_finally(tmp_path):
    _, g, c = graph_of(tmp_path, """
        def f(p):
            try:
                if p:
                    return a()
                b()
            finally:
                z()
            k()
    """)
    assert g.runs_before(c["a"], c["z"]) and not g.runs_before(c["a"], c["k"])
    assert g.runs_before(c["b"], c["k"])


def test_break_through_finally(tmp_path):
    _, g, c = graph_of(tmp_path, """
        def f(xs):
            for x in xs:
                try:
                    if x:
                        break
                    a()
                finally:
                    z()
                b()
            e()
    """)
    assert g.runs_before(c["z"], c["e"]) and g.runs_before(c["a"], c["b"])
    assert g.runs_before(c["b"], c["a"])


def test_match_cases_are_exclusive(tmp_path):
    _, g, c = graph_of(tmp_path, """
        def f(v):
            match v:
                case 1:
                    a()
                case _:
                    b()
            e()
    """)
    assert g.exclusive(c["a"], c["b"]) and g.runs_before(c["a"], c["e"]) and g.runs_before(c["b"], c["e"])


def test_only_through_branch(tmp_path):
    fn, g, c = graph_of(tmp_path, """
        def f():
            a()
            if cap():
                b()
                return
            d()
            if q():
                e()
    """)
    test = next(n for n in fn.nodes if isinstance(n, cst.If))
    after = {fn.module.code(s).strip().splitlines()[0] for s in g.only_through_branch(test, False)}
    assert after == {"d()", "if q():", "e()"}
    taken = {fn.module.code(s).strip() for s in g.only_through_branch(test, True)}
    assert taken == {"b()", "return"}


def test_reaching_definitions(tmp_path):
    fn, _, c = graph_of(tmp_path, """
        def f(p, xs):
            x = 1
            if p:
                x = 2
            one(x)
            for y in xs:
                two(x)
                x = 3
            try:
                x = 4
                risky()
            except Exception:
                three(x)
            while True:
                x = 5
                break
            four(x)
            del x
            five(x)
    """)
    assert values(fn, "x", c["one"]) == {"x = 1", "x = 2"}
    assert values(fn, "x", c["two"]) == {"x = 1", "x = 2", "x = 3"}
    # `x = 4` may raise before it binds; `risky()` raises after
    assert values(fn, "x", c["three"]) == {"x = 1", "x = 2", "x = 3", "x = 4"}
    assert values(fn, "x", c["four"]) == {"x = 5"}
    assert values(fn, "x", c["five"]) == set()


def test_reaching_definitions_after_an_early_return_and_through_finally(tmp_path):
    fn, _, c = graph_of(tmp_path, """
        def f(p, x):
            if p:
                x = 1
                return
            one(x)
            try:
                x = 2
            finally:
                two(x)
            three(x)
    """)
    assert values(fn, "x", c["one"]) == {"param"}  # `x = 1` returned
    assert values(fn, "x", c["two"]) == {"param", "x = 2"}  # the abrupt copy: `x = 2` raised
    assert values(fn, "x", c["three"]) == {"x = 2"}
