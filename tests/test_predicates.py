"""A project predicate given a tensor reads its value only if its resolved body does (RULES,
host metadata): `if self._fits(x):` over `x.padded_shape` is no TRC202."""

from __future__ import annotations

import pytest

from tests.conftest import findings_for

TEMPLATE = """\
import ttnn

LIMIT = 64


class Block:
    def _predicate(self, x, n: int) -> bool:
{body}

    def forward(self, x):
        y = ttnn.relu(x)
        if self._predicate(y, 3):
            return ttnn.gelu(y)
        return y


def capture(device, block: Block, x):
    block.forward(x)
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    try:
        out = block.forward(x)
    finally:
        ttnn.end_trace_capture(device, tid, cq_id=0)
    return out
"""

BODIES = {
    # Host metadata only.
    "shape": ("return tuple(x.padded_shape)[-1] <= LIMIT and n > 1", False),
    "memory_config": ("return x.memory_config().buffer_type == ttnn.BufferType.DRAM", False),
    "len_and_none": ("return x is not None and len(x.shape) == 4", False),
    # The value itself (a reported line is the `if` that calls the predicate).
    "a_reduction": ("return ttnn.to_torch(ttnn.max(x)).item() > 0", True),
    "truthiness": ("return bool(x)", True),
    "a_closure_over_it": ("check = lambda: ttnn.to_torch(x)\n        return check() is not None", True),
}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_a_project_predicate_reads_what_its_body_reads(name, tmp_path):
    body, expected = BODIES[name]
    source = TEMPLATE.format(body="        " + body)
    found = findings_for(source, tmp_path, select=("TRC202",))
    test_line = source.splitlines().index("        if self._predicate(y, 3):") + 1
    assert sorted(f.location.row for f in found) == ([test_line] if expected else [])


def test_an_unresolved_callee_given_a_device_tensor_is_still_a_read(tmp_path):
    source = TEMPLATE.format(body="        return True").replace("self._predicate(y, 3)", "unknown_predicate(y)")
    found = findings_for(source, tmp_path, select=("TRC202",))
    assert sorted(f.location.row for f in found) == [12]
