"""Capture-time objects: which parameters of captured functions hold an object made during
the capture (in captured code, or in the framing code before the region).

`ch = Chains(); ch.add(...)` in captured code: `self` in `Chains.add` is an object the
capture made, not state that outlives it. It is judged per capture site (`by_chain`): a
parameter is capture-time where every call reached from that site hands it such an object
(the greatest fixed point over that site's call edges, so recursion keeps what its outside
callers give). The answer for one site's chain never depends on which other captures the run
saw, so a split run, one file's run and a whole run agree. `parameters` is the same fact over
every site's edges.
"""

from __future__ import annotations

from typing import Callable, Hashable, Iterable, Optional

import libcst as cst

from ..semantic.calls import CallResolver, Target, has_decorator
from ..semantic.bindings import assignment_targets, target_path
from ..semantic.project import FunctionInfo
from ..semantic.receivers import receiver_parameter
from ..semantic.summaries import FixedPoint

# What an argument needs to be a capture-time object: the (function, parameter) pairs that
# must hold capture-time objects themselves, the caller's or, for a closure's variable, an
# enclosing function's (empty: it is one whatever they got); None: it is not one.
Need = Optional[frozenset]

# How many bindings a value is followed through within one function (a cycle of names ends
# there); factories are followed through their summaries, any number of calls down.
_FACTORY_DEPTH = 3


