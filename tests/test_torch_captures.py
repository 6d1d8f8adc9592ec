"""CUDA-graph capture regions, capture kinds and the torch name tables, through the real engine."""

from __future__ import annotations

import textwrap

import pytest


def codes(findings, code=None):
    return sorted((f.location.row, f.code) for f in findings if code is None or f.code == code)


def src(text: str) -> str:
    return textwrap.dedent(text).strip("\n") + "\n"


@pytest.mark.parametrize(
    "imports, opener",
    [
        ("import torch", "torch.cuda.graph(g)"),
        ("import torch as t", "t.cuda.graph(g)"),
        ("from torch.cuda import graph", "graph(g)"),
        ("from torch.cuda import graph as capture_graph", "capture_graph(g)"),
        ("from torch import cuda", "cuda.graph(g, pool=None)"),
        ("import torch.cuda as tc", "tc.graph(cuda_graph=g)"),
        ("from torch.cuda.graphs import graph", "graph(g)"),
        ("import torch", "torch.no_grad(), torch.cuda.graph(g)"),
    ],
)
def test_with_graph_region_through_any_alias(lint, imports, opener):
    findings = lint(src(f"""
        {imports}

        def capture(g, model, x):
            model(x)
            with {opener}:
                y = model(x)
                value = y.item()
            return value
        """))
    assert codes(findings) == [(7, "TRC102")]


def test_other_with_blocks_and_lookalikes_are_not_regions(lint):
    findings = lint(src("""
        import torch

        def graph(g):
            return g

        def run(s, g, model, x):
            with torch.cuda.stream(s):
                a = model(x).item()
            with graph(g):
                b = model(x).item()
            return a, b
        """))
    assert codes(findings) == []


def test_with_region_has_no_trc401_and_anchors_trc404_on_the_item(lint):
    findings = lint(src("""
        import torch

        class Runner:
            def capture(self, x):
                g = torch.cuda.CUDAGraph()
                with torch.no_grad():
                    with torch.cuda.graph(
                        g
                    ):
                        y = self.model(x)
                return g, y
        """))
    assert codes(findings) == [(7, "TRC404")]


def test_begin_end_region_matched_by_receiver(lint):
    findings = lint(src("""
        import torch

        def capture(model, x):
            model(x)
            first = torch.cuda.CUDAGraph()
            second = torch.cuda.CUDAGraph()
            first.capture_begin()
            try:
                a = model(x)
            finally:
                first.capture_end()
            second.capture_begin()
            b = model(x)
            second.capture_end()
            c = x.item()
            return a, b, c
        """))
    # `second` is left open by an exception; `x.item()` after its end is not captured.
    assert codes(findings) == [(12, "TRC401")]


def test_begin_receiver_kinds(lint):
    findings = lint(src("""
        import torch

        class Recorder:
            def capture_begin(self):
                pass

            def capture_end(self):
                pass

        def unknown_without_end(g, x):
            g.capture_begin()
            return x.item()

        def project_class(x):
            r = Recorder()
            r.capture_begin()
            y = x.item()
            r.capture_end()
            return y

        def annotated(g: torch.cuda.CUDAGraph, x):
            x.sum()
            g.capture_begin()
            return x.sum().item()

        def parameter_with_end(g, x):
            x.sum()
            g.capture_begin()
            y = x.sum().item()
            g.capture_end()
            return y

        class Runner:
            def __init__(self):
                self.graph = torch.cuda.CUDAGraph()

            def start(self, x):
                self.graph.capture_begin()
                return x.tolist()
        """))
    # No end in the function: the region runs to the function's end, and no TRC401 there.
    assert codes(findings) == [(24, "TRC102"), (28, "TRC401"), (29, "TRC102"), (39, "TRC102")]


def test_make_graphed_callables_forms(lint):
    findings = lint(src("""
        import torch
        from torch import nn

        class Net(nn.Module):
            def forward(self, x):
                if x.dim() > 2:
                    x = x.flatten(1)
                return x.nonzero()

        class Head(nn.Module):
            def forward(self, x):
                return x.tolist()

        def step(x):
            return torch.unique(x)

        class Trainer:
            def __init__(self):
                self.head = Head()

            def build(self, sample):
                return torch.cuda.make_graphed_callables(self.head, (sample,))

        def build(sample, device):
            net = Net().to(device).half()
            return torch.cuda.make_graphed_callables((net, step), ((sample,), (sample,)))
        """))
    # Captured work, not a region: no TRC201 for the `if`, no TRC404 for the missing warm-up.
    assert codes(findings) == [(8, "TRC501"), (12, "TRC102"), (15, "TRC501")]


