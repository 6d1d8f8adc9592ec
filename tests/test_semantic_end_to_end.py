"""The semantic model end to end: a model repository shaped like real TT-NN code (namespace
packages, repeated file names, a base `__call__` that calls `forward`, callables bound on
several branches, class-body imports, rebound imports), checked by the real CLI with exact
(file, line, code) sets, and metamorphic variants that must not change the findings."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from trace_lint.capture.engine import Engine
from trace_lint.semantic.module_names import module_names, source_roots
from trace_lint.semantic.project import ModuleInfo, Project
from trace_lint.core.config import Settings
from trace_lint.rules import ALL_RULES

from .cli_helpers import FIXTURES, finding_set

PROJECT = FIXTURES / "semantic"
LLAMA = "models/demos/llama/tt"

EXPECTED = {
    # Generator.capture: `step` is bound on two branches; the eager one reaches the model.
    (f"{LLAMA}/generator.py", 16, "TRC103"),
    # Transformer.__call__ is the base class's; it dispatches to Transformer.forward, whose
    # layers' base __call__ dispatches to DecoderLayer.forward, which calls into utils.py
    # (a file name another demo repeats) and ops.py (by relative imports).
    (f"{LLAMA}/utils.py", 5, "TRC102"),
    # `tn` is ttnn at module level; Config's class-body `import math as tn` does not leak.
    (f"{LLAMA}/ops.py", 19, "TRC102"),
    # Not reported: `fake` is rebound after its import (ops.py:23); `y.deallocate()` on a
    # ttnn tensor is not Pool.deallocate (ops.py:15); mistral's utils.py is never reached.
}


def test_exact_findings():
    assert finding_set(PROJECT) == EXPECTED


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "repo"
    shutil.copytree(PROJECT, target)
    return target


def test_adding_init_files_changes_nothing(tmp_path):
    repo = _copy(tmp_path)
    for folder in [p for p in repo.rglob("*") if p.is_dir()]:
        (folder / "__init__.py").write_text("")
    assert finding_set(repo) == EXPECTED


def test_renaming_a_module_changes_nothing_but_its_path(tmp_path):
    repo = _copy(tmp_path)
    (repo / LLAMA / "utils.py").rename(repo / LLAMA / "debugging.py")
    decoder = repo / LLAMA / "decoder.py"
    decoder.write_text(decoder.read_text().replace("from .utils import debug_read", "from .debugging import debug_read"))
    renamed = {(f"{LLAMA}/debugging.py" if f == f"{LLAMA}/utils.py" else f, line, code) for f, line, code in EXPECTED}
    assert finding_set(repo) == renamed


def test_moving_a_callee_to_another_file_changes_nothing_but_its_path(tmp_path):
    repo = _copy(tmp_path)
    ops = repo / LLAMA / "ops.py"
    text = ops.read_text()
    # read_back moves to a module of its own in another folder, at the same line, imported
    # by an absolute dotted path through folders without __init__.py.
    moved = repo / "models/common/readers.py"
    moved.write_text("import ttnn as tn\n" + "\n" * 16 + "def read_back(x):\n    return tn.to_torch(x)\n")
    ops.write_text(text.replace("def read_back(x):\n    return tn.to_torch(x)\n", ""))
    decoder = repo / LLAMA / "decoder.py"
    decoder.write_text(decoder.read_text().replace("from .ops import read_back, relabel", "from .ops import relabel\nfrom models.common.readers import read_back"))
    moved_set = {("models/common/readers.py" if f == f"{LLAMA}/ops.py" else f, line, code) for f, line, code in EXPECTED}
    assert finding_set(repo) == moved_set


def _engine_findings(root: Path, prefilter: bool) -> set[tuple[str, int, str]]:
    roots = source_roots((), root, [root])
    modules = []
    for path in sorted(root.rglob("*.py")):
        real = path.resolve()
        modules.append(ModuleInfo(real, module_names(real, roots), path.relative_to(root).as_posix()))
    project = Project(modules)
    engine = Engine(project, Settings(root=root), ALL_RULES, roots_in=None if prefilter else modules)
    return {(f.filename, f.location.row, f.code) for f in engine.run()}


@pytest.mark.parametrize("fixture", ["semantic", "interprocedural", "correct_trace", "torch_rules", "lexical_rules"])
def test_prefilter_on_and_off_agree(fixture):
    root = FIXTURES / fixture
    assert _engine_findings(root, prefilter=True) == _engine_findings(root, prefilter=False)