class CaptureTimeObjects:
    def __init__(self, resolver: CallResolver):
        self.resolver = resolver
        self.project = resolver.project
        # Into each function: (caller, {parameter: need}) per call edge.
        self._into: dict[FunctionInfo, list[tuple[FunctionInfo, dict[str, Need]]]] = {}
        self._seen: set[tuple[int, int]] = set()
        self._roots: set[FunctionInfo] = set()
        # Functions that frame a capture (hold a region or call a capture helper): their
        # locals made before the capture are capture-time objects to closures they hand on.
        self._framing: set[FunctionInfo] = set()
        self._solved: Optional[dict[FunctionInfo, frozenset]] = None
        # Whether every return of a factory makes a new object (at an index of the tuple it
        # returns): the least fixed point over the call graph (a recursive factory proves
        # nothing through itself), however many factories down.
        self._returns = FixedPoint(lambda subject: self._own_returns_made(*subject), False)
        self._edge_needs: dict[tuple[int, int], dict[str, Need]] = {}
        # The same, per capture site (root id): what that site's calls hand each function.
        self._into_by_root: dict[int, dict[FunctionInfo, list[tuple[FunctionInfo, dict[str, Need]]]]] = {}
        self._seen_by_root: set[tuple[int, tuple[int, int]]] = set()
        self._solved_by_root: dict[int, dict[FunctionInfo, frozenset]] = {}
        self._root_start: dict[int, FunctionInfo] = {}

    # -- recording ---------------------------------------------------------------------------
    def add_root(self, function: FunctionInfo, root_id: int) -> None:
        """A function captured as a whole (declared, a helper's callable): its parameters come
        from outside."""
        self._roots.add(function)
        self._root_start[root_id] = function

    def add_framing(self, function: FunctionInfo) -> None:
        self._framing.add(function)

    def add_edge(self, caller: FunctionInfo, call: cst.Call, target: Target, root_id: int) -> None:
        key = (id(call), id(target.function))
        needs = self._needs_of(caller, call, target.function)
        if (root_id, key) not in self._seen_by_root:
            self._seen_by_root.add((root_id, key))
            self._solved_by_root.pop(root_id, None)
            self._into_by_root.setdefault(root_id, {}).setdefault(target.function, []).append((caller, needs))
        if key in self._seen:
            return
        self._seen.add(key)
        self._solved = None
        self._into.setdefault(target.function, []).append((caller, needs))

    # -- the fact, per capture site ------------------------------------------------------------
    def by_chain(self, function: FunctionInfo, chains: dict, also: Optional[Callable[[int], Hashable]] = None) -> list[tuple[dict[FunctionInfo, frozenset], Hashable, list]]:
        """The chains reaching `function` (one per capture site) grouped by what the calls
        under their site make capture-time in it and in its enclosing functions (what its
        code can name), and by what `also` says of their site: [(answers, also's, chains)]."""
        scopes = []
        scope: Optional[FunctionInfo] = function
        while scope is not None:
            scopes.append(scope)
            scope = scope.parent
        groups: dict[tuple, tuple[dict, Hashable, list]] = {}
        for root_id, chain in chains.items():
            solved = self._solved_under(root_id)
            answers = {s: solved.get(s, frozenset()) for s in scopes}
            extra = also(root_id) if also is not None else None
            key = (tuple(tuple(sorted(answers[s])) for s in scopes), extra)
            groups.setdefault(key, (answers, extra, []))[2].append(chain)
        return list(groups.values())

    def without_edges(self) -> "CaptureTimeObjects":
        """The same roots and framing functions with no call edge yet (reach walked again)."""
        fresh = CaptureTimeObjects(self.resolver)
        fresh._roots = set(self._roots)
        fresh._framing = set(self._framing)
        fresh._root_start = dict(self._root_start)
        return fresh

    def _solved_under(self, root_id: int) -> dict[FunctionInfo, frozenset]:
        """Capture-time parameters on every call reached from one capture site: the fixed
        point over that site's own call edges, whatever other sites the run saw."""
        solved = self._solved_by_root.get(root_id)
        if solved is None:
            start = self._root_start.get(root_id)
            into = self._into_by_root.get(root_id, {})
            solved = self._solved_by_root[root_id] = _greatest_fixed_point(into, lambda f: f is start)
        return solved

    def _needs_of(self, caller: FunctionInfo, call: cst.Call, callee: FunctionInfo) -> dict[str, Need]:
        key = (id(call), id(callee))
        cached = self._edge_needs.get(key)
        if cached is None:
            cached = self._edge_needs[key] = self._parameter_needs(caller, call, callee)
        return cached

    # -- the fact on every call ------------------------------------------------------------------
    def parameters(self, function: Optional[FunctionInfo]) -> frozenset:
        """The parameters of a captured function bound to a capture-time object on every call
        that reaches it (empty when unknown)."""
        if function is None:
            return frozenset()
        if self._solved is None:
            self._solved = self._solve()
        return self._solved.get(function, frozenset())

    def _solve(self) -> dict[FunctionInfo, frozenset]:
        return _greatest_fixed_point(self._into, lambda f: f in self._roots)

    # -- one call ----------------------------------------------------------------------------
    def _parameter_needs(self, caller: FunctionInfo, call: cst.Call, target: FunctionInfo) -> dict[str, Need]:
        receiver, arguments = self.resolver.arguments(call, caller, target)
        needs: dict[str, Need] = {name: self._need(value, caller, 0) for name, value in arguments.items()}
        if receiver is not None:
            needs[receiver] = self._receiver_need(caller, call, target)
        return needs

    def _receiver_need(self, caller: FunctionInfo, call: cst.Call, target: FunctionInfo) -> Need:
        """What the object bound to a method's `self` needs to be a capture-time object."""
        if has_decorator(target, "classmethod"):
            return None  # a class, not a capture-time object
        func = call.func
        if isinstance(func, cst.Attribute):
            value = func.value
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "super":
                return _first_parameter_need(caller)
            if func.attr.value != target.name:
                return None  # `self.attn(x)`: the object stored in the attribute is called
            return self._need(value, caller, 0)
        if target.name in ("__init__", "__new__") and self._constructs(call, caller):
            return frozenset()  # a construction: the new instance
        return self._need(func, caller, 0)  # `instance(...)`: `__call__` on it

    # -- values ------------------------------------------------------------------------------
    def _need(self, expr: cst.BaseExpression, function: FunctionInfo, depth: int) -> Need:
        if depth > _FACTORY_DEPTH:
            return None
        if isinstance(expr, cst.Call):
            return frozenset() if self._made_by(expr, function, None) else None
        if not isinstance(expr, cst.Name):
            return None
        name = expr.value
        bindings = function.bindings
        if name in bindings.declared_global:
            return None
        if bindings.binds(name):
            return self._bindings_need(bindings.reaching(name, expr), function, depth)
        # A closure's variable: made in (or handed to) a function that frames the capture
        # or is captured, whose frame is alive while the closure runs.
        scope = function.parent
        while scope is not None:
            if scope.bindings.binds(name):
                if scope not in self._framing and scope not in self._into:
                    return None
                return self._bindings_need(scope.bindings.reaching(name, None), scope, depth)
            scope = scope.parent
        return None

    def _bindings_need(self, bindings: Iterable, function: FunctionInfo, depth: int) -> Need:
        total: set = set()
        found = False
        for binding in bindings:
            found = True
            if binding.kind == "param":
                total.add((function, binding.name))
            elif binding.kind in ("assign", "annassign", "walrus") and binding.value is not None:
                need = self._need(binding.value, function, depth + 1)
                if need is None:
                    return None
                total |= need
            elif binding.kind == "assign" and isinstance(binding.node, cst.Assign):
                # `call, batched = _prepare(...)`: one element of what a factory returns.
                if not self._unpacked_made(binding.name, binding.node, function):
                    return None
            else:
                return None
        return frozenset(total) if found else None

    def _unpacked_made(self, name: str, statement: cst.Assign, function: FunctionInfo) -> bool:
        if not isinstance(statement.value, cst.Call):
            return False
        for target in assignment_targets(statement):
            path = target_path(target, name) if isinstance(target, (cst.Tuple, cst.List)) else None
            if path is not None and len(path) == 1:
                return self._made_by(statement.value, function, path[0])
        return False

    def _made_by(self, call: cst.Call, function: FunctionInfo, index: Optional[int]) -> bool:
        """The call makes a new object (at `index` of the tuple it returns, when given): a
        project class's construction, or a project function every return of which does."""
        if index is None and self._constructs(call, function):
            return True
        targets = self.resolver.resolve_all(call, function)
        if len(targets) != 1 or targets[0].function.name == "__init__":
            return False
        return self._returns_made(targets[0].function, index)

    def _constructs(self, call: cst.Call, function: FunctionInfo) -> bool:
        """The call makes an instance of a project class."""
        return isinstance(call.func, (cst.Name, cst.Attribute)) and self.resolver.class_of(call.func, function.module, function) is not None

    def _returns_made(self, factory: FunctionInfo, index: Optional[int]) -> bool:
        return self._returns.get((id(factory), index), (factory, index))

    def _own_returns_made(self, factory: FunctionInfo, index: Optional[int]) -> bool:
        if _is_generator(factory):
            return False
        returns = [n for n in factory.nodes if isinstance(n, cst.Return)]
        for statement in returns:
            value = statement.value
            if index is not None:
                if not isinstance(value, cst.Tuple) or index >= len(value.elements) or isinstance(value.elements[index], cst.StarredElement):
                    return False
                value = value.elements[index].value
            if value is None or self._need(value, factory, 0) != frozenset():
                return False
        return bool(returns)


