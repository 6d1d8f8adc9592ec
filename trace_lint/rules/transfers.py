"""TRC1xx: host transfers and synchronization in captured code."""

from __future__ import annotations

import libcst as cst

from ._common import in_control_flow_test, is_none, is_read_method_call, keyword, reads_to_host
from ._torch import device_to_host, host_to_device, sync_call
from .base import Invalid, Rule, Valid


class _TransferRule(Rule):
    silent_in_first_use_cache = True


class HostToDeviceWrite(_TransferRule):
    """
    ## What it does
    Flags host-to-device writes in captured code: `ttnn.from_torch(..., device=...)`,
    `ttnn.as_tensor(..., device=...)`, `ttnn.to_device` and `ttnn.copy_host_to_device_tensor`.

    ## Why is this bad?
    A trace records device commands only. On hardware a write inside a capture fails with
    "Writes are not supported during trace capture." and leaves the capture open; replay would
    never repeat the transfer anyway, so new host data never reaches the device.

    Copy new data into the trace's preallocated input *before* `execute_trace`, outside the
    capture.
    """

    code = "TRC101"
    name = "host-to-device-in-capture"
    summary = "Host-to-device write in captured code"
    help = "create inputs before the capture and copy new data into them before `execute_trace`"

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
    ]
    VALID = [
        Valid(
            """
            import ttnn

            def capture(device, host_input):
                x = ttnn.from_torch(host_input, device=device)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                out = ttnn.relu(x)
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
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.torch_api_applies:
            what = host_to_device(self.context, node)
            if what is not None:
                self.report(node, f"{what} writes host data to the device inside a capture; make the static input before capturing and `copy_` new data into it before `replay()`")
                return
        name = self.context.qualified_name(node.func)
        if name is None:
            return
        api = self.context.tables.ttnn
        if name in api.host_to_device:
            self.report(node, f"`{name}` writes host data to the device inside a capture; copy into the trace input before `execute_trace` instead")
        elif name in api.host_to_device_if_device_kwarg:
            device = keyword(node, "device")
            if device is not None and not is_none(device):
                self.report(node, f"`{name}(..., device=...)` writes host data to the device inside a capture; create the input before capturing and copy into it")


class DeviceToHostRead(_TransferRule):
    """
    ## What it does
    Flags device-to-host reads in captured code: `ttnn.to_torch`, `ttnn.from_device`,
    `ttnn.copy_device_to_host_tensor`, the tensor methods `.cpu()`, `.to_torch()`, `.item()`,
    `.tolist()`, `.numpy()`, and `str`/`repr`/`print`/f-strings of a device tensor.

    A read that is the condition of an `if` or `while` is reported as TRC202 instead.

    ## Why is this bad?
    Reads are not supported during trace capture: on hardware ttnn raises "Reads are not
    supported during trace capture." with no Python frame, and the failed capture stays
    open. Replay would not repeat the read either.

    Read outputs after `execute_trace`, outside the capture.
    """

    code = "TRC102"
    name = "device-to-host-in-capture"
    summary = "Device-to-host read in captured code"
    help = "read outputs after `execute_trace`, outside the capture"

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
    ]
    VALID = [
        Valid(
            """
            import ttnn

            def run(device, x):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                y = ttnn.softmax(x)
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
    ]

    def visit_Call(self, node: cst.Call) -> None:
        context = self.context
        if in_control_flow_test(context, node):
            return  # TRC202's
        name = context.qualified_name(node.func)
        if reads_to_host(context, node):
            self.report(node, f"`{name}` reads a device tensor back to the host inside a capture; read it after `execute_trace`")
        elif is_read_method_call(context, node):
            method = node.func.attr.value  # type: ignore[union-attr]
            self.report(node, f"`.{method}()` reads the device tensor back to the host inside a capture")
        elif name in context.tables.python.formatting and any(context.is_device_value(a.value) for a in node.args):
            self.report(node, f"`{name}()` of a device tensor reads it back to the host inside a capture")
        elif context.torch_api_applies:
            what = device_to_host(context, node)
            if what is not None:
                self.report(node, f"{what} reads the device tensor back to the host inside a capture")

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        if in_control_flow_test(self.context, node):
            return
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression) and self.context.is_device_value(part.expression):
                self.report(node, "an f-string of a device tensor reads it back to the host inside a capture")
                return


class SyncInCapture(_TransferRule):
    """
    ## What it does
    Flags synchronization and events in captured code: `ttnn.synchronize_device`,
    `ttnn.event_synchronize`, `ttnn.record_event` and `ttnn.wait_for_event`.

    ## Why is this bad?
    A trace replays device commands only; host-side waits are not recorded. On hardware,
    event synchronization inside a capture fails with "Event Synchronization is not
    supported during trace capture."

    Synchronize before `begin_trace_capture` or after `execute_trace`.
    """

    code = "TRC103"
    name = "sync-in-capture"
    summary = "Synchronization or event in captured code"
    help = "synchronize before `begin_trace_capture` or after `execute_trace`"

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
        )
    ]
    VALID = [
        Valid(
            """
            import ttnn

            def run(device, x):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                y = ttnn.relu(x)
                ttnn.end_trace_capture(device, tid, cq_id=0)
                ttnn.execute_trace(device, tid, cq_id=0, blocking=False)
                ttnn.synchronize_device(device)
                return y
            """
        )
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.qualified_name(node.func)
        if name is not None and name in self.context.tables.ttnn.syncs:
            self.report(node, f"`{name}` synchronizes the host inside a capture; the trace cannot record it")
        elif self.context.torch_api_applies:
            what = sync_call(self.context, node)
            if what is not None:
                self.report(node, f"{what} waits on the GPU inside a capture; a CUDA graph cannot record it and the capture fails")


RULES = [HostToDeviceWrite, DeviceToHostRead, SyncInCapture]
