"""The guard's logic on a stand-in ttnn (runs everywhere; the real ttnn is in test_ttnn_mock.py)."""

from __future__ import annotations

import subprocess
import sys
import threading
import types
import warnings

import pytest

import fake_ttnn
from trace_lint.runtime_guard import TraceSafetyError, TraceSafetyWarning, guard, install, uninstall
from trace_lint.runtime_guard.patching import Patcher
from trace_lint.runtime_guard.report import CaptureRecord, Frame, Violation, format_report


@pytest.fixture
def tt():
    return fake_ttnn.make_ttnn()


@pytest.fixture
def dev(tt):
    return tt.MeshDevice()


def t(tt, dev, shape=(32, 32)):
    return tt.Tensor(shape, device=dev)


# ------------------------------------------------------------------ patch bookkeeping
def test_patcher_restores_own_and_inherited_attributes():
    class Base:
        def method(self):
            return "base"

    class Child(Base):
        def own(self):
            return "own"

    module = types.ModuleType("m")
    module.function = len
    original_own = Child.__dict__["own"]
    patcher = Patcher()
    patcher.patch(Child, "method", lambda self: "patched")
    patcher.patch(Child, "own", lambda self: "patched")
    patcher.patch(module, "function", abs)
    assert Child().method() == "patched" and Child().own() == "patched" and module.function is abs
    assert patcher.original(module, "function") is len
    assert patcher.restore() == []
    assert "method" not in Child.__dict__  # inherited again, not copied down
    assert Child.__dict__["own"] is original_own
    assert module.function is len
    assert len(patcher) == 0


def test_patcher_reports_attributes_someone_else_replaced():
    module = types.ModuleType("m")
    module.function = len
    patcher = Patcher()
    patcher.patch(module, "function", abs)
    module.function = min  # another tool patched over us
    assert patcher.restore() == ["m.function"]
    assert module.function is len


def test_every_patch_is_undone_on_exit_and_on_exception(tt, dev):
    before = fake_ttnn.snapshot(tt)
    with guard(ttnn_module=tt):
        during = fake_ttnn.snapshot(tt)
    assert fake_ttnn.snapshot(tt) == before
    assert all(during[k] is not before[k] for k in before), "everything in the table is patched"
    with pytest.raises(ZeroDivisionError):
        with guard(ttnn_module=tt):
            1 / 0
    assert fake_ttnn.snapshot(tt) == before


def test_nested_and_reentrant_guards_share_one_set_of_patches(tt, dev):
    before = fake_ttnn.snapshot(tt)
    outer = install("warn", ttnn_module=tt)
    with guard("raise", ttnn_module=tt) as inner:
        with inner:
            patched = fake_ttnn.snapshot(tt)
        assert fake_ttnn.snapshot(tt) == patched  # the inner guard is still active once
        x = t(tt, dev)
        tt.add(x, x)
        tid = tt.begin_trace_capture(dev, cq_id=0)
        with pytest.raises(TraceSafetyError):  # the innermost guard's mode decides: raise
            x.cpu()
    assert fake_ttnn.snapshot(tt) == patched  # outer still active
    assert len(outer.captures) == 1 and outer.captures[0] is inner.captures[0]
    uninstall()
    assert fake_ttnn.snapshot(tt) == before
    del tid


def test_mode_is_checked():
    with pytest.raises(ValueError):
        guard("loud")


def test_guard_decorates_functions_and_coroutines(tt, dev):
    from trace_lint.runtime_guard import is_installed

    x = t(tt, dev)
    guarded = guard(ttnn_module=tt, torch=False)

    @guarded
    def capture_and_read(depth=0):
        """Reads inside a capture."""
        if depth:
            return capture_and_read(depth - 1)  # reentrant: the inner call only counts
        assert is_installed()
        tid = tt.begin_trace_capture(dev, cq_id=0)
        try:
            x.cpu()
        finally:
            tt.end_trace_capture(dev, tid, cq_id=0)

    assert capture_and_read.__name__ == "capture_and_read" and "Reads" in capture_and_read.__doc__
    with pytest.raises(TraceSafetyError, match="TRC102"):
        capture_and_read(depth=2)
    assert not is_installed()  # every patch undone when the call left
    with pytest.raises(TraceSafetyError):
        capture_and_read()
    assert [c.status for c in guarded.captures] == ["aborted", "aborted"]

    @guard(ttnn_module=tt, torch=False)
    async def coroutine():
        return is_installed()

    import asyncio

    assert asyncio.run(coroutine()) is True and not is_installed()
    with pytest.raises(TypeError, match="decorates a function"):
        guard(ttnn_module=tt)(42)


