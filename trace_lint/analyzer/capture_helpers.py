"""Capture helpers: functions whose capture region calls one of their own parameters
(`def capture_trace(dev, run): ... run() ...`). The callable passed at each call site is
captured work. A function that passes its own parameter on to a helper is a helper too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

import libcst as cst

from .calls import CallResolver
from .project import FunctionInfo, ModuleInfo, Project
from .regions import Region, call_arguments


@dataclass(eq=False)
class Helper:
    function: Optional[FunctionInfo]  # None for a configured helper outside the project
    name: str  # how findings name it
    params: set[str] = field(default_factory=set)  # parameters whose argument is captured


@dataclass(eq=False)
class HelperSite:
    """A call of a capture helper, and what it captures."""

    helper: Helper
    caller: Optional[FunctionInfo]
    module: ModuleInfo
    call: cst.Call
    argument: cst.BaseExpression  # the callable as written at the call site
    target: FunctionInfo  # what it runs (a lambda has a FunctionInfo of its own)


def _parameter_arguments(helper: Helper, call: cst.Call) -> list[cst.BaseExpression]:
    """The arguments of a helper call that land in its captured parameters."""
    function = helper.function
    if function is None:
        # A configured helper outside the project: any argument may be the callable.
        return [a.value for a in call.args if not a.star]
    params = list(function.params)
    if function.cls is not None and params and isinstance(call.func, cst.Attribute):
        params = params[1:]  # bound: the receiver fills the first parameter
    positional, keywords = call_arguments(call)
    found = [value for name, value in zip(params, positional) if name in helper.params]
    found += [value for name, value in keywords.items() if name in helper.params]
    return found


class CaptureHelpers:
    def __init__(self, project: Project, resolver: CallResolver, configured: Iterable[str]):
        self.project = project
        self.resolver = resolver
        self.configured = set(configured)
        self.helpers: dict[int, Helper] = {}
        self.sites: list[HelperSite] = []
        # Helpers with at least one call in the project: their warm-up is judged at the calls.
        self.called: set[int] = set()

    def _helper_for(self, function: FunctionInfo) -> Helper:
        key = id(function)
        if key not in self.helpers:
            self.helpers[key] = Helper(function, function.qualname)
        return self.helpers[key]

    def find(self, regions: Iterable[Region]) -> list[HelperSite]:
        for region in regions:
            function = region.function
            parameters = set(function.params) - _rebound(function)
            for node in function.nodes:
                if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in parameters and region.contains(node):
                    self._helper_for(function).params.add(node.func.value)
        for name in self.configured:
            definition = self.project.lookup(name)
            if isinstance(definition, FunctionInfo):
                helper = self._helper_for(definition)
                helper.params.update(definition.params)
        self._propagate()
        self._collect_sites()
        return self.sites

    def _calls_of(self, helper: Helper) -> Iterable[tuple[cst.Call, Optional[FunctionInfo], ModuleInfo]]:
        function = helper.function
        assert function is not None
        for module in self.project.modules_calling(function.name):
            for call, caller in module.iter_calls((function.name,)):
                if callee_name(call) != function.name:
                    continue  # only a call spelled with the helper's name can reach it
                if caller is not None and caller is not function and self.resolver.resolve(call, caller) is function:
                    yield call, caller, module
                elif caller is None and self.resolver.callable_target(call.func, None, module) is function:
                    yield call, caller, module

    def _propagate(self) -> None:
        """A function passing its own parameter as a helper's callable is a helper too."""
        changed = True
        while changed:
            changed = False
            for helper in list(self.helpers.values()):
                for call, caller, _ in self._calls_of(helper):
                    if caller is None:
                        continue
                    parameters = set(caller.params) - _rebound(caller)
                    for argument in _parameter_arguments(helper, call):
                        if isinstance(argument, cst.Name) and argument.value in parameters:
                            outer = self._helper_for(caller)
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
        for argument in _parameter_arguments(helper, call):
            if caller is not None and isinstance(argument, cst.Name) and argument.value in caller.params and id(caller) in self.helpers:
                continue  # passed through to the caller's own callers
            target = self.resolver.callable_target(argument, caller, module)
            if target is not None and target is not helper.function:
                self.sites.append(HelperSite(helper, caller, module, call, argument, target))


def callee_name(call: cst.Call) -> Optional[str]:
    func = call.func
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


def _rebound(function: FunctionInfo) -> set[str]:
    """Parameters assigned again in the body: no longer the caller's callable."""
    bound = set()
    for node in function.nodes:
        if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Name):
            bound.add(node.target.value)
    return bound & set(function.params)


__all__ = ["CaptureHelpers", "Helper", "HelperSite"]
