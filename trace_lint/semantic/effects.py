"""Effect summaries of functions that rules ask about instead of walking bodies themselves.

`reads_value(function, parameter)`: the function uses the parameter beyond host metadata
(`t.shape`, `t.dtype`, `t.memory_config()`, `len(t)`, `isinstance(t, ...)`, `t is None`): a
project predicate given a tensor reads its value only if its body does.

`reaches_device_work`: the function (or a function it calls, transitively, as resolved)
calls a framework op that launches a device program (as its plug-in says: `Library`), or
calls a callable the analysis cannot see (a parameter, a local, an attribute of `self`: user
code that may launch device work). Host helpers (logging, bookkeeping) reach none, nor
helpers that only allocate, copy into preallocated buffers, free, alias or read host
metadata (RULES.md "Summaries"). The least fixed point over the call graph: a recursion
reaches device work only through a member that does, at any depth.

`summaries`: what a call does to what it is handed (frees, stores, runs), per function.
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from ..core.api_tables import tables
from .calls import CallResolver, Target
from .project import FunctionInfo
from .bindings import assignment_targets, named_parameters, target_leaves
from .receivers import receiver_parameter
from .summaries import FixedPoint, Summaries


class Effects:
    def __init__(self, resolver: CallResolver, capture_queries: frozenset[str] = frozenset()):
        self.resolver = resolver
        self.project = resolver.project
        self.library = resolver.library
        # Whether a call of the function (on a class of `self`) reaches device work: the
        # least fixed point over the call graph, so a recursion reaches it only through a
        # member that does, whichever member is asked about first, at any depth.
        self._device = FixedPoint(lambda subject: self._own_device_work(*subject), False)
        self._reads: dict[tuple[int, str], bool] = {}
        self._from_factory: dict[tuple[int, str], bool] = {}
        self.summaries = Summaries(
            resolver, self.unseen_user_callable, self.launches_program, capture_queries, self.unknown_effects_call, self.metadata_use
        )

    def reads_value(self, function: FunctionInfo, parameter: str) -> bool:
        key = (id(function), parameter)
        found = self._reads.get(key)
        if found is None:
            found = self._reads[key] = any(
                self._value_use(function, node) for node in function.nodes if type(node) is cst.Name and node.value == parameter
            ) or any(
                isinstance(node, (cst.FunctionDef, cst.Lambda)) and _mentions(function.module.code(node), parameter) for node in function.nodes
            )
        return found

    def reaches_device_work(self, target: Target) -> bool:
        return self._device.get((id(target.function), id(target.self_class)), (target.function, target.self_class))

    def _own_device_work(self, function: FunctionInfo, self_class) -> bool:
        # Work a capture-state guard keeps out of every capture needs no warm-up.
        runs = self.summaries.runs_while_capturing
        return any(self.call_reaches_device_work(call, function, self_class) for call in _calls(function) if runs(call, function))

    def call_reaches_device_work(self, call: cst.Call, function: FunctionInfo, self_class=None) -> bool:
        name = self.project.qualified_name(call.func, function.module, function)
        if name is not None and self.library.owns(name):
            return self.library.launches_program(name)
        targets = self.resolver.resolve_all(call, function, self_class)
        if targets:
            return any(self.reaches_device_work(t) for t in targets)
        return self.unseen_user_callable(call, function)

    def launches_program(self, call: cst.Call, function: FunctionInfo) -> bool:
        """A framework call that launches a device program (as its framework says): not an
        allocation, a copy into a preallocated buffer, a free, an alias or a query."""
        name = self.project.qualified_name(call.func, function.module, function)
        return name is not None and self.library.owns(name) and self.library.launches_program(name)

    def _value_use(self, function: FunctionInfo, name: cst.Name) -> bool:
        """A use of the name's value, not only of its host metadata."""
        parent = function.module.parent(name)
        if isinstance(parent, cst.Param) or (isinstance(parent, (cst.AssignTarget, cst.AnnAssign)) and any(t is name for t in assignment_targets(parent))):
            return False  # a binding, not a use
        return not self.metadata_use(function, name)

    def metadata_use(self, function: FunctionInfo, expr: cst.BaseExpression) -> bool:
        """Where it stands, the expression is used for its host metadata only (`t.shape`,
        `t.memory_config()`, `len(t)`, `isinstance(t, ...)`, `t is None`)."""
        parent = function.module.parent(expr)
        table = tables()
        if isinstance(parent, cst.Attribute) and parent.value is expr:
            attribute = parent.attr.value
            return attribute in table.tensor.metadata_attributes or attribute in table.host_metadata.attributes or attribute in table.host_metadata.methods
        if isinstance(parent, cst.Comparison) and all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in parent.comparisons):
            return True  # `t is None`
        if isinstance(parent, cst.ComparisonTarget) and isinstance(parent.operator, (cst.Is, cst.IsNot)):
            return True  # `None is t`
        if isinstance(parent, cst.Arg):
            call = function.module.parent(parent)
            if isinstance(call, cst.Call):
                if self.project.qualified_name(call.func, function.module, function) in table.tensor.metadata_functions:
                    return True
        return False

    def holds_library_objects(self, function: "FunctionInfo", attribute: str) -> bool:
        """Every `self.<attribute> = (...)` / `[...]` in the methods of the function's class
        fills it with framework objects only (`(torch.cuda.Event(), torch.cuda.Event())`):
        its elements' methods are library calls, not user work."""
        cls = function.cls
        if cls is None:
            return False
        seen = False
        for method, node, whole in _attribute_stores(cls, attribute):
            if not (isinstance(node, cst.Assign) and whole):
                continue
            if not isinstance(node.value, (cst.Tuple, cst.List)) or not node.value.elements:
                return False
            for element in node.value.elements:
                value = element.value
                name = self.project.qualified_name(value.func, method.module, method) if isinstance(value, cst.Call) else None
                if name is None or not self.library.owns(name):
                    return False
            seen = True
        return seen

    def holds_library_elements(self, function: "FunctionInfo", attribute: str) -> bool:
        """A container attribute whose elements are framework objects: every `self.<attribute>
        [k] = ...` in the methods of the function's class stores what a framework call returns
        (`self.outputs[n] = torch.zeros_like(y)`), and every whole `self.<attribute> = ...`
        assigns an empty dict or list: its elements' methods are library calls, not user work."""
        cls = function.cls
        if cls is None:
            return False
        for method, node, whole in _attribute_stores(cls, attribute):
            if not (whole and isinstance(node, (cst.Assign, cst.AnnAssign)) and _empty_container(node.value)):
                return False
        stored = [(method, value) for method, _node, value in _element_stores(cls, attribute)]
        for method, call in _mutating_calls(cls, attribute):
            positional = [a.value for a in call.args if a.keyword is None and not a.star]
            index = _STORED_ARGUMENT.get(call.func.attr.value)
            # `self.outputs.update(...)`, `.extend(...)`: elements that no one value names
            stored.append((method, positional[index] if index is not None and len(positional) > index else None))
        for method, value in stored:
            name = self.project.qualified_name(value.func, method.module, method) if isinstance(value, cst.Call) else None
            if name is None or not self.library.owns(name):
                return False
        return bool(stored)

    def made_outside(self, function: FunctionInfo, attribute: str) -> bool:
        """Every `self.<attribute> = ...` in the methods of the function's class assigns
        `None` or what a call outside the project returns (`native.make_tap(name)` on the
        compiled extension a loader returned): no parameter, project class or framework object
        fills it, so its methods' effects are unknown and nothing is assumed of them."""
        cls = function.cls
        if cls is None:
            return False
        seen = False
        for method, node, whole in _attribute_stores(cls, attribute):
            if isinstance(node, cst.AugAssign) or not whole:
                return False  # updated, or unpacked from a tuple: not one call's result
            if not self._outside_value(node.value, method):
                return False
            seen = True
        return seen

    def _outside_value(self, value: Optional[cst.BaseExpression], method: FunctionInfo) -> bool:
        if value is None:
            return True  # `self._handle: Any` declares, assigns nothing
        if isinstance(value, cst.Name) and value.value == "None":
            return True
        if not isinstance(value, cst.Call):
            return False
        name = self.project.qualified_name(value.func, method.module, method)
        if name is not None and (self.library.owns(name) or self.project.lookup(name) is not None):
            return False
        return not self.resolver.resolve_all(value, method)

    def _imported_from_outside(self, name: str, function: FunctionInfo) -> bool:
        """A module-level name that only imports bind, each from outside the project
        (`if cuda: from sgl_kernel import f` / `else: from torch_npu._C import f`): a library
        function whose effects are unknown, not user code."""
        scope: Optional[FunctionInfo] = function
        while scope is not None:
            if scope.bindings.binds(name):
                return False
            scope = scope.parent
        bound = function.module.global_bindings.get(name)
        return bool(bound) and all(kind == "import" and imported is not None and not _module_of(self.project, imported) for kind, imported, _conditional, _none in bound)

    def unseen_user_callable(self, call: cst.Call, function: FunctionInfo) -> bool:
        """A call of something the analysis cannot see into that is user code: a local or
        parameter (`model(x)`, `step()`), or an attribute of `self` (`self.model(x)`)."""
        func = call.func
        if isinstance(func, cst.Name):
            if self.project.qualified_name(func, function.module, function) is not None or func.value in tables().python.not_user_callables:
                return False
            return not self._imported_from_outside(func.value, function)
        if isinstance(func, cst.Attribute):
            attribute = _self_attribute_called(func, function)
            return attribute is not None and not self.made_outside(function, attribute)
        return isinstance(func, cst.Subscript)

    def outside_handle_call(self, call: cst.Call, function: FunctionInfo) -> bool:
        """A call of (a method of) an attribute of `self` that every store fills with what a
        call outside the project returns (`self.model = FusedDetector(device)` from a package
        the project does not hold): no warm-up is asked of it, but what it does to its
        arguments (frees them or not) is unknown."""
        if not isinstance(call.func, cst.Attribute):
            return False
        attribute = _self_attribute_called(call.func, function)
        return attribute is not None and self.made_outside(function, attribute)

    def unknown_effects_call(self, call: cst.Call, function: FunctionInfo) -> bool:
        """An unresolved call whose effects are unknown: unseen user code or a handle made
        outside the project."""
        return self.unseen_user_callable(call, function) or self.outside_handle_call(call, function)

    def unresolved_user_call(self, call: cst.Call, function: FunctionInfo) -> bool:
        """A call that does not resolve but runs user code, whose effects are unknown: an
        unseen user callable, or a method of a local that every reaching binding fills with
        what a project function returned (an object from a factory without a return
        annotation: `infra = create_infra(d)` ... `infra.run()`, its class unknown)."""
        if self.resolver.resolve_all(call, function):
            return False
        if self.unseen_user_callable(call, function):
            return True
        root: cst.BaseExpression = call.func
        if not isinstance(root, cst.Attribute):
            return False
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name):
            return False
        bindings = function.bindings.reaching(root.value, call)
        if bindings and all(b.kind == "param" for b in bindings):
            return self._parameter_from_factory(function, root.value)
        return self._factory_made(bindings, function)

    def _factory_made(self, bindings, function: FunctionInfo) -> bool:
        """Every reaching binding fills the name with what a project factory, or a call
        outside the project (`create_test_infra(...)` from a module the checkout lacks),
        returned: an object whose class is unknown."""
        return bool(bindings) and all(
            b.kind == "assign" and isinstance(b.value, cst.Call) and self._made_by_unknown_call(b.value, function)
            for b in bindings
        )

    def _made_by_unknown_call(self, value: cst.Call, function: FunctionInfo) -> bool:
        """A project factory without a return annotation, or a call outside the project that
        is no framework function: what it returns has an unknown class."""
        return _calls_a_factory(self.resolver.resolve_all(value, function)) or self._outside_value(value, function)

    def _parameter_from_factory(self, function: FunctionInfo, parameter: str) -> bool:
        """An unannotated parameter that every call of the function in the project fills with
        what a project factory returned (`run(device, create_infra(d))`, or a local bound so
        in the caller): an object whose class is unknown, its methods user code."""
        key = (id(function), parameter)
        cached = self._from_factory.get(key)
        if cached is not None:
            return cached
        self._from_factory[key] = False  # recursion through the callers resolves to nothing
        param = next((p for p in named_parameters(function.node.params) if p.name.value == parameter), None)
        found = param is not None and param.annotation is None
        sites = 0
        for call, caller, _module in self.resolver.spelled_calls(function) if found else ():
            if caller is None or caller is function or not any(t.function is function for t in self.resolver.resolve_all(call, caller)):
                continue
            sites += 1
            argument = self.resolver.arguments(call, caller, function)[1].get(parameter)
            if isinstance(argument, cst.Call):
                found = self._made_by_unknown_call(argument, caller)
            elif isinstance(argument, cst.Name):
                found = self._factory_made(caller.bindings.reaching(argument.value, call), caller)
            else:
                found = False
            if not found:
                break
        result = found and sites > 0
        self._from_factory[key] = result
        return result


