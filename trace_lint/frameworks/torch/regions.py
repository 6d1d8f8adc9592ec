"""CUDA-graph captures (torch): where device work is recorded into a `torch.cuda.CUDAGraph`.

- `with torch.cuda.graph(g, ...):` -- the `with` body is the region (kind "cuda-graph");
- `g.capture_begin()` ... `g.capture_end()` on a CUDAGraph -- like ttnn's begin/end
  (kind "cuda-graph-begin"), the end matched by the same receiver;
- the callables and modules given to `torch.cuda.make_graphed_callables` -- captured work,
  not a lexical region (root kind "cuda-graph-callable").

Nothing here knows about rules; names come from the [torch] table.
"""

from __future__ import annotations


from typing import Optional

import libcst as cst

from ...core.api_tables import tables
from ...semantic.calls import CallResolver
from ...semantic.bindings import assignment_targets, named_parameters, target_names
from ...semantic.project import ClassInfo, FunctionInfo, ModuleInfo, Project
from ...semantic.receivers import receiver_parameter
from ..region import Region
from ...semantic.nodes import call_arguments, iter_body_nodes
from ...frontend.syntax_walk import SMALL_STATEMENTS


def _single_bindings(function: FunctionInfo) -> dict[str, Optional[cst.BaseExpression]]:
    """Local name -> the value of its only binding (None when bound more than once or not by `=`)."""
    cached = getattr(function, "_single_bindings", None)
    if cached is not None:
        return cached
    seen: dict[str, Optional[cst.BaseExpression]] = {}
    for node in iter_body_nodes(function):
        if not isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.For, cst.CompFor, cst.AsName)):
            continue
        targets = assignment_targets(node)
        # Only `name = value` (one target) and `name: T = value` say what the name holds.
        value = node.value if isinstance(node, cst.AnnAssign) or (isinstance(node, cst.Assign) and len(targets) == 1) else None
        for target in targets:
            if isinstance(target, cst.Name):
                seen[target.value] = value if target.value not in seen else None
            else:
                for element in target_names(target):
                    seen[element] = None
    function._single_bindings = seen  # type: ignore[attr-defined]
    return seen


def _annotation_of(function: FunctionInfo, name: str) -> Optional[cst.BaseExpression]:
    for param in named_parameters(function.node.params):
        if param.name.value == name and param.annotation is not None:
            return param.annotation.annotation
    return None


def _is_graph(project: Project, function: FunctionInfo, receiver: cst.BaseExpression) -> Optional[bool]:
    """Whether the receiver is a `torch.cuda.CUDAGraph`: True, False, or None (unknown)."""
    api = tables().torch
    module = function.module

    def names_graph(expr: Optional[cst.BaseExpression], owner_module: ModuleInfo, owner: Optional[FunctionInfo]) -> bool:
        return expr is not None and project.qualified_name(expr, owner_module, owner) in api.graph_class

    if isinstance(receiver, cst.Call):
        return names_graph(receiver.func, module, function)
    def value_is_graph(value: cst.BaseExpression) -> Optional[bool]:
        if isinstance(value, cst.IfExp):
            # `None if disabled else torch.cuda.CUDAGraph()`: the operand that is not None.
            parts = [p for p in (value.body, value.orelse) if not (isinstance(p, cst.Name) and p.value == "None")]
            answers = {value_is_graph(p) for p in parts}
            return answers.pop() if len(answers) == 1 else None
        if isinstance(value, cst.Call):
            return names_graph(value.func, module, function)
        if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Attribute) and _on_self(value.value, function):
            # `self.graphs[bs]`: what every store into the container puts there.
            stored = [v for _, v in function.cls.element_values.get(value.value.attr.value, ())]  # type: ignore[union-attr]
            answers = {isinstance(v, cst.Call) and names_graph(v.func, function.cls.module, None) for v in stored}  # type: ignore[union-attr]
            return True if answers == {True} else None
        return None

    if isinstance(receiver, cst.Name):
        if receiver.value in function.params:
            annotation = _annotation_of(function, receiver.value)
            return True if names_graph(annotation, module, function) else (None if annotation is None else False)
        if not function.bindings.binds(receiver.value):
            return None
        # Every binding that reaches the call (a `graph = None` placeholder cannot).
        answers = set()
        for binding in function.bindings.reaching(receiver.value, receiver):
            value = binding.value if binding.kind in ("assign", "annassign", "walrus") else None
            if isinstance(value, cst.Name) and value.value == "None":
                continue
            answers.add(value_is_graph(value) if value is not None else None)
        if False in answers:
            return False
        return True if answers == {True} else None
    if isinstance(receiver, cst.Attribute) and _on_self(receiver, function):
        constructor = function.cls.attribute_types.get(receiver.attr.value)  # type: ignore[union-attr]
        if constructor is not None:
            return names_graph(constructor, function.cls.module, None)  # type: ignore[union-attr]
        # `self.graph = None if disabled else torch.cuda.CUDAGraph()`: every value stored.
        answers = set()
        for method, value in function.cls.attribute_values.get(receiver.attr.value, ()):  # type: ignore[union-attr]
            for part in (value.body, value.orelse) if isinstance(value, cst.IfExp) else (value,):
                if not (isinstance(part, cst.Name) and part.value == "None"):
                    answers.add(isinstance(part, cst.Call) and names_graph(part.func, method.module, method))
        return True if answers == {True} else None
    if isinstance(receiver, cst.Subscript):
        return value_is_graph(receiver)
    return None


