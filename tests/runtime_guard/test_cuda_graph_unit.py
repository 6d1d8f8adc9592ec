"""The CUDA-graph guard on the CPU: classification (no torch needed), then the real torch modes and
patches around a stand-in CUDAGraph (CPU torch; skipped where torch is not installed).

CPU tensors stand for host work; meta tensors stand for GPU tensors (they live on a device, and
torch itself fails a host read of them, so a TraceSafetyError there proves the guard stopped the
call first).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import warnings
from types import SimpleNamespace

import pytest

from trace_lint.runtime_guard import TraceSafetyError, TraceSafetyWarning, guard, is_installed
from trace_lint.runtime_guard.cuda_graphs import classify_aten, classify_function


# ------------------------------------------------------------------ classification, no torch
def fake(device="cuda", dtype="torch.float32"):
    return SimpleNamespace(device=SimpleNamespace(type=device), dtype=dtype, shape=(4,))


GPU, CPU, MASK = fake("cuda"), fake("cpu"), fake("cuda", "torch.bool")
CPU_SCALAR = SimpleNamespace(device=SimpleNamespace(type="cpu"), dtype="torch.float32", shape=())


@pytest.mark.parametrize(
    "name, args, kwargs, expected",
    [
        ("item", (GPU,), {}, ("cuda-host-read", True)),
        ("item", (CPU,), {}, ("cuda-host-read", False)),
        ("tolist", (GPU,), {}, ("cuda-host-read", True)),
        ("numpy", (CPU,), {}, ("cuda-host-read", False)),
        ("__bool__", (GPU,), {}, ("cuda-host-read", True)),
        ("cpu", (GPU,), {}, ("cuda-host-read", True)),
        ("cpu", (CPU,), {}, (None, False)),  # returns the tensor itself
        ("to", (GPU, "cpu"), {}, ("cuda-host-read", True)),
        ("to", (GPU,), {"device": SimpleNamespace(type="cpu")}, ("cuda-host-read", True)),
        ("to", (GPU, "torch.float16"), {}, (None, False)),
        ("to", (GPU, "cpu"), {"non_blocking": True}, ("cuda-host-read", False)),
        ("nonzero", (GPU,), {}, ("data-dependent-shape", True)),
        ("masked_select", (CPU, fake("cpu", "torch.bool")), {}, ("data-dependent-shape", False)),
        ("unique", (GPU,), {"sorted": True}, ("data-dependent-shape", True)),
        ("repeat_interleave", (GPU, GPU), {}, ("data-dependent-shape", True)),
        ("repeat_interleave", (GPU, 2), {}, (None, False)),
        ("repeat_interleave", (GPU, GPU), {"output_size": 8}, (None, False)),
        ("__getitem__", (GPU, MASK), {}, ("data-dependent-shape", True)),
        ("__getitem__", (GPU, (slice(None), MASK)), {}, ("data-dependent-shape", True)),
        ("__getitem__", (GPU, GPU), {}, (None, False)),  # integer index: fixed shape
        ("add", (GPU, GPU), {}, (None, False)),
        ("size", (GPU,), {}, (None, False)),
    ],
)
def test_function_classification(name, args, kwargs, expected):
    assert classify_function(name, args, kwargs) == expected


@pytest.mark.parametrize(
    "packet, overload, args, kwargs, expected",
    [
        ("_local_scalar_dense", "default", (GPU,), {}, ("cuda-host-read", True)),
        ("_local_scalar_dense", "default", (CPU,), {}, ("cuda-host-read", False)),
        ("_to_copy", "default", (GPU,), {"device": "cpu"}, ("cuda-host-read", True)),
        ("_to_copy", "default", (CPU,), {"device": SimpleNamespace(type="cuda")}, ("cuda-host-transfer", True)),
        ("_to_copy", "default", (CPU,), {"device": "cuda:0", "non_blocking": True}, ("cuda-host-transfer", False)),
        ("_to_copy", "default", (GPU,), {"dtype": "torch.float16"}, (None, False)),
        ("copy_", "default", (CPU, GPU), {}, ("cuda-host-read", True)),
        ("copy_", "default", (CPU, GPU), {"non_blocking": True}, ("cuda-host-read", False)),
        ("copy_", "default", (GPU, CPU), {}, ("cuda-host-transfer", True)),
        ("copy_", "default", (GPU, GPU), {}, (None, False)),
        ("nonzero", "default", (GPU,), {}, ("data-dependent-shape", True)),
        ("_unique2", "default", (CPU,), {}, ("data-dependent-shape", False)),
        ("repeat_interleave", "self_int", (GPU, 2), {}, (None, False)),
        ("repeat_interleave", "Tensor", (GPU,), {}, ("data-dependent-shape", True)),
        ("index", "Tensor", (GPU, [MASK]), {}, ("data-dependent-shape", True)),
        ("index", "Tensor", (GPU, [None, GPU]), {}, (None, False)),
        ("index_put_", "default", (GPU, [MASK], GPU), {}, ("data-dependent-shape", True)),
        ("index_put_", "default", (GPU, [MASK], CPU_SCALAR), {}, (None, False)),  # a masked fill
        ("add", "Tensor", (GPU, GPU), {}, (None, False)),
    ],
)
def test_aten_classification(packet, overload, args, kwargs, expected):
    assert classify_aten(packet, overload, args, kwargs) == expected


# ------------------------------------------------------------------ the modes, with CPU torch
class StandInGraph:
    """torch.cuda.CUDAGraph without CUDA: logs what reached it."""

    def __init__(self):
        self.calls = []

    def capture_begin(self, pool=None, capture_error_mode="global", **kwargs):
        self.calls.append("begin")

    def capture_end(self):
        self.calls.append("end")

    def replay(self):
        self.calls.append("replay")


@pytest.fixture
def torch(monkeypatch):
    torch = pytest.importorskip("torch")
    synced = []
    monkeypatch.setattr(torch.cuda, "CUDAGraph", StandInGraph)
    # The CPU build's synchronize raises; this one lets mode "warn" run it.
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: synced.append(device))
    torch.synced = synced
    yield torch
    del torch.synced
    assert not is_installed()


def stacks(torch):
    return torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack()


def line_of(function, text):
    """The line number of `text` in `function`'s source file (the first from its def on)."""
    import inspect

    lines, start = inspect.getsourcelines(function)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_clean_capture_records_ops_and_replays(torch):
    x = torch.ones(4, device="meta")
    before = stacks(torch)
    with guard() as tg:
        g = torch.cuda.CUDAGraph()
        outside = x * 3  # before the capture: not recorded
        g.capture_begin()
        assert stacks(torch) == (before[0] + 1, before[1] + 1)
        y = torch.relu(x + 1)
        z = torch.zeros(4, device="meta")  # a device tensor: the graph's own allocation
        z[1] = 5  # torch makes 5 a scalar tensor on z's device
        z[y > 0] = 0  # a masked fill: fixed shape
        g.capture_end()
        assert stacks(torch) == before
        g.replay()
        g.replay()
    (record,) = tg.captures
    assert g.calls == ["begin", "end", "replay", "replay"]
    assert record.name.startswith("CUDA graph ") and record.status == "ended"
    assert [op.op for op in record.ops] == [
        "torch.add", "torch.relu", "torch.zeros", "torch.__setitem__", "torch.gt", "torch.__setitem__"
    ]
    assert all(op.frame.filename == __file__ and op.frame.function == "test_clean_capture_records_ops_and_replays"
               for op in record.ops)
    assert record.violations == [] and record.executions == 2
    assert y.shape == z.shape == outside.shape