# ------------------------------------------------------------------ classification
def test_alias_bound_before_the_guard_is_recorded_with_its_line(tt, dev):
    add = tt.add
    x = t(tt, dev)
    with guard(ttnn_module=tt) as g:
        add(x, x)
        tid = tt.begin_trace_capture(dev, cq_id=0)
        add(x, x); line = sys._getframe().f_lineno  # noqa: E702
        tt.end_trace_capture(dev, tid, cq_id=0)
    (capture,) = g.captures
    assert [(op.op, op.frame.lineno, op.frame.function) for op in capture.ops] == [
        ("ttnn.add", line, "test_alias_bound_before_the_guard_is_recorded_with_its_line")
    ]
    assert capture.violations == [] and capture.status == "ended"


def test_read_raises_before_the_device_sees_it_and_capture_is_closed(tt, dev):
    x = t(tt, dev)
    with guard(ttnn_module=tt) as g:
        tid = tt.begin_trace_capture(dev, cq_id=0)
        with pytest.raises(TraceSafetyError) as info:
            x.to_numpy()
        assert "Reads are not supported" not in str(info.value)
        assert not dev.capturing  # ended by the guard
        assert dev.traces == set()  # and released
        tt.end_trace_capture(dev, tid, cq_id=0)  # the user's finally: swallowed, no KeyError
        with pytest.raises(TraceSafetyError, match="execute_trace refused"):
            tt.execute_trace(dev, tid, cq_id=0)
    assert "execute" not in " ".join(dev.log)
    assert [v.code for v in g.violations] == ["TRC102"]


@pytest.mark.parametrize(
    "call, code",
    [
        (lambda tt, dev, x, h: tt.to_device(h, dev), "TRC101"),
        (lambda tt, dev, x, h: h.to(dev), "TRC101"),
        (lambda tt, dev, x, h: tt.from_device(x), "TRC102"),
        (lambda tt, dev, x, h: repr(x), "TRC102"),
        (lambda tt, dev, x, h: f"{x}", "TRC102"),
        (lambda tt, dev, x, h: x.item(), "TRC102"),
        (lambda tt, dev, x, h: tt.synchronize_device(dev), "TRC103"),
        (lambda tt, dev, x, h: tt.record_event(dev, 0), "TRC103"),
        (lambda tt, dev, x, h: tt.event_synchronize(("event", dev)), "TRC103"),
        (lambda tt, dev, x, h: tt.wait_for_event(0, ("event", dev)), "TRC103"),
        (lambda tt, dev, x, h: tt.add(t(tt, dev, (64, 32)), x), "TRC404"),
    ],
)
def test_stop_at_the_call_kinds(tt, dev, call, code):
    x, h = t(tt, dev), tt.Tensor()
    with guard(ttnn_module=tt):
        tt.add(x, x)
        tt.begin_trace_capture(dev, cq_id=0)
        log = list(dev.log)
        with pytest.raises(TraceSafetyError) as info:
            call(tt, dev, x, h)
        assert [v.code for v in info.value.violations][-1] == code
        assert dev.log == log, "the device saw nothing of the refused call"
        assert not dev.capturing


def test_cache_signature_includes_shape_dtype_layout_and_configs(tt, dev):
    x, y = t(tt, dev), t(tt, dev)
    with guard(ttnn_module=tt) as g:
        tt.add(x, y, memory_config=tt.Tensor().memory_config())
        tt.begin_trace_capture(dev, cq_id=0)
        tt.add(y, x, memory_config=tt.Tensor().memory_config())  # same specs: warm
        with pytest.raises(TraceSafetyError) as info:
            tt.add(x, y, memory_config=fake_ttnn.MemoryConfig(fake_ttnn.BufferType.L1))
        assert info.value.violations[-1].code == "TRC404"
    assert [op.op for op in g.captures[0].ops] == ["ttnn.add", "ttnn.add"]


