"""Shapes met in real TT-NN model repositories (runners, infra objects, generators), each
reproduced in a minimal project of our own and checked through the real CLI with exact
(file, line, code) sets: what was reported falsely is gone, what was missed is reported."""

from __future__ import annotations

from .cli_helpers import FIXTURES, finding_set

PROJECTS = FIXTURES / "model_shapes"


def test_next_input_kept_under_another_name_than_the_freed_one():
    # The runner's capture calls `self.infra.run()`, whose model frees the input the infra
    # object holds (detector.py:7, two frames down); the region then allocates the next
    # input as the runner's own `self.input_tensor` (runner.py:24): the re-allocation idiom,
    # so no TRC301 there and no TRC302 on the run. Without the allocation (`LeakyRunner`)
    # the free of `self.infra.input_tensor`, a trace input, is TRC302 on the call holding
    # it (runner.py:48), though the region never names the attribute itself.
    assert finding_set(PROJECTS / "infra_reallocation") == {
        ("runner.py", 22, "TRC401"),
        ("runner.py", 47, "TRC401"),
        ("runner.py", 48, "TRC302"),
    }
