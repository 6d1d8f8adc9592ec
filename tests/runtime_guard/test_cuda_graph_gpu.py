"""The CUDA-graph guard around real torch.cuda.graph captures. Needs a CUDA GPU: skipped elsewhere.

Run: pytest -m cuda tests/runtime_guard/test_cuda_graph_gpu.py
"""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda.is_available() is False)"),
]

from trace_lint.runtime_guard import TraceSafetyError, TraceSafetyWarning, guard, is_installed  # noqa: E402


def line_of(function, text):
    import inspect

    lines, start = inspect.getsourcelines(function)
    return start + next(i for i, line in enumerate(lines) if text in line)


@pytest.fixture
def static():
    x = torch.randn(256, device="cuda")
    # Warm-up on a side stream, as torch's CUDA graph docs do before capturing.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.relu(x * 2 + 1).sum()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    yield x
    torch.cuda.synchronize()
    assert not is_installed()


def test_clean_capture_replays_and_matches_eager(static):
    with guard() as tg:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = torch.relu(static * 2 + 1)
        for _ in range(3):
            new = torch.randn(256, device="cuda")
            static.copy_(new)
            g.replay()
            torch.cuda.synchronize()  # outside the capture: fine
            assert torch.allclose(out, torch.relu(new * 2 + 1))
    (record,) = tg.captures
    assert record.violations == [] and record.executions == 3 and record.status == "ended"
    assert record.device.startswith("cuda:")
    assert [op.op for op in record.ops] == ["torch.mul", "torch.add", "torch.relu"]
    assert all(op.frame.filename == __file__ for op in record.ops)


def test_item_inside_a_capture_raises_naming_the_line_and_replay_is_refused(static):
    g = torch.cuda.CUDAGraph()
    with guard() as tg:
        with pytest.raises(TraceSafetyError) as info:
            with torch.cuda.graph(g):
                y = static * 2
                scale = y.sum().item()  # CUDA would fail this with error 900
                y.mul_(scale)
        with pytest.raises(TraceSafetyError, match=r"replay\(\) refused"):
            g.replay()
    line = line_of(test_item_inside_a_capture_raises_naming_the_line_and_replay_is_refused, "scale = y.sum().item()")
    (violation,) = info.value.violations
    assert violation.code == "TRC102" and violation.op == "torch.item"
    assert (violation.frame.filename, violation.frame.lineno) == (__file__, line)
    assert f"{__file__}:{line} in test_item_inside_a_capture_raises" in str(info.value)
    assert "stopped before torch ran it" in str(info.value)
    assert tg.captures[0].refused_executions == 1 and tg.captures[0].executions == 0
    # The capture was ended cleanly: the device keeps working.
    torch.cuda.synchronize()
    assert torch.allclose((static * 2).cpu(), static.cpu() * 2)


@pytest.mark.parametrize(
    "text, code",
    [
        ("torch.cuda.synchronize()", "TRC103"),
        ("torch.cuda.current_stream().synchronize()", "TRC103"),
        ("torch.nonzero(static)", "TRC501"),
        ("static[static > 0]", "TRC501"),
        ("static.cpu()", "TRC102"),
        ("static.tolist()", "TRC102"),
    ],
)
def test_calls_cuda_would_fail_are_stopped_with_their_code(static, text, code):
    g = torch.cuda.CUDAGraph()
    with guard(), pytest.raises(TraceSafetyError, match="stopped before torch ran it") as info:
        with torch.cuda.graph(g):
            eval(text, {"torch": torch, "static": static})
    assert [v.code for v in info.value.violations] == [code]
    torch.cuda.synchronize()  # no CUDA error 900/901 left behind


def test_cpu_work_inside_a_capture_warns_in_warn_mode_and_replay_is_refused(static):
    g = torch.cuda.CUDAGraph()
    host = torch.ones(4)
    with guard("warn") as tg:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with torch.cuda.graph(g):
                out = static * 2
                host.add_(1)  # CPU work: runs now, never on replay
        with pytest.raises(TraceSafetyError, match=r"replay\(\) refused"):
            g.replay()
    assert [v.code for v in tg.violations] == ["TRC301"]
    assert any(w.category is TraceSafetyWarning and "TRC301" in str(w.message) for w in caught)
    assert out.shape == static.shape
