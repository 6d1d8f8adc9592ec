"""An op's parameters by name, so a program signature keys arguments by what they are, not by
how they were passed: `ttnn.add(b, c)`, `ttnn.add(b, input_tensor_b=c)` and
`ttnn.add(b, c, memory_config=None)` are one signature.

Where the names come from, in order:
- nanobind's own signatures (`__nb_signature__`) of the op's function, or of its class's
  `__call__` for C++ op objects (`ttnn.add.function` is an `add_t`): every overload's text
  `def __call__(self, input_tensor_a: ..., input_tensor_b: ..., *, memory_config: ... = \\2, ...)`
  and its default values;
- `inspect.signature` of a Python function (`ttnn.from_torch`).
A position whose name the overloads disagree on, and every argument of an op with neither,
keeps the documented fallback: positional arguments by position, keyword arguments by name.
An explicit keyword equal to the parameter's default (`memory_config=None`) is left out, as
ttnn treats it the same as not passing it. Names are read once per op, at the first call the
guard sees, so a function replaced later (a test's stand-in) keeps the real op's names.
"""

from __future__ import annotations

import inspect
import re
from typing import Any, Optional

_PLACEHOLDER = re.compile(r"\\(\d+)$")
_NO_DEFAULT = object()


class Parameters:
    """Positional parameter names (None where overloads disagree) and known defaults."""

    __slots__ = ("positional", "defaults", "named_prefix")

    def __init__(self, positional: tuple[Optional[str], ...], defaults: dict[str, Any]) -> None:
        self.positional = positional
        self.defaults = defaults
        # How many leading positions have a name: a call passing no more than these positionally
        # and no keywords is already in parameter order (the common, fast case).
        self.named_prefix = next((i for i, name in enumerate(positional) if name is None), len(positional))


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return [part.strip() for part in parts if part.strip()]


def _parse_nb_overload(text: str, default_values: tuple) -> Optional[tuple[list[str], dict[str, Any]]]:
    """`def f(self, a: T, b: U = \\0, *, c: V = \\1) -> R` -> (["a", "b"], {"b": d0, "c": d1})."""
    open_at = text.find("(")
    close_at = text.rfind(") ->") if ") ->" in text else text.rfind(")")
    if open_at < 0 or close_at <= open_at:
        return None
    positional: list[str] = []
    defaults: dict[str, Any] = {}
    keyword_only = False
    for part in _split_top_level(text[open_at + 1:close_at]):
        if part in ("*", "/"):
            keyword_only = keyword_only or part == "*"
            continue
        if part.startswith("*"):  # *args / **kwargs: nothing after binds by position
            keyword_only = True
            continue
        name = re.split(r"[:=]", part, maxsplit=1)[0].strip()
        if not name.isidentifier():
            return None
        if name == "self" and not positional and not defaults:
            continue
        if "=" in part:
            placeholder = _PLACEHOLDER.search(part.rsplit("=", 1)[1].strip())
            if placeholder is not None and int(placeholder.group(1)) < len(default_values or ()):
                defaults[name] = default_values[int(placeholder.group(1))]
        if not keyword_only:
            positional.append(name)
    return positional, defaults


def _from_nanobind(function: Any) -> Optional[Parameters]:
    overloads = getattr(function, "__nb_signature__", None)
    if overloads is None:
        overloads = getattr(getattr(type(function), "__call__", None), "__nb_signature__", None)
    if not overloads:
        return None
    parsed = []
    for overload in overloads:
        try:
            text, _doc, default_values = overload
        except (TypeError, ValueError):
            return None
        one = _parse_nb_overload(str(text), tuple(default_values or ()))
        if one is None:
            return None
        parsed.append(one)
    width = max(len(names) for names, _ in parsed)
    positional: list[Optional[str]] = []
    for index in range(width):
        names = {names[index] if index < len(names) else None for names, _ in parsed}
        positional.append(names.pop() if len(names) == 1 else None)
    defaults: dict[str, Any] = {}
    disagree: set[str] = set()
    for _, overload_defaults in parsed:
        for name, value in overload_defaults.items():
            if name in defaults and not _same_default(defaults[name], value):
                disagree.add(name)
            defaults.setdefault(name, value)
    for name in disagree:
        del defaults[name]
    return Parameters(tuple(positional), defaults)


_SCALARS = (bool, int, float, str, type(None))


def _plain(value: Any) -> bool:
    """A value safe to compare with ==: never a tensor, whose == would be a device op."""
    if isinstance(value, (list, tuple)):
        return all(isinstance(item, _SCALARS) for item in value)
    return isinstance(value, _SCALARS)


def _same_default(a: Any, b: Any) -> bool:
    return type(a) is type(b) and (a is b or (_plain(a) and _plain(b) and a == b))


def _from_python(function: Any) -> Optional[Parameters]:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    positional: list[Optional[str]] = []
    defaults: dict[str, Any] = {}
    named = False
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        named = True
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            positional.append(parameter.name)
        if parameter.default is not parameter.empty:
            defaults[parameter.name] = parameter.default
    if not named:  # (*args, **kwargs): a wrapper that says nothing about the op
        return None
    return Parameters(tuple(positional), defaults)


def parameters_of(function: Any) -> Optional[Parameters]:
    if function is None:
        return None
    found = _from_nanobind(function)
    if found is None and (inspect.isfunction(function) or inspect.ismethod(function)):
        found = _from_python(function)
    return found


class OpParameters:
    """Parameters per op object, read at the first call any guard sees and kept for the process,
    like the warm record (thread-safe enough: a race reads the same names twice)."""

    def __init__(self) -> None:
        self.by_op: dict[int, tuple[Any, Optional[Parameters]]] = {}

    def __call__(self, op: Any) -> Optional[Parameters]:
        entry = self.by_op.get(id(op))
        if entry is not None and entry[0] is op:
            return entry[1]
        found = parameters_of(getattr(op, "function", None))
        self.by_op[id(op)] = (op, found)  # holding op keeps its id from being reused
        return found


op_parameters = OpParameters()


def bound_items(parameters: Optional[Parameters], args: tuple, kwargs: dict, skip: frozenset) -> list[tuple[str, Any]]:
    """(name, value) for every argument passed, in one order however it was passed: positional
    parameters in their order, then keywords by name. Positional arguments go under their
    parameter's name where known ("#index" where not); explicit defaults and `skip` are left out."""
    names = parameters.positional if parameters is not None else ()
    if not kwargs and parameters is not None and len(args) <= parameters.named_prefix:
        return list(zip(names, args))  # the common call: already in parameter order
    given: dict[str, Any] = {}
    for index, value in enumerate(args):
        name = names[index] if index < len(names) else None
        given[name or f"#{index}"] = value
    if kwargs:
        defaults = parameters.defaults if parameters is not None else {}
        for key, value in kwargs.items():
            if key in skip:
                continue
            default = defaults.get(key, _NO_DEFAULT)
            if default is not _NO_DEFAULT and (value is default or _same_default(value, default)):
                continue
            given[key] = value
    items = [(name, given.pop(name)) for name in names if name is not None and name in given]
    items += sorted(given.items(), key=lambda item: item[0])
    return items
