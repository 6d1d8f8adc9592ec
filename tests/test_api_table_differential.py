"""Static rules and runtime guard read one API table (trace_lint/data/api.toml): a test fails
when the two sides disagree on any API name or category, when the guard grows a hard-coded
name list again, or when a name in the table does not exist in ttnn 0.81.1 or torch."""

from __future__ import annotations

import ast
import inspect
import os
import re
import subprocess
from pathlib import Path

import pytest

from trace_lint.core.api_tables import tables
from trace_lint.runtime_guard import api

ROOT = Path(__file__).resolve().parent.parent


def ttnn_names(names) -> set[str]:
    return {f"ttnn.{n}" for n in names}


def torch_names(names) -> set[str]:
    return {f"torch.{n}" for n in names}


def role(mapping: dict, wanted: str) -> set[str]:
    return {name for name, kind in mapping.items() if kind == wanted}


def runtime_side() -> dict[str, set[str]]:
    """Every category the runtime guard acts on, as qualified names."""
    dunders = {m for m in api.TENSOR_READ_METHODS if m.startswith("__")}
    return {
        "ttnn.capture_begin": ttnn_names(role(api.TTNN_FUNCTIONS, "begin")),
        "ttnn.capture_end": ttnn_names(role(api.TTNN_FUNCTIONS, "end")),
        "ttnn.execute + execute_aliases": ttnn_names(role(api.TTNN_FUNCTIONS, "execute")),
        "ttnn.release": ttnn_names(role(api.TTNN_FUNCTIONS, "release")),
        "ttnn.syncs": ttnn_names(role(api.TTNN_FUNCTIONS, "sync")),
        "ttnn.host_to_device": role(api.OP_KINDS, api.HOST_TRANSFER),
        "ttnn.device_to_host": role(api.OP_KINDS, api.DEVICE_READ),
        "ttnn.creators (registered ops, decided alone)": role(api.OP_KINDS, api.TENSOR_CREATION),
        "ttnn.host_to_device_if_device_kwarg": set(api.OPS_TRANSFER_IF_DEVICE),
        "ttnn.deallocate": set(api.FREE_OPS),
        "ttnn.read_methods": set(api.TENSOR_READ_METHODS) - dunders,
        "ttnn.transfer_methods": set(api.TENSOR_TRANSFER_METHODS),
        "ttnn.deallocate_methods": set(api.TENSOR_FREE_METHODS),
        "python.formatting (repr)": {"repr"} if "__repr__" in dunders else set(),
        "torch.graph methods": {f"{k}:{v}" for k, v in api.CUDA_GRAPH_METHODS.items()},
        "torch.syncs": torch_names(".".join(pair) for pair in api.CUDA_SYNC_FUNCTIONS)
        | torch_names("cuda." + ".".join(pair) for pair in api.CUDA_SYNC_METHODS),
        "torch.data-dependent functions": torch_names(api.CUDA_DATA_DEPENDENT_FUNCTIONS),
        "torch.creators": torch_names(api.TORCH_CREATION_FUNCTIONS - {"clone"}),
    }


def static_side() -> dict[str, set[str]]:
    """The same categories as the static rules read them."""
    t = tables()
    ttnn, torch = t.ttnn, t.torch
    return {
        "ttnn.capture_begin": set(ttnn.capture_begin),
        "ttnn.capture_end": set(ttnn.capture_end),
        "ttnn.execute + execute_aliases": set(ttnn.execute | ttnn.execute_aliases),
        "ttnn.release": set(ttnn.release),
        "ttnn.syncs": set(ttnn.syncs),
        "ttnn.host_to_device": set(ttnn.host_to_device),
        "ttnn.device_to_host": set(ttnn.device_to_host),
        "ttnn.creators (registered ops, decided alone)": set(
            ttnn.creators - ttnn.tensor_types - ttnn.host_to_device_if_device_kwarg
        ),
        "ttnn.host_to_device_if_device_kwarg": set(ttnn.host_to_device_if_device_kwarg),
        "ttnn.deallocate": set(ttnn.deallocate),
        "ttnn.read_methods": set(ttnn.read_methods),
        "ttnn.transfer_methods": set(ttnn.transfer_methods),
        "ttnn.deallocate_methods": set(ttnn.deallocate_methods),
        "python.formatting (repr)": {"repr"} & set(t.python.formatting),
        "torch.graph methods": {f"{m}:begin" for m in torch.graph_begin_methods}
        | {f"{m}:end" for m in torch.graph_end_methods}
        | {f"{m}:replay" for m in torch.graph_replay_methods},
        "torch.syncs": set(torch.syncs),
        # Methods and functions share TorchFunctionMode names: the guard sees both as one name.
        "torch.data-dependent functions": set(torch.data_dependent_shape | torch.data_dependent_unless_output_size)
        | torch_names(torch.data_dependent_shape_methods | torch.data_dependent_unless_output_size_methods),
        "torch.creators": set(torch.creators | torch.host_creators | torch.like_creators),
    }


