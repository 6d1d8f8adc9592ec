"""The guard's failure paths, on the stand-in ttnn: ttnn's end_trace_capture raising, a patch
that cannot be undone, guards of different modes on different threads, missing libraries."""

from __future__ import annotations

import sys
import threading
import warnings

import pytest

import fake_ttnn
from trace_lint.runtime_guard import TraceSafetyError, TraceSafetyWarning, guard, is_installed, uninstall
from trace_lint.runtime_guard.lifecycle import stuck_patches
from trace_lint.runtime_guard.patching import RestoreError


@pytest.fixture
def tt():
    return fake_ttnn.make_ttnn()


@pytest.fixture(autouse=True)
def nothing_left_installed():
    yield
    assert not is_installed(), "a test left the guard installed"


def warmed(tt, dev):
    x = tt.Tensor((32, 32), device=dev)
    tt.relu(x)  # the program cache knows relu before any capture
    return x


# ------------------------------------------------------------------ end_trace_capture raises
def test_failed_end_closes_the_capture(tt):
    calls = []
    real_end = tt.end_trace_capture

    def failing_end(mesh_device, trace_id, *, cq_id=None):
        calls.append(trace_id)
        real_end(mesh_device, trace_id, cq_id=cq_id)  # ttnn may well have stopped recording
        raise RuntimeError("TT_FATAL: end_trace_capture failed")

    tt.end_trace_capture = failing_end
    dev = tt.MeshDevice()
    with warnings.catch_warnings():
        warnings.simplefilter("error", TraceSafetyWarning)  # no TRC401 at exit
        with guard("raise", ttnn_module=tt, torch=False) as g:
            x = warmed(tt, dev)
            tid = tt.begin_trace_capture(dev, cq_id=0)
            tt.relu(x)
            with pytest.raises(RuntimeError, match="end_trace_capture failed"):
                tt.end_trace_capture(dev, tid, cq_id=0)
            (record,) = g.captures
            assert record.status.startswith("end failed (RuntimeError: TT_FATAL")
            ops = len(record.ops)
            tt.relu(x)  # after the failed end: not part of the capture
            tt.relu(x)
            assert len(record.ops) == ops
            with pytest.raises(TraceSafetyError, match="execute_trace refused: its capture end failed"):
                tt.execute_trace(dev, tid, cq_id=0)
            tt.release_trace(dev, tid)
    assert calls == [tid]  # the guard never called end again
    assert g.violations == []


def test_an_end_that_ttnn_refuses_while_still_recording_keeps_the_capture(tt):
    real_end = tt.end_trace_capture

    def picky_end(mesh_device, trace_id, *, cq_id=None):
        if cq_id != 0:  # like ttnn 0.81.1 for a queue that is not capturing: TT_FATAL, still recording
            raise RuntimeError("TT_FATAL: id < mesh_command_queues_.size()")
        real_end(mesh_device, trace_id, cq_id=cq_id)

    tt.end_trace_capture = picky_end
    dev = tt.MeshDevice()
    with guard("raise", ttnn_module=tt, torch=False) as g:
        x = warmed(tt, dev)
        tid = tt.begin_trace_capture(dev, cq_id=0)
        with pytest.raises(RuntimeError, match="TT_FATAL"):
            tt.end_trace_capture(dev, tid, cq_id=1)
        (record,) = g.captures
        assert record.status == "recording"
        tt.relu(x)  # still recorded by ttnn, so still attributed
        tt.end_trace_capture(dev, tid, cq_id=0)
    assert record.status == "ended" and [op.op for op in record.ops] == ["ttnn.relu"]


def test_failed_end_keeps_its_error_and_notes_the_violations(tt):
    def failing_end(mesh_device, trace_id, *, cq_id=None):
        mesh_device.capturing.pop(cq_id or 0)
        raise RuntimeError("end failed")

    tt.end_trace_capture = failing_end
    dev = tt.MeshDevice()
    with guard("warn", ttnn_module=tt, torch=False):
        x = warmed(tt, dev)
        tid = tt.begin_trace_capture(dev, cq_id=0)
        tt.zeros((32, 32), device=dev)  # TRC301, reported at the end
        with pytest.raises(RuntimeError, match="end failed") as raised:
            tt.end_trace_capture(dev, tid, cq_id=0)
        assert any("TRC301" in note for note in getattr(raised.value, "__notes__", []))
        tt.relu(x)


# ------------------------------------------------------------------ a patch that cannot be undone
class _Lockable(type):
    """A class whose attributes can be frozen, as an extension type's can be."""

    locked = False

    def __setattr__(cls, name, value):
        if _Lockable.locked and name == "cpu":
            raise AttributeError(f"cannot set {name}: locked")
        super().__setattr__(name, value)

    def __delattr__(cls, name):
        if _Lockable.locked and name == "cpu":
            raise AttributeError(f"cannot delete {name}: locked")
        super().__delattr__(name)


def test_a_failed_restore_keeps_the_users_error_and_undoes_the_rest(tt):
    tt.Tensor = _Lockable("Tensor", (fake_ttnn.Tensor,), {})
    before = fake_ttnn.snapshot(tt)
    try:
        with pytest.raises(ValueError, match="the user's own error") as raised:
            with guard("raise", ttnn_module=tt, torch=False):
                assert fake_ttnn.snapshot(tt) != before
                _Lockable.locked = True
                raise ValueError("the user's own error")
        notes = "\n".join(getattr(raised.value, "__notes__", []))
        assert "could not undo" in notes and "Tensor.cpu" in notes
        after = fake_ttnn.snapshot(tt)
        # Every other patch is undone; the one that cannot be stays, and says so.
        assert {k for k in before if after[k] is not before[k]} == {"Tensor.cpu"}
        assert is_installed() and stuck_patches() == ["Tensor.cpu"]
    finally:
        _Lockable.locked = False
    assert uninstall() == [] or True  # nothing installed with install(): a no-op
    # The next guard's exit retries it.
    with guard("raise", ttnn_module=tt, torch=False):
        pass
    assert fake_ttnn.snapshot(tt) == before
    assert not is_installed() and stuck_patches() == []


