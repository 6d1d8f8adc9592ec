"""Parameters that every captured call fixes, and the branches they decide.

`def launch(*, sync=False): ... if sync: torch.cuda.synchronize()` captured as `launch()`:
on every call the capture makes, `sync` is False, so the synchronize never runs while the
capture records and is not captured work (RULES.md: captured code is code that runs while a
capture is being recorded). Likewise `_rope if _rope is not None else upload()` where every
captured call passes a tuple: the upload never runs in the capture.

Judged per capture site, from that site's own call edges (the greatest fixed point over them,
as capture-time objects are), so a split run, a one-file run and a whole run agree. A
parameter is known only where every edge of that site into the function gives it the same
literal (or leaves it to a literal default), or a value that is never None; anything else
(a variable of unknown value, `*args`/`**kwargs`, a call through `functools.partial`, an
unresolved call) leaves it unknown, and nothing is decided on it. A function that only hands
its own `*args, **kwargs` on (`def __call__(self, *args, **kwargs): return
self.forward(*args, **kwargs)`, the base class every TT-NN module has) passes each caller's
arguments through unchanged: the target's parameter gets what each call of the wrapper that
can dispatch to that target gives it.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from .. import frameworks
from ..frontend.syntax_walk import children
from ..semantic.bindings import named_parameters, star_parameters
from ..semantic.calls import CallResolver
from ..semantic.nodes import always_leaves, statements_after
from ..semantic.project import FunctionInfo
from ..semantic.receivers import receiver_parameter
from ..semantic.summaries import FixedPoint

# Values: TOP (no call seen yet, where the fixed point starts), a constant, "some value that
# is not None", UNKNOWN.
Value = tuple
TOP: Value = ("top",)
UNKNOWN: Value = ("unknown",)
NOT_NONE: Value = ("not-none",)
# What an argument is: a value met with the values of some of the caller's parameters.
Form = tuple  # (Value, frozenset[str])

# How many bindings an argument's value is followed through within one function (a cycle of
# names ends there); calls are followed through their summaries, any number of frames down.
_DEPTH = 4
_NOT_LITERAL = object()
# A wrapper's pass-through of one target parameter, as a pseudo-parameter of the wrapper
# (no identifier starts with it): "*<id of the forwarding call>:<id of the target>:<name>".
_FORWARDED = "*"


def _constant(value) -> Value:
    return ("const", type(value), value)


def _not_none(value: Value) -> bool:
    return value is NOT_NONE or (value[0] == "const" and value[2] is not None)


def meet(a: Value, b: Value) -> Value:
    if a == b or b is TOP:
        return a
    if a is TOP:
        return b
    if a is UNKNOWN or b is UNKNOWN:
        return UNKNOWN
    if _not_none(a) and _not_none(b):
        return NOT_NONE
    return UNKNOWN


def _meet_forms(a: Form, b: Form) -> Form:
    return (meet(a[0], b[0]), a[1] | b[1])


_UNKNOWN_FORM: Form = (UNKNOWN, frozenset())


def _literal(expr: cst.BaseExpression):
    if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[expr.value]
    if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString)):
        return expr.evaluated_value
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)) and isinstance(expr.expression, (cst.Integer, cst.Float)):
        value = expr.expression.evaluated_value
        return -value if isinstance(expr.operator, cst.Minus) else value
    return _NOT_LITERAL


# Expressions whose value is a new object, never None.
_MADE = (cst.Tuple, cst.List, cst.Dict, cst.Set, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.FormattedString, cst.Lambda)


# No untaken branches (yet) in a function.
_NONE_DEAD: frozenset[int] = frozenset()

class ConstantParameters:
    def __init__(self, resolver: CallResolver):
        self.resolver = resolver
        # Per capture site (root id): the function it starts in and its parameters' values.
        self._starts: dict[int, tuple[FunctionInfo, dict[str, Value]]] = {}
        # Per capture site: its call edges (caller, call, target, seed, opaque). A seed edge is
        # a call lexically in a region (framing code: never pruned, the caller's parameters are
        # unknown); an opaque one has no argument map (a call the runtime guard saw).
        self._edges: dict[int, list[tuple]] = {}
        self._edge_keys: set[tuple] = set()
        self._forms: dict[tuple[int, int, str], Form] = {}
        self._tests: dict[int, list[tuple[cst.CSTNode, frozenset]]] = {}
        # Whether every return of a function is a value never None: the least fixed point
        # over the call graph (a recursion proves nothing through itself), whatever the
        # number of frames down and whichever function is asked about first.
        self._never_none = FixedPoint(self._own_never_none, False)
        self._dead: dict[tuple[int, int], frozenset[int]] = {}
        # Pass-through pseudo-parameters: name -> (forwarding call, wrapper, target, parameter).
        self._forwards: dict[str, tuple[cst.Call, FunctionInfo, FunctionInfo, str]] = {}
        self.solved = False

    # -- recording ---------------------------------------------------------------------------
    def add_start(self, root_id: int, function: FunctionInfo, values: Optional[dict[str, Value]] = None) -> None:
        self._starts[root_id] = (function, dict(values or {}))

    def add_edge(self, caller: FunctionInfo, call: cst.Call, target: FunctionInfo, root_id: int, seed: bool = False, opaque: bool = False) -> None:
        if self.solved:
            return
        key = (root_id, id(call), id(target), seed, opaque)
        if key in self._edge_keys:
            return
        self._edge_keys.add(key)
        self._edges.setdefault(root_id, []).append((caller, call, target, seed, opaque))

    def start_values(self, target: FunctionInfo, calls: list[tuple[cst.Call, FunctionInfo]]) -> dict[str, Value]:
        """The parameters of a capture helper's callable (a function, a lambda or a bound
        method, not a `functools.partial`) as the helper's own calls of it in its regions fill
        them (`calls`: each with the function it is written in), met over those calls: an
        argument's value in the helper (a literal, a value never None; one of the helper's
        own parameters is unknown), or the literal default of a parameter a call leaves out.
        A method's receiver, a parameter without a literal default and anything an unpacked
        `*x` / `**x` may fill stay unknown."""
        if not calls:
            return {}
        receiver = receiver_parameter(target)
        stars = set(star_parameters(target.node.params)) - {None}
        names = [name for name in target.params if name != receiver and name not in stars]
        values: dict[str, Value] = {}
        for call, caller in calls:
            bound = self.resolver.bind_arguments(call, caller, target)
            for name in names:
                if name in bound.by_parameter:
                    form = self._expression_form(bound.by_parameter[name], caller, 0)
                    value = form[0] if not form[1] else UNKNOWN
                elif bound.unpacked:
                    value = UNKNOWN
                else:
                    default = _default(target, name)
                    literal = _literal(default) if default is not None else _NOT_LITERAL
                    value = UNKNOWN if literal is _NOT_LITERAL else _constant(literal)
                values[name] = meet(values.get(name, TOP), value)
        return {name: value for name, value in values.items() if value not in (TOP, UNKNOWN)}

    # -- answers -----------------------------------------------------------------------------
    def dead(self, root_id: int, function: FunctionInfo) -> frozenset[int]:
        """The nodes of `function` (ids) that never run on the calls this capture site makes:
        the branch a fixed parameter's test never takes."""
        return self._dead.get((root_id, id(function)), frozenset())

    def solve(self) -> bool:
        """Decide every site's branches once all its edges are known; True when some call
        edge lies in a branch never taken (reach must be walked again without it)."""
        self.solved = True
        pruned = False
        for root_id in sorted(set(self._edges) | set(self._starts)):
            edges = self._edges.get(root_id, [])
            dead: dict[int, frozenset[int]] = {}
            while True:
                live, functions = self._live(root_id, edges, dead)
                values = self._values(root_id, live, functions, dead)
                found = {}
                for function in functions:
                    nodes = self._dead_nodes(function, values)
                    if nodes:
                        found[id(function)] = nodes
                if found == dead:
                    break
                dead = found
            for key, nodes in dead.items():
                self._dead[(root_id, key)] = nodes
            if any(not seed and id(call) in dead.get(id(caller), ()) for caller, call, _, seed, _ in edges):
                pruned = True
        return pruned

    # -- one site ----------------------------------------------------------------------------
    def _live(self, root_id: int, edges: list[tuple], dead: dict[int, frozenset[int]]) -> tuple[list[tuple], list[FunctionInfo]]:
        """The edges reached from the site's start through calls outside its dead branches."""
        reached: dict[int, FunctionInfo] = {}
        start = self._starts.get(root_id)
        if start is not None:
            reached[id(start[0])] = start[0]
        for caller, call, target, seed, _ in edges:
            if seed:
                reached[id(target)] = target
        by_caller: dict[int, list[tuple]] = {}
        for edge in edges:
            if not edge[3]:
                by_caller.setdefault(id(edge[0]), []).append(edge)
        stack = list(reached.values())
        while stack:
            function = stack.pop()
            for _, call, target, _, _ in by_caller.get(id(function), ()):
                if id(call) in dead.get(id(function), ()):
                    continue
                if id(target) not in reached:
                    reached[id(target)] = target
                    stack.append(target)
        live = [e for e in edges if e[3] or (id(e[0]) in reached and id(e[1]) not in dead.get(id(e[0]), ()))]
        return live, list(reached.values())

    def _values(self, root_id: int, live: list[tuple], functions: list[FunctionInfo], dead: dict[int, frozenset[int]]) -> dict[tuple[int, str], Value]:
        """The greatest fixed point of each tested parameter's value over the live edges (an
        argument's bindings in a branch this site never takes do not reach the call)."""
        into: dict[int, list[tuple]] = {}
        for edge in live:
            into.setdefault(id(edge[2]), []).append(edge)
        start = self._starts.get(root_id)
        needed: set[tuple[int, str]] = set()
        work = [(id(f), name) for f in functions for _, names in self._tests_of(f) for name in names]
        forms: dict[tuple[int, str], list[tuple[Optional[int], Form]]] = {}
        while work:
            pair = work.pop()
            if pair in needed:
                continue
            needed.add(pair)
            function_id, name = pair
            entries = forms[pair] = []
            for caller, call, target, seed, opaque in into.get(function_id, ()):
                form = _UNKNOWN_FORM if opaque else self._form(caller, call, target, name, dead.get(id(caller), _NONE_DEAD))
                if seed:
                    form = (form[0] if not form[1] else UNKNOWN, frozenset())
                entries.append((id(caller), form))
                for parameter in form[1]:
                    work.append((id(caller), parameter))
        base: dict[tuple[int, str], Value] = {}
        for pair in needed:
            if start is not None and pair[0] == id(start[0]):
                base[pair] = start[1].get(pair[1], UNKNOWN)
            elif pair[0] in into:
                base[pair] = TOP
            else:
                base[pair] = UNKNOWN
        values = dict(base)
        changed = True
        while changed:
            changed = False
            for pair in needed:
                value = base[pair]
                for caller_id, (fixed, parameters) in forms[pair]:
                    value = meet(value, fixed)
                    for parameter in parameters:
                        value = meet(value, values.get((caller_id, parameter), UNKNOWN))
                if value != values[pair]:
                    values[pair] = value
                    changed = True
        return {pair: (UNKNOWN if value is TOP else value) for pair, value in values.items()}

    # -- arguments ---------------------------------------------------------------------------
    def _form(self, caller: FunctionInfo, call: cst.Call, target: FunctionInfo, name: str, dead: frozenset[int]) -> Form:
        # The caller's untaken branches for this site are part of the answer.
        key = (id(call), id(target), name, dead)
        found = self._forms.get(key)
        if found is None:
            found = self._forms[key] = self._argument_form(caller, call, target, name, dead)
        return found

    def _argument_form(self, caller: FunctionInfo, call: cst.Call, target: FunctionInfo, name: str, dead: frozenset[int] = _NONE_DEAD, forwards: bool = True) -> Form:
        if name.startswith(_FORWARDED):
            return self._passed_through_form(caller, call, target, name, dead)
        if self._through_partial(call, caller):
            return _UNKNOWN_FORM  # `p = partial(f, sync=True); p()`: the partial's arguments count
        receiver, mapping = self.resolver.arguments(call, caller, target)
        if name == receiver:
            return _UNKNOWN_FORM
        if name in mapping:
            return self._expression_form(mapping[name], caller, 0, dead)
        if any(argument.star for argument in call.args):
            if forwards and _passes_own_arguments_on(caller, call, target):
                pseudo = f"{_FORWARDED}{id(call)}:{id(target)}:{name}"
                self._forwards[pseudo] = (call, caller, target, name)
                return (TOP, frozenset({pseudo}))
            return _UNKNOWN_FORM
        default = _default(target, name)
        if default is None:
            return _UNKNOWN_FORM
        value = _literal(default)
        return _UNKNOWN_FORM if value is _NOT_LITERAL else (_constant(value), frozenset())

    def _passed_through_form(self, caller: FunctionInfo, call: cst.Call, wrapper: FunctionInfo, pseudo: str, dead: frozenset[int]) -> Form:
        """What a call of a pass-through wrapper gives the wrapped target's parameter: the
        call's own arguments bound to the target. A call whose receiver's known classes all
        dispatch the wrapper's call elsewhere never reaches that target (no constraint)."""
        forwarding, _, target, name = self._forwards[pseudo]
        classes = [t.self_class for t in self.resolver.resolve_all(call, caller) if t.function is wrapper]
        if classes and None not in classes:
            dispatched = [self.resolver.resolve_all(forwarding, wrapper, cls) for cls in classes]
            if all(found for found in dispatched) and not any(t.function is target for found in dispatched for t in found):
                return (TOP, frozenset())
        # One wrapper deep: a call that itself unpacks arguments is not followed further.
        return self._argument_form(caller, call, target, name, dead, forwards=False)

    def _through_partial(self, call: cst.Call, caller: FunctionInfo) -> bool:
        """The call's name is bound to a `functools.partial`: its arguments are not all the
        target's."""
        return self.names_partial(call.func, caller)

    def names_partial(self, func: cst.BaseExpression, caller: Optional[FunctionInfo]) -> bool:
        """A `functools.partial(...)` written in place, or a name some binding of which that
        can reach `func` holds one."""
        if isinstance(func, cst.Call):
            return True
        if not isinstance(func, cst.Name):
            return False
        scope: Optional[FunctionInfo] = caller
        while scope is not None:
            bindings = scope.bindings
            if func.value in bindings.declared_global:
                return False
            if bindings.binds(func.value):
                anchor = func if scope is caller else None
                return any(b.value is not None and self.resolver.is_partial(b.value, scope) for b in bindings.reaching(func.value, anchor))
            scope = scope.parent
        return False

    def _expression_form(self, expr: cst.BaseExpression, function: FunctionInfo, depth: int, dead: frozenset[int] = _NONE_DEAD) -> Form:
        value = _literal(expr)
        if value is not _NOT_LITERAL:
            return (_constant(value), frozenset())
        if isinstance(expr, _MADE):
            return (NOT_NONE, frozenset())
        if depth > _DEPTH:
            return _UNKNOWN_FORM
        if isinstance(expr, cst.Call):
            return (NOT_NONE, frozenset()) if self._call_never_none(expr, function) else _UNKNOWN_FORM
        if not isinstance(expr, cst.Name):
            return _UNKNOWN_FORM
        name = expr.value
        bindings = function.bindings
        if name in bindings.declared_global or name in bindings.declared_nonlocal:
            return _UNKNOWN_FORM
        if bindings.binds(name):
            reaching = [b for b in bindings.reaching(name, expr) if id(b.node) not in dead]
            return self._bindings_form(reaching, function, depth, own=True, dead=dead)
        # A closure's variable: whatever any binding of it in the enclosing function holds.
        scope = function.parent
        while scope is not None:
            if scope.bindings.binds(name):
                if any(name in nested.bindings.declared_nonlocal for nested in scope.nested.values()):
                    return _UNKNOWN_FORM
                return self._bindings_form(scope.bindings.reaching(name, None), scope, depth, own=False)
            scope = scope.parent
        return _UNKNOWN_FORM

    def _bindings_form(self, bindings, function: FunctionInfo, depth: int, own: bool, dead: frozenset[int] = _NONE_DEAD) -> Form:
        total: Optional[Form] = None
        for binding in bindings:
            if binding.kind == "param" and own:
                form: Form = (TOP, frozenset({binding.name}))
            elif binding.kind in ("assign", "annassign", "walrus") and binding.value is not None:
                form = self._expression_form(binding.value, function, depth + 1, dead)
                if not own and form[1]:
                    return _UNKNOWN_FORM  # the enclosing function's parameters are not this edge's
            else:
                return _UNKNOWN_FORM
            total = form if total is None else _meet_forms(total, form)
        return total if total is not None else _UNKNOWN_FORM

    def _call_never_none(self, call: cst.Call, function: FunctionInfo) -> bool:
        """A project class's construction, or a call of the one project function it can run
        whose every return is a value never None, or a framework's creation or allocation
        (`ttnn.allocate_tensor_on_device(...)`: a new tensor)."""
        if isinstance(call.func, (cst.Name, cst.Attribute)) and self.resolver.class_of(call.func, function.module, function) is not None:
            return True
        name = self.resolver.project.qualified_name(call.func, function.module, function)
        if name is not None and frameworks.makes_tensor(name):
            return True
        targets = self.resolver.resolve_all(call, function)
        if len(targets) != 1 or targets[0].function.name == "__init__":
            return False
        return self._returns_never_none(targets[0].function)

    def _returns_never_none(self, function: FunctionInfo) -> bool:
        return self._never_none.get(id(function), function)

    def _own_never_none(self, function: FunctionInfo) -> bool:
        node = function.node
        if isinstance(node, cst.Lambda):
            return _never_none_form(self._expression_form(node.body, function, 0))
        if node.asynchronous is not None or any(isinstance(n, cst.Yield) for n in function.nodes):
            return False
        returns = [n for n in function.nodes if isinstance(n, cst.Return)]
        return bool(returns) and always_leaves(node.body) and all(
            r.value is not None and _never_none_form(self._expression_form(r.value, function, 0)) for r in returns
        )

    # -- branches ------------------------------------------------------------------------------
    def _tests_of(self, function: FunctionInfo) -> list[tuple[cst.CSTNode, frozenset]]:
        """The `if`s and conditional expressions whose test can be decided on parameters."""
        found = self._tests.get(id(function))
        if found is None:
            found = []
            for node in function.nodes:
                if isinstance(node, (cst.If, cst.IfExp)):
                    names = _tested_names(node.test)
                    parameters = frozenset(n for n in names if n in function.params)
                    if parameters:
                        found.append((node, parameters))
            self._tests[id(function)] = found
        return found

    def _dead_nodes(self, function: FunctionInfo, values: dict[tuple[int, str], Value]) -> frozenset[int]:
        dead: set[int] = set()

        def value_of(name: cst.Name) -> Optional[Value]:
            bindings = function.bindings.reaching(name.value, name)
            if not bindings or any(b.kind != "param" for b in bindings):
                return None
            return values.get((id(function), name.value))

        for node, _ in self._tests_of(function):
            if id(node) in dead:
                continue
            decided = _decide(node.test, value_of)
            if decided is None:
                continue
            if decided:
                untaken = node.orelse
            else:
                untaken = node.body
            if untaken is not None:
                dead |= _subtree(untaken)
            if decided and isinstance(node, cst.If) and always_leaves(node.body):
                # `if not sync: return out`: the rest of the block runs only when it is false.
                # An `elif`: the rest runs only when it is false, where every test above
                # it in its chain is false too.
                top, parents = node, function.module.parents
                while isinstance(parents.get(id(top)), cst.If) and parents[id(top)].orelse is top:
                    top = parents[id(top)] if _decide(parents[id(top)].test, value_of) is False else None
                    if top is None:
                        break
                for statement in statements_after(function.module, top) if top is not None else ():
                    dead |= _subtree(statement)
        return frozenset(dead)


