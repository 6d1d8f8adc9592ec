"""TRC404: the warm-up may run anywhere on a path before the capture (RULES): the same
function, a caller, a sibling the caller ran first, frames down; host helpers and helpers
nobody calls are not judged."""

from __future__ import annotations

import textwrap


def trc404(findings):
    return sorted(f.location.row for f in findings if f.code == "TRC404")


MODEL = """\
import ttnn

class Model:
    def __call__(self, x):
        return ttnn.relu(x)
"""


def test_warm_up_in_a_sibling_the_caller_runs_first(lint):
    source = MODEL + textwrap.dedent(
        """
        class Generator:
            def __init__(self):
                self.model = Model()

            def setup(self, device, x):
                self._warmup(x)
                self._capture(device, x)

            def _warmup(self, x):
                self.model(x)

            def _capture(self, device, x):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    out = self.model(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                return out
        """
    )
    assert trc404(lint(source)) == []


def test_warm_up_frames_down(lint):
    source = MODEL + textwrap.dedent(
        """
        class Generator:
            def __init__(self):
                self.model = Model()

            def _forward_no_trace(self, x):
                return self._inner(x)

            def _inner(self, x):
                return self.model(x)

            def capture(self, device, x):
                self._forward_no_trace(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    out = self.model(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                return out
        """
    )
    assert trc404(lint(source)) == []


def test_eager_branch_of_the_same_function_warms_up(lint):
    source = MODEL + textwrap.dedent(
        """
        class Generator:
            def __init__(self):
                self.model = Model()
                self.compiled = False
                self.tid = None

            def __call__(self, device, x):
                if not self.compiled:
                    self.compiled = True
                    return self.model(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    out = self.model(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                self.tid = tid
                return out
        """
    )
    assert trc404(lint(source)) == []


def test_a_sibling_run_after_the_capture_is_no_warm_up(lint):
    source = MODEL + textwrap.dedent(
        """
        class Generator:
            def __init__(self):
                self.model = Model()

            def setup(self, device, x):
                self._capture(device, x)
                self._warmup(x)

            def _warmup(self, x):
                self.model(x)

            def _capture(self, device, x):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    out = self.model(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                return out
        """
    )
    assert trc404(lint(source)) == [19]


def test_other_work_on_the_same_base_class_is_no_warm_up(lint):
    source = textwrap.dedent(
        """\
        import ttnn

        class Module:
            def __call__(self, x):
                return self.forward(x)

        class Encoder(Module):
            def forward(self, x):
                return ttnn.relu(x)

        class Decoder(Module):
            def forward(self, x):
                return ttnn.gelu(x)

        class Runner:
            def __init__(self):
                self.encoder = Encoder()
                self.decoder = Decoder()

            def capture(self, device, x):
                self.encoder(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    out = self.decoder(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                return out
        """
    )
    assert trc404(lint(source)) == [22]


def test_host_helpers_in_the_region_are_not_judged(lint):
    source = MODEL + textwrap.dedent(
        """
        class Generator:
            def __init__(self):
                self.model = Model()
                self.steps = []

            def _log(self, message):
                print(message)

            def capture(self, device, x):
                self.model(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    self._log("capturing")
                    out = self.model(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                return out
        """
    )
    assert trc404(lint(source)) == []


def test_host_metadata_of_an_attribute_tensor_is_no_work(lint):
    # nemo's shape: `self.state.mask.data_ptr()` in the graph is a descriptor read, not user
    # code that needs a warm-up; `self.state.step(x)` is.
    source = textwrap.dedent(
        """\
        import torch

        class Decoder:
            def capture(self, x):
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    address = self.state.mask.data_ptr()
                    size = self.state.mask.numel()
                    out = torch.relu(x)
                return graph, out, address, size
        """
    )
    assert trc404(lint(source)) == []
    assert trc404(lint(source.replace("torch.relu(x)", "self.state.step(x)"))) == [6]


def test_a_function_making_only_stream_and_device_queries_needs_no_warm_up(lint):
    # nemo's `with_conditional_node`: reads the current stream and launches through
    # cuda-python; no torch work to compile. `scale` runs a torch op: it needs one.
    source = textwrap.dedent(
        """\
        import contextlib
        import torch
        from cuda import cuda

        @contextlib.contextmanager
        def conditional(device):
            stream = torch.cuda.current_stream(device=device).cuda_stream
            cuda.cuLaunchKernel(stream)
            yield

        def scale(x):
            return torch.mul(x, 2)

        def capture(x, device):
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                with conditional(device):
                    out = WORK
            return graph, out
        """
    )
    assert trc404(lint(source.replace("WORK", "x + 1"))) == []
    assert trc404(lint(source.replace("WORK", "scale(x)"))) == [16]


