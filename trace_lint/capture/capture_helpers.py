"""Capture helpers: functions whose capture region calls one of their own parameters
(`def capture_trace(dev, run): ... run() ...`). The callable passed at each call site is
captured work. A function that passes its own parameter on to a helper is a helper too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

import libcst as cst

from ..semantic.bindings import assignment_targets
from ..semantic.calls import CallResolver, callee_name
from ..semantic.receivers import receiver_parameter
from ..semantic.project import ClassInfo, FunctionInfo, ModuleInfo, Project
from ..frameworks.region import Region


@dataclass(eq=False)
class Helper:
    function: Optional[FunctionInfo]  # None for a configured helper outside the project
    name: str  # how findings name it
    params: set[str] = field(default_factory=set)  # parameters whose argument is captured
    # A class helper (`Tracer(fn)`): `function` is its `__init__`, which stores the captured
    # parameters on `self`; the methods whose regions call them, and those attributes.
    cls: Optional[ClassInfo] = None
    capturing_methods: list[FunctionInfo] = field(default_factory=list)
    stored: set[str] = field(default_factory=set)
    # Helpers this one hands its callable on to (it captures through them).
    forwards_to: list["Helper"] = field(default_factory=list)


@dataclass(eq=False)
class HelperSite:
    """A call of a capture helper, and what it captures."""

    helper: Helper
    caller: Optional[FunctionInfo]
    module: ModuleInfo
    call: cst.Call
    argument: cst.BaseExpression  # the callable as written at the call site
    target: FunctionInfo  # what it runs (a lambda has a FunctionInfo of its own)


class CaptureHelpers:
    def __init__(self, project: Project, resolver: CallResolver, configured: Iterable[str]):
        self.project = project
        self.resolver = resolver
        self.configured = set(configured)
        self.helpers: dict[int, Helper] = {}
        self.sites: list[HelperSite] = []
        self.regions: list[Region] = []
        # Helpers with at least one call in the project: their warm-up is judged at the calls.
        self.called: set[int] = set()

    def _parameter_arguments(self, helper: Helper, call: cst.Call, caller: Optional[FunctionInfo], module: ModuleInfo) -> list[cst.BaseExpression]:
        """The arguments of a helper call that land in its captured parameters."""
        function = helper.function
        if function is None:
            # A configured helper outside the project: any argument may be the callable.
            return [a.value for a in call.args if not a.star]
        bound = self.resolver.bind_arguments(call, caller, function, module)
        return [a.value for a in call.args if bound.parameter_of(a) in helper.params]

    def _helper_for(self, function: FunctionInfo) -> Helper:
        key = id(function)
        if key not in self.helpers:
            self.helpers[key] = Helper(function, function.qualname)
        return self.helpers[key]

    def find(self, regions: Iterable[Region]) -> list[HelperSite]:
        self.regions = list(regions)
        for region in self.regions:
            function = region.function
            parameters = set(function.params) - _rebound(function)
            for node in function.nodes:
                if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in parameters and region.contains(node):
                    helper = self._helper_for(function)
                    helper.params.add(node.func.value)
                    if function.cls is not None and function.name == "__init__":
                        # Each construction of the class is a call of the helper.
                        helper.cls, helper.name = function.cls, function.cls.name
                        if function not in helper.capturing_methods:
                            helper.capturing_methods.append(function)
            self._class_helper(region)
        for name in self.configured:
            definition = self.project.lookup(name)
            if isinstance(definition, FunctionInfo) and not is_contextmanager(definition):
                helper = self._helper_for(definition)
                helper.params.update(definition.params)
        self._propagate()
        self._collect_sites()
        return self.sites

    def _class_helper(self, region: Region) -> None:
        """A method whose region calls `self.<attr>()`, where `__init__` stored a parameter in
        `self.<attr>`: each construction of the class captures that argument."""
        method = region.function
        cls = method.cls
        receiver = receiver_parameter(method)
        if cls is None or receiver is None:
            return
        init = self.resolver.method(cls, "__init__")
        if init is None or receiver_parameter(init) is None:
            return
        stored = _stored_parameters(init)
        for node in method.nodes:
            if (
                isinstance(node, cst.Call)
                and isinstance(node.func, cst.Attribute)
                and isinstance(node.func.value, cst.Name)
                and node.func.value.value == receiver
                and node.func.attr.value in stored
                and region.contains(node)
            ):
                helper = self._helper_for(init)
                helper.cls = cls
                helper.name = cls.name
                helper.params.add(stored[node.func.attr.value])
                helper.stored.add(node.func.attr.value)
                if method not in helper.capturing_methods:
                    helper.capturing_methods.append(method)

    def stored_callables(self, function: FunctionInfo) -> set[str]:
        """The `self.<attr>` callables a class helper's method captures (judged at the
        constructions, not in the method)."""
        found: set[str] = set()
        for helper in self.helpers.values():
            if helper.cls is not None and function in helper.capturing_methods:
                found |= helper.stored
        return found

    def captured_calls(self, site: HelperSite) -> Optional[list[tuple[cst.Call, FunctionInfo]]]:
        """How the capture calls the callable a site hands its helper: each call of it in the
        regions of the helper, or of the helpers it hands the callable on to (`run(x)` in a
        function helper, `self.step(x)` in a class helper's method). None where that is not
        known (a configured helper outside the project)."""
        helper = site.helper
        if helper.function is None:
            return None
        bound = self.resolver.bind_arguments(site.call, site.caller, helper.function, site.module)
        parameters = {bound.parameter_of(a) for a in site.call.args if a.value is site.argument}
        found: list[tuple[cst.Call, FunctionInfo]] = []
        seen: set[tuple[int, str]] = set()
        for parameter in parameters & helper.params:
            calls = self._parameter_calls(helper, parameter, seen)
            if calls is None:
                return None
            found.extend(calls)
        return found

    def _parameter_calls(self, helper: Helper, parameter: str, seen: set[tuple[int, str]]) -> Optional[list[tuple[cst.Call, FunctionInfo]]]:
        function = helper.function
        if function is None:
            return None
        if (id(helper), parameter) in seen:
            return []  # a helper handing the callable back to itself adds no call
        seen.add((id(helper), parameter))

        def names_parameter(expr: cst.BaseExpression) -> bool:
            return isinstance(expr, cst.Name) and expr.value == parameter

        calls = self._region_calls(function, names_parameter)
        if calls is None:
            return None
        found = [(call, function) for call in calls]
        if helper.cls is not None:
            attributes = {a for a, p in _stored_parameters(function).items() if p == parameter}
            for method in helper.capturing_methods:
                receiver = receiver_parameter(method)

                def names_attribute(expr: cst.BaseExpression, receiver=receiver) -> bool:
                    return isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == receiver and expr.attr.value in attributes

                calls = self._region_calls(method, names_attribute)
                if calls is None:
                    return None
                found.extend((call, method) for call in calls)
        for inner in helper.forwards_to:
            for call, caller, module in self._calls_of(inner):
                if caller is not function or inner.function is None:
                    continue
                bound = self.resolver.bind_arguments(call, caller, inner.function, module)
                for argument in call.args:
                    if isinstance(argument.value, cst.Name) and argument.value.value == parameter and bound.parameter_of(argument) in inner.params:
                        calls = self._parameter_calls(inner, bound.parameter_of(argument), seen)  # type: ignore[arg-type]
                        if calls is None:
                            return None
                        found.extend(calls)
        return found

    def _region_calls(self, function: FunctionInfo, names_callable) -> Optional[list[cst.Call]]:
        """The calls of the callable (the expressions `names_callable` accepts) in the
        function's regions; None where a region hands it to some other call, which may call
        it otherwise."""
        regions = [r for r in self.regions if r.function is function]
        found: list[cst.Call] = []
        for node in function.nodes:
            if not isinstance(node, cst.Call) or not any(region.contains(node) for region in regions):
                continue
            if any(names_callable(argument.value) for argument in node.args):
                return None
            if names_callable(node.func):
                found.append(node)
        return found

    def _calls_of(self, helper: Helper) -> Iterable[tuple[cst.Call, Optional[FunctionInfo], ModuleInfo]]:
        function = helper.function
        assert function is not None
        if helper.cls is not None:
            yield from self._constructions(helper.cls)
            return
        for call, caller, module in self.resolver.spelled_calls(function):
            if caller is not None and caller is not function and self.resolver.resolve(call, caller) is function:
                yield call, caller, module
            elif caller is None and self.resolver.callable_target(call.func, None, module) is function:
                yield call, caller, module

    def _constructions(self, cls: ClassInfo) -> Iterable[tuple[cst.Call, Optional[FunctionInfo], ModuleInfo]]:
        for module in self.project.modules_calling(cls.name):
            for call, caller in module.iter_calls((cls.name,)):
                if callee_name(call) != cls.name:
                    continue
                name = self.project.qualified_name(call.func, module, caller)
                if name is not None and self.project.lookup(name) is cls:
                    yield call, caller, module

    def _propagate(self) -> None:
        """A function passing its own parameter as a helper's callable is a helper too."""
        changed = True
        while changed:
            changed = False
            for helper in list(self.helpers.values()):
                for call, caller, module in self._calls_of(helper):
                    if caller is None:
                        continue
                    parameters = set(caller.params) - _rebound(caller)
                    for argument in self._parameter_arguments(helper, call, caller, module):
                        if isinstance(argument, cst.Name) and argument.value in parameters:
                            outer = self._helper_for(caller)
                            if helper not in outer.forwards_to:
                                outer.forwards_to.append(helper)
                            if argument.value not in outer.params:
                                outer.params.add(argument.value)
                                changed = True

    def _collect_sites(self) -> None:
        for helper in list(self.helpers.values()):
            for call, caller, module in self._calls_of(helper):
                self.called.add(id(helper.function))
                self._add_sites(helper, call, caller, module)
        external = {n for n in self.configured if not isinstance(self.project.lookup(n), FunctionInfo)}
        if external:
            tokens = [n.rsplit(".", 1)[-1].encode() for n in external]
            for module in self.project.modules_mentioning(*tokens):
                for call, caller in module.iter_calls(module.tokens_for(external)):
                    name = self.project.qualified_name(call.func, module, caller)
                    if name in external:
                        self._add_sites(Helper(None, name), call, caller, module)

    def _add_sites(self, helper: Helper, call: cst.Call, caller: Optional[FunctionInfo], module: ModuleInfo) -> None:
        for argument in self._parameter_arguments(helper, call, caller, module):
            if caller is not None and isinstance(argument, cst.Name) and argument.value in caller.params and id(caller) in self.helpers:
                continue  # passed through to the caller's own callers
            target = self.resolver.callable_target(argument, caller, module)
            if target is not None and target is not helper.function:
                self.sites.append(HelperSite(helper, caller, module, call, argument, target))


def _stored_parameters(init: FunctionInfo) -> dict[str, str]:
    """`self.<attr> = <param>` in `__init__`: attribute -> parameter (a parameter rebound
    before it is stored is not the caller's)."""
    receiver = receiver_parameter(init)
    parameters = set(init.params) - {receiver} - _rebound(init)
    stored: dict[str, str] = {}
    for node in init.nodes:
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value in parameters:
            for t in assignment_targets(node):
                if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == receiver:
                    stored[t.attr.value] = node.value.value
    return stored


CONTEXTMANAGER_DECORATORS = frozenset({"contextlib.contextmanager", "contextlib.asynccontextmanager"})


def is_contextmanager(function: FunctionInfo) -> bool:
    """Decorated with `@contextlib.contextmanager` (however imported)."""
    project_names = function.module
    for decorator in function.node.decorators:
        expr = decorator.decorator
        if isinstance(expr, cst.Attribute) and expr.attr.value in ("contextmanager", "asynccontextmanager"):
            return True
        if isinstance(expr, cst.Name) and project_names.imports.get(expr.value) in CONTEXTMANAGER_DECORATORS:
            return True
    return False


def contextmanager_regions(project: Project, resolver: CallResolver, regions: Iterable[Region], configured: Iterable[str] = ()) -> list[Region]:
    """`@contextlib.contextmanager` capture helpers: a generator whose region (begin ... end)
    holds its `yield`, or one named in `capture-helpers`. The body of each `with helper(...):`
    is a region of the function holding the `with` (framing code, like a graph `with`)."""
    helpers: dict[int, tuple[FunctionInfo, str]] = {}
    for region in regions:
        function = region.function
        if id(function) in helpers or not is_contextmanager(function):
            continue
        if any(isinstance(node, (cst.Yield,)) and region.contains(node) for node in function.nodes):
            helpers[id(function)] = (function, region.kind)
    for name in configured:
        definition = project.lookup(name)
        if isinstance(definition, FunctionInfo) and is_contextmanager(definition) and id(definition) not in helpers:
            helpers[id(definition)] = (definition, "declared")
    found: list[Region] = []
    for helper, kind in helpers.values():
        for call, caller, module in resolver.spelled_calls(helper):
            if caller is None:
                continue
            item = module.parent(call)
            statement = module.parent(item) if isinstance(item, cst.WithItem) else None
            if not isinstance(statement, cst.With) or item.item is not call:
                continue
            if resolver.resolve(call, caller) is not helper:
                continue
            found.append(
                Region(
                    kind=kind,
                    function=caller,
                    begin=call,
                    begin_statement=statement,
                    end=None,  # a `with` always closes
                    trace_id=None,
                    start=module.start(statement.body),
                    stop=module.end(statement.body),
                )
            )
    return found


def _rebound(function: FunctionInfo) -> set[str]:
    """Parameters assigned again in the body: no longer the caller's callable."""
    bound = {t.value for node in function.nodes if isinstance(node, cst.Assign) for t in assignment_targets(node) if isinstance(t, cst.Name)}
    return bound & set(function.params)


__all__ = ["CaptureHelpers", "Helper", "HelperSite", "contextmanager_regions", "is_contextmanager"]
