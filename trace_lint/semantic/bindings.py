"""Scopes and bindings of a function, and which bindings of a name can reach a point.

The binder records every name a function binds, with its kind (parameter, import, def,
class, assignment, loop target, with target, exception name, ...) statement by statement of
the function's control-flow graph (`cfg.py`), and reads reaching definitions off that graph
(branches merge, loops go round, `return`/`raise`/`break`/`continue` end a path, exceptions
reach their handlers), so that "which values can a name hold here" is a query. Comprehension and lambda targets belong to their own scopes and are not bound
here; a nested def or class binds its name only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Protocol

import libcst as cst

from ..frontend.syntax_walk import children
from .cfg import ENTRY, ControlFlowGraph

class FunctionScope(Protocol):
    """What the binder reads of a function (`project.FunctionInfo` is one)."""

    node: cst.CSTNode
    nodes: list[cst.CSTNode]
    module: Any
    cfg: ControlFlowGraph


@dataclass(eq=False, frozen=True)
class Binding:
    """One place that binds a name."""

    name: str
    # "param", "import", "def", "class", "assign", "augassign", "annassign", "loop",
    # "with", "except", "walrus", "match", "del" (an unbinding)
    kind: str
    # The node that binds: the parameter, the def, the statement.
    node: cst.CSTNode
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


def target_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        out: list[str] = []
        for element in target.elements:
            out.extend(target_names(element.value))
        return out
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return []


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


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
        self._has_walrus = any(type(n) is cst.NamedExpr for n in function.nodes)
        self.graph: ControlFlowGraph = function.cfg
        self._collect()

    # -- queries ---------------------------------------------------------------------------
    def binds(self, name: str) -> bool:
        """Is the name local to this scope (bound anywhere in it, not declared global)?"""
        return name in self.by_name and name not in self.declared_global and name not in self.declared_nonlocal

    def reaching(self, name: str, node: Optional[cst.CSTNode]) -> tuple[Binding, ...]:
        """The bindings of a local name that can reach `node` (all of them when the node's
        statement is unknown or unreachable, e.g. a node built by the analysis)."""
        all_bindings = self.by_name.get(name)
        if not all_bindings:
            return ()
        if len(all_bindings) == 1 and all_bindings[0].kind != "del":
            return tuple(all_bindings)
        states = self._flows.get(name)
        if states is None:
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
            params = node.params
            for param in (*params.posonly_params, *params.params, *params.kwonly_params):
                self._binding(param.name.value, "param", param)
            if isinstance(node, cst.FunctionDef):
                for star in (params.star_arg, params.star_kwarg):
                    if isinstance(star, cst.Param):
                        self._binding(star.name.value, "param", star)
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
        elif kind is cst.Import:
            for alias in node.names:
                full = _dotted(alias.name)
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    found.append(self._binding(alias.asname.name.value, "import", node, imported=full))
                else:
                    head = full.split(".")[0]
                    found.append(self._binding(head, "import", node, imported=head))
        elif kind is cst.ImportFrom:
            if not isinstance(node.names, cst.ImportStar):
                base = self._import_base(len(node.relative), _dotted(node.module) if node.module is not None else "")
                for alias in node.names:
                    name = _dotted(alias.name)
                    local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else name
                    if base is None:
                        found.append(self._binding(local, "assign", node))  # unresolvable: some value
                    else:
                        found.append(self._binding(local, "import", node, imported=f"{base}.{name}" if base else name))
        return found
