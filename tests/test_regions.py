"""Capture-region discovery: which statements run while a trace is recorded."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from trace_lint import frameworks
from trace_lint.semantic.project import ModuleInfo, Project
from trace_lint.frameworks.ttnn.regions import find_regions


def _regions(source: str):
    module = ModuleInfo(Path("m.py"), "m", "m.py", text=source)
    project = Project([module], frameworks.module_names())
    module.load()
    out = []
    for function in module.iter_functions():
        for region in find_regions(project, function):
            inside = sorted({module.start(n)[0] for n in function.nodes if isinstance(n, (cst.BaseSmallStatement, cst.BaseCompoundStatement)) and region.contains(n)})
            out.append((function.name, module.start(region.begin)[0], region.end and module.start(region.end)[0], inside))
    return out


def test_aliases_from_imports_and_a_parameter_named_ttnn():
    source = """import ttnn as tt
from ttnn import begin_trace_capture as begin, end_trace_capture


def a(d):
    tid = tt.begin_trace_capture(d)
    x = 1
    tt.end_trace_capture(d, tid)


def b(d):
    tid = begin(d)
    x = 1
    end_trace_capture(d, tid)


def c(ttnn, d):
    tid = ttnn.begin_trace_capture(d)
    x = 1
    ttnn.end_trace_capture(d, tid)


def not_ttnn(d, other):
    tid = other.begin_trace_capture(d)
    other.end_trace_capture(d, tid)
"""
    assert [(name, begin, end) for name, begin, end, _ in _regions(source)] == [("a", 6, 8), ("b", 12, 14), ("c", 18, 20)]


def test_try_finally_with_and_branches_are_inside():
    source = """import ttnn


def f(d, flag, cm):
    tid = ttnn.begin_trace_capture(d)
    try:
        with cm:
            if flag:
                y = 1
            else:
                y = 2
    finally:
        z = 3
        ttnn.end_trace_capture(d, tid)
    after = 4
"""
    [(_, begin, end, inside)] = _regions(source)
    assert (begin, end) == (5, 14)
    assert inside == [7, 8, 9, 11, 13]


def test_end_is_matched_by_trace_id_not_by_order():
    source = """import ttnn


def f(d):
    first = ttnn.begin_trace_capture(d)
    a = 1
    second = ttnn.begin_trace_capture(d)
    b = 2
    ttnn.end_trace_capture(d, second)
    c = 3
    ttnn.end_trace_capture(d, first)
"""
    regions = {begin: (end, inside) for _, begin, end, inside in _regions(source)}
    assert regions[5][0] == 11 and {6, 8, 10} <= set(regions[5][1])
    assert regions[7][0] == 9 and 10 not in regions[7][1]


def test_begin_without_end_runs_to_the_end_of_the_function():
    source = """import ttnn


def start(self, d):
    self.tid = ttnn.begin_trace_capture(d)
    self.started = True
"""
    [(_, begin, end, inside)] = _regions(source)
    assert (begin, end) == (5, None) and 6 in inside


def test_declared_by_a_comment_on_the_signature_only():
    """`# trace-lint: captured` must be a comment on the def line or its signature's lines;
    the same words in a docstring, above the def or in the body declare nothing."""
    source = '''def on_def_line(x):  # trace-lint: captured
    return x

def in_docstring(x):
    """Mentions `# trace-lint: captured` in its docstring."""
    return x

def on_a_signature_line(
    x,  # trace-lint: captured
):
    return x

def one_line(x): return x  # trace-lint: captured

# trace-lint: captured
def above(x):
    return x

def in_body(x):
    # trace-lint: captured
    return x
'''
    module = ModuleInfo(Path("m.py"), "m", "m.py", text=source)
    declared = {f.name: f.declared_captured for f in module.iter_functions()}
    assert declared == {
        "on_def_line": True, "in_docstring": False, "on_a_signature_line": True,
        "one_line": True, "above": False, "in_body": False,
    }
