"""The package is laid out by the stages data flows through (SPEC.md, Layout): no import
cycle between modules, no import against the flow, and no libcst below the stages that
parse."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "trace_lint"

# Stages in the order data flows through them; a module may import its own stage or an
# earlier one. The runtime guard stands beside the analyzer and reads the API tables only.
STAGES = ["core", "frontend", "semantic", "frameworks", "capture", "rules", "report", "driver", "output", "lsp", "entry"]
STAGE_OF_TOP = {
    "trace_lint": "core",
    "trace_lint.__main__": "entry",
    "trace_lint.cli": "entry",
    "trace_lint.docs": "entry",
    "trace_lint.flake8_plugin": "entry",
}
# Stages that never load libcst, directly or through what they import: output, cache,
# CLI start-up and the language server's protocol side read findings, not trees.
LIBCST_FREE = ("trace_lint.core", "trace_lint.output")
# SARIF's rule descriptors carry each rule's full docs, rendered from the rule classes.
LIBCST_ALLOWED = {"trace_lint.output.sarif"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def stage_of(module: str) -> str:
    if module in STAGE_OF_TOP:
        return STAGE_OF_TOP[module]
    second = module.split(".")[1]
    return second if second in STAGES or second == "runtime_guard" else "entry"


def _type_checking_blocks(tree: ast.Module) -> set[int]:
    """ids of import nodes under `if TYPE_CHECKING:`."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                for sub in ast.walk(child):
                    inside.add(id(sub))
    return inside


def imports_of(path: Path) -> list[tuple[str, bool, int]]:
    """(imported module, typing only, line) for every import in the file, at any depth."""
    module = module_name(path)
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = _type_checking_blocks(tree)
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append((alias.name, id(node) in typing_only, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                # `from package import module` imports the module.
                found.append((sub if sub in modules else target, id(node) in typing_only, node.lineno))
    return found


def graph() -> dict[str, list[tuple[str, bool, int]]]:
    edges = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        edges[module_name(path)] = [(t, typing, line) for t, typing, line in imports_of(path) if t.startswith("trace_lint")]
    return edges


def _cycles(edges: dict[str, list[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def _without_package_parents(module: str, target: str) -> bool:
    # A submodule's import runs its package's `__init__` first; that is not a dependency
    # of the submodule on its siblings, so `__init__` re-exports are not cycles.
    return not module.startswith(target + ".")


def test_no_import_cycle_between_modules():
    edges = {
        module: sorted({t for t, _typing, _line in targets if t != module and _without_package_parents(module, t)})
        for module, targets in graph().items()
    }
    assert _cycles(edges) == []


def test_imports_follow_the_flow():
    against = []
    for module, targets in graph().items():
        here = stage_of(module)
        for target, _typing, line in targets:
            there = stage_of(target)
            if here == "runtime_guard":
                ok = there in ("runtime_guard", "core")
            elif there == "runtime_guard":
                ok = here == "entry"
            else:
                ok = STAGES.index(there) <= STAGES.index(here)
            if not ok:
                against.append(f"{module}:{line} ({here}) imports {target} ({there})")
    assert against == []


def _loads_libcst(module: str, edges, memo: dict[str, bool], seen: set[str]) -> bool:
    if module in memo:
        return memo[module]
    seen.add(module)
    result = False
    for target, typing, _line in edges.get(module, ()):
        if typing:
            continue
        if target == "libcst" or target.startswith("libcst."):
            result = True
        elif target.startswith("trace_lint") and target not in seen and target in edges:
            result = _loads_libcst(target, edges, memo, seen)
        if result:
            break
    memo[module] = result
    return result


def test_output_and_core_never_load_libcst():
    edges = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        edges[module_name(path)] = imports_of(path)
    loading = [m for m in edges if m.startswith(LIBCST_FREE) and m not in LIBCST_ALLOWED and _loads_libcst(m, edges, {}, set())]
    assert loading == []


@pytest.mark.parametrize("stage", ["core", "frontend", "semantic", "frameworks", "capture", "rules", "report", "driver", "output", "lsp"])
def test_every_stage_is_a_package(stage):
    assert (PACKAGE / stage / "__init__.py").is_file()


def test_the_checks_see_a_cycle_and_an_import_against_the_flow():
    assert _cycles({"a": ["b"], "b": ["a"], "c": ["a"]}) == [["a", "b"]]
    assert STAGES.index(stage_of("trace_lint.capture.engine")) > STAGES.index(stage_of("trace_lint.semantic.calls"))
    assert stage_of("trace_lint.rules.base") == "rules" and stage_of("trace_lint.cli") == "entry"
