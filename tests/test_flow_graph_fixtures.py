"""Flow questions answered on the control-flow graph (RULES' answers), on shapes where reading
text positions and nesting answered wrong: a rebinding or free on a path that returns before
the replay, the last turn of a `while True:` loop that breaks, an exception swallowed before
the end, an end in a `finally` only under a condition, and code after an `if capturing():`
whose branches all leave."""

from __future__ import annotations

from .cli_helpers import FIXTURES, finding_set


def test_flow_graph_shapes():
    assert finding_set(FIXTURES / "flow_graph") == {
        # next_turn_replays: the rebinding is replayed in the next turn of the loop
        ("replays.py", 43, "TRC403"),
        # eager_branch_frees_then_replays: the replay below follows the free on its path
        ("replays.py", 69, "TRC302"),
        # ended_only_when_debugging: with `debug` false the exception leaves it open
        ("lifecycle.py", 17, "TRC401"),
        # Not reported: replays.py 12 and 27 (TRC403: no replay after them on their path),
        # replays.py 55 (TRC302: that path returns, and the trace id never leaves the
        # function), lifecycle.py 6 (TRC401: the handler swallows the exception and the end
        # runs after it), graphs.py 10 (TRC103: only reached when not capturing).
    }