def _self_attribute_called(func: cst.Attribute, function: FunctionInfo) -> Optional[str]:
    """The first attribute of `self` in a called chain (`self.model(x)`, `self.infra.run()`:
    `model`, `infra`), or None for another receiver or a host method (logging, containers,
    host metadata such as `self.l1_input.buffer_address()`: no work at all)."""
    root: cst.BaseExpression = func
    while isinstance(root, cst.Attribute):
        root = root.value
    python = tables().python
    host = func.attr.value in python.host_methods or func.attr.value in python.mutating_methods
    host = host or func.attr.value in tables().host_metadata.methods
    if not (isinstance(root, cst.Name) and root.value == receiver_parameter(function)) or host:
        return None
    first = func
    while isinstance(first.value, cst.Attribute):
        first = first.value
    return first.attr.value


def _calls_a_factory(targets: list[Target]) -> bool:
    """The call runs project functions, none of them a constructor (whose instance's class,
    and so its methods, would be known)."""
    return bool(targets) and all(t.function.name != "__init__" for t in targets)


def _module_of(project, dotted: str) -> bool:
    """Whether a dotted name is in a module of the project (`pkg.mod.f`, `pkg.mod`)."""
    parts = dotted.split(".")
    return any(project.module(".".join(parts[:end])) is not None for end in range(len(parts), 0, -1))


