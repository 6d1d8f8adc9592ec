"""Who calls a function: calls spelled so they can reach it, then resolved. A constructor is
called by its class's name; a dunder's explicit callers name its class."""

from __future__ import annotations

from pathlib import Path

from trace_lint.frontend.discovery import discover, display_path, module_name
from trace_lint.capture.engine import Engine
from trace_lint.semantic.project import ModuleInfo, Project
from trace_lint.driver.checker import check
from trace_lint.core.config import Settings
from trace_lint.rules import ALL_RULES

TIMING = """\
import torch


class ColdGraph:
    def __init__(self, call, args):
        call(*args)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            call(*args)


def time_it(call, args):
    return ColdGraph(call, args)
"""

BENCH = """\
from timing import ColdGraph, time_it


def step(x):
    return x.item()


def measure(x):
    return ColdGraph(step, (x,))


def measure_through_a_wrapper(x):
    return time_it(step, (x,))  # the wrapper hands `step` to a helper that warms it up
"""

# Modules full of `__init__(` calls that cannot reach `ColdGraph.__init__`.
OTHER = """\
class Base:
    def __init__(self):
        self.n = 0


class Child{i}(Base):
    def __init__(self):
        super().__init__()
        self.m = 1
"""


def _tree(root: Path, others: int = 4) -> list[Path]:
    (root / "timing.py").write_text(TIMING)
    (root / "bench.py").write_text(BENCH)
    for i in range(others):
        (root / f"other_{i}.py").write_text(OTHER.format(i=i))
    return sorted(root.glob("*.py"))


def test_a_constructor_that_captures_its_argument_is_a_helper_called_by_class_name(tmp_path):
    # Found through both call sites; neither is TRC404: the constructor runs the callable
    # before capturing it, and the wrapper hands it on to the constructor.
    _tree(tmp_path)
    found = check([tmp_path], Settings(select=None, root=tmp_path)).findings
    assert {(Path(f.filename).name, f.location.row, f.code) for f in found} == {("bench.py", 5, "TRC102")}


def test_modules_that_never_name_the_class_are_not_parsed_for_its_constructor(tmp_path):
    _tree(tmp_path)
    settings = Settings(select=None, root=tmp_path)
    files = discover([tmp_path], settings).files
    modules = [ModuleInfo(p, module_name(p), display_path(p)) for p in files]
    engine = Engine(Project(modules), settings, ALL_RULES, roots_in=modules)
    engine.run()
    parsed = {m.display_path for m in modules if any(chunk.parsed for chunk in m._chunks)}
    assert not any("other_" in path for path in parsed), parsed
    assert any(path.endswith("bench.py") for path in parsed)