def test_static_and_runtime_sides_agree_on_every_category():
    runtime, static = runtime_side(), static_side()
    assert runtime.keys() == static.keys()
    differences = {
        category: {"runtime only": sorted(runtime[category] - static[category]),
                   "static only": sorted(static[category] - runtime[category])}
        for category in runtime
        if runtime[category] != static[category]
    }
    assert differences == {}


def test_names_once_known_to_the_guard_only_are_in_the_shared_table():
    t = tables()
    assert {"ttnn.randn", "ttnn.from_buffer", "ttnn.allocate_tensor_on_host"} <= t.ttnn.creators
    assert "torch.repeat_interleave" in t.torch.data_dependent_unless_output_size
    assert "torch.accelerator.synchronize" in t.torch.syncs


def test_the_guard_hard_codes_no_api_names():
    """Qualified names live in api.toml only; api.py may only say how to act on categories."""
    tree = ast.parse(inspect.getsource(api))
    literals = [
        node.value for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and re.fullmatch(r"(ttnn|torch)(\.\w+)+", node.value)
    ]
    assert literals == []


def _qualified_names(section) -> set[str]:
    names: set[str] = set()
    for value in vars(section).values():
        if isinstance(value, frozenset):
            names |= {n for n in value if isinstance(n, str) and n.startswith(("ttnn.", "torch."))}
    return names


# ttnn names the static rules keep although ttnn 0.81.1 lacks them (other ttnn versions have them).
NOT_IN_TTNN_0_81_1 = {"ttnn.rand_like"}


# Ops that a library registers into torch.ops when it loads (vllm's `_C` extension), not torch.
REGISTERED_BY_EXTENSIONS = {"torch.ops._C.weak_ref_tensor"}


def test_every_torch_name_in_the_table_exists_in_torch():
    torch = pytest.importorskip("torch")
    missing = []
    for name in sorted(_qualified_names(tables().torch) - REGISTERED_BY_EXTENSIONS):
        value = torch
        for part in name.split(".")[1:]:
            value = getattr(value, part, None)
            if value is None:
                missing.append(name)
                break
    assert missing == [], f"not in torch {torch.__version__}"


@pytest.mark.skipif(
    not os.environ.get("TRACE_LINT_TTNN_PYTHON") or not os.environ.get("TT_METAL_MOCK_CLUSTER_DESC_PATH"),
    reason="TRACE_LINT_TTNN_PYTHON / TT_METAL_MOCK_CLUSTER_DESC_PATH not set (scripts/setup_ttnn_mock.sh)",
)
def test_every_ttnn_name_in_the_table_exists_in_ttnn_0_81_1(tmp_path):
    names = sorted(_qualified_names(tables().ttnn))
    script = (
        "import sys, ttnn\n"
        "for name in sys.argv[1:]:\n"
        "    value = ttnn\n"
        "    for part in name.split('.')[1:]:\n"
        "        value = getattr(value, part, None)\n"
        "    print('NAME', name, value is not None)\n"
    )
    proc = subprocess.run(
        [os.environ["TRACE_LINT_TTNN_PYTHON"], "-c", script, *names],
        cwd=tmp_path, capture_output=True, text=True, timeout=180,
    )
    found = dict(line.split()[1:] for line in proc.stdout.splitlines() if line.startswith("NAME "))
    assert proc.returncode == 0 and found.keys() == set(names), proc.stderr[-2000:]
    missing = {name for name, present in found.items() if present == "False"}
    # The exception list stays honest both ways.
    assert missing == NOT_IN_TTNN_0_81_1