def _passes_own_arguments_on(wrapper: FunctionInfo, call: cst.Call, target: FunctionInfo) -> bool:
    """`def w(self, *args, **kwargs): ... self.m(*args, **kwargs)` (or a function handing
    its `*args, **kwargs` to a function): the wrapper takes nothing but its receiver and
    those, never rebinds them, and passes them on whole, receiver to receiver."""
    node = wrapper.node
    if isinstance(node, cst.Lambda):
        return False
    params = node.params
    receiver = receiver_parameter(wrapper)
    named = [p.name.value for p in named_parameters(params)]
    if named != ([receiver] if receiver is not None else []):
        return False
    star_args, star_kwargs = star_parameters(wrapper.node.params)
    expected = [("*", star_args)] if star_args else []
    expected += [("**", star_kwargs)] if star_kwargs else []
    if not expected or [(a.star, a.value.value if isinstance(a.value, cst.Name) else None) for a in call.args] != expected:
        return False
    if any(b.kind != "param" for a in call.args for b in wrapper.bindings.reaching(a.value.value, a.value)):
        return False
    func = call.func
    if receiver is not None:
        on_receiver = isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == receiver
        return on_receiver and receiver_parameter(target) is not None
    return isinstance(func, cst.Name) and receiver_parameter(target) is None