def test_deferred_kinds_raise_at_end_with_every_violation_in_order(tt, dev):
    x = t(tt, dev)
    with guard(ttnn_module=tt) as g:
        tt.relu(x)
        tid = tt.begin_trace_capture(dev, cq_id=0)
        tt.relu(x)
        tt.zeros((32, 32), device=dev); zeros_line = sys._getframe().f_lineno  # noqa: E702
        tt.zeros((32, 32)); host_line = sys._getframe().f_lineno  # noqa: E702
        with pytest.raises(TraceSafetyError) as info:
            tt.end_trace_capture(dev, tid, cq_id=0)
    message = str(info.value)
    assert [v.code for v in info.value.violations] == ["TRC301", "TRC301"]
    assert [v.frame.lineno for v in info.value.violations] == [zeros_line, host_line]
    assert message.index(f"test_guard_unit.py:{zeros_line} in ") < message.index(f"test_guard_unit.py:{host_line} in ")
    assert message.count("fix: ") == 2
    assert g.captures[0].status == "released"


def test_warn_mode_warns_at_end_at_the_user_line_and_refuses_replay(tt, dev):
    x = t(tt, dev)
    with guard("warn", ttnn_module=tt) as g:
        tid = tt.begin_trace_capture(dev, cq_id=0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tt.synchronize_device(dev); line = sys._getframe().f_lineno  # noqa: E702
            assert caught == []
            tt.end_trace_capture(dev, tid, cq_id=0)
        with pytest.raises(TraceSafetyError):
            tt.execute_trace(dev, tid, cq_id=0)
    (w,) = [w for w in caught if issubclass(w.category, TraceSafetyWarning)]
    assert w.lineno == line and w.filename == __file__
    assert "TRC103" in str(w.message)
    assert "sync" in dev.log  # warn mode lets the call through
    assert g.captures[0].refused_executions == 1


def test_nested_begin_same_queue_stops_other_queue_defers(tt, dev):
    with guard(ttnn_module=tt) as g:
        tt.begin_trace_capture(dev, cq_id=0)
        with pytest.raises(TraceSafetyError) as info:
            tt.begin_trace_capture(dev, cq_id=0)
        assert info.value.violations[-1].code == "TRC406"
        tid = tt.begin_trace_capture(dev, cq_id=0)
        inner = tt.begin_trace_capture(dev, cq_id=1)  # another queue: ttnn allows it, reported at end
        tt.end_trace_capture(dev, inner, cq_id=1)
        with pytest.raises(TraceSafetyError) as info:
            tt.end_trace_capture(dev, tid, cq_id=0)
        assert [v.code for v in info.value.violations] == ["TRC406"]
    assert len(g.captures) == 3


def test_left_open_raises_at_exit_and_notes_a_user_exception(tt, dev):
    with pytest.raises(TraceSafetyError) as info:
        with guard(ttnn_module=tt):
            tt.begin_trace_capture(dev, cq_id=0)
    assert info.value.violations[0].code == "TRC401"
    assert not dev.capturing and not dev.traces
    with pytest.warns(TraceSafetyWarning, match="TRC401"), pytest.raises(KeyError) as user:
        with guard(ttnn_module=tt):
            tt.begin_trace_capture(dev, cq_id=0)
            raise KeyError("bug")
    if sys.version_info >= (3, 11):
        assert any("TRC401" in note for note in user.value.__notes__)
    assert not dev.capturing


def test_stale_inputs_freed_replaced_and_deallocated(tt, dev):
    def capture(x, out):
        tid = tt.begin_trace_capture(dev, cq_id=0)
        tt.add(x, x, output_tensor=out)
        tt.end_trace_capture(dev, tid, cq_id=0)
        return tid

    with guard(ttnn_module=tt) as g:
        x, out = t(tt, dev), t(tt, dev)
        tt.add(x, x, output_tensor=out)
        tid = capture(x, out)
        tt.execute_trace(dev, tid)  # clean
        tt.release_trace(dev, tid)
        tid = capture(x, out)
        x = None  # freed, address not reused
        with pytest.raises(TraceSafetyError, match="freed after the capture") as info:
            tt.execute_trace(dev, tid)
        assert info.value.violations[0].code == "TRC403"
        tt.release_trace(dev, tid)
        x = t(tt, dev)
        tid = capture(x, out)
        address = x.buffer_address()
        del x
        y = tt.zeros((32, 32), device=dev); line = sys._getframe().f_lineno  # noqa: E702
        assert y.buffer_address() == address
        with pytest.raises(TraceSafetyError, match=f"reused by ttnn.zeros at .*:{line} in"):
            tt.execute_trace(dev, tid)
        tt.release_trace(dev, tid)
        tid = capture(y, out)
        y.deallocate()
        with pytest.raises(TraceSafetyError) as info:
            tt.execute_trace(dev, tid)
        assert info.value.violations[0].code == "TRC302"
    assert [c.executions for c in g.captures] == [1, 0, 0, 0]
    assert dev.log.count("execute 0") == 1 and not any(e.startswith("execute 1") for e in dev.log)


def test_freeing_a_trace_input_inside_the_capture_is_trc302(tt, dev):
    x = t(tt, dev)
    with guard(ttnn_module=tt):
        tt.relu(x)
        tid = tt.begin_trace_capture(dev, cq_id=0)
        tt.relu(x)
        tt.deallocate(x)
        with pytest.raises(TraceSafetyError) as info:
            tt.end_trace_capture(dev, tid, cq_id=0)
    assert [v.code for v in info.value.violations] == ["TRC302"]


def test_threads_run_ops_outside_while_one_device_captures(tt):
    a, b = tt.MeshDevice(), tt.MeshDevice()
    xa, xb = t(tt, a), t(tt, b)
    errors = []
    with guard(ttnn_module=tt) as g:
        tt.relu(xa)
        tid = tt.begin_trace_capture(a, cq_id=0)

        def work():
            try:
                for _ in range(200):
                    tt.relu(xb)  # another device: not captured, no violation
            except Exception as error:  # pragma: no cover - reported below
                errors.append(error)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for thread in threads:
            thread.start()
        tt.relu(xa)
        for thread in threads:
            thread.join()
        tt.end_trace_capture(a, tid, cq_id=0)
    assert errors == []
    assert [op.op for op in g.captures[0].ops] == ["ttnn.relu"]
    assert g.violations == []


# ------------------------------------------------------------------ report
def test_report_lists_violations_like_a_traceback():
    record = CaptureRecord("MeshDevice(1x1)", 3, 0, Frame("model.py", 10, "capture"))
    violations = [
        Violation("host-transfer", "ttnn.from_torch", "tensor[1x32], device=MeshDevice", Frame("model.py", 14, "forward"),
                  also=("TRC301",)),
        Violation("program-cache-miss", "ttnn.matmul", "Tensor[32x64]", Frame("layers.py", 7, "mlp")),
    ]
    text = format_report(record, violations, "stopped")
    assert text.splitlines()[0] == (
        "trace-lint runtime guard: trace 3 on MeshDevice(1x1) (begun at model.py:10 in capture): stopped; 2 violations:"
    )
    assert "1. TRC101/TRC301 host-to-device transfer inside a capture: ttnn.from_torch(tensor[1x32], " in text
    assert "     at model.py:14 in forward" in text
    assert "2. TRC404 program-cache miss" in text and "at layers.py:7 in mlp" in text
    assert text.count("fix: ") == 2


def test_importing_the_package_and_plugin_loads_neither_ttnn_nor_torch():
    code = (
        "import sys, trace_lint.runtime_guard, trace_lint.runtime_guard.pytest_plugin;"
        "print(sorted(m for m in ('ttnn', 'torch', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
