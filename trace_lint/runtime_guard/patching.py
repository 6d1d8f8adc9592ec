"""Attribute patches that can always be undone, in reverse order, exactly."""

from __future__ import annotations

from typing import Any

_MISSING = object()


class Patcher:
    """Replaces attributes and remembers how to put each one back.

    An attribute that lived on a base class (not in the owner's own __dict__) is deleted on
    restore rather than set, so the owner goes back to inheriting it.
    """

    def __init__(self) -> None:
        self._undo: list[tuple[Any, str, Any, Any]] = []

    def __len__(self) -> int:
        return len(self._undo)

    def original(self, owner: Any, name: str) -> Any:
        """The value `owner.name` had before this patcher touched it."""
        for patched_owner, patched_name, old, _ in self._undo:
            if patched_owner is owner and patched_name == name:
                return getattr(owner, name) if old is _MISSING else old
        return getattr(owner, name)

    def patch(self, owner: Any, name: str, new: Any) -> Any:
        """Set owner.name = new; return the value being replaced (what `new` should call)."""
        own = vars(owner) if hasattr(owner, "__dict__") else {}
        old = own[name] if name in own else _MISSING
        current = getattr(owner, name)
        setattr(owner, name, new)
        self._undo.append((owner, name, old, new))
        return current

    def restore(self) -> list[str]:
        """Undo every patch, newest first. Returns the attributes someone else re-patched meanwhile."""
        overwritten = []
        errors: list[BaseException] = []
        while self._undo:
            owner, name, old, new = self._undo.pop()
            try:
                if vars(owner).get(name, _MISSING) is not new:
                    overwritten.append(f"{getattr(owner, '__name__', owner)}.{name}")
                if old is _MISSING:
                    if name in vars(owner):
                        delattr(owner, name)
                else:
                    setattr(owner, name, old)
            except BaseException as error:  # keep undoing the rest, report the first failure after
                errors.append(error)
        if errors:
            raise errors[0]
        return overwritten
