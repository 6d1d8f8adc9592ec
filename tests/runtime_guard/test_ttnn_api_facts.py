"""The guard section of the API table ([guard.effects] in trace_lint/data/api.toml) against
ttnn 0.81.1 itself: one test per entry, seen on the mock device inside a capture without the
guard (ttnn_api_facts.py), and a check that the guard acts on every entry that touches the
device."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from trace_lint.runtime_guard import api

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
EFFECTS = ("read", "write-if-device", "free", "host-only", "none")

needs_mock = pytest.mark.skipif(
    not os.environ.get("TRACE_LINT_TTNN_PYTHON") or not os.environ.get("TT_METAL_MOCK_CLUSTER_DESC_PATH"),
    reason="TRACE_LINT_TTNN_PYTHON / TT_METAL_MOCK_CLUSTER_DESC_PATH not set (scripts/setup_ttnn_mock.sh)",
)


@pytest.fixture(scope="module")
def seen(tmp_path_factory) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run(
        [os.environ["TRACE_LINT_TTNN_PYTHON"], str(HERE / "ttnn_api_facts.py")],
        cwd=tmp_path_factory.mktemp("facts"), env=env, capture_output=True, text=True, timeout=180,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("TRACE_LINT_RESULT ")]
    assert proc.returncode == 0 and lines, proc.stdout[-2000:] + proc.stderr[-3000:]
    result = json.loads(lines[-1].split(" ", 1)[1])
    assert "crash" not in result, result["crash"]
    return result


def test_the_guard_section_names_known_effects():
    assert api.GUARD_EFFECTS, "the [guard.effects] table is empty or missing"
    assert set(api.GUARD_EFFECTS.values()) <= set(EFFECTS)


@needs_mock
@pytest.mark.parametrize("entry", sorted(api.GUARD_EFFECTS))
def test_entry_matches_what_ttnn_does_on_the_mock(entry, seen):
    assert seen[entry]["effect"] == api.GUARD_EFFECTS[entry], seen[entry]


@needs_mock
@pytest.mark.parametrize("method", api.PROGRAM_CACHE_CLEARS)
def test_each_program_cache_clear_empties_the_cache_on_the_mock(method, seen):
    entry = seen["MeshDevice." + method]
    assert entry["entries_before"] > 0 and entry["entries_after"] == 0, entry


def test_the_guard_acts_on_every_entry_that_touches_the_device():
    reads = set(api.TENSOR_READ_METHODS)
    for entry, effect in api.GUARD_EFFECTS.items():
        owner, _, name = entry.partition(".")
        if effect == "read":
            # str() and format() of a ttnn.Tensor go through its __repr__ (seen on the mock).
            assert name in reads or (name in ("__str__", "__format__") and "__repr__" in reads), entry
        elif effect == "write-if-device":
            assert name in api.TENSOR_TRANSFER_METHODS if owner == "Tensor" else name in api.TENSOR_CONSTRUCTORS, entry
        elif effect == "free":
            assert name in api.TENSOR_FREE_METHODS, entry
        else:  # host-only and none: the guard leaves them alone
            assert name not in reads | set(api.TENSOR_TRANSFER_METHODS) | set(api.TENSOR_FREE_METHODS), entry
