"""TRC1xx: host transfers and synchronization in captured code."""

from __future__ import annotations

import libcst as cst

from ..frameworks.effects import Effect
from .base import Invalid, Rule, Valid


class _TransferRule(Rule):
    silent_in_first_use_cache = True


class HostToDeviceWrite(_TransferRule):
    """
    ## What it does
    Flags host-to-device writes in captured code: `ttnn.from_torch(..., device=...)`,
    `ttnn.as_tensor(..., device=...)`, `ttnn.to_device` and `ttnn.copy_host_to_device_tensor`.
    In CUDA graphs: `torch.tensor(data, device="cuda")`, and `.cuda()` / `.to("cuda")` of a
    tensor known to be on the host (made by a torch creation call without a device). A
    receiver whose device is unknown is not reported.

    ## Why is this bad?
    A trace records device commands only. On hardware a write inside a capture fails with
    "Writes are not supported during trace capture." and leaves the capture open; replay would
    never repeat the transfer anyway, so new host data never reaches the device.

    Copy new data into the trace's preallocated input *before* `execute_trace`, outside the
    capture.
    """

    code = "TRC101"

    INVALID = [
        Invalid(
            """
            import ttnn

            def capture(device, host_input):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                x = ttnn.from_torch(host_input, device=device)
                out = ttnn.relu(x)
                ttnn.end_trace_capture(device, tid, cq_id=0)
                return tid, out
            """,
            lines=(5,),
        ),
        Invalid(
            """
            import ttnn as tt

            def step(device, host, x_dev):
                tid = tt.begin_trace_capture(device)
                tt.copy_host_to_device_tensor(host, x_dev)
                tt.end_trace_capture(device, tid)
            """,
            lines=(5,),
        ),
        Invalid(
            """
            import torch

            def capture(model, static_in, positions):
                model(static_in)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    pos = torch.tensor(positions, device="cuda")
                    bias = torch.zeros(8).to("cuda:0")
                    out = model(static_in, pos, bias)
                return graph, out
            """,
            lines=(7, 8),
        ),
    ]
    VALID = [
        Valid(
            """
            import ttnn

            def capture(device, host_input):
                x = ttnn.from_torch(host_input, device=device)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    out = ttnn.relu(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                return tid, x, out
            """
        ),
        Valid(
            """
            import ttnn

            def capture(device, host_input):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                host = ttnn.from_torch(host_input)  # no device: stays on the host (TRC301 only)
                ttnn.end_trace_capture(device, tid, cq_id=0)
            """
        ),
        Valid(
            """
            import torch

            def capture(model, positions, x):
                static_pos = torch.tensor(positions, device="cuda")
                model(static_pos, x.cuda())
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    out = model(static_pos, x.cuda())  # x's device is unknown: not reported
                return graph, out, static_pos
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        found = self.context.effect(node, Effect.TRANSFER)
        if found is not None:
            self.report(node, f"{found.what} writes host data to the device inside a capture; {found.advice}")


class DeviceToHostRead(_TransferRule):
    """
    ## What it does
    Flags device-to-host reads in captured code: `ttnn.to_torch`, `ttnn.from_device`,
    `ttnn.copy_device_to_host_tensor`, the tensor methods `.cpu()`, `.to_torch()`, `.item()`,
    `.tolist()`, `.numpy()`, and `str`/`repr`/`print`/f-strings of a device tensor. In CUDA
    graphs also `.to("cpu")`, and printing the result of a torch op.

    A read that is the condition of an `if` or `while` is reported as TRC202 instead.

    ## Why is this bad?
    Reads are not supported during trace capture: on hardware ttnn raises "Reads are not
    supported during trace capture." with no Python frame, and the failed capture stays
    open. Replay would not repeat the read either.

    Read outputs after `execute_trace`, outside the capture.
    """

    code = "TRC102"

    INVALID = [
        Invalid(
            """
            import ttnn

            def capture(device, x):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                y = ttnn.softmax(x)
                print(y)
                host = ttnn.to_torch(y)
                ttnn.end_trace_capture(device, tid, cq_id=0)
                return host
            """,
            lines=(6, 7),
        ),
        Invalid(
            """
            import ttnn

            def capture(device, x):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                score = ttnn.mean(x).item()
                ttnn.end_trace_capture(device, tid, cq_id=0)
                return score
            """,
            lines=(5,),
        ),
        Invalid(
            """
            import torch

            def capture(model, static_in):
                model(static_in)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    logits = model(static_in)
                    best = logits.argmax().item()
                    probs = torch.softmax(logits, -1)
                    host = probs.to("cpu")
                    print(probs)
                return graph, best, host
            """,
            lines=(8, 10, 11),
        ),
    ]
    VALID = [
        Valid(
            """
            import ttnn

            def run(device, x):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    y = ttnn.softmax(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                ttnn.execute_trace(device, tid, cq_id=0, blocking=True)
                return ttnn.to_torch(y)
            """
        ),
        Valid(
            """
            import ttnn

            def capture(device, x):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                y = ttnn.softmax(x)
                print("shape", y.shape)  # metadata lives on the host
                ttnn.end_trace_capture(device, tid, cq_id=0)
                return y
            """
        ),
        Valid(
            """
            import torch

            def capture(model, static_in):
                model(static_in)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    static_out = model(static_in)
                    table = torch.arange(4).tolist()  # a host tensor: nothing to read back (TRC301)
                graph.replay()
                return static_out.to("cpu"), table
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        found = self.context.effect(node, Effect.READ)
        if found is not None:
            advice = f"; {found.advice}" if found.advice else ""
            self.report(node, f"{found.what} reads a device tensor back to the host inside a capture{advice}")

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression) and self.context.is_device_value(part.expression):
                self.report(node, "an f-string of a device tensor reads it back to the host inside a capture")
                return


class SyncInCapture(_TransferRule):
    """
    ## What it does
    Flags synchronization and events in captured code: `ttnn.synchronize_device`,
    `ttnn.event_synchronize`, `ttnn.record_event` and `ttnn.wait_for_event`. In CUDA graphs:
    `torch.cuda.synchronize()` and `.synchronize()` / `.query()` of a stream or event
    (`torch.cuda.current_stream().synchronize()`, a local `torch.cuda.Event()`).

    ## Why is this bad?
    A trace replays device commands only; host-side waits are not recorded. On hardware,
    event synchronization inside a capture fails with "Event Synchronization is not
    supported during trace capture." A CUDA-graph capture fails the same way ("operation not
    permitted when stream is capturing").

    Synchronize before `begin_trace_capture` or after `execute_trace` (`graph.replay()`).
    """

    code = "TRC103"

    INVALID = [
        Invalid(
            """
            import ttnn

            def capture(device, x):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                y = ttnn.relu(x)
                ttnn.synchronize_device(device)
                ttnn.end_trace_capture(device, tid, cq_id=0)
                return y
            """,
            lines=(6,),
        ),
        Invalid(
            """
            import torch

            class Runner:
                def __init__(self, model):
                    self.model = model
                    self.done = torch.cuda.Event()

                def capture(self, static_in):
                    self.model(static_in)
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph):
                        out = self.model(static_in)
                        torch.cuda.synchronize()
                        self.done.query()
                        torch.cuda.current_stream().synchronize()
                    return graph, out
            """,
            lines=(13, 14, 15),
        ),
    ]
    VALID = [
        Valid(
            """
            import ttnn

            def run(device, x):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    y = ttnn.relu(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                ttnn.execute_trace(device, tid, cq_id=0, blocking=False)
                ttnn.synchronize_device(device)
                return y
            """
        ),
        Valid(
            """
            import torch

            def capture(model, static_in):
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(3):
                        model(static_in)  # warm-up on a side stream
                torch.cuda.current_stream().wait_stream(side)
                torch.cuda.synchronize()
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    static_out = model(static_in)
                graph.replay()
                torch.cuda.current_stream().synchronize()
                return static_out
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        found = self.context.effect(node, Effect.SYNC)
        if found is not None:
            self.report(node, f"{found.what} synchronizes with the device inside a capture; {found.advice}")


RULES = [HostToDeviceWrite, DeviceToHostRead, SyncInCapture]
