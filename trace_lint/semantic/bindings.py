"""Scopes and bindings of a function, and which bindings of a name can reach a point.

The binder records every name a function binds, with its kind (parameter, import, def,
class, assignment, loop target, with target, exception name, ...), and runs a small
structured data-flow pass over the body (branches merge, loops iterate to a fixed point,
`return`/`raise`/`break`/`continue` end a path) so that "which values can a name hold here"
is a query. Comprehension and lambda targets belong to their own scopes and are not bound
here; a nested def or class binds its name only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional, Protocol

import libcst as cst

from ..frontend.syntax_walk import children

class FunctionScope(Protocol):
    """What the binder reads of a function (`project.FunctionInfo` is one)."""

    node: cst.CSTNode
    nodes: list[cst.CSTNode]
    module: Any


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

    def __repr__(self) -> str:
        return f"Binding({self.name!r}, {self.kind!r})"


# The flow state for one name: the bindings that can reach a point (None: no path does).
State = Optional[tuple]


def _merge(states: Iterable[State]) -> State:
    """The union of the states of several paths."""
    alive = [s for s in states if s is not None]
    if not alive:
        return None
    merged = alive[0]
    for state in alive[1:]:
        if state is not merged:
            merged = merged + tuple(b for b in state if b not in merged)
    return merged


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


class _Loop:
    __slots__ = ("breaks", "continues")

    def __init__(self) -> None:
        self.breaks: list[State] = []
        self.continues: list[State] = []


class ScopeBindings:
    """The bindings of one function scope, and the reaching-definitions facts.

    One pass collects every binding; the flow of a name is computed when first asked, for
    that name alone (a name bound once needs none), so a function with thousands of names
    costs one linear pass per name that is asked about and bound more than once."""

    def __init__(self, function: FunctionScope, import_base):
        self.function = function
        # Turns (dots, module) of a relative import into a dotted base (the module knows how).
        self._import_base = import_base
        self.by_name: dict[str, list[Binding]] = {}
        self.declared_global: set[str] = set()
        self.declared_nonlocal: set[str] = set()
        # Binding of (binding node, name), so flow passes reuse the collected objects.
        self._made: dict[tuple[int, str], Binding] = {}
        # name -> entry state of each statement (small and compound statements), by id.
        self._flows: dict[str, dict[int, State]] = {}
        self._tracked: Optional[str] = None
        self._entry: dict[int, State] = {}
        self._loops: list[_Loop] = []
        # Most functions have no `:=`: their expressions need no search for one.
        self._has_walrus = any(type(n) is cst.NamedExpr for n in function.nodes)
        self._run(None)

    # -- queries ---------------------------------------------------------------------------
    def binds(self, name: str) -> bool:
        """Is the name local to this scope (bound anywhere in it, not declared global)?"""
        return name in self.by_name and name not in self.declared_global and name not in self.declared_nonlocal

    def reaching(self, name: str, node: Optional[cst.CSTNode]) -> tuple[Binding, ...]:
        """The bindings of a local name that can reach `node` (all of them when the node's
        statement is unknown, e.g. a node built by the analysis)."""
        all_bindings = self.by_name.get(name)
        if not all_bindings:
            return ()
        if len(all_bindings) == 1 and all_bindings[0].kind != "del":
            return tuple(all_bindings)
        entry = self._flows.get(name)
        if entry is None:
            self._run(name)
            entry = self._flows[name]
        state = self._state_at(node, entry) if node is not None else None
        if state is None:
            return tuple(b for b in all_bindings if b.kind != "del")
        return tuple(b for b in state if b.kind != "del")

    def _state_at(self, node: cst.CSTNode, entry: dict[int, State]) -> State:
        parents = self.function.module.parents
        current: Optional[cst.CSTNode] = node
        stop = self.function.node
        while current is not None and current is not stop:
            key = id(current)
            if key in entry:
                return entry[key] or ()
            current = parents.get(key)
        return None

    # -- the pass --------------------------------------------------------------------------
    def _run(self, tracked: Optional[str]) -> None:
        """Collect bindings (tracked None), or compute the flow of one name."""
        self._tracked = tracked
        self._entry = {}
        self._loops = []
        node = self.function.node
        state: State = ()
        if isinstance(node, (cst.FunctionDef, cst.Lambda)):
            params = node.params
            found = [self._binding(p.name.value, "param", p) for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
            if isinstance(node, cst.FunctionDef):
                for star in (params.star_arg, params.star_kwarg):
                    if isinstance(star, cst.Param):
                        found.append(self._binding(star.name.value, "param", star))
            state = self._bind(state, found)
            if isinstance(node, cst.FunctionDef):
                self._block(node.body, state)
        if tracked is not None:
            self._flows[tracked] = self._entry
        self._entry = {}

    def _binding(self, name: str, kind: str, node: cst.CSTNode, value=None, imported=None) -> Binding:
        key = (id(node), name)
        found = self._made.get(key)
        if found is None:
            found = self._made[key] = Binding(name, kind, node, value, imported)
            self.by_name.setdefault(name, []).append(found)
        return found

    def _bind(self, state: State, bindings: list[Binding]) -> State:
        if state is None:
            return None
        for binding in bindings:
            if binding.name == self._tracked:
                state = () if binding.kind == "del" else (binding,)
        return state

    def _enter(self, node: cst.CSTNode, state: State) -> None:
        if self._tracked is not None and state is not None:
            self._entry[id(node)] = state

    def _block(self, block: cst.BaseSuite, state: State) -> State:
        if isinstance(block, cst.SimpleStatementSuite):
            return self._small_statements(block.body, state)
        for statement in block.body:
            state = self._statement(statement, state)
        return state

    def _small_statements(self, statements, state: State) -> State:
        for small in statements:
            self._enter(small, state)
            state = self._small(small, state)
        return state

    def _walrus(self, node: cst.CSTNode, state: State) -> State:
        """Names bound by `:=` in an expression (not inside a lambda or a nested def)."""
        if not self._has_walrus:
            return state
        found: list[Binding] = []
        stack = [node]
        while stack:
            current = stack.pop()
            if type(current) is cst.NamedExpr and isinstance(current.target, cst.Name):
                found.append(self._binding(current.target.value, "walrus", current, current.value))
            if isinstance(current, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
                continue
            stack.extend(children(current))
        return self._bind(state, found)

    def _small(self, node: cst.BaseSmallStatement, state: State) -> State:
        kind = type(node)
        if kind is cst.Return or kind is cst.Raise:
            if self._tracked is None and kind is cst.Return and node.value is not None:
                self._walrus(node.value, state)
            return None
        if kind is cst.Break:
            if self._loops and state is not None:
                self._loops[-1].breaks.append(state)
            return None
        if kind is cst.Continue:
            if self._loops and state is not None:
                self._loops[-1].continues.append(state)
            return None
        if kind is cst.Global:
            self.declared_global.update(n.name.value for n in node.names)
            return state
        if kind is cst.Nonlocal:
            self.declared_nonlocal.update(n.name.value for n in node.names)
            return state
        if kind is cst.Pass:
            return state
        state = self._walrus(node, state)
        found: list[Binding] = []
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
        return self._bind(state, found)

    def _statement(self, node: cst.BaseStatement, state: State) -> State:
        if type(node) is cst.SimpleStatementLine:
            return self._small_statements(node.body, state)
        self._enter(node, state)
        kind = type(node)
        if kind is cst.FunctionDef or kind is cst.ClassDef:
            return self._bind(state, [self._binding(node.name.value, "def" if kind is cst.FunctionDef else "class", node)])
        if kind is cst.If:
            state = self._walrus(node.test, state)
            body = self._block(node.body, state)
            orelse = node.orelse
            if orelse is None:
                other = state
            elif isinstance(orelse, cst.If):
                other = self._statement(orelse, state)
            else:
                other = self._block(orelse.body, state)
            return _merge([body, other])
        if kind is cst.For:
            plain = isinstance(node.target, cst.Name)
            found = [self._binding(name, "loop", node, node.iter if plain else None) for name in target_names(node.target)]
            return self._loop(node, self._walrus(node.iter, state), found, None)
        if kind is cst.While:
            return self._loop(node, self._walrus(node.test, state), [], node.test)
        if kind is cst.With:
            found = []
            for item in node.items:
                state = self._walrus(item.item, state)
                if item.asname is not None:
                    plain = isinstance(item.asname.name, cst.Name)
                    for name in target_names(item.asname.name):
                        found.append(self._binding(name, "with", node, item.item if plain else None))
            return self._block(node.body, self._bind(state, found))
        if kind is cst.Try or kind is getattr(cst, "TryStar", None):
            return self._try(node, state)
        if kind is cst.Match:
            outs = []
            for case in node.cases:
                found = []
                stack = [case.pattern]
                while stack:
                    current = stack.pop()
                    if isinstance(current, (cst.MatchAs, cst.MatchStar)) and current.name is not None:
                        found.append(self._binding(current.name.value, "match", current))
                    elif isinstance(current, cst.MatchMapping) and current.rest is not None:
                        found.append(self._binding(current.rest.value, "match", current))
                    stack.extend(children(current))
                outs.append(self._block(case.body, self._bind(state, found)))
            outs.append(state)  # no case matched
            return _merge(outs)
        return state

    def _loop(self, node, state: State, targets: list[Binding], test) -> State:
        loop = _Loop()
        self._loops.append(loop)
        head = state
        for _ in range(4):  # a few passes reach the fixed point for the shapes that occur
            loop.breaks.clear()
            loop.continues.clear()
            body_out = self._block(node.body, self._bind(head, targets))
            new_head = _merge([state, body_out, *loop.continues])
            if self._tracked is None or new_head == head or (new_head is not None and head is not None and set(new_head) == set(head)):
                break
            head = new_head
        self._loops.pop()
        if isinstance(node, cst.While):
            self._enter(node, head)
        exit_state = head
        if node.orelse is not None:
            exit_state = self._block(node.orelse.body, exit_state)
        infinite = isinstance(test, cst.Name) and test.value == "True"
        return _merge([None if infinite else exit_state, *loop.breaks])

    def _try(self, node, state: State) -> State:
        # Any statement of the body can raise: a handler starts from every state the body
        # passed through (the entry and each top-level statement's exit).
        seen: list[State] = [state]
        current = state
        for statement in node.body.body:
            current = self._statement(statement, current)
            seen.append(current)
        raised = _merge(seen)
        outs = []
        for handler in node.handlers:
            found = []
            if handler.name is not None and isinstance(handler.name.name, cst.Name):
                found.append(self._binding(handler.name.name.value, "except", handler))
            outs.append(self._block(handler.body, self._bind(raised, found)))
        normal = current
        if node.orelse is not None:
            normal = self._block(node.orelse.body, normal)
        after = _merge([normal, *outs])
        if node.finalbody is not None:
            # The finally body runs on every path, the raising ones included.
            final = self._block(node.finalbody.body, _merge([after, raised]))
            return final if after is not None else None
        return after
