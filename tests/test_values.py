"""Values, not names (RULES): TRC302, TRC403 and TRC408 follow the value a name holds, from
reaching definitions, not the name's text."""

from __future__ import annotations

import textwrap


def codes(findings, *wanted):
    return sorted((f.location.row, f.code) for f in findings if not wanted or f.code in wanted)


def test_a_value_made_in_a_loop_in_the_region_is_an_intermediate(lint):
    source = textwrap.dedent(
        """\
        import ttnn

        def decode(device, x, layers):
            out = ttnn.relu(x)
            out = ttnn.relu(out)
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            try:
                h = x
                for layer in layers:
                    out = ttnn.matmul(h, layer)
                    h = ttnn.add(h, out)
                    out.deallocate(True)
            finally:
                ttnn.end_trace_capture(device, tid, cq_id=0)
            ttnn.execute_trace(device, tid, cq_id=0)
            return h
        """
    )
    assert codes(lint(source), "TRC302", "TRC403") == []


def test_freeing_a_value_made_before_the_region_and_read_in_it_is_reported(lint):
    source = textwrap.dedent(
        """\
        import ttnn

        def decode(device, x):
            inp = ttnn.relu(x)
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            try:
                out = ttnn.gelu(inp)
                inp.deallocate(True)
            finally:
                ttnn.end_trace_capture(device, tid, cq_id=0)
            ttnn.execute_trace(device, tid, cq_id=0)
            return out
        """
    )
    assert codes(lint(source), "TRC302") == [(8, "TRC302")]


def test_a_second_capture_assigning_the_same_name_is_no_stale_input(lint):
    source = textwrap.dedent(
        """\
        import ttnn

        def capture_both(device, x):
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            try:
                out = ttnn.relu(x)
            finally:
                ttnn.end_trace_capture(device, tid, cq_id=0)
            tid2 = ttnn.begin_trace_capture(device, cq_id=0)
            try:
                out = ttnn.gelu(x)
            finally:
                ttnn.end_trace_capture(device, tid2, cq_id=0)
            ttnn.execute_trace(device, tid, cq_id=0)
            return out
        """
    )
    assert codes(lint(source), "TRC403") == []


def test_rebinding_an_input_to_a_non_tensor_is_no_stale_input(lint):
    source = textwrap.dedent(
        """\
        import ttnn

        def run(device, x, steps):
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            try:
                out = ttnn.relu(x)
            finally:
                ttnn.end_trace_capture(device, tid, cq_id=0)
            x = None
            ttnn.execute_trace(device, tid, cq_id=0)
            return out
        """
    )
    assert codes(lint(source), "TRC403") == []


def test_rebinding_an_input_to_a_new_tensor_then_replaying_is_stale(lint):
    source = textwrap.dedent(
        """\
        import ttnn

        def run(device, x, host):
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            try:
                out = ttnn.relu(x)
            finally:
                ttnn.end_trace_capture(device, tid, cq_id=0)
            x = ttnn.from_torch(host, device=device)
            ttnn.execute_trace(device, tid, cq_id=0)
            return out
        """
    )
    assert codes(lint(source), "TRC403") == [(9, "TRC403")]


def test_freeing_after_the_region_when_the_trace_never_runs_again_is_fine(lint):
    source = textwrap.dedent(
        """\
        import ttnn

        def once(device, x):
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            try:
                out = ttnn.relu(x)
            finally:
                ttnn.end_trace_capture(device, tid, cq_id=0)
            ttnn.execute_trace(device, tid, cq_id=0)
            result = ttnn.to_torch(out)
            ttnn.deallocate(out)
            ttnn.deallocate(x)
            return result
        """
    )
    assert codes(lint(source), "TRC302") == []


def test_freeing_after_the_region_while_the_trace_id_is_kept_is_reported(lint):
    source = textwrap.dedent(
        """\
        import ttnn

        class Runner:
            def capture(self, device, x):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    self.out = ttnn.relu(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                self.tid = tid
                ttnn.deallocate(x)
        """
    )
    assert codes(lint(source), "TRC302") == [(11, "TRC302")]


def test_the_l1_input_reallocation_idiom_is_neither_trc302_nor_trc301(lint):
    source = textwrap.dedent(
        """\
        import ttnn

        def capture(device, model, inp, spec):
            model(inp)
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            try:
                out = model(inp)
                ttnn.deallocate(inp)
                inp = ttnn.allocate_tensor_on_device(spec, device)
            finally:
                ttnn.end_trace_capture(device, tid, cq_id=0)
            return tid, inp, out
        """
    )
    assert codes(lint(source), "TRC302", "TRC301") == []


def test_a_name_is_a_device_value_where_only_device_bindings_reach_it(lint):
    source = textwrap.dedent(
        """\
        import ttnn

        def step(x):
            y = ttnn.relu(x)
            if y > 0:
                pass
            z = ttnn.gelu(y)
            while z > 0:
                z = 0
            y = 1
            return y, z

        def capture(device, x):
            step(x)
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            try:
                out = step(x)
            finally:
                ttnn.end_trace_capture(device, tid, cq_id=0)
            return out
        """
    )
    # Line 5 reads `y` where only `ttnn.relu` reaches (the later `y = 1` does not): a device
    # read. Line 8 reads `z` where `z = 0` can reach on the loop's next turn: not known to
    # be a device value, so not reported.
    assert codes(lint(source), "TRC202") == [(5, "TRC202")]


