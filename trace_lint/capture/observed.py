"""The engine's view of the runtime guard's records (core/observed.py): for a call with no
static target, the project functions observed running from that call site, when both files
still hold what they held when the guard saw the call."""

from __future__ import annotations

import os
import re
from typing import Any, Optional

from ..core.observed import Callee, Edge, Records, file_hash, load
from ..semantic.project import ClassInfo, FunctionInfo


class ObservedCalls:
    """The observed edges of one engine run, looked up by call site. Freshness is judged
    against the text the run checks (an editor's unsaved buffer included)."""

    def __init__(self, project, settings, records: Records):
        self.project = project
        self.root = os.path.realpath(settings.root)
        self._by_site: dict[tuple[str, int], list[Edge]] = {}
        for edge in records.edges:
            self._by_site.setdefault((edge.caller.file, edge.caller.line), []).append(edge)
        self._files: Optional[dict[str, Any]] = None
        self._relative: dict[int, Optional[str]] = {}
        self._hashes: dict[int, str] = {}

    def __bool__(self) -> bool:
        return bool(self._by_site)

    def _rel(self, module) -> Optional[str]:
        key = id(module)
        if key not in self._relative:
            real = os.path.realpath(module.path)
            rel = os.path.relpath(real, self.root)
            self._relative[key] = None if rel.startswith("..") or os.path.isabs(rel) else rel.replace(os.sep, "/")
        return self._relative[key]

    def _module(self, rel: str):
        if self._files is None:
            self._files = {}
            for module in self.project.modules:
                found = self._rel(module)
                if found is not None:
                    self._files.setdefault(found, module)
        return self._files.get(rel)

    def _hash(self, module) -> str:
        found = self._hashes.get(id(module))
        if found is None:
            found = self._hashes[id(module)] = file_hash(self.project.raw_bytes(module))
            # The finding depends on this file's text even when the edge turns out stale.
            self.project.search_hits.add(id(module))
        return found

    def targets(self, module, line: int, column: int) -> list[tuple[Any, Edge]]:
        """(function, edge) for each fresh observed edge from the call at (line, column:
        0-based characters) of `module`."""
        rel = self._rel(module)
        if rel is None:
            return []
        edges = self._by_site.get((rel, line))
        if not edges:
            return []
        lines = re.split(r"\r\n|\r|\n", module.text)
        line_text = lines[line - 1] if line <= len(lines) else ""
        byte_column = len(line_text[:column].encode("utf-8", "surrogatepass"))
        found: list[tuple[Any, Edge]] = []
        done: set[int] = set()
        for edge in edges:
            if edge.caller.column is not None and edge.caller.column != byte_column:
                continue
            callee_module = self._module(edge.callee.file)
            if callee_module is None or self._hash(module) != edge.caller_hash or self._hash(callee_module) != edge.callee_hash:
                continue  # stale: a file changed since the guard saw the call
            function = find_function(callee_module, edge.callee)
            if function is not None and id(function) not in done:
                done.add(id(function))
                found.append((function, edge))
        return found


def find_function(module, callee: Callee):
    """The project function a recorded callee names: by qualified name, else (Pythons
    without co_qualname) by name and first line."""
    module.load()
    if not module.ok:
        return None
    parts = [part for part in callee.qualname.split(".") if part != "<locals>"]
    definition: Any = module.top_level.get(parts[0]) if parts[0] in module.top_level else None
    for part in parts[1:]:
        if isinstance(definition, ClassInfo):
            definition = definition.methods.get(part) or module.classes.get(f"{definition.qualname}.{part}")
        elif isinstance(definition, FunctionInfo):
            definition = definition.nested.get(part)
        else:
            definition = None
    if isinstance(definition, FunctionInfo) and _starts_at(module, definition, callee.line):
        return definition
    for function in module.iter_functions():
        if function.name == parts[-1] and _starts_at(module, function, callee.line):
            return function
    return None


def _starts_at(module, function, line: int) -> bool:
    node = function.node
    lines = {module.range(node).start.line, module.range(node.name).start.line}
    lines.update(module.range(decorator).start.line for decorator in node.decorators)
    return line in lines


def observed_calls(project, settings) -> Optional[ObservedCalls]:
    """The engine's view of the records; None when there are none or they are turned off."""
    records = load(settings)
    if not records.edges:
        return None
    return ObservedCalls(project, settings, records)


def step_message(qualname: str, edge: Edge) -> str:
    return f"calls `{qualname}` (observed at run time by {edge.witness()}; no static target)"