def _never_none_form(form: Form) -> bool:
    return not form[1] and _not_none(form[0])


def _default(target: FunctionInfo, name: str) -> Optional[cst.BaseExpression]:
    for param in named_parameters(target.node.params):
        if param.name.value == name:
            return param.default
    return None


def _tested_names(test: cst.BaseExpression) -> list[str]:
    if isinstance(test, cst.Name):
        return [test.value]
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _tested_names(test.expression)
    if isinstance(test, cst.BooleanOperation):
        return _tested_names(test.left) + _tested_names(test.right)
    if isinstance(test, cst.IfExp):
        return _tested_names(test.test) + _tested_names(test.body) + _tested_names(test.orelse)
    tested = _none_test(test)
    if tested is not None:
        return [tested[0].value]
    compared = _literal_comparison(test)
    if compared is not None:
        return [compared[0].value]
    return []


def _none_test(test: cst.BaseExpression) -> Optional[tuple[cst.Name, bool]]:
    """`p is None` -> (p, True), `p is not None` -> (p, False)."""
    if (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.left, cst.Name)
        and isinstance(test.comparisons[0].operator, (cst.Is, cst.IsNot))
        and isinstance(test.comparisons[0].comparator, cst.Name)
        and test.comparisons[0].comparator.value == "None"
    ):
        return test.left, isinstance(test.comparisons[0].operator, cst.Is)
    return None


