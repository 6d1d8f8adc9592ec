"""trace-lint: finds code that is unsafe inside TT-NN trace captures and CUDA graphs."""

from __future__ import annotations

# The one place the version is written: pyproject.toml reads it from here. This module stays
# free of imports (typing included) because `trace-lint --version` loads only it and
# `trace_lint.entry`.
__version__ = "0.2.0"

TYPE_CHECKING = False  # type checkers take this as typing.TYPE_CHECKING
if TYPE_CHECKING:
    from typing import Callable, TypeVar

    _F = TypeVar("_F", bound=Callable)


def captured(function: _F) -> _F:
    """Mark a function as captured code. The analyzer reads the decorator; at run time it is a no-op."""
    return function


__all__ = ["__version__", "captured"]