def dotted_parts(expr: cst.BaseExpression) -> list[str]:
    """The names of a callee as written, calls skipped: `get_accelerator().capture_to_graph`
    -> ["get_accelerator", "capture_to_graph"], `self.device_module.graph` -> ["self",
    "device_module", "graph"]."""
    parts: list[str] = []
    while True:
        if isinstance(expr, cst.Attribute):
            parts.append(expr.attr.value)
            expr = expr.value
        elif isinstance(expr, cst.Call):
            expr = expr.func
        elif isinstance(expr, cst.Name):
            parts.append(expr.value)
            break
        else:
            break
    parts.reverse()
    return parts


def is_capture_context(project: Project, call: cst.Call, function: FunctionInfo, capture_contexts=()) -> bool:
    """`torch.cuda.graph(...)`, or a context manager named in `capture-contexts` (a dotted
    tail of the callee as written, or its full qualified name)."""
    module = function.module
    name = project.qualified_name(call.func, module, function)
    if name in tables().torch.graph_context:
        return True
    if not capture_contexts:
        return False
    parts = dotted_parts(call.func)
    for context in capture_contexts:
        wanted = context.split(".")
        if name == context or (len(parts) >= len(wanted) and parts[-len(wanted):] == wanted):
            return True
    return False


def find_cuda_graph_regions(project: Project, function: FunctionInfo, capture_contexts: tuple[str, ...] = ()) -> list[Region]:
    """The CUDA-graph regions of one function, in source order; `capture_contexts` are the
    configured context managers that capture like `torch.cuda.graph`."""
    api = tables().torch
    module = function.module
    regions: list[Region] = []
    begins: list[tuple[cst.Call, cst.CSTNode]] = []
    ends: list[cst.Call] = []
    statement: Optional[cst.CSTNode] = None
    for node in iter_body_nodes(function):
        kind = type(node)
        if kind in SMALL_STATEMENTS:
            statement = node
        if kind is cst.With:
            for item in node.items:
                call = item.item
                if isinstance(call, cst.Call) and is_capture_context(project, call, function, capture_contexts):
                    positional, keywords = call_arguments(call)
                    graph = keywords.get("cuda_graph", positional[0] if positional else None)
                    regions.append(
                        Region(
                            kind="cuda-graph",
                            function=function,
                            begin=call,
                            begin_statement=node,
                            end=None,  # a `with` always closes
                            trace_id=module.normalized(graph) if graph is not None else None,
                            start=module.start(node.body),
                            stop=module.end(node.body),
                        )
                    )
                    break
        elif kind is cst.Call and type(node.func) is cst.Attribute:
            method = node.func.attr.value
            if method in api.graph_begin_methods:
                # `capture_begin(pool=..., capture_error_mode=...)` begins as the bare call does.
                begins.append((node, statement if statement is not None else node))
            elif method in api.graph_end_methods and not node.args:
                ends.append(node)
    if not begins and not regions:
        return []
    body_end = module.end(function.node)
    for begin, begin_statement in begins:
        receiver = begin.func.value  # type: ignore[attr-defined]
        key = module.normalized(receiver)
        later = [e for e in ends if module.start(e) >= module.end(begin) and module.normalized(e.func.value) == key]  # type: ignore[attr-defined]
        known = _is_graph(project, function, receiver)
        # An unknown receiver counts only with its matching `capture_end()` in the same function.
        if known is False or (known is None and not (later and _plain_receiver(function, receiver))):
            continue
        matched = later[0] if later else None
        regions.append(
            Region(
                kind="cuda-graph-begin",
                function=function,
                begin=begin,
                begin_statement=begin_statement,
                end=matched,
                trace_id=key,
                start=module.end(begin),
                stop=module.start(matched) if matched is not None else body_end,
            )
        )
    # `g.replay()` runs what the region recorded (TRC403 reads it like `execute_trace`).
    for region in regions:
        if region.trace_id is None:
            continue
        region.execute_calls = [
            node for node in function.nodes
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and not node.args
            and node.func.attr.value in api.graph_replay_methods
            and module.normalized(node.func.value) == region.trace_id
        ]
    regions.sort(key=lambda r: r.start)
    return regions