def test_capture_kind_decides_torch_only_rules(lint):
    findings = lint(src("""
        import torch
        import ttnn
        import trace_lint

        def helper(y):
            torch.cuda.synchronize()
            return torch.nonzero(y), torch.zeros(3)

        def both(y):
            return torch.nonzero(y)

        @trace_lint.captured
        def declared(y):
            torch.cuda.synchronize()
            print(torch.relu(y), y.to("cpu"))
            return torch.nonzero(y), torch.zeros(3)

        def ttnn_capture(device, op, x):
            helper(x)
            both(x)
            op(x)
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            try:
                y = op(x)
                helper(y)
                both(y)
            finally:
                ttnn.end_trace_capture(device, tid, cq_id=0)
            return tid, y

        def torch_capture(model, x):
            both(x)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                z = both(x)
            return g, z
        """))
    # helper: ttnn only, so torch names stay silent; both: also in a CUDA graph, so TRC501;
    # declared: framework unknown, the torch names of TRC1-3 apply, but not what holds only in
    # a CUDA graph (torch op results are device tensors; TRC501).
    assert codes(findings) == [(10, "TRC501"), (14, "TRC103"), (16, "TRC301")]


def test_host_to_device_needs_a_known_host_tensor_and_a_cuda_target(lint):
    findings = lint(src("""
        import torch

        def capture(model, x, device, data):
            model(x)
            cuda = "cuda"
            host = torch.ones(4)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                a = x.cuda()
                b = x.to("cuda")
                c = host.to(device)
                d = host.to(cuda)
                e = host.cuda(non_blocking=True)
                f = torch.tensor(data, device=0)
                h = torch.tensor(data, device=device)
                i = torch.tensor(x, device=torch.device("cuda", 0))
                j = host.to(torch.float16)
            return a, b, c, d, e, f, h, i, j
        """), select=("TRC101",))
    # `x` may already be on the GPU and `device` may be "cpu": unknown, so silent.
    # torch.tensor(x, ...) of an unknown `x` is still a copy from whatever x holds: reported.
    assert codes(findings) == [(12, "TRC101"), (13, "TRC101"), (14, "TRC101"), (16, "TRC101")]


def test_changed_default_device_makes_creation_unknown(lint):
    findings = lint(src("""
        import torch

        def capture(model, x):
            model(x)
            g = torch.cuda.CUDAGraph()
            with torch.device("cuda"):
                with torch.cuda.graph(g):
                    scale = torch.ones(1)
                    y = model(x) * scale
            return g, y
        """), select=("TRC301",))
    assert codes(findings) == []


def test_stream_and_event_syncs_need_a_known_stream_or_event(lint):
    findings = lint(src("""
        import torch

        def capture(model, x, handle):
            model(x)
            side = torch.cuda.Stream()
            done = torch.cuda.Event(enable_timing=False)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                y = model(x)
                handle.synchronize()
                side.synchronize()
                done.query()
                torch.cuda.default_stream().query()
                torch.cuda.Event.synchronize(done)
            return g, y
        """), select=("TRC103",))
    assert codes(findings) == [(11, "TRC103"), (12, "TRC103"), (13, "TRC103"), (14, "TRC103")]


def test_boolean_masks(lint):
    findings = lint(src("""
        import torch

        def capture(model, x, index, flags):
            model(x)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                y = model(x)
                mask = y > 0
                a = y[mask]
                b = y[~mask]
                c = y[:, torch.isnan(y)]
                d = y[(y > 0) & (y < 1)]
                e = y[index]
                f = y[flags]
                h = torch.where(mask)
                k = torch.where(mask, y, 0)
                y[mask] = 0
            return a, b, c, d, e, f, h, k
        """), select=("TRC501",))
    assert codes(findings) == [(9, "TRC501"), (10, "TRC501"), (11, "TRC501"), (12, "TRC501"), (15, "TRC501")]


def test_branch_on_torch_value_only_in_cuda_graph_captures(lint):
    findings = lint(src("""
        import torch
        import ttnn

        def check(y):
            z = torch.relu(y)
            if torch.any(torch.isnan(z)):
                z = torch.zeros_like(z)
            if z.shape[0] > 1 and z.size(1) > 1:
                z = z[:1]
            return z

        def graph_capture(x):
            check(x)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                out = check(x)
            return g, out

        def host_only(x):
            return check(x)
        """), select=("TRC202",))
    assert codes(findings) == [(6, "TRC202")]


def test_tensor_methods_on_self_are_not_work_to_warm_up(lint):
    findings = lint(src("""
        import torch

        class Runner:
            def capture(self):
                self.graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(self.graph):
                    self.static_out.copy_(self.model(self.static_in))
                    self.decoder.forward(self.static_out)
        """), select=("TRC404",))
    # `self.model(...)` and `self.decoder.forward(...)` are user work never run before the capture.
    assert [(f.location.row, f.code, f.message.split("`")[1]) for f in findings] == [(6, "TRC404", "self.model(...)")]


def test_a_draw_on_a_device_tensor_is_no_cpu_random_draw(lint):
    # torch.multinomial draws on its input's device: the CUDA generator, which graphs replay.
    # A draw made with no device (torch.rand(4)) or from a host tensor is the CPU's.
    source = textwrap.dedent(
        """\
        import torch


        def sample(logits):
            return torch.multinomial(torch.softmax(logits, dim=-1), 1)


        def noise(n):
            host = torch.ones(n)
            return torch.rand(n), torch.bernoulli(host)


        def capture(static_logits):
            sample(static_logits)
            noise(4)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                out = sample(static_logits)
                extra = noise(4)
            return g, out, extra
        """
    )
    found = sorted((f.location.row, f.code) for f in lint(source, select=("TRC203",)))
    assert found == [(10, "TRC203")]
