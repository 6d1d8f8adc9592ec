"""TRC5xx: CUDA-graph specifics."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from ..semantic.nodes import iter_body_nodes
from .base import Invalid, Rule, Valid

_BITWISE = (cst.BitAnd, cst.BitOr, cst.BitXor)


class DataDependentShape(Rule):
    """
    ## What it does
    Flags an op whose output shape depends on the input's values in code recorded into a CUDA
    graph: `torch.nonzero`, `torch.argwhere`, `torch.masked_select`, `torch.unique`,
    `torch.unique_consecutive`, `torch.bincount`, their tensor methods (`x.nonzero()`),
    `torch.where(cond)` with the condition alone, and indexing with a boolean mask
    (`x[x > 0]`, `x[mask]` where `mask` is a comparison or a boolean op's result).

    ## Why is this bad?
    The size of the result is only known once the GPU has computed it, so torch must copy it
    to the host and wait: a synchronization, which is not allowed while a stream is capturing
    ("operation not permitted when stream is capturing"). Even where it slips through, the
    graph freezes the size seen at capture and every replay reuses it. Keep shapes static:
    `torch.where(mask, x, 0)`, `x * mask`, `torch.nonzero_static(x, size=n)`, or
    `masked_fill`.
    """

    code = "TRC501"

    INVALID = [
        Invalid(
            """
            import torch

            def capture(model, static_in):
                model(static_in)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    scores = model(static_in)
                    keep = torch.nonzero(scores > 0.5)
                    positive = scores[scores > 0]
                    ids = scores.argmax(-1).unique()
                return graph, keep, positive, ids
            """,
            lines=(8, 9, 10),
        ),
        Invalid(
            """
            import torch

            class Filter(torch.nn.Module):
                def forward(self, x):
                    mask = torch.isfinite(x)
                    return torch.masked_select(x, mask).sum() + x[mask].mean()

            def build(sample):
                return torch.cuda.make_graphed_callables(Filter().cuda(), (sample,))
            """,
            lines=(6, 6),  # the call and the mask index
        ),
        Invalid(
            """
            import torch

            def capture(graph, step, x):
                step(x)
                graph.capture_begin()
                try:
                    rows, cols = torch.where(step(x) > 0)
                finally:
                    graph.capture_end()
                return rows, cols
            """,
            lines=(7,),
        ),
    ]
    VALID = [
        Valid(
            """
            import torch

            def capture(model, static_in):
                model(static_in)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    scores = model(static_in)
                    kept = torch.where(scores > 0.5, scores, 0.0)  # same shape as `scores`
                    top = torch.nonzero_static(scores, size=4)
                return graph, kept, top
            """
        ),
        Valid(
            """
            import torch

            def capture(model, static_in, static_out, index):
                model(static_in)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    scores = model(static_in)
                    static_out[scores < 0] = 0.0  # a write through a mask: the shape stays
                    first = scores[index]  # index is not known to be a boolean mask
                replay_keep = torch.nonzero(static_out)  # after the capture: eager
                return graph, first, replay_keep
            """
        ),
        Valid(
            """
            import ttnn
            import torch

            def capture(device, x, host):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                y = ttnn.relu(x)
                ttnn.end_trace_capture(device, tid, cq_id=0)
                return tid, y, torch.nonzero(host)
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        context = self.context
        if not context.in_cuda_graph:
            return
        api = context.tables.torch
        name = context.qualified_name(node.func)
        if name is not None:
            if name in api.data_dependent_shape:
                self.report(node, f"`{name}` has an output shape that depends on the data; it synchronizes, which a CUDA-graph capture does not allow")
            elif name in api.data_dependent_if_single_argument and len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star:
                self.report(node, f"`{name}(condition)` is `nonzero`: its output shape depends on the data")
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in api.data_dependent_shape_methods and context.qualified_name(func.value) is None:
            self.report(node, f"`.{func.attr.value}()` has an output shape that depends on the data; it synchronizes, which a CUDA-graph capture does not allow")

    def visit_Subscript(self, node: cst.Subscript) -> None:
        context = self.context
        if not context.in_cuda_graph or self._is_store(node):
            return
        for element in node.slice:
            if isinstance(element.slice, cst.Index) and self._is_mask(element.slice.value, node.value, 0):
                self.report(node, "indexing with a boolean mask gives a data-dependent shape; it synchronizes, which a CUDA-graph capture does not allow")
                return

    def _is_store(self, node: cst.Subscript) -> bool:
        parent = self.context.ancestors[-1] if self.context.ancestors else None
        # A write through a mask (`out[mask] = 0`) keeps the tensor's shape; only reads are judged.
        return isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.Del)) and parent.target is node

    def _is_mask(self, expr: cst.BaseExpression, indexed: cst.BaseExpression, depth: int) -> bool:
        """A boolean tensor: a comparison of a tensor, a boolean op's result, or a name bound only to those."""
        context = self.context
        api = context.tables.torch
        if depth > 4:
            return False
        if isinstance(expr, cst.Comparison):
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in expr.comparisons):
                return False
            operands = [expr.left, *(c.comparator for c in expr.comparisons)]
            root = _root_name(indexed)
            return any(context.torch.is_device(o) or context.torch.is_host(o) or (root is not None and _root_name(o) == root) for o in operands)
        if isinstance(expr, cst.Call):
            name = context.qualified_name(expr.func)
            if name is not None:
                return name in api.boolean_functions
            return isinstance(expr.func, cst.Attribute) and expr.func.attr.value in api.boolean_methods
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
            return self._is_mask(expr.expression, indexed, depth + 1)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _BITWISE):
            return self._is_mask(expr.left, indexed, depth + 1) or self._is_mask(expr.right, indexed, depth + 1)
        if isinstance(expr, cst.Name):
            values = _local_values(context.function, expr.value)
            return bool(values) and all(v is not None and self._is_mask(v, indexed, depth + 1) for v in values)
        return False


def _root_name(expr: cst.BaseExpression) -> Optional[str]:
    """`x` for `x`, `x.abs()`, `x[0]`, `x.data`: the tensor an expression is computed from."""
    while True:
        if isinstance(expr, cst.Name):
            return expr.value
        if isinstance(expr, cst.Attribute):
            expr = expr.value
        elif isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            expr = expr.func.value
        else:
            return None


def _local_values(function, name: str) -> list[Optional[cst.BaseExpression]]:
    """What a local name is bound to by `=` (None for parameters and other bindings)."""
    if function is None or name in function.params:
        return []
    values: list[Optional[cst.BaseExpression]] = []
    for node in iter_body_nodes(function):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Name) and target.target.value == name:
                    values.append(node.value)
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr)):
            target = node.target
            if isinstance(target, cst.Name) and target.value == name:
                values.append(getattr(node, "value", None) if isinstance(node, (cst.AnnAssign, cst.NamedExpr)) else None)
    return values


RULES = [DataDependentShape]
