"""A capture region: the span of a function body between a capture's begin and its matching
end, as a framework plug-in finds it. Positions decide membership: a node is inside when it
starts after the begin call and ends before the end call, which handles try/finally, with and
branches uniformly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from ..semantic.project import FunctionInfo, ModuleInfo

Position = tuple[int, int]


@dataclass(eq=False)
class Region:
    kind: str  # "ttnn"
    function: FunctionInfo
    begin: cst.Call  # anchor of TRC401/TRC404/TRC406
    begin_statement: cst.CSTNode
    end: Optional[cst.Call]
    trace_id: Optional[str]  # normalized expression the begin's result was bound to
    start: Position  # just after the begin call
    stop: Position  # the start of the end call, or the end of the function
    # The device expression passed to begin, normalized.
    device: Optional[str] = None
    release_calls: list[cst.Call] = field(default_factory=list)
    execute_calls: list[cst.Call] = field(default_factory=list)
    # A trace id kept on `self` (`self.tid = begin(...)`, or `tid = begin(...)` and later
    # `self.tid = tid`): the attribute, and the other methods of the class that execute or
    # release that trace, with the call.
    kept_as: Optional[str] = None
    method_executes: list[tuple[FunctionInfo, cst.Call]] = field(default_factory=list)
    method_releases: list[tuple[FunctionInfo, cst.Call]] = field(default_factory=list)

    @property
    def module(self) -> ModuleInfo:
        return self.function.module

    def contains(self, node: cst.CSTNode) -> bool:
        # Some whitespace nodes (inside `match` patterns) have no recorded position.
        code_range = self.module.positions.get(node)
        if code_range is None:
            return False
        start = (code_range.start.line, code_range.start.column)
        end = (code_range.end.line, code_range.end.column)
        return self.start <= start and end <= self.stop
