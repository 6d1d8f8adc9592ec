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
        """Undo every patch that can be undone, newest first. Returns the attributes someone else
        re-patched meanwhile. Patches that cannot be undone stay listed (a later restore tries
        them again) and are reported together in one RestoreError after all the others are undone."""
        overwritten = []
        failed: list[tuple[Any, str, Any, Any]] = []
        problems: list[str] = []
        while self._undo:
            owner, name, old, new = self._undo.pop()
            try:
                if vars(owner).get(name, _MISSING) is not new:
                    overwritten.append(f"{_owner_name(owner)}.{name}")
                if old is _MISSING:
                    if name in vars(owner):
                        delattr(owner, name)
                else:
                    setattr(owner, name, old)
            except Exception as error:  # keep undoing the rest; report them all after
                failed.append((owner, name, old, new))
                problems.append(f"{_owner_name(owner)}.{name} ({type(error).__name__}: {error})")
        if failed:
            self._undo[:0] = reversed(failed)  # oldest first again, as they were patched
            raise RestoreError(problems)
        return overwritten

    def pending(self) -> list[str]:
        """Patches still in place (after a failed restore)."""
        return [f"{_owner_name(owner)}.{name}" for owner, name, _old, _new in self._undo]


class RestoreError(RuntimeError):
    """Some patches could not be undone; every other one was."""

    def __init__(self, problems: list[str], message: str = "") -> None:
        self.problems = list(problems)
        super().__init__(
            message or "trace-lint runtime guard: could not undo "
            + ("this patch" if len(problems) == 1 else f"these {len(problems)} patches")
            + " (every other patch was undone; they stay guarded until a later uninstall succeeds): "
            + "; ".join(problems)
        )


def _owner_name(owner: Any) -> str:
    return getattr(owner, "__qualname__", None) or getattr(owner, "__name__", None) or type(owner).__name__
