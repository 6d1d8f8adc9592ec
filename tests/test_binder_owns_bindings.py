"""One binder (SPEC.md, Layout): no module outside `semantic/bindings.py` walks bindings
itself. A scan of the package's own source flags any function that flattens unpacking
targets, or that reads the binding fields of the nodes that bind (`.targets`, `.target`,
`.optional_vars`, `.asname` of an assignment, loop, comprehension clause, walrus, `with`
item, `as` name or `del`); such a function asks the binder instead (`assignment_targets`,
`target_leaves`, `target_names`, `names_bound_by`, `import_names`, `outline_bindings`, the
scopes)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "trace_lint"
BINDER = "semantic/bindings.py"

# Node classes (`cst.X` / `ast.X`) that bind names, and the fields that hold what they bind.
BINDING_CLASSES = frozenset({
    "Assign", "AssignTarget", "AnnAssign", "AugAssign", "NamedExpr", "For", "AsyncFor", "CompFor",
    "comprehension", "WithItem", "withitem", "AsName", "Del", "Delete",
})
TARGET_FIELDS = frozenset({"target", "targets", "optional_vars", "asname"})

# Reviewed exceptions, each with why it is not a binding walk (or why it waits).
ALLOWED = {
    "semantic/cfg.py::_for": "the control-flow graph places a loop's target as the loop head's node; "
    "the binder reads the bindings off that node",
    "frameworks/torch/tensors.py::_binding_kind": "reads the target of `p &= q` as the operand it "
    "also is (a read of `p`), for a binding the binder gave",
    "frameworks/ttnn/tensors.py::_binding_is_device": "reads the target of `p += q` as the operand "
    "it also is (a read of `p`), for a binding the binder gave",
}


def binding_walks(source: str) -> dict[str, str]:
    """function name -> why it walks bindings, for each function of `source` that does."""
    tree = ast.parse(source)
    found: dict[str, str] = {}
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        called = {id(node.func) for node in ast.walk(function) if isinstance(node, ast.Call)}
        # Loop variables over a tuple's elements (`for element in target.elements`).
        element_vars = {
            node.target.id
            for node in ast.walk(function)
            if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name)
            and isinstance(node.iter, ast.Attribute) and node.iter.attr in ("elements", "elts")
        }
        classes: set[str] = set()
        fields: set[str] = set()
        flattens = False
        for node in ast.walk(function):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("cst", "ast"):
                if node.attr in BINDING_CLASSES:
                    classes.add(node.attr)
            elif isinstance(node, ast.Attribute) and node.attr in TARGET_FIELDS and id(node) not in called:
                if not (isinstance(node.value, ast.Name) and node.value.id == "self"):  # an object's own field
                    fields.add(node.attr)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == function.name:
                # Recursion into the elements of an unpacking target: a target flattener.
                for arg in node.args:
                    root = arg.value if isinstance(arg, ast.Attribute) else arg
                    if isinstance(root, ast.Name) and root.id in element_vars:
                        flattens = True
        if flattens:
            found[function.name] = "flattens unpacking targets"
        elif classes and fields:
            found[function.name] = f"reads {sorted(fields)} of {sorted(classes)}"
        elif fields & {"targets", "optional_vars"}:
            found[function.name] = f"reads {sorted(fields)}"
    return found


def test_no_module_outside_the_binder_walks_bindings():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative == BINDER:
            continue
        for name, why in binding_walks(path.read_text(encoding="utf-8")).items():
            if f"{relative}::{name}" not in ALLOWED:
                offenders.append(f"{relative}::{name}: {why}")
    assert not offenders, "binding walks outside the binder (ask semantic/bindings.py):\n" + "\n".join(offenders)


def test_allow_list_names_only_functions_that_still_walk():
    """An entry whose function no longer walks bindings (or is gone) is removed."""
    stale = []
    for entry in ALLOWED:
        relative, name = entry.split("::")
        path = PACKAGE / relative
        if not path.is_file() or name not in binding_walks(path.read_text(encoding="utf-8")):
            stale.append(entry)
    assert not stale, stale


def test_the_scan_sees_each_kind_of_walk():
    """The scan itself: a flattener, a reader of assignment targets, of a `with` item's
    `optional_vars` and of a walrus target are each caught; a method call named `targets`
    and an object's own `self.targets` are not."""
    source = textwrap.dedent(
        """
        def flat(target, out):
            for element in target.elements:
                flat(element.value, out)

        def stores(node):
            if isinstance(node, cst.Assign):
                return [t.target for t in node.targets]

        def with_names(node):
            return [item.optional_vars for item in node.items]

        def walrus(node):
            return node.target if isinstance(node, cst.NamedExpr) else None

        def calls(facts, call):
            return facts.targets(call)

        def own(self):
            return self.targets
        """
    )
    assert set(binding_walks(source)) == {"flat", "stores", "with_names", "walrus"}
