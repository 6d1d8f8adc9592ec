"""torch CUDA graphs: `with torch.cuda.graph(g):`, `g.capture_begin()` ... `g.capture_end()`,
configured capture contexts, and `torch.cuda.make_graphed_callables`."""

from __future__ import annotations

from ..base import Framework

# A `with torch.cuda.graph` region, a `capture_begin` region, a graphed callable.
CUDA_GRAPH_KINDS = frozenset({"cuda-graph", "cuda-graph-begin", "cuda-graph-callable"})


class TorchCudaGraphs(Framework):
    section = "torch"
    kinds = CUDA_GRAPH_KINDS
    callable_kind = "cuda-graph-callable"
    self_closing_kinds = frozenset({"cuda-graph"})  # `with torch.cuda.graph(g):`
    warm_up_advice = "run it a few times (on a side stream) before capturing the CUDA graph"
    modules = frozenset({"torch"})

    def prefilter_targets(self) -> list[str]:
        # `CUDAGraph()` itself starts nothing: `capture_begin` (a word) does.
        return [*self.table.graph_context, *self.table.graphed_callables]

    def prefilter_words(self) -> list[bytes]:
        return [m.encode() for m in self.table.graph_begin_methods]

    # The analysis imports libcst: only when asked (the prefilter runs without it).
    def regions(self, project, function, settings):
        from .regions import find_cuda_graph_regions

        return find_cuda_graph_regions(project, function, getattr(settings, "capture_contexts", ()))

    def capture_begins(self):
        return self.table.graph_context  # `with torch.cuda.graph(g):`

    def begins_capture_on_receiver(self, call):
        import libcst as cst

        return isinstance(call.func, cst.Attribute) and call.func.attr.value in self.table.graph_begin_methods

    def ends_region(self, region, call):
        from .regions import is_graph_end

        return is_graph_end(region, call)

    def launches_program(self, name):
        return name not in self.table.no_device_work

    def returns_receiver(self, method):
        return method in self.table.module_passthrough_methods  # `Net().cuda().eval()`

    def tensor_methods(self):
        return self.table.tensor_methods

    def captured_callables(self, project, resolver, modules):
        from .regions import GraphedCallables

        graphed = GraphedCallables(project, resolver)  # one for the run: it keeps its synthetic calls alive
        for module in modules:
            for call, target in graphed.find(module):
                yield module, call, target, f"`{target.qualname}` is captured into a CUDA graph here"

    def call_effects(self, call, name, unit):
        from .calls import call_effects

        # CUDA graphs' contract applies in CUDA graphs and in declared captures; a draw on
        # the CPU generator is one in any capture.
        return call_effects(self.table, call, name, unit, graph_contract=self.in_own_capture(unit))

    def subscript_effects(self, node, unit):
        from .calls import subscript_effects

        return subscript_effects(self.table, unit, node)
