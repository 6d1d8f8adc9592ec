"""Frameworks as plug-ins: each one is a section of the API table (`data/api.toml`) and a
small class saying where its captures are and what its calls do (`effects.Effect`). The
prefilter, the engine, the rules (through `capture.facts`) and the runtime guard iterate
`FRAMEWORKS` instead of naming ttnn or torch.
"""

from __future__ import annotations

from ..frontend.prefilter import DEFAULT_WORDS, Prefilter
from typing import TYPE_CHECKING, Optional

from .base import Framework
from .effects import CallEffect, Effect
from .python import Python
from .torch import TorchCudaGraphs
from .ttnn import Ttnn

if TYPE_CHECKING:
    import libcst as cst

    from .effects import Unit

FRAMEWORKS: tuple[Framework, ...] = (Ttnn(), TorchCudaGraphs())
# The language's own calls with an effect (formatting a device tensor), asked beside them.
LANGUAGE = Python()


def call_effects(call: "cst.Call", name: Optional[str], unit: "Unit") -> tuple[CallEffect, ...]:
    """What one call does, as every framework in `FRAMEWORKS` (and the language) classifies it."""
    found: list[CallEffect] = []
    for framework in (*FRAMEWORKS, LANGUAGE):
        found.extend(framework.call_effects(call, name, unit))
    return tuple(found)


def subscript_effects(node: "cst.Subscript", unit: "Unit") -> tuple[CallEffect, ...]:
    """What indexing does, as every framework in `FRAMEWORKS` classifies it."""
    found: list[CallEffect] = []
    for framework in FRAMEWORKS:
        found.extend(framework.subscript_effects(node, unit))
    return tuple(found)


def names_with(effect: Effect) -> frozenset[str]:
    """The dotted names whose calls have this effect, over every framework."""
    found: frozenset[str] = frozenset()
    for framework in FRAMEWORKS:
        found |= framework.names_with(effect)
    return found


def makes_tensor(name: str) -> bool:
    """Every call of the dotted name returns a new tensor (never None), in some framework."""
    return any(framework.owns(name) and framework.makes_tensor(name) for framework in FRAMEWORKS)


def names_of(query: str) -> frozenset[str]:
    """The union over every framework of one of its name-set queries (`"capture_ends"`)."""
    found: frozenset[str] = frozenset()
    for framework in FRAMEWORKS:
        found |= getattr(framework, query)()
    return found


def capture_queries() -> frozenset[str]:
    """Every framework's "is a capture being recorded now?" calls."""
    return names_of("capture_queries")


class _Library:
    """What the semantic model asks of the frameworks (`semantic.library.Library`), answered
    by every plug-in in `FRAMEWORKS` as it is when asked."""

    def owns(self, name: str) -> bool:
        return any(framework.owns(name) for framework in FRAMEWORKS)

    def launches_program(self, name: str) -> bool:
        return any(framework.owns(name) and framework.launches_program(name) for framework in FRAMEWORKS)

    def freed(self, call, name):
        for framework in FRAMEWORKS:
            freed = framework.freed(call, name)
            if freed is not None:
                return freed
        return None

    def returns_receiver(self, method: str) -> bool:
        return any(framework.returns_receiver(method) for framework in FRAMEWORKS)

    def trace_call(self, call, name):
        for framework in FRAMEWORKS:
            found = framework.trace_call(call, name)
            if found is not None:
                return found
        return None

    def allocates(self, call, name) -> bool:
        return any(framework.allocates(call, name) for framework in FRAMEWORKS)


def module_names() -> frozenset[str]:
    """Every framework's own modules (`ttnn`, `torch`)."""
    found: frozenset[str] = frozenset()
    for framework in FRAMEWORKS:
        found |= framework.modules
    return found


def library() -> _Library:
    """The frameworks' answers to what the semantic model asks."""
    return _Library()


def prefilter_for(settings) -> Prefilter:
    """The prefilter for these settings: each framework's names and words, and the
    configured capture markers."""
    targets: list[str] = []
    words: list[bytes] = list(DEFAULT_WORDS)
    for framework in FRAMEWORKS:
        targets.extend(framework.prefilter_targets())
        words.extend(framework.prefilter_words())
    targets.append("trace_lint.captured")
    targets.extend(settings.captured_decorators)
    targets.extend(settings.capture_helpers)
    # A decorator is also taken as written when nothing binds its name (`@trace_lint.captured`
    # without the import): its dotted spelling is a word.
    words.append(b"trace_lint.captured")
    words.extend(name.encode() for name in settings.captured_decorators if "." in name)
    # `captured-functions` match a def's name: the name itself is the token.
    words.extend(name.rsplit(".", 1)[-1].encode() for name in settings.captured_functions)
    # `capture-contexts` are dotted tails (`device_module.graph`): their last part is the token.
    words.extend(name.rsplit(".", 1)[-1].encode() for name in getattr(settings, "capture_contexts", ()))
    return Prefilter(targets, words, tuple(sorted(module_names())))


__all__ = ["FRAMEWORKS", "LANGUAGE", "CallEffect", "Effect", "Framework", "call_effects", "capture_queries", "library", "module_names", "names_of", "names_with", "prefilter_for", "subscript_effects"]