def snippet_item(torch, x):
    return x.sum().item()


def snippet_tolist(torch, x):
    return x.tolist()


def snippet_numpy(torch, x):
    return x.numpy()


def snippet_bool(torch, x):
    return bool(x[0] > 0)


def snippet_nonzero(torch, x):
    return torch.nonzero(x)


def snippet_masked_select(torch, x):
    return x.masked_select(x > 1)


def snippet_unique(torch, x):
    return torch.unique(x)


def snippet_bool_index(torch, x):
    return x[x > 1]


def snippet_cpu_work(torch, x):
    return x * 2


def snippet_cpu_creation(torch, x):
    return torch.arange(3)


def snippet_sync(torch, x):
    return torch.cuda.synchronize()


def snippet_nested_item(torch, x):
    return torch.nn.functional.one_hot(x.long())  # computes the class count with .item() inside


@pytest.mark.parametrize(
    "snippet, code, op",
    [
        (snippet_item, "TRC102", "torch.item"),
        (snippet_tolist, "TRC102", "torch.tolist"),
        (snippet_numpy, "TRC102", "torch.numpy"),
        (snippet_bool, "TRC102", "torch.__bool__"),
        (snippet_nonzero, "TRC501", "torch.nonzero"),
        (snippet_masked_select, "TRC501", "torch.masked_select"),
        (snippet_unique, "TRC501", "torch.unique"),
        (snippet_bool_index, "TRC501", "torch.__getitem__"),
        (snippet_cpu_work, "TRC301", "torch.mul"),
        (snippet_cpu_creation, "TRC301", "torch.arange"),
        (snippet_sync, "TRC103", "torch.cuda.synchronize"),
        (snippet_nested_item, "TRC102", "aten._local_scalar_dense.default"),
    ],
)
def test_each_violation_kind_is_reported_at_capture_end_with_its_user_frame(torch, snippet, code, op):
    x = torch.arange(4.0)
    if snippet is snippet_numpy:
        pytest.importorskip("numpy")
    with guard("warn") as tg:
        g = torch.cuda.CUDAGraph()
        g.capture_begin()
        snippet(torch, x)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            g.capture_end()
        with pytest.raises(TraceSafetyError, match="replay\\(\\) refused"):
            g.replay()
    (record,) = tg.captures
    found = [(v.code, v.op) for v in record.violations]
    assert (code, op) in found, found
    violation = next(v for v in record.violations if (v.code, v.op) == (code, op))
    assert violation.frame.filename == __file__
    assert violation.frame.function == snippet.__name__
    assert violation.frame.lineno == snippet.__code__.co_firstlineno + 1
    assert violation.hint and record.name in violation.trace
    assert any(w.category is TraceSafetyWarning and code in str(w.message)
               and w.filename == __file__ and w.lineno == violation.frame.lineno for w in caught)
    assert g.calls == ["begin", "end"]  # the refused replay never reached the graph
    assert record.refused_executions == 1 and record.executions == 0
    if code == "TRC103":
        assert torch.synced == [None]  # mode "warn" let the sync through


