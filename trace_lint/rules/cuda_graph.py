"""TRC5xx: CUDA-graph specifics."""

from __future__ import annotations

import libcst as cst

from ..semantic.bindings import assignment_targets
from ..frameworks.effects import Effect
from .base import Invalid, Rule, Valid


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
        found = self.context.effect(node, Effect.DATA_DEPENDENT_SHAPE)
        if found is not None:
            self.report(node, f"{found.what} has an output shape that depends on the data; {found.advice}")

    def visit_Subscript(self, node: cst.Subscript) -> None:
        parent = self.context.ancestors[-1] if self.context.ancestors else None
        # A write through a mask (`out[mask] = 0`) keeps the tensor's shape; only reads are judged.
        if isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.Del)) and any(t is node for t in assignment_targets(parent)):
            return
        found = next((e for e in self.context.subscript_effects(node) if e.effect is Effect.DATA_DEPENDENT_SHAPE), None)
        if found is not None:
            self.report(node, f"{found.what} gives a data-dependent shape; {found.advice}")


RULES = [DataDependentShape]
