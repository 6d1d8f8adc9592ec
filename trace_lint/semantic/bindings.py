"""The binder: scopes and bindings of modules, classes, functions, lambdas and comprehensions.

A function's scope records every name it binds, with its kind (parameter, import, def,
class, assignment, loop target, with target, exception name, ...) statement by statement of
the function's control-flow graph (`cfg.py`), and reads reaching definitions off that graph
(branches merge, loops go round, `return`/`raise`/`break`/`continue` end a path, exceptions
reach their handlers), so that "which values can a name hold here" is a query. A lambda's
parameters and a comprehension's targets are scopes of their own inside it: a read there of
a name they bind is theirs, not the function's (the first iterable of a comprehension is
read in the enclosing scope, as Python does). A class body is a scope its methods do not
see (`class_bindings`). Module scope comes from the `ast` outline (`outline_bindings`), so
a module is bound without libcst. The target flatteners (`target_leaves`, `target_names`,
`ast_target_names`) and the readers of what a node binds (`assignment_targets`,
`names_bound_by`, `import_names`) live here alone: no other module walks bindings.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Optional, Protocol

from ..frontend.deferred_import import deferred_module

if TYPE_CHECKING:
    import libcst as cst

    from .cfg import ControlFlowGraph
else:
    # Module scope is bound from the `ast` outline without libcst (`outline_bindings`): an
    # outline alone loads none.
    cst = deferred_module("libcst")

class FunctionScope(Protocol):
    """What the binder reads of a function (`project.FunctionInfo` is one)."""

    node: cst.CSTNode
    nodes: list[cst.CSTNode]
    module: Any
    cfg: ControlFlowGraph


@dataclass(eq=False, slots=True)  # compared and hashed by identity; slots: made for every binding of a run
class Binding:
    """One place that binds a name."""

    name: str
    # "param", "import", "def", "class", "assign", "augassign", "annassign", "loop",
    # "with", "except", "walrus", "match", "del" (an unbinding); in a comprehension's or a
    # lambda's own scope "comprehension" and "lambda"; at module scope also
    # "unresolved-import" and "annotation" (`x: int`, declared only).
    kind: str
    # The node that binds: the parameter, the def, the statement (an `ast` node where the
    # module outline binds).
    node: Any
    # What the name is bound to, where one expression says it: the assigned value (whole
    # right-hand side, only when the target is the plain name), the loop's iterable, the
    # with item's context expression.
    value: Optional[cst.BaseExpression] = None
    # For imports: the dotted name bound.
    imported: Optional[str] = None

    @property
    def site(self) -> cst.CSTNode:
        """Where it binds in the control-flow graph: a loop target at the loop's head (each
        turn), anything else at its node."""
        return self.node.target if self.kind == "loop" else self.node

    def __repr__(self) -> str:
        return f"Binding({self.name!r}, {self.kind!r})"


# -- target flatteners: one per syntax tree kind ---------------------------------------
def target_leaves(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The targets an unpacking target stores to, flattened: names, attributes, subscripts
    (`a, (self.b, *c)` -> `a`, `self.b`, `c`)."""
    if isinstance(target, (cst.Tuple, cst.List)):
        out: list[cst.BaseExpression] = []
        for element in target.elements:
            out.extend(target_leaves(element.value))
        return out
    if isinstance(target, cst.StarredElement):
        return target_leaves(target.value)
    return [target]


def target_names(target: cst.BaseExpression) -> list[str]:
    """The names an unpacking target binds (attributes and subscripts bind none)."""
    return [leaf.value for leaf in target_leaves(target) if isinstance(leaf, cst.Name)]


def target_path(target: cst.BaseExpression, name: str) -> Optional[tuple[int, ...]]:
    """Where a name sits in an unpacking target (`(1,)` for `layer` in `i, layer`); None when
    it is absent or behind a starred element (its position is not fixed)."""
    if isinstance(target, cst.Name):
        return () if target.value == name else None
    if isinstance(target, (cst.Tuple, cst.List)):
        for index, element in enumerate(target.elements):
            if isinstance(element, cst.StarredElement):
                return None
            found = target_path(element.value, name)
            if found is not None:
                return (index, *found)
    return None