def test_raise_mode_reports_all_at_capture_end_and_refuses_replay(torch):
    x = torch.arange(4.0)
    with guard() as tg:
        g = torch.cuda.CUDAGraph()
        g.capture_begin()
        value = x.sum().item()  # a CPU tensor: torch may run it; reported at the end
        x.nonzero()
        with pytest.raises(TraceSafetyError) as info:
            g.capture_end()
        with pytest.raises(TraceSafetyError, match="replay\\(\\) refused"):
            g.replay()
    assert value == 6.0
    assert g.calls == ["begin", "end"]
    codes = [v.code for v in info.value.violations]
    assert codes == ["TRC301", "TRC102", "TRC501"]  # sum on the CPU, item, nonzero
    item_line = line_of(test_raise_mode_reports_all_at_capture_end_and_refuses_replay, "value = x.sum().item()")
    assert f"{__file__}:{item_line} in test_raise_mode_reports_all_at_capture_end_and_refuses_replay" in str(info.value)
    assert "fix: read results after capture_end()" in str(info.value)
    assert info.value.capture is tg.captures[0]
    assert tg.captures[0].status == "ended"


@pytest.mark.parametrize(
    "call, code",
    [
        (lambda torch, d, h: d.item(), "TRC102"),
        (lambda torch, d, h: d.cpu(), "TRC102"),
        (lambda torch, d, h: d.to("cpu"), "TRC102"),
        (lambda torch, d, h: torch.nonzero(d), "TRC501"),
        (lambda torch, d, h: d[d > 0], "TRC501"),
        (lambda torch, d, h: d.__setitem__(d > 0, d[:2]), "TRC501"),
        (lambda torch, d, h: torch.cuda.synchronize(), "TRC103"),
        (lambda torch, d, h: h.to("meta"), "TRC101"),
        (lambda torch, d, h: d.__setitem__(0, h), "TRC101"),  # a host value copied in
    ],
)
def test_raise_mode_stops_what_cuda_would_fail_before_torch_runs_it(torch, call, code):
    d = torch.ones(4, device="meta")  # torch itself refuses to read a meta tensor's values
    h = torch.tensor(2.0)  # a host scalar tensor
    before = stacks(torch)
    with guard() as tg:
        g = torch.cuda.CUDAGraph()
        with pytest.raises(TraceSafetyError, match="stopped before torch ran it") as info:
            g.capture_begin()
            try:
                call(torch, d, h)
            finally:
                g.capture_end()  # does not raise a second time
        with pytest.raises(TraceSafetyError):
            g.replay()
    assert [v.code for v in info.value.violations] == [code]
    assert info.value.violations[0].frame.function == "<lambda>"
    assert torch.synced == []
    assert g.calls == ["begin", "end"]
    assert tg.captures[0].status == "aborted"
    assert stacks(torch) == before