def test_an_attribute_every_method_fills_with_a_device_tensor_is_a_device_value(lint):
    source = textwrap.dedent(
        """\
        import torch

        class Hyps:
            def __init__(self, n, device):
                self.lengths = torch.zeros(n, device=device, dtype=torch.long)
                self.max_length = n

            def add(self, mask):
                if (self.lengths + mask).max() >= self.max_length:
                    self.max_length *= 2
                self.lengths += mask

        class Runner:
            def __init__(self, device):
                self.hyps = Hyps(4, device)
                self.mask = torch.ones(4, device=device, dtype=torch.long)

            def capture(self):
                self.hyps.add(self.mask)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    self.hyps.add(self.mask)
                return g
        """
    )
    # Line 9 branches on a device tensor (TRC202); line 10 grows a host counter (TRC203);
    # line 11 adds into a device buffer in place: device work, recorded, no TRC203.
    assert codes(lint(source), "TRC202", "TRC203") == [(9, "TRC202"), (10, "TRC203")]


def test_an_attribute_reached_through_other_objects_is_typed_by_their_classes(lint):
    source = textwrap.dedent(
        """\
        import torch

        class Hyps:
            def __init__(self, n, device):
                self.scores = torch.full([n], 0.0, device=device)
                self.count = 0

        class State:
            def __init__(self, n, device):
                self.hyps = Hyps(n, device)

        class Decoder:
            def __init__(self):
                self.state = None

            def setup(self, n, device):
                self.state = State(n, device)

            def step(self, x):
                self.state.hyps.scores += x
                self.state.hyps.count += 1
                if self.state.hyps.scores.max() > 0:
                    pass

            def capture(self, x):
                self.step(x)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    self.step(x)
                return g
        """
    )
    # `self.state` is a State (or None), its `hyps` a Hyps, whose `scores` is a device tensor:
    # line 20 is an in-place op (recorded), line 21 a host counter, line 22 reads the device.
    assert codes(lint(source), "TRC202", "TRC203") == [(21, "TRC203"), (22, "TRC202")]


def test_attributes_set_while_constructing_an_object_in_captured_code_are_capture_time(lint):
    source = textwrap.dedent(
        """\
        import ttnn

        class Tapes:
            def __init__(self, tapes):
                self.tapes = tapes
                self.count = 0

        class Runner:
            def step(self, x):
                kept = Tapes([x])
                self.calls += 1
                return ttnn.relu(kept.tapes[0])

            def capture(self, device, x):
                self.step(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    out = self.step(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                return out
        """
    )
    # `Tapes.__init__` runs in the capture but sets up a new object; `self.calls` is state.
    assert codes(lint(source), "TRC203") == [(11, "TRC203")]


def test_writing_into_an_attribute_that_holds_a_device_tensor_is_device_work(lint):
    source = textwrap.dedent(
        """\
        import torch

        class Hyps:
            def __init__(self, n, device):
                self.transcript = torch.zeros((n, 8), device=device, dtype=torch.long)
                self.labels_seen = []

            def add(self, rows, cols, labels):
                self.transcript[rows, cols] = labels
                self.labels_seen.append(labels)

        class Runner:
            def __init__(self, device):
                self.hyps = Hyps(4, device)

            def capture(self, rows, cols, labels):
                self.hyps.add(rows, cols, labels)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    self.hyps.add(rows, cols, labels)
                return g
        """
    )
    # Line 9 writes into a device buffer (recorded); line 10 grows a host list.
    assert codes(lint(source), "TRC203") == [(10, "TRC203")]


def test_a_free_of_another_value_under_the_same_name_does_not_release_the_allocation(lint):
    # TRC408 follows values: `scratch` is freed, but only after it was rebound, so the first
    # allocation is still alive when the trace replays.
    source = textwrap.dedent(
        """\
        import ttnn

        def run(device, model, x, steps):
            model(x)
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            try:
                out = model(x)
            finally:
                ttnn.end_trace_capture(device, tid, cq_id=0)
            for _ in range(steps):
                scratch = ttnn.zeros([32, 32], device=device)
                SECOND
                ttnn.deallocate(scratch)
                ttnn.execute_trace(device, tid, cq_id=0)
            return out
        """
    )
    same_value = source.replace("SECOND", "pass")
    assert codes(lint(same_value), "TRC408") == []
    rebound = source.replace("SECOND", "scratch = ttnn.to_layout(x, ttnn.TILE_LAYOUT)")
    assert codes(lint(rebound), "TRC408") == [(11, "TRC408")]


# Records `step` into a CUDA graph after one eager run.
GRAPHED_STEP = """

def capture(x):
    step(x)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step(x)
    return g
"""


def test_a_torch_name_is_judged_by_the_bindings_that_reach_the_read(lint):
    source = textwrap.dedent(
        """\
        import torch

        def step(x):
            y = torch.relu(x)
            if y.sum() > 0:
                x = x + 1
            y = y.cpu()
            if y.sum() > 0:
                x = x + 2
            return x
        """
    )
    # Line 5 reads the device result of `torch.relu`; line 8 reads the host copy. Judged by
    # name alone (both bindings at once) `y` would be neither.
    assert codes(lint(source + GRAPHED_STEP), "TRC202") == [(5, "TRC202")]


def test_a_torch_name_rebound_from_itself_in_a_loop_keeps_its_kind(lint):
    source = textwrap.dedent(
        """\
        import torch

        def step(x):
            y = torch.relu(x)
            for _ in range(3):
                y = y * 0.5
            if y.sum() > 0:
                x = x + 1
            return x
        """
    )
    assert codes(lint(source + GRAPHED_STEP), "TRC202") == [(7, "TRC202")]