def ast_target_names(target: ast.expr) -> list[str]:
    """`target_names` for the `ast` outline (a starred name is not followed there)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        names: list[str] = []
        for element in target.elts:
            names.extend(ast_target_names(element))
        return names
    return []


# -- what one node binds ---------------------------------------------------------------
def names_assigned_with(nodes, value: cst.BaseExpression) -> list[str]:
    """The plain names the chained assignment of `value` among `nodes` binds beside its
    other targets (`self.ttnn = ttnn = load()`: ["ttnn"]); none for a single target."""
    for node in nodes:
        if type(node) is cst.Assign and node.value is value and len(node.targets) > 1:
            return [t.target.value for t in node.targets if type(t.target) is cst.Name]
    return []


def assignment_targets(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """The targets a binding node writes, not flattened: each `=` target of an assignment
    (or the one of an `AssignTarget`), the target of an annotated or augmented assignment, a
    walrus, a `for` or comprehension clause, a `del`, and the name of an `as`. Other nodes:
    none."""
    kind = type(node)
    if kind is cst.Assign:
        return [t.target for t in node.targets]
    if kind is cst.AssignTarget or kind is cst.AnnAssign or kind is cst.AugAssign or kind is cst.NamedExpr:
        return [node.target]
    if kind is cst.For or kind is cst.CompFor or kind is cst.Del:
        return [node.target]
    if kind is cst.AsName:
        return [node.name]
    if kind is cst.WithItem:
        return [node.asname.name] if node.asname is not None else []
    if kind is cst.ExceptHandler:
        return [node.name.name] if node.name is not None else []
    return []


def single_assignment(statement: cst.CSTNode) -> Optional[cst.BaseExpression]:
    """The one target of `target = value` or `target: T = value` (None for chained `a = b = v`
    or anything else)."""
    if isinstance(statement, cst.Assign):
        return statement.targets[0].target if len(statement.targets) == 1 else None
    if isinstance(statement, cst.AnnAssign) and statement.value is not None:
        return statement.target
    return None


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def import_names(node: cst.CSTNode, import_base) -> list[tuple[str, Optional[str]]]:
    """(local name, dotted name it binds) for each name an `import` binds (`import a.b`
    binds `a`); a relative import `import_base` cannot place binds its names to None. A
    star import binds nothing known."""
    out: list[tuple[str, Optional[str]]] = []
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = _dotted(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                out.append((alias.asname.name.value, full))
            else:
                head = full.split(".")[0]
                out.append((head, head))
    elif isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
        base = import_base(len(node.relative), _dotted(node.module) if node.module is not None else "")
        for alias in node.names:
            name = _dotted(alias.name)
            local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else name
            out.append((local, None if base is None else f"{base}.{name}" if base else name))
    return out


def names_bound_by(node: cst.CSTNode) -> list[str]:
    """The names one node binds in its own scope: assignments, loops, `with ... as`,
    `except ... as`, `del`, imports (relative ones too), nested defs and classes."""
    kind = type(node)
    if kind is cst.FunctionDef or kind is cst.ClassDef:
        return [node.name.value]
    if kind is cst.Import or kind is cst.ImportFrom:
        return [local for local, _ in import_names(node, lambda dots, base: "")]
    return [name for target in assignment_targets(node) for name in target_names(target)]


@cache
def _local_target_holders() -> frozenset:
    """Node kinds whose targets `local_names` counts (comprehension targets included)."""
    return frozenset({cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.For, cst.CompFor, cst.AsName})


def local_names(function) -> frozenset[str]:
    """Names bound inside a function body or its comprehensions (parameters, nested defs
    and classes included), not counting imports: the names that are not globals there."""
    cached = getattr(function, "_local_names", None)
    if cached is not None:
        return cached
    names: set[str] = set(function.params)
    names.update(function.nested)
    holders = _local_target_holders()
    for node in function.nodes:
        kind = type(node)  # concrete classes: cheaper than isinstance on libcst's ABCs
        if kind is cst.ClassDef:
            names.add(node.name.value)
        elif kind in holders:
            for target in assignment_targets(node):
                names.update(target_names(target))
    names.difference_update(function.imports)
    result = frozenset(names)
    function._local_names = result
    return result


# -- module scope, from the `ast` outline ------------------------------------------------
# `try ... except*` (3.11+).
TRY_STAR = (ast.TryStar,) if hasattr(ast, "TryStar") else ()
_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, *TRY_STAR)


def outline_bindings(node: ast.stmt, import_base) -> list[Binding]:
    """What one module-level statement of the `ast` outline binds at module scope, in the
    order it binds (not entering its body, nor def and class, which the outline reader
    owns). Kinds: "import" (`imported` the dotted name), "unresolved-import" (a relative
    import `import_base` cannot place), "assign" (`value` the right-hand side), "augassign",
    "annassign", "annotation" (`x: int`: declared, not bound), "loop", "with", "del",
    "walrus"."""
    found: list[Binding] = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname is not None:
                found.append(Binding(alias.asname, "import", node, imported=alias.name))
            else:
                head = alias.name.split(".")[0]
                found.append(Binding(head, "import", node, imported=head))
    elif isinstance(node, ast.ImportFrom):
        base = import_base(node.level, node.module or "")
        for alias in node.names:
            if alias.name == "*":
                continue
            local = alias.asname or alias.name
            if base is None:
                found.append(Binding(local, "unresolved-import", node))
            else:
                found.append(Binding(local, "import", node, imported=f"{base}.{alias.name}" if base else alias.name))
    elif isinstance(node, ast.AnnAssign) and node.value is None:
        return [Binding(name, "annotation", node) for name in ast_target_names(node.target)]
    elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        kind = "assign" if isinstance(node, ast.Assign) else "annassign" if isinstance(node, ast.AnnAssign) else "augassign"
        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
            found.extend(Binding(name, kind, node, node.value) for name in ast_target_names(target))
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        found.extend(Binding(name, "loop", node, node.iter) for name in ast_target_names(node.target))
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        for item in node.items:
            if item.optional_vars is not None:
                found.extend(Binding(name, "with", node, item.context_expr) for name in ast_target_names(item.optional_vars))
    elif isinstance(node, ast.Delete):
        for target in node.targets:
            found.extend(Binding(name, "del", node) for name in ast_target_names(target))
    for child in ast.walk(node) if not isinstance(node, _COMPOUND) else ():
        if isinstance(child, ast.NamedExpr) and isinstance(child.target, ast.Name):
            found.append(Binding(child.target.id, "walrus", child, child.value))
    return found


@cache
def _class_body_kinds() -> dict:
    """Binding kinds of the nodes a class body binds with."""
    return {
        cst.FunctionDef: "def", cst.ClassDef: "class", cst.Import: "import", cst.ImportFrom: "import",
        cst.Assign: "assign", cst.AnnAssign: "annassign", cst.AugAssign: "augassign", cst.NamedExpr: "walrus",
        cst.For: "loop", cst.WithItem: "with", cst.ExceptHandler: "except", cst.Del: "del",
    }


def class_bindings(node: cst.ClassDef) -> dict[str, list[Binding]]:
    """The names a class body binds, in source order. Its methods do not see them (Python's
    rule: a method reads a class attribute through `self` or the class, never bare), so no
    function scope's lookup passes through here."""
    from ..frontend.syntax_walk import children

    kinds = _class_body_kinds()
    out: dict[str, list[Binding]] = {}
    stack: list[cst.CSTNode] = list(reversed(children(node.body)))
    while stack:
        current = stack.pop()
        kind = kinds.get(type(current))
        if kind is not None:
            value = current.value if kind in ("assign", "annassign", "walrus") else None
            for name in names_bound_by(current):
                out.setdefault(name, []).append(Binding(name, kind, current, value))
        if not isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            stack.extend(reversed(children(current)))
    return out