def _plain_receiver(function: FunctionInfo, receiver: cst.BaseExpression) -> bool:
    """An unannotated parameter, or `self.attr` with no recorded constructor: it could be a graph."""
    if isinstance(receiver, cst.Name):
        return receiver.value in function.params and _annotation_of(function, receiver.value) is None
    return isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) and receiver.value.value == receiver_parameter(function)


def is_graph_end(region: Region, call: cst.Call) -> bool:
    """`g.capture_end()` on this region's graph."""
    if region.kind != "cuda-graph-begin" or not isinstance(call.func, cst.Attribute) or call.args:
        return False
    return call.func.attr.value in tables().torch.graph_end_methods and region.module.normalized(call.func.value) == region.trace_id


# -- make_graphed_callables -----------------------------------------------------------------


class GraphedCallables:
    """The project functions that `torch.cuda.make_graphed_callables` captures, per call site."""

    def __init__(self, project: Project, resolver: CallResolver):
        self.project = project
        self.resolver = resolver
        # Synthetic calls handed to the resolver stay alive so their ids are never reused.
        self._synthetic: list[cst.Call] = []

    def find(self, module: ModuleInfo) -> list[tuple[cst.Call, FunctionInfo]]:
        api = tables().torch
        found = []
        for call, function in module.iter_calls(module.tokens_for(api.graphed_callables)):
            if self.project.qualified_name(call.func, module, function) not in api.graphed_callables:
                continue
            positional, keywords = call_arguments(call)
            argument = keywords.get("callables", positional[0] if positional else None)
            if argument is None:
                continue
            elements = [e.value for e in argument.elements] if isinstance(argument, (cst.Tuple, cst.List)) else [argument]
            for element in elements:
                target = self._target(element, module, function, 0)
                if target is not None:
                    found.append((call, target))
        return found

    def _target(self, expr: cst.BaseExpression, module: ModuleInfo, function: Optional[FunctionInfo], depth: int) -> Optional[FunctionInfo]:
        if depth > 8:
            return None
        expr = _strip_passthrough(expr)
        if isinstance(expr, cst.Call):
            cls = self.resolver.class_of(expr.func, module, function)
            return self._forward(cls) if cls is not None else None
        if isinstance(expr, cst.Name):
            bindings = _single_bindings(function) if function is not None else _module_bindings(module)
            if expr.value in bindings:
                value = bindings[expr.value]
                return self._target(value, module, function, depth + 1) if value is not None else None
        if isinstance(expr, (cst.Name, cst.Attribute)):
            definition = None
            name = self.project.qualified_name(expr, module, function)
            if name is not None:
                definition = self.project.lookup(name)
            if isinstance(definition, FunctionInfo):
                return definition
            if isinstance(definition, ClassInfo) or function is None:
                return None  # the class itself is not a callable to graph
            if isinstance(expr, cst.Attribute) and _on_self(expr, function):
                attribute_cls = self.resolver.attribute_class(function.cls, expr.attr.value)  # type: ignore[arg-type]
                if attribute_cls is not None:
                    return self._forward(attribute_cls)
            # A bound method or nested function: what calling it would run.
            synthetic = cst.Call(func=expr)
            self._synthetic.append(synthetic)
            return self.resolver.resolve(synthetic, function)
        return None

    def _forward(self, cls: ClassInfo) -> Optional[FunctionInfo]:
        # A module is graphed through its forward; a plain callable object through __call__.
        return self.resolver.method(cls, "forward") or self.resolver.method(cls, "__call__")


def _module_bindings(module: ModuleInfo) -> dict[str, Optional[cst.BaseExpression]]:
    """Module-level name -> the value of its only top-level `=` binding."""
    cached = getattr(module, "_single_bindings", None)
    if cached is not None:
        return cached
    seen: dict[str, Optional[cst.BaseExpression]] = {}
    for statement in module.tree.body if module.tree is not None else ():
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign):
                targets = assignment_targets(small)
                for target in targets:
                    for name in target_names(target):
                        single = isinstance(target, cst.Name) and len(targets) == 1
                        seen[name] = small.value if single and name not in seen else None
            elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
                for target in assignment_targets(small):
                    for name in target_names(target):
                        seen[name] = None
    module._single_bindings = seen  # type: ignore[attr-defined]
    return seen


def _on_self(expr: cst.Attribute, function: FunctionInfo) -> bool:
    return isinstance(expr.value, cst.Name) and expr.value.value == receiver_parameter(function)


def _strip_passthrough(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`Net().cuda().eval()` -> `Net()`: these methods return the module itself."""
    methods = tables().torch.module_passthrough_methods
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in methods:
        expr = expr.func.value
    return expr