def _assignments(cls):
    """Each assignment target of the class's methods: (method, its receiver, statement, target)."""
    for method in cls.methods.values():
        receiver = receiver_parameter(method)
        for node in method.nodes:
            if isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
                for target in assignment_targets(node):
                    yield method, receiver, node, target


def _attribute_stores(cls, attribute: str):
    """Each statement of the class's methods that assigns `self.<attribute>`: (method,
    statement, whether the attribute is the whole target rather than part of a tuple)."""
    for method, receiver, node, target in _assignments(cls):
        if any(_is_attribute_of(e, receiver, attribute) for e in target_leaves(target)):
            yield method, node, _is_attribute_of(target, receiver, attribute)


def _element_stores(cls, attribute: str):
    """Each `self.<attribute>[k] = value` (or an augmented or unpacking store into an element)
    of the class's methods: (method, statement, the value stored, None where not one value)."""
    for method, receiver, node, target in _assignments(cls):
        for leaf in target_leaves(target):
            if isinstance(leaf, cst.Subscript) and _is_attribute_of(leaf.value, receiver, attribute):
                single = leaf is target and not isinstance(node, cst.AugAssign)
                yield method, node, node.value if single else None


# The argument a container method stores as an element (the others store none that one
# value names: `update`, `extend`, `+=`).
_STORED_ARGUMENT = {"append": 0, "insert": 1, "setdefault": 1}
_CONTAINER_MUTATORS = frozenset({"append", "insert", "setdefault", "update", "extend", "__setitem__"})


