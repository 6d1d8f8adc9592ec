"""Frameworks as plug-ins: each one is a section of the API table (`data/api.toml`) and a
small class saying where its captures are. The prefilter, the engine and the runtime guard
iterate `FRAMEWORKS` instead of naming ttnn or torch.
"""

from __future__ import annotations

from .base import Framework
from .torch import TorchCudaGraphs
from .ttnn import Ttnn

FRAMEWORKS: tuple[Framework, ...] = (Ttnn(), TorchCudaGraphs())


def names_of(query: str) -> frozenset[str]:
    """The union over every framework of one of its name-set queries (`"capture_ends"`)."""
    found: frozenset[str] = frozenset()
    for framework in FRAMEWORKS:
        found |= getattr(framework, query)()
    return found


def capture_queries() -> frozenset[str]:
    """Every framework's "is a capture being recorded now?" calls."""
    return names_of("capture_queries")


__all__ = ["FRAMEWORKS", "Framework", "capture_queries", "names_of"]