@cache
def _comprehensions() -> frozenset:
    """Node kinds that are a scope of their own (`own_scope`)."""
    return frozenset({cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp})


def named_parameters(params: cst.Parameters) -> list[cst.Param]:
    """A signature's parameters that take a name: positional-only, ordinary, keyword-only."""
    return [*params.posonly_params, *params.params, *params.kwonly_params]


def star_parameters(params: cst.Parameters) -> tuple[Optional[str], Optional[str]]:
    """The names of a signature's `*args` and `**kwargs` (None: it has none; a bare `*`
    takes no name)."""
    return tuple(p.name.value if isinstance(p, cst.Param) else None for p in (params.star_arg, params.star_kwarg))  # type: ignore[return-value]


def parameters(params: cst.Parameters) -> list[cst.Param]:
    """Every parameter a signature binds, `*args` and `**kwargs` last."""
    out = named_parameters(params)
    out.extend(star for star in (params.star_arg, params.star_kwarg) if isinstance(star, cst.Param))
    return out


class ScopeBindings:
    """The bindings of one function scope, and the reaching-definitions facts.

    One pass over the function's control-flow graph collects every binding, statement by
    statement; the reaching definitions of a name are computed on the graph when first asked,
    for that name alone (a name bound once needs none)."""

    def __init__(self, function: FunctionScope, import_base):
        self.function = function
        # Turns (dots, module) of a relative import into a dotted base (the module knows how).
        self._import_base = import_base
        self.by_name: dict[str, list[Binding]] = {}
        self.declared_global: set[str] = set()
        self.declared_nonlocal: set[str] = set()
        # Binding of (binding node, name): a `finally` body's two graph nodes share them.
        self._made: dict[tuple[int, str], Binding] = {}
        # name -> {graph node: the binding of the name that node leaves (its last)}
        self._gen: dict[str, dict[int, Binding]] = {}
        # name -> the definitions reaching each graph node
        self._flows: dict[str, list] = {}
        # Most functions have no `:=`: their expressions need no search for one.
        self._has_walrus = False
        # Names a comprehension clause or a lambda of this function binds in its own scope.
        self._nested_names: set[str] = set()
        self._nested: dict[tuple[int, str], Binding] = {}
        for n in function.nodes:
            kind = type(n)
            if kind is cst.NamedExpr:
                self._has_walrus = True
            elif kind is cst.CompFor:
                self._nested_names.update(target_names(n.target))
            elif kind is cst.Lambda and n is not function.node:
                self._nested_names.update(p.name.value for p in parameters(n.params))
        self.graph: ControlFlowGraph = function.cfg
        self._collect()

    # -- queries ---------------------------------------------------------------------------
    def binds(self, name: str, node: Optional[cst.CSTNode] = None) -> bool:
        """Is the name local to this scope (bound anywhere in it, not declared global), or,
        read at `node`, to a comprehension or lambda of it around the node?"""
        if node is not None and name in self._nested_names and self.own_scope(name, node) is not None:
            return True
        return name in self.by_name and name not in self.declared_global and name not in self.declared_nonlocal

    def own_scope(self, name: str, node: cst.CSTNode) -> Optional[Binding]:
        """The binding of the name by the innermost comprehension clause ("comprehension":
        the clause, its iterable as the value where the target is the plain name) or lambda
        parameter ("lambda") around `node` whose scope holds the node; None where the
        function's own scope (or an enclosing one) binds the name read there."""
        if name not in self._nested_names:
            return None
        parents = self.function.module.parents
        stop = self.function.node
        below: Optional[cst.CSTNode] = None  # the ancestor just below `current` on the path
        under: Optional[cst.CSTNode] = None  # and the one below that
        current: Optional[cst.CSTNode] = node
        comprehensions = _comprehensions()
        while current is not None and current is not stop:
            kind = type(current)
            if kind in comprehensions:
                first = current.for_in
                # The first iterable is read in the enclosing scope; the rest is the comprehension's.
                if below is not None and not (below is first and under is first.iter):
                    clause: Optional[cst.CompFor] = first
                    while clause is not None:
                        if name in target_names(clause.target):
                            plain = isinstance(clause.target, cst.Name)
                            return self._nested_binding(name, "comprehension", clause, clause.iter if plain else None)
                        clause = clause.inner_for_in
            elif kind is cst.Lambda and below is current.body:
                for param in parameters(current.params):
                    if param.name.value == name:
                        return self._nested_binding(name, "lambda", param)
            elif kind is cst.FunctionDef or kind is cst.ClassDef:
                return None  # a nested def's own scope: not this function's to answer
            under, below, current = below, current, parents.get(id(current))
        return None

    def _nested_binding(self, name: str, kind: str, node: cst.CSTNode, value=None) -> Binding:
        key = (id(node), name)
        found = self._nested.get(key)
        if found is None:
            found = self._nested[key] = Binding(name, kind, node, value)
        return found

    def reaching(self, name: str, node: Optional[cst.CSTNode]) -> tuple[Binding, ...]:
        """The bindings of a local name that can reach `node` (all of them when the node's
        statement is unknown or unreachable, e.g. a node built by the analysis); read inside
        a comprehension or lambda that binds the name itself, that scope's one binding."""
        if node is not None and name in self._nested_names:
            own = self.own_scope(name, node)
            if own is not None:
                return (own,)
        all_bindings = self.by_name.get(name)
        if not all_bindings:
            return ()
        if len(all_bindings) == 1 and all_bindings[0].kind != "del":
            return tuple(all_bindings)
        states = self._flows.get(name)
        if states is None:
            from .cfg import ENTRY

            gen = self._gen.get(name, {})
            entry = frozenset(b for b in all_bindings if b.kind == "param")
            states = self._flows[name] = self.graph.reaching_definitions(entry, {k: v for k, v in gen.items() if k != ENTRY})
        state = self._state_at(node, states) if node is not None else None
        if state is None:
            return tuple(b for b in all_bindings if b.kind != "del")
        return tuple(b for b in all_bindings if b in state and b.kind != "del")

    def _state_at(self, node: cst.CSTNode, states: list) -> Optional[frozenset]:
        """The definitions reaching the statement holding the node (the union over a
        `finally` body's two copies); an unreachable statement asks the one around it."""
        parents = self.function.module.parents
        index = self.graph._index
        current: Optional[cst.CSTNode] = node
        stop = self.function.node
        while current is not None and current is not stop:
            ids = index.get(id(current))
            if ids:
                alive = [states[i] for i in ids if states[i] is not None]
                if alive:
                    return frozenset().union(*alive)
            current = parents.get(id(current))
        return None

    # -- collecting ------------------------------------------------------------------------
    def _collect(self) -> None:
        node = self.function.node
        if isinstance(node, (cst.FunctionDef, cst.Lambda)):
            for param in parameters(node.params):
                self._binding(param.name.value, "param", param)
        # The graph's order is source order; a `finally` body's second copy binds the same.
        done: dict[int, list[Binding]] = {}
        gen = self._gen
        for index, item in enumerate(self.graph.items):
            if item is None:
                continue
            found = done.get(id(item))
            if found is None:
                found = done[id(item)] = self._bindings_of(item)
            for binding in found:
                gen.setdefault(binding.name, {})[index] = binding

    def _binding(self, name: str, kind: str, node: cst.CSTNode, value=None, imported=None) -> Binding:
        key = (id(node), name)
        found = self._made.get(key)
        if found is None:
            found = self._made[key] = Binding(name, kind, node, value, imported)
            self.by_name.setdefault(name, []).append(found)
        return found

    def _walrus(self, node: cst.CSTNode) -> list[Binding]:
        """Names bound by `:=` in an expression (not inside a lambda or a nested def)."""
        if not self._has_walrus:
            return []
        from ..frontend.syntax_walk import children

        found: list[Binding] = []
        stack = [node]
        while stack:
            current = stack.pop()
            if type(current) is cst.NamedExpr and isinstance(current.target, cst.Name):
                found.append(self._binding(current.target.value, "walrus", current, current.value))
            if isinstance(current, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
                continue
            stack.extend(children(current))
        return found

    def _bindings_of(self, item: cst.CSTNode) -> list[Binding]:
        """What one graph node binds, in the order it binds."""
        kind = type(item)
        if kind is cst.If or kind is cst.While:
            return self._walrus(item.test)
        if kind is cst.For:
            return self._walrus(item.iter)
        if isinstance(item, cst.BaseExpression):  # a `for` target: the loop head
            loop = self.function.module.parent(item)
            plain = isinstance(item, cst.Name)
            return [self._binding(name, "loop", loop, loop.iter if plain else None) for name in target_names(item)]
        if kind is cst.With:
            found: list[Binding] = []
            targets: list[Binding] = []
            for with_item in item.items:
                found += self._walrus(with_item.item)
                if with_item.asname is not None:
                    plain = isinstance(with_item.asname.name, cst.Name)
                    for name in target_names(with_item.asname.name):
                        targets.append(self._binding(name, "with", item, with_item.item if plain else None))
            return found + targets
        if kind is cst.FunctionDef or kind is cst.ClassDef:
            return [self._binding(item.name.value, "def" if kind is cst.FunctionDef else "class", item)]
        if kind is cst.ExceptHandler:
            if item.name is not None and isinstance(item.name.name, cst.Name):
                return [self._binding(item.name.name.value, "except", item)]
            return []
        if kind is cst.MatchCase:
            from ..frontend.syntax_walk import children

            found = []
            stack = [item.pattern]
            while stack:
                current = stack.pop()
                if isinstance(current, (cst.MatchAs, cst.MatchStar)) and current.name is not None:
                    found.append(self._binding(current.name.value, "match", current))
                elif isinstance(current, cst.MatchMapping) and current.rest is not None:
                    found.append(self._binding(current.rest.value, "match", current))
                stack.extend(children(current))
            return found
        if isinstance(item, cst.BaseSmallStatement):
            return self._small(item)
        return []

    def _small(self, node: cst.BaseSmallStatement) -> list[Binding]:
        kind = type(node)
        if kind is cst.Return:
            return self._walrus(node.value) if node.value is not None else []
        if kind is cst.Raise or kind is cst.Break or kind is cst.Continue or kind is cst.Pass:
            return []
        if kind is cst.Global:
            self.declared_global.update(n.name.value for n in node.names)
            return []
        if kind is cst.Nonlocal:
            self.declared_nonlocal.update(n.name.value for n in node.names)
            return []
        found = self._walrus(node)
        if kind is cst.Assign:
            for target in node.targets:
                plain = isinstance(target.target, cst.Name)
                for name in target_names(target.target):
                    found.append(self._binding(name, "assign", node, node.value if plain else None))
        elif kind is cst.AnnAssign:
            if node.value is not None:
                for name in target_names(node.target):
                    found.append(self._binding(name, "annassign", node, node.value if isinstance(node.target, cst.Name) else None))
        elif kind is cst.AugAssign:
            for name in target_names(node.target):
                found.append(self._binding(name, "augassign", node))
        elif kind is cst.Del:
            for name in target_names(node.target):
                found.append(self._binding(name, "del", node))
        elif kind is cst.Import or kind is cst.ImportFrom:
            for local, imported in import_names(node, self._import_base):
                # An unresolvable relative import binds some value.
                found.append(self._binding(local, "assign", node) if imported is None else self._binding(local, "import", node, imported=imported))
        return found