def test_a_callable_handed_to_a_runner_first_is_warmed_up(lint):
    # sglang's shape: `self._capture_init(run_once)` runs the callable, then
    # `self._capture_graph(..., run_once)` captures it.
    source = textwrap.dedent(
        """\
        import torch

        class Runner:
            def _init(self, fn):
                for _ in range(2):
                    fn()

            def _graph(self, graph, fn):
                with torch.cuda.graph(graph):
                    out = fn()
                return out

            def capture(self, model, x):
                def run_once():
                    return model(x)

                WARM
                return self._graph(torch.cuda.CUDAGraph(), run_once)
        """
    )
    assert trc404(lint(source.replace("WARM", "self._init(run_once)"))) == []
    assert trc404(lint(source.replace("WARM", "pass"))) == [18]


def test_a_capture_helper_nobody_calls_is_not_judged(lint):
    source = textwrap.dedent(
        """\
        import ttnn

        def capture_trace(device, run):
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            try:
                out = run()
            finally:
                ttnn.end_trace_capture(device, tid, cq_id=0)
            return tid, out
        """
    )
    assert trc404(lint(source)) == []


def test_a_local_is_library_work_only_where_every_binding_reaching_the_call_is(lint):
    source = textwrap.dedent(
        """\
        import ttnn

        def capture(device, x, gelu, steps):
            act = ttnn.gelu if gelu else ttnn.relu
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            try:
                y = act(x)
            finally:
                ttnn.end_trace_capture(device, tid, cq_id=0)
            return y

        def capture_steps(device, x, steps):
            act = ttnn.relu
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            try:
                for act in steps:
                    x = act(x)
            finally:
                ttnn.end_trace_capture(device, tid, cq_id=0)
            return x
        """
    )
    # `act(x)` in `capture` is a ttnn op whichever branch bound it; in `capture_steps` the
    # loop rebinds it to callables handed in, never run before the capture.
    assert trc404(lint(source)) == [14]


def test_the_eager_call_below_a_capture_branch_that_returns_is_another_path(lint):
    # "First call eager, second call captured" written with the eager run last: the capturing
    # branch always returns, so the final call never runs after this capture (tt-bio's shape).
    source = MODEL + textwrap.dedent(
        """
        class Stepper:
            def __init__(self):
                self.model = Model()

            def step(self, device, trace, x):
                trace["calls"] = trace.get("calls", 0) + 1
                if trace.get("tid") is not None:
                    ttnn.execute_trace(device, trace["tid"], cq_id=0)
                    return trace["out"]
                if trace["calls"] == 2:
                    tid = ttnn.begin_trace_capture(device, cq_id=0)
                    try:
                        trace["out"] = self.model(x)
                    finally:
                        ttnn.end_trace_capture(device, tid, cq_id=0)
                    trace["tid"] = tid
                    return trace["out"]
                return self.model(x)

            def step_then_eager(self, device, trace, x):
                if trace.get("calls") == 2:
                    tid = ttnn.begin_trace_capture(device, cq_id=0)
                    try:
                        trace["out"] = self.model(x)
                    finally:
                        ttnn.end_trace_capture(device, tid, cq_id=0)
                    trace["tid"] = tid
                out = self.model(x)
                return out
        """
    )
    # The second function's eager call also runs on the path that skips the capture (the
    # test is false on the first call): an earlier run of the same function warms it up.
    # An unconditional capture followed by the call stays a finding (tests/test_helper_effects.py).
    assert trc404(lint(source)) == []


def test_methods_of_library_objects_kept_in_a_tuple_attribute_are_not_user_work(lint):
    # vllm's benchmark: `self._events = (torch.cuda.Event(), ...)`, `.record()` in the graph.
    source = textwrap.dedent(
        """\
        import torch


        class Bench:
            def __init__(self, model):
                self.model = model
                self._events = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))

            def capture(self, x):
                self.model(x)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    self._events[0].record()
                    out = self.model(x)
                    self._events[1].record()
                return graph, out
        """
    )
    assert trc404(lint(source)) == []


def test_an_eager_run_below_a_conditional_capture_helper_call_is_another_path(lint):
    # flashinfer's shape: `if entry.seen > 0: res = _graph_capture(..., lambda: _body(x))`,
    # else (and on failure) the body runs eagerly below: the first call warmed it up.
    source = MODEL + textwrap.dedent(
        """
        import torch

        model = Model()


        def _graph_capture(body):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                result = body()
            return g, result


        def _body(x):
            return model(x)


        def run(entry, x):
            if entry.seen > 0:
                res = _graph_capture(lambda: _body(x))
                if res is not None:
                    return res
            entry.seen += 1
            return _body(x)
        """
    )
    assert trc404(lint(source)) == []
