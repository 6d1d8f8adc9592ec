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
from typing import TYPE_CHECKING, Iterable, Optional

import libcst as cst

if TYPE_CHECKING:
    from .project import FunctionInfo


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


State = dict  # name -> tuple[Binding, ...]; treated as immutable (copied on write)


def _merge(states: Iterable[Optional[State]]) -> Optional[State]:
    """The union of the states of several paths (None: no path arrives)."""
    alive = [s for s in states if s is not None]
    if not alive:
        return None
    if len(alive) == 1:
        return alive[0]
    merged: dict[str, tuple[Binding, ...]] = dict(alive[0])
    for state in alive[1:]:
        for name, bindings in state.items():
            old = merged.get(name)
            if old is None:
                merged[name] = bindings
            elif old is not bindings:
                merged[name] = old + tuple(b for b in bindings if b not in old)
    return merged


def _bind(state: Optional[State], bindings: list[Binding]) -> Optional[State]:
    if state is None or not bindings:
        return state
    new = dict(state)
    for binding in bindings:
        new[binding.name] = () if binding.kind == "del" else (binding,)
    return new


def _target_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        out: list[str] = []
        for element in target.elements:
            out.extend(_target_names(element.value))
        return out
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
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
    """The bindings of one function scope and the reaching-definitions facts."""

    def __init__(self, function: "FunctionInfo", import_base):
        self.function = function
        # Turns (dots, module) of a relative import into a dotted base (the module knows how).
        self._import_base = import_base
        self.by_name: dict[str, list[Binding]] = {}
        self.declared_global: set[str] = set()
        self.declared_nonlocal: set[str] = set()
        # Entry state of each statement (small statements and compound statements), by id.
        self._entry: dict[int, State] = {}
        self._loops: list[_Loop] = []
        self._handler_sources: list[list[State]] = []
        node = function.node
        state: State = {}
        if isinstance(node, cst.FunctionDef):
            params = node.params
            found = []
            for param in (*params.posonly_params, *params.params, *params.kwonly_params):
                found.append(Binding(param.name.value, "param", param))
            for star in (params.star_arg, params.star_kwarg):
                if isinstance(star, cst.Param):
                    found.append(Binding(star.name.value, "param", star))
            for binding in found:
                self._record(binding)
            state = _bind(state, found) or {}
            self.exit = self._block(node.body, state)
        elif isinstance(node, cst.Lambda):
            params = node.params
            found = [Binding(p.name.value, "param", p) for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
            for binding in found:
                self._record(binding)
            self.exit = _bind(state, found)
        else:
            self.exit = state

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
        state = self._state_at(node) if node is not None else None
        if state is None:
            return tuple(b for b in all_bindings if b.kind != "del")
        return tuple(b for b in state.get(name, ()) if b.kind != "del")

    def _state_at(self, node: cst.CSTNode) -> Optional[State]:
        parents = self.function.module.parents
        current: Optional[cst.CSTNode] = node
        stop = self.function.node
        while current is not None and current is not stop:
            state = self._entry.get(id(current))
            if state is not None:
                return state
            current = parents.get(id(current))
        return None

    # -- the pass --------------------------------------------------------------------------
    def _record(self, binding: Binding) -> None:
        self.by_name.setdefault(binding.name, []).append(binding)

    def _block(self, block: cst.BaseSuite, state: Optional[State]) -> Optional[State]:
        if isinstance(block, cst.SimpleStatementSuite):
            return self._small_statements(block.body, state)
        for statement in block.body:
            state = self._statement(statement, state)
        return state

    def _small_statements(self, statements, state: Optional[State]) -> Optional[State]:
        for small in statements:
            if state is not None:
                self._entry[id(small)] = state
            state = self._small(small, state)
        return state

    def _walrus(self, node: cst.CSTNode, state: Optional[State]) -> Optional[State]:
        """Names bound by `:=` in an expression (not inside a lambda or comprehension's own scope)."""
        found: list[Binding] = []
        stack = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, cst.NamedExpr) and isinstance(current.target, cst.Name):
                binding = Binding(current.target.value, "walrus", current, current.value)
                self._record(binding)
                found.append(binding)
            if isinstance(current, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
                continue
            stack.extend(current.children)
        return _bind(state, found)

    def _small(self, node: cst.BaseSmallStatement, state: Optional[State]) -> Optional[State]:
        kind = type(node)
        if kind is cst.Return or kind is cst.Raise:
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
        state = self._walrus(node, state)
        found: list[Binding] = []
        if kind is cst.Assign:
            for target in node.targets:
                plain = isinstance(target.target, cst.Name)
                for name in _target_names(target.target):
                    found.append(Binding(name, "assign", node, node.value if plain else None))
        elif kind is cst.AnnAssign:
            if node.value is not None:
                for name in _target_names(node.target):
                    found.append(Binding(name, "annassign", node, node.value if isinstance(node.target, cst.Name) else None))
        elif kind is cst.AugAssign:
            for name in _target_names(node.target):
                found.append(Binding(name, "augassign", node))
        elif kind is cst.Del:
            for name in _target_names(node.target):
                found.append(Binding(name, "del", node))
        elif kind is cst.Import:
            for alias in node.names:
                full = _dotted(alias.name)
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    found.append(Binding(alias.asname.name.value, "import", node, imported=full))
                else:
                    head = full.split(".")[0]
                    found.append(Binding(head, "import", node, imported=head))
        elif kind is cst.ImportFrom:
            base = self._import_base(len(node.relative), _dotted(node.module) if node.module is not None else "")
            if base is not None and not isinstance(node.names, cst.ImportStar):
                for alias in node.names:
                    name = _dotted(alias.name)
                    local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else name
                    found.append(Binding(local, "import", node, imported=f"{base}.{name}" if base else name))
        for binding in found:
            self._record(binding)
        return _bind(state, found)

    def _statement(self, node: cst.BaseStatement, state: Optional[State]) -> Optional[State]:
        if isinstance(node, cst.SimpleStatementLine):
            return self._small_statements(node.body, state)
        if state is not None:
            self._entry[id(node)] = state
        kind = type(node)
        if kind is cst.FunctionDef or kind is cst.ClassDef:
            binding = Binding(node.name.value, "def" if kind is cst.FunctionDef else "class", node)
            self._record(binding)
            return _bind(state, [binding])
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
            names = _target_names(node.target)
            plain = isinstance(node.target, cst.Name)
            found = [Binding(name, "loop", node, node.iter if plain else None) for name in names]
            for binding in found:
                self._record(binding)
            return self._loop(node, state, found, None)
        if kind is cst.While:
            return self._loop(node, self._walrus(node.test, state), [], node.test)
        if kind is cst.With:
            found = []
            for item in node.items:
                if item.asname is not None:
                    plain = isinstance(item.asname.name, cst.Name)
                    for name in _target_names(item.asname.name):
                        found.append(Binding(name, "with", node, item.item if plain else None))
            for binding in found:
                self._record(binding)
            return self._block(node.body, _bind(state, found))
        if kind is cst.Try or kind is getattr(cst, "TryStar", None):
            return self._try(node, state)
        if kind is cst.Match:
            outs = []
            for case in node.cases:
                found = []
                stack = [case.pattern]
                while stack:
                    current = stack.pop()
                    if isinstance(current, cst.MatchAs) and current.name is not None:
                        found.append(Binding(current.name.value, "match", node))
                    elif isinstance(current, cst.MatchStar) and current.name is not None:
                        found.append(Binding(current.name.value, "match", node))
                    elif isinstance(current, cst.MatchMapping) and current.rest is not None:
                        found.append(Binding(current.rest.value, "match", node))
                    stack.extend(current.children)
                for binding in found:
                    self._record(binding)
                outs.append(self._block(case.body, _bind(state, found)))
            outs.append(state)  # no case matched
            return _merge(outs)
        return state

    def _loop(self, node, state: Optional[State], targets: list[Binding], test) -> Optional[State]:
        loop = _Loop()
        self._loops.append(loop)
        head = state
        body_out: Optional[State] = None
        for _ in range(4):  # a few passes reach the fixed point for the shapes that occur
            loop.breaks.clear()
            loop.continues.clear()
            body_out = self._block(node.body, _bind(head, targets))
            new_head = _merge([state, body_out, *loop.continues])
            if new_head is not None and head is not None and _same(new_head, head):
                break
            head = new_head
        self._loops.pop()
        if isinstance(node, cst.While) and head is not None:
            self._entry[id(node)] = head
        exit_state = head
        if node.orelse is not None:
            exit_state = self._block(node.orelse.body, exit_state)
        infinite = isinstance(test, cst.Name) and test.value == "True"
        return _merge([None if infinite else exit_state, *loop.breaks])

    def _try(self, node, state: Optional[State]) -> Optional[State]:
        # Any statement of the body can raise: a handler starts from every state the body
        # passed through (approximated by the entry and each top-level statement's exit).
        seen: list[Optional[State]] = [state]
        current = state
        body = node.body
        statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
        for statement in statements:
            if isinstance(statement, cst.BaseSuite):
                current = self._block(statement, current)
            else:
                current = self._statement(statement, current)
            seen.append(current)
        raised = _merge(seen)
        outs = []
        for handler in node.handlers:
            found = []
            if handler.name is not None and isinstance(handler.name.name, cst.Name):
                found.append(Binding(handler.name.name.value, "except", handler))
            for binding in found:
                self._record(binding)
            outs.append(self._block(handler.body, _bind(raised, found)))
        normal = current
        if node.orelse is not None:
            normal = self._block(node.orelse.body, normal)
        after = _merge([normal, *outs])
        if node.finalbody is not None:
            # The finally body runs on every path, the raising ones included.
            final = self._block(node.finalbody.body, _merge([after, raised]))
            return final if after is not None else None
        return after


def _same(a: State, b: State) -> bool:
    if a.keys() != b.keys():
        return False
    return all(a[k] is b[k] or set(a[k]) == set(b[k]) for k in a)
