"""trace-lint: finds code that is unsafe inside TT-NN trace captures and CUDA graphs."""

from __future__ import annotations

from typing import Callable, TypeVar

__version__ = "0.1.0"

_F = TypeVar("_F", bound=Callable)


def captured(function: _F) -> _F:
    """Mark a function as captured code. The analyzer reads the decorator; at run time it is a no-op."""
    return function


__all__ = ["__version__", "captured"]