def test_a_failed_restore_without_a_user_error_raises_a_clear_error(tt):
    tt.Tensor = _Lockable("Tensor", (fake_ttnn.Tensor,), {})
    before = fake_ttnn.snapshot(tt)
    try:
        with pytest.raises(RestoreError, match="could not undo this patch.*Tensor.cpu"):
            with guard("raise", ttnn_module=tt, torch=False):
                _Lockable.locked = True
        assert is_installed()
    finally:
        _Lockable.locked = False
    with guard("raise", ttnn_module=tt, torch=False):
        pass
    assert fake_ttnn.snapshot(tt) == before


def test_a_failed_ttnn_restore_still_unpatches_torch(tt):
    torch = pytest.importorskip("torch")
    graph_class = torch.cuda.CUDAGraph
    original_begin = vars(graph_class)["capture_begin"]
    tt.Tensor = _Lockable("Tensor", (fake_ttnn.Tensor,), {})
    try:
        with pytest.raises(KeyError):
            with guard("raise", ttnn_module=tt, torch=True):
                assert vars(graph_class)["capture_begin"] is not original_begin
                _Lockable.locked = True
                raise KeyError("user")
        assert vars(graph_class)["capture_begin"] is original_begin
    finally:
        _Lockable.locked = False
    with guard("raise", ttnn_module=tt, torch=False):
        pass


# ------------------------------------------------------------------ modes on threads
def _capture_with_sync(tt, dev):
    # A sync: mode "raise" stops it at the call, mode "warn" lets ttnn run it and warns at the end.
    tid = tt.begin_trace_capture(dev, cq_id=0)
    try:
        tt.synchronize_device(dev)
    finally:
        tt.end_trace_capture(dev, tid, cq_id=0)


@pytest.mark.filterwarnings("ignore::trace_lint.runtime_guard.TraceSafetyWarning")
@pytest.mark.parametrize("raise_enters_first", [True, False])
def test_each_thread_keeps_its_own_guards_mode(tt, raise_enters_first):
    both_in = threading.Barrier(2, timeout=30)
    raise_done = threading.Event()
    outcome: dict = {}

    def run(mode: str, delay_entry: bool) -> None:
        dev = tt.MeshDevice()
        try:
            if delay_entry:
                entered_first.wait(30)
            with guard(mode, ttnn_module=tt, torch=False) as g:
                if not delay_entry:
                    entered_first.set()
                both_in.wait()
                if mode == "warn":
                    raise_done.wait(30)  # the raise guard acts while this warn guard is the newest, or the oldest
                try:
                    _capture_with_sync(tt, dev)
                    outcome[mode] = "no error"
                except TraceSafetyError:
                    outcome[mode] = "raised"
                finally:
                    if mode == "raise":
                        raise_done.set()
                outcome[mode + " status"] = g.captures[0].status
                both_in.wait()
        except BaseException as error:  # pragma: no cover - reported below
            outcome[mode] = repr(error)
            raise_done.set()

    entered_first = threading.Event()
    first, second = ("raise", "warn") if raise_enters_first else ("warn", "raise")
    threads = [threading.Thread(target=run, args=(first, False)), threading.Thread(target=run, args=(second, True))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert outcome == {"raise": "raised", "raise status": "aborted", "warn": "no error", "warn status": "ended"}


def test_another_threads_guard_exit_leaves_this_threads_capture_alone(tt):
    dev = tt.MeshDevice()
    other_started = threading.Event()
    release_other = threading.Event()

    def other() -> None:
        with guard("raise", ttnn_module=tt, torch=False):
            other_started.set()
            release_other.wait(30)

    with guard("raise", ttnn_module=tt, torch=False) as g:
        x = warmed(tt, dev)
        thread = threading.Thread(target=other)
        thread.start()
        assert other_started.wait(30)
        tid = tt.begin_trace_capture(dev, cq_id=0)
        release_other.set()
        thread.join(30)  # the other guard exits while this capture records
        tt.relu(x)
        tt.end_trace_capture(dev, tid, cq_id=0)
    (record,) = g.captures
    assert record.status == "ended" and record.violations == [] and [op.op for op in record.ops] == ["ttnn.relu"]


# ------------------------------------------------------------------ clear errors
def test_torch_true_without_torch_says_so(tt, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` fails as if not installed
    with pytest.raises(ImportError, match=r"guard\(torch=True\) needs torch"):
        with guard("raise", ttnn_module=tt, torch=True):
            pass


def test_nothing_to_guard_names_the_arguments_not_the_environment(monkeypatch):
    monkeypatch.delenv("TRACE_LINT_GUARD_TORCH", raising=False)
    with pytest.raises(ImportError) as raised:
        with guard("raise", ttnn_module=False, torch=False):
            pass
    message = str(raised.value)
    assert "ttnn is off (ttnn_module=False)" in message and "torch is off (torch=False)" in message
    assert "TRACE_LINT_GUARD_TORCH" not in message
    monkeypatch.setenv("TRACE_LINT_GUARD_TORCH", "0")
    with pytest.raises(ImportError, match=r"torch is off \(TRACE_LINT_GUARD_TORCH=0 in the environment\)"):
        with guard("raise", ttnn_module=False):
            pass
