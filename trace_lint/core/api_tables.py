"""The reviewed API name tables (data/api.toml) and the generated ttnn op list, as frozensets."""

from __future__ import annotations

import sys
from functools import lru_cache
from importlib import resources
from types import SimpleNamespace

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _load(name: str) -> dict:
    return tomllib.loads(resources.files("trace_lint").joinpath("data", name).read_text(encoding="utf-8"))


def _frozen(table: dict) -> SimpleNamespace:
    return SimpleNamespace(**{k: frozenset(v) if isinstance(v, list) else v for k, v in table.items()})


@lru_cache(maxsize=None)
def tables() -> SimpleNamespace:
    data = _load("api.toml")
    ops = _load("ttnn_ops.toml")
    ttnn = _frozen(data["ttnn"])
    ttnn.registered_ops = frozenset(ops["registered_ops"])
    ttnn.output_tensor_ops = frozenset(ops["output_tensor_ops"])
    ttnn.ops_version = ops["ttnn_version"]
    namespace = SimpleNamespace(
        ttnn=ttnn,
        python=_frozen(data["python"]),
        tensor=_frozen(data["tensor"]),
    )
    if "host_metadata" in data:
        namespace.host_metadata = _frozen(data["host_metadata"])
    if "torch" in data:
        namespace.torch = _frozen(data["torch"])
    return namespace