def _mutating_calls(cls, attribute: str):
    """Each `self.<attribute>.append(v)` (or another method filling the container) of the
    class's methods: (method, call)."""
    for method in cls.methods.values():
        receiver = receiver_parameter(method)
        for node in method.nodes:
            if (
                type(node) is cst.Call
                and isinstance(node.func, cst.Attribute)
                and node.func.attr.value in _CONTAINER_MUTATORS
                and _is_attribute_of(node.func.value, receiver, attribute)
            ):
                yield method, node


def _empty_container(value: Optional[cst.BaseExpression]) -> bool:
    """`{}`, `[]`, `dict()`, `list()`; a bare annotation (`self.outputs: dict`) stores nothing."""
    if value is None:
        return True
    if isinstance(value, (cst.Dict, cst.List)):
        return not value.elements
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in ("dict", "list") and not value.args


def _is_attribute_of(expr: cst.BaseExpression, receiver: Optional[str], attribute: str) -> bool:
    return isinstance(expr, cst.Attribute) and expr.attr.value == attribute and isinstance(expr.value, cst.Name) and expr.value.value == receiver


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


def _calls(function: FunctionInfo) -> list[cst.Call]:
    return [n for n in function.nodes if type(n) is cst.Call]


def same_work(a: list[Target], b: list[Target]) -> bool:
    """Two calls do the same work when they can run the same function on the same class
    (a side whose class of `self` is unknown matches any)."""
    return any(
        x.function is y.function and (x.self_class is y.self_class or x.self_class is None or y.self_class is None)
        for x in a
        for y in b
    )
