"""Generated programs (hypothesmith): the engine never raises on valid Python, with or
without capture calls spliced in."""

from __future__ import annotations

import textwrap

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings

from trace_lint.driver.checker import check
from trace_lint.core.config import Settings

RULES_ALL = Settings(select=("ALL",))
# About 76 s: `-m "not slow"` leaves them out; the default run keeps them.
pytestmark = [pytest.mark.filterwarnings("ignore::SyntaxWarning"), pytest.mark.slow]


def _splice(source: str) -> str:
    """The generated module as the body of a captured function, between begin and end."""
    body = textwrap.indent(source, "        ") or "        pass\n"
    return (
        "import ttnn\n\n"
        "def captured(device, model, x):\n"
        "    tid = ttnn.begin_trace_capture(device, cq_id=0)\n"
        "    try:\n" + body + "\n        pass\n"
        "    finally:\n"
        "        ttnn.end_trace_capture(device, tid, cq_id=0)\n"
        "    ttnn.execute_trace(device, tid)\n"
    )


def _check(source: str, tmp_path) -> None:
    path = tmp_path / "generated.py"
    result = check([path], RULES_ALL, sources={path: source})
    assert not [e for e in result.errors if "nested too deeply" not in e]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(source=hypothesmith.from_grammar())
def test_engine_never_raises(source, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("gen")
    _check(source, tmp_path)
    spliced = _splice(source)
    try:
        compile(spliced, "spliced.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return  # `return` outside a function and the like: not valid once spliced
    _check(spliced, tmp_path)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(source=hypothesmith.from_node())
def test_engine_never_raises_on_node_based_programs(source, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("gen")
    _check(source, tmp_path)
    _check(_splice(source), tmp_path)
