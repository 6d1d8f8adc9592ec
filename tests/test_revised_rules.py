"""The revised rule catalogue (RULES.md) on fixture projects of its own: exact (file, line,
code) sets for each shape of real code that used to give false or missed findings."""

from __future__ import annotations

from .cli_helpers import FIXTURES, finding_set

REVISED = FIXTURES / "revised_rules"


def test_host_logic_noise():
    # Not reported: assert, host metadata (is_allocated, buffer_address, storage_type,
    # memory_config, shape, dtype, layout, dim, size, numel, is_contiguous, data_ptr),
    # isinstance, literals and module-level constants. Reported: a parameter's value (TRC201)
    # and device values (TRC202).
    assert finding_set(REVISED / "host_logic_noise") == {
        ("graph.py", 9, "TRC202"),
        ("region.py", 12, "TRC202"),
        ("region.py", 27, "TRC201"),
    }


def test_capture_inside_a_cache_shaped_block_is_not_a_cache_fill():
    # `if self.trace_id is None: warm-up; begin; work; end; self.trace_id = tid` is the
    # capture: the work it reaches is judged; a real cache fill (`cached`) is still exempt.
    assert finding_set(REVISED / "first_use_capture") == {
        ("generator.py", 6, "TRC203"),
        ("generator.py", 7, "TRC102"),
    }


def test_lifecycle_shapes():
    # Nested try/finally and a broad handler cover; a narrow handler, a call before the try
    # and a call after it do not. Conditional captures are regions between their guards.
    assert finding_set(REVISED / "lifecycle_shapes") == {
        ("captures.py", 32, "TRC401"),
        ("captures.py", 44, "TRC401"),
        ("captures.py", 55, "TRC401"),
        ("captures.py", 70, "TRC201"),
        ("captures.py", 81, "TRC401"),
        ("captures.py", 83, "TRC102"),
    }


def test_side_effects_on_state_that_outlives_the_capture():
    # Reported: self attributes and their containers, every mutator, module containers,
    # class attributes, a closure's dict. Not: capture-time objects (`p.handle`,
    # `batch.x`), output handles (`self.output = self.model(x)`, `self.last = out`),
    # locals, and `x.add(out)` whose result is used (a tensor op). A counter on a parameter
    # (`state.steps += 1`) is reported; a store on one (`batch.x = 3`) is not, nor a copy of
    # a buffer view into an attribute's tensor (`self.relay.tokens[rows] = self.buffer[:bs]`).
    assert finding_set(REVISED / "side_effects") == {
        ("work.py", line, "TRC203") for line in (31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 52, 65)
    }


def test_missing_trace_region_only_where_the_device_reaches_a_capture():
    # Reported: captured in the same function, two frames down, stored by a constructor and
    # captured by a method, returned to a caller that captures, kept in a record's field
    # (`DeviceContext(device=d)` ... `context.device`), yielded by a pytest fixture to a test
    # that captures. Not: a device only used eagerly, a fixture nobody captures
    # with, a device handed on through `**kwargs`.
    assert finding_set(REVISED / "device_reach") == {
        ("runner.py", 27, "TRC405"),
        ("runner.py", 31, "TRC405"),
        ("runner.py", 41, "TRC405"),
        ("runner.py", 46, "TRC405"),
        ("runner.py", 71, "TRC405"),
        ("tests/device_fixtures.py", 7, "TRC405"),
    }


def test_capture_apis_the_analysis_could_not_see():
    # `capture-contexts` wrappers (lines 30-34), a class storing the callable in `__init__`
    # (Tracer: its constructions capture `step.forward`, lines 17-18; it warms up itself),
    # a `@contextmanager` helper whose begin and end surround its `yield` (lines 71-73), and
    # one named in `capture-helpers` (line 85).
    assert finding_set(REVISED / "capture_apis") == {
        ("apis.py", 17, "TRC203"),
        ("apis.py", 18, "TRC102"),
        ("apis.py", 30, "TRC201"),
        ("apis.py", 32, "TRC103"),
        ("apis.py", 34, "TRC102"),
        ("apis.py", 71, "TRC201"),
        ("apis.py", 73, "TRC102"),
        ("apis.py", 85, "TRC102"),
    }


WRAPPED_GRAPH = """\
import torch


def capture(runner, static_in):
    runner.model(static_in)
    with runner.device_module.graph(torch.cuda.CUDAGraph()):
        out = runner.model(static_in).item()
    return out
"""


def test_capture_contexts_is_what_makes_a_wrapper_a_region(lint):
    assert [(f.location.row, f.code) for f in lint(WRAPPED_GRAPH, select=None)] == []
    found = lint(WRAPPED_GRAPH, select=None, capture_contexts=("device_module.graph",))
    assert [(f.location.row, f.code) for f in found] == [(7, "TRC102")]


HELPER_IN_CACHE_BLOCK = """\
import torch
import ttnn


def capture_trace(device, run):
    run()
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    try:
        run()
    finally:
        ttnn.end_trace_capture(device, tid, cq_id=0)
    return tid


def step():
    return ttnn.to_torch(None)


def read(x):
    return x.item()


class Runner:
    def __init__(self):
        self.tid = None
        self.graph = None

    def run(self, device, x):
        if self.tid is None:
            self.tid = capture_trace(device, step)
        if self.graph is None:
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                y = read(x)
        return self.tid
"""


def test_helper_call_and_graph_with_in_a_cache_shaped_block_are_captures(lint):
    found = sorted((f.location.row, f.code) for f in lint(HELPER_IN_CACHE_BLOCK, select=("TRC1", "TRC2", "TRC3")))
    # Line 20 is reached only through the graph `with` inside `if self.graph is None:`.
    assert found == [(16, "TRC102"), (20, "TRC102")]