def _greatest_fixed_point(into: dict, is_root) -> dict[FunctionInfo, frozenset]:
    """Parameters bound to a capture-time object on every call edge into each function.
    Functions reached only through calls start from "every parameter" (None) and shrink;
    roots and framing functions give nothing of their own."""
    fresh: dict[FunctionInfo, Optional[frozenset]] = {f: None for f in into if not is_root(f)}

    def holds(pair: tuple) -> bool:
        function, parameter = pair
        if function not in fresh:
            return False
        have = fresh[function]
        return have is None or parameter in have

    changed = True
    while changed:
        changed = False
        for function, edges in into.items():
            if function not in fresh:
                continue
            result: Optional[frozenset] = None
            for _, needs in edges:
                ok = frozenset(p for p, need in needs.items() if need is not None and all(holds(pair) for pair in need))
                result = ok if result is None else result & ok
            if result != fresh[function]:
                fresh[function] = result
                changed = True
    return {f: (s or frozenset()) for f, s in fresh.items()}


def _first_parameter_need(function: FunctionInfo) -> Need:
    receiver = receiver_parameter(function)
    return frozenset({(function, receiver)}) if receiver is not None else None


def _is_generator(function: FunctionInfo) -> bool:
    return any(isinstance(n, (cst.Yield,)) for n in function.nodes)


__all__ = ["CaptureTimeObjects"]