def test_a_loop_reports_a_line_once(torch):
    x = torch.arange(4.0)
    with guard("warn") as tg, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = torch.cuda.CUDAGraph()
        g.capture_begin()
        for row in x:
            row.item()
        g.capture_end()
    (record,) = tg.captures
    assert [op.op for op in record.ops].count("torch.item") == 4
    assert [v.op for v in record.violations].count("torch.item") == 1


def test_an_exception_inside_torch_cuda_graph_style_with_keeps_its_identity(torch):
    class graph_ctx:  # what torch.cuda.graph does around the body
        def __init__(self, g):
            self.g = g

        def __enter__(self):
            self.g.capture_begin()

        def __exit__(self, *exc):
            self.g.capture_end()

    x = torch.arange(4.0)
    with guard() as tg:
        g = torch.cuda.CUDAGraph()
        with pytest.raises(ValueError, match="user error") as info:
            with graph_ctx(g):
                x.sum().item()
                raise ValueError("user error")
        with pytest.raises(TraceSafetyError):
            g.replay()
    assert tg.captures[0].status == "ended"
    if sys.version_info >= (3, 11):
        assert any("TRC102" in note for note in info.value.__notes__)


def test_patches_are_undone_even_when_the_block_raises(torch):
    originals = {name: StandInGraph.__dict__[name] for name in ("capture_begin", "capture_end", "replay")}
    sync = torch.cuda.synchronize
    stream_methods = {name: torch.cuda.Stream.__dict__[name] for name in ("synchronize", "query")}
    event_methods = {name: torch.cuda.Event.__dict__[name] for name in ("synchronize", "query")}
    before = stacks(torch)
    with pytest.raises(KeyError):
        with guard():
            assert StandInGraph.__dict__["capture_begin"] is not originals["capture_begin"]
            assert torch.cuda.synchronize is not sync
            assert torch.cuda.Stream.__dict__["query"] is not stream_methods["query"]
            g = torch.cuda.CUDAGraph()
            g.capture_begin()
            try:
                raise KeyError("boom")
            finally:
                g.capture_end()
    assert {name: StandInGraph.__dict__[name] for name in originals} == originals
    assert torch.cuda.synchronize is sync
    assert {name: torch.cuda.Stream.__dict__[name] for name in stream_methods} == stream_methods
    assert {name: torch.cuda.Event.__dict__[name] for name in event_methods} == event_methods
    assert stacks(torch) == before


def test_capture_left_open_is_reported_and_ended_at_guard_exit(torch):
    before = stacks(torch)
    g = torch.cuda.CUDAGraph()
    with pytest.raises(TraceSafetyError, match="TRC401 CUDA graph capture left open") as info:
        with guard():
            g.capture_begin()
    assert g.calls == ["begin", "end"]  # the guard ended it through the real capture_end
    assert info.value.violations[0].frame.function == "test_capture_left_open_is_reported_and_ended_at_guard_exit"
    assert stacks(torch) == before


def test_nested_guards_share_one_set_of_patches_and_the_inner_mode_decides(torch):
    x = torch.arange(4.0)
    with guard() as outer:
        patched = StandInGraph.__dict__["capture_begin"]
        with guard("warn") as inner:
            assert StandInGraph.__dict__["capture_begin"] is patched
            g = torch.cuda.CUDAGraph()
            g.capture_begin()
            x.tolist()
            with pytest.warns(TraceSafetyWarning, match="TRC102"):
                g.capture_end()  # the inner guard's mode: warn
        with outer:  # reentrant
            pass
        assert outer.active and not inner.active
        assert StandInGraph.__dict__["capture_begin"] is patched
    assert outer.captures == inner.captures and len(outer.captures) == 1
    assert "capture_begin" not in StandInGraph.__dict__ or StandInGraph.__dict__["capture_begin"] is not patched


