"""Capture-time objects: `self` of a method called on an object the capture made is not state
that outlives the capture (TRC203 stays silent); an object that lives on is still reported."""

from __future__ import annotations

import pytest

from tests.conftest import findings_for

CHAINS = """\
import ttnn


class Chains:
    def __init__(self):
        self.items = []

    def add(self, item):
        self.items.append(item)
        self.count = len(self.items)
"""


def framing(params: str = "x", args: str = "x") -> str:
    """The framing code of most cases: warm up `layer`, then capture it."""
    return f"""

def capture(device, {params}):
    layer({args})
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    try:
        out = layer({args})
    finally:
        ttnn.end_trace_capture(device, tid, cq_id=0)
    return out
"""


# A nested function reads its maker's parameter while the maker runs.
CALLBACK = """

def summaries(ch: Chains, x):
    def first():
        return body(ch, x)

    return first()


def body(ch: Chains, x):
    ch.add(x)
    return ttnn.relu(x)


def layer(x, shared: Chains):
    summaries(%s, x)
    return ttnn.relu(x)
""" + framing("x, shared", "x, shared")


def _trc203(source: str, tmp_path) -> list[int]:
    return sorted(f.location.row for f in findings_for(source, tmp_path, select=("TRC203",)))


CASES = {
    # Made in the captured function, then mutated by its own methods.
    "made_in_captured_code": (
        CHAINS
        + """

def layer(x):
    ch = Chains()
    ch.add(x)
    return ttnn.relu(x)
"""
        + framing(),
        [],
    ),
    # Made by the framing function before the region and handed to the captured work,
    # through a factory that returns it in a tuple, two frames down.
    "made_by_the_framing_code_through_a_factory": (
        CHAINS
        + """

def prepare(x):
    ch = Chains()
    return ch, x


def inner(ch: Chains, x):
    ch.add(x)
    return ttnn.relu(x)


def layer(ch, x):
    return inner(ch, x)


def capture(device, x):
    ch, x = prepare(x)
    layer(ch, x)
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    try:
        out = layer(ch, x)
    finally:
        ttnn.end_trace_capture(device, tid, cq_id=0)
    return out
""",
        [],
    ),
    # Made by the framing code through four factories, each returning the next one's call:
    # still a new object, however many frames down (no cutoff).
    "made_by_factories_frames_down": (
        CHAINS
        + """

def make_chains():
    return build_chains()


def build_chains():
    return assemble_chains()


def assemble_chains():
    return finish_chains()


def finish_chains():
    return Chains()


def layer(ch: Chains, x):
    ch.add(x)
    return ttnn.relu(x)


def capture(device, x):
    ch = make_chains()
    layer(ch, x)
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    try:
        out = layer(ch, x)
    finally:
        ttnn.end_trace_capture(device, tid, cq_id=0)
    return out
""",
        [],
    ),
    # A method calling another on the same capture-time `self`.
    "self_calls_on_a_capture_time_object": (
        CHAINS
        + """
    def add_twice(self, item):
        self.add(item)
        self.add(item)


def layer(x):
    Chains().add_twice(x)
    return ttnn.relu(x)
"""
        + framing(),
        [],
    ),
    # Kept on `self` of the model: it lives on after the capture.
    "kept_on_a_long_lived_object": (
        CHAINS
        + """

class Model:
    def __init__(self):
        self.chains = Chains()

    def forward(self, x):
        self.chains.add(x)
        return ttnn.relu(x)


def capture(device, model: Model, x):
    model.forward(x)
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    try:
        out = model.forward(x)
    finally:
        ttnn.end_trace_capture(device, tid, cq_id=0)
    return out
""",
        [9, 10],
    ),
    # Capture-time on one call, long-lived on another: reported.
    "not_on_every_call": (
        CHAINS
        + """

def layer(x, shared: Chains):
    Chains().add(x)
    shared.add(x)
    return ttnn.relu(x)
"""
        + framing("x, shared", "x, shared"),
        [9, 10],
    ),
    # The framing function's own parameter comes from whoever called it.
    "a_parameter_of_the_framing_function": (
        CHAINS
        + """

def layer(ch: Chains, x):
    ch.add(x)
    return ttnn.relu(x)
"""
        + framing("ch, x", "ch, x"),
        [9, 10],
    ),
    # A factory that may hand out a cached object is not a maker of new ones.
    "a_caching_factory": (
        CHAINS
        + """

_CACHE = {}


def chains_for(key) -> Chains:
    if key not in _CACHE:
        _CACHE[key] = Chains()
    return _CACHE[key]


def layer(x):
    chains_for("a").add(x)
    return ttnn.relu(x)
"""
        + framing(),
        [9, 10],
    ),
    # Recursion keeps what the outside call gives.
    "recursion": (
        CHAINS
        + """

def walk(ch: Chains, x, n):
    ch.add(x)
    if n:
        walk(ch, x, n - 1)


def layer(x):
    walk(Chains(), x, 3)
    return ttnn.relu(x)
"""
        + framing(),
        [],
    ),
    # A helper's lambda closes over an object the caller made before the capture.
    "a_helper_callable_closing_over_a_capture_time_object": (
        CHAINS
        + """

def capture_trace(device, run):
    run()
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    try:
        run()
    finally:
        ttnn.end_trace_capture(device, tid, cq_id=0)
    return tid


def body(ch: Chains, x):
    ch.add(x)
    return ttnn.relu(x)


def build(device, x):
    ch = Chains()
    return capture_trace(device, lambda: body(ch, x))
""",
        [],
    ),
    # `**kwargs` at the call leaves the receiver and the explicit arguments known.
    "star_arguments": (
        CHAINS
        + """

def layer(x, **options):
    ch = Chains()
    ch.add(x, **options)
    return ttnn.relu(x)
"""
        + framing(),
        [],
    ),
    # A callback closing over its maker's parameter, called further down.
    "a_callback_closing_over_a_capture_time_parameter": (CHAINS + CALLBACK % "Chains()", []),
    "a_callback_closing_over_a_long_lived_parameter": (CHAINS + CALLBACK % "shared", [9, 10]),
    # The model is made by the framing code, but the block it calls was stored on it: the
    # block's `self` is whatever the attribute holds (not known to be capture-time).
    "an_object_stored_in_an_attribute_is_called": (
        """\
import ttnn


class Block:
    def __call__(self, x):
        self.calls += 1
        return ttnn.relu(x)


class Model:
    def __init__(self, block: Block):
        self.block = block

    def forward(self, x):
        self.steps = 1
        return self.block(x)


def capture(device, block, x):
    model = Model(block)
    model.forward(x)
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    try:
        out = model.forward(x)
    finally:
        ttnn.end_trace_capture(device, tid, cq_id=0)
    return out
""",
        [6],
    ),
    # A class method's `cls` is the class: its attributes outlive every capture.
    "a_class_method": (
        """\
import ttnn


class Registry:
    @classmethod
    def note(cls, x):
        cls.calls += 1


def layer(x):
    Registry.note(x)
    return ttnn.relu(x)
"""
        + framing(),
        [7],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_capture_time_objects(name, tmp_path):
    source, expected = CASES[name]
    assert _trc203(source, tmp_path) == expected


STORES = """\
from typing import List, Optional

import ttnn


class Block:
    def forward(self, x, c, n: int, sizes: Optional[List[int]] = None):
        if self._src is c:
            a, b = self._mod
        else:
            a, b = ttnn.chunk(ttnn.silu(c), 2, dim=-1)
            self._mod = (a, b)
            self._src = c
            self._n = n
            self._sizes = sizes
        return ttnn.add(ttnn.multiply(x, a), b)


def capture(device, block: Block, x, c):
    block.forward(x, c, 3)
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    try:
        out = block.forward(x, c, 3)
    finally:
        ttnn.end_trace_capture(device, tid, cq_id=0)
    return out
"""


def test_stored_outputs_and_handed_in_values_are_not_host_state(tmp_path):
    # `self._mod`: outputs of device work (unpacked from `ttnn.chunk`); `self._src = c`: what
    # the caller handed in (a tensor, as far as anyone can tell). `self._n = n` with `n: int`
    # and `sizes: Optional[List[int]]` are host values.
    assert _trc203(STORES, tmp_path) == [14, 15]