def _literal_comparison(test: cst.BaseExpression) -> Optional[tuple[cst.Name, object, bool]]:
    """`mode == "decode"` (either side) -> (mode, "decode", True); `!=` -> False."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    target = test.comparisons[0]
    if not isinstance(target.operator, (cst.Equal, cst.NotEqual)):
        return None
    for name, other in ((test.left, target.comparator), (target.comparator, test.left)):
        if isinstance(name, cst.Name) and name.value not in ("True", "False", "None"):
            value = _literal(other)
            if value is not _NOT_LITERAL:
                return name, value, isinstance(target.operator, cst.Equal)
    return None


def _decide(test: cst.BaseExpression, value_of) -> Optional[bool]:
    """The test's truth on every call, or None when it is not known."""
    if isinstance(test, cst.Name):
        value = value_of(test)
        if value is None or value[0] != "const":
            return None
        return bool(value[2])
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _decide(test.expression, value_of)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        left, right = _decide(test.left, value_of), _decide(test.right, value_of)
        if isinstance(test.operator, cst.And):
            if left is False or right is False:
                return False
            return True if left and right else None
        if left is True or right is True:
            return True
        return False if left is False and right is False else None
    if isinstance(test, cst.IfExp):
        # `if check if check is not None else default():` with `check` fixed.
        chosen = _decide(test.test, value_of)
        if chosen is not None:
            return _decide(test.body if chosen else test.orelse, value_of)
        body, orelse = _decide(test.body, value_of), _decide(test.orelse, value_of)
        return body if body is not None and body == orelse else None
    tested = _none_test(test)
    if tested is not None:
        name, is_none = tested
        value = value_of(name)
        if value is None:
            return None
        if value[0] == "const" and value[2] is None:
            return is_none
        if _not_none(value):
            return not is_none
    compared = _literal_comparison(test)
    if compared is not None:
        name, literal, equal = compared
        value = value_of(name)
        if value is None or value[0] != "const":
            return None
        same = bool(value[2] == literal)
        return same if equal else not same
    return None


def _subtree(node: cst.CSTNode) -> set[int]:
    found: set[int] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        found.add(id(current))
        stack.extend(children(current))
    return found


__all__ = ["ConstantParameters"]