def test_threads_record_their_own_capture(torch):
    results = {}
    barrier = threading.Barrier(2)

    def worker(name, dirty):
        x = torch.arange(4.0) if dirty else torch.ones(4, device="meta")
        g = torch.cuda.CUDAGraph()
        g.capture_begin()
        barrier.wait()  # both captures are open at once
        (x * 2).tolist() if dirty else x * 2
        barrier.wait()
        try:
            g.capture_end()
            results[name] = "clean"
        except TraceSafetyError as error:
            results[name] = sorted({v.code for v in error.violations})

    with guard():
        threads = [threading.Thread(target=worker, args=(n, n == "dirty")) for n in ("dirty", "clean")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert results == {"dirty": ["TRC102", "TRC301"], "clean": "clean"}


def test_one_guard_covers_a_ttnn_trace_and_a_cuda_graph(torch):
    import fake_ttnn

    tt = fake_ttnn.make_ttnn()
    dev = tt.MeshDevice()
    x = tt.Tensor((32, 32), device=dev)
    with guard(ttnn_module=tt) as tg:
        tt.relu(x)  # warm-up
        tid = tt.begin_trace_capture(dev, cq_id=0)
        tt.relu(x)
        tt.end_trace_capture(dev, tid, cq_id=0)
        g = torch.cuda.CUDAGraph()
        g.capture_begin()
        torch.ones(4, device="meta") + 1
        g.capture_end()
        tt.execute_trace(dev, tid)
        g.replay()
    names = [c.name for c in tg.captures]
    assert names[0].startswith("trace 0 on ") and names[1].startswith("CUDA graph ")
    assert [c.executions for c in tg.captures] == [1, 1] and tg.violations == []


def test_a_guard_started_before_import_torch_patches_it_on_import(tmp_path):
    pytest.importorskip("torch")
    script = """
import sys
from trace_lint.runtime_guard import install, uninstall, is_installed, lifecycle
g = install(ttnn_module=False)
assert "torch" not in sys.modules and is_installed() and lifecycle._cuda is None
import torch
assert lifecycle._cuda is not None and g in lifecycle._cuda.guards
assert torch.cuda.CUDAGraph.__dict__["capture_begin"].__wrapped__ is not None
assert type(torch.__spec__.loader).__name__ != "_AfterExec" and torch.__loader__ is torch.__spec__.loader
assert lifecycle._hook not in sys.meta_path
uninstall()
assert not hasattr(torch.cuda.CUDAGraph.__dict__["capture_begin"], "__wrapped__") and not is_installed()
print("ok")
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "ok"


@pytest.fixture
def cuda_graph_cm(torch, monkeypatch):
    """torch's own torch.cuda.graph context manager, its CUDA calls replaced by no-ops."""
    import contextlib

    monkeypatch.setattr(torch.cuda, "stream", lambda stream: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(torch._C, "_host_emptyCache", lambda: None, raising=False)
    monkeypatch.setattr(torch.cuda.graph, "default_capture_stream", object())
    return torch.cuda.graph


def test_the_real_torch_cuda_graph_context_manager(torch, cuda_graph_cm):
    x = torch.arange(4.0)
    with guard() as tg:
        g = torch.cuda.CUDAGraph()
        with pytest.raises(TraceSafetyError) as info:
            with cuda_graph_cm(g):
                x.sum().item()
        with pytest.raises(ValueError) as user_error:
            g2 = torch.cuda.CUDAGraph()
            with cuda_graph_cm(g2):
                x.sum().item()
                raise ValueError("user error")
    begin_line = line_of(test_the_real_torch_cuda_graph_context_manager, "with cuda_graph_cm(g):")
    record = tg.captures[0]
    # torch's frames (graph.__enter__/__exit__) are skipped: the `with` line is the user frame.
    assert (record.begin_frame.filename, record.begin_frame.lineno) == (__file__, begin_line)
    assert record.end_frame.lineno == begin_line
    assert [v.code for v in info.value.violations] == ["TRC301", "TRC102"]
    assert g.calls == ["begin", "end"] and g2.calls == ["begin", "end"]
    assert torch.synced == [None, None]  # graph.__enter__ syncs before capture_begin: not a violation
    if sys.version_info >= (3, 11):
        assert any("TRC102" in note for note in user_error.value.__notes__)
