"""The guards active on one runtime, and which thread entered each.

A guard's mode applies to the thread that entered it: `guard("raise")` on one thread and
`guard("warn")` on another each keep their own behaviour. A thread with no guard of its own
(a worker doing ops for a capture begun elsewhere) follows the guards the capture began under.
"""

from __future__ import annotations

import threading
from typing import Any, Iterator, Sequence


class GuardSet:
    def __init__(self) -> None:
        self._all: list[Any] = []
        self._by_thread: dict[int, list[Any]] = {}

    # list-like view of every active guard, oldest first
    def __contains__(self, guard: Any) -> bool:
        return guard in self._all

    def __bool__(self) -> bool:
        return bool(self._all)

    def __len__(self) -> int:
        return len(self._all)

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._all))

    def __getitem__(self, index: int) -> Any:
        return self._all[index]

    def append(self, guard: Any) -> None:
        """Add `guard`, entered by the calling thread."""
        self._all.append(guard)
        self._by_thread.setdefault(threading.get_ident(), []).append(guard)

    def remove(self, guard: Any) -> None:
        self._all.remove(guard)
        for thread, guards in list(self._by_thread.items()):
            if guard in guards:
                guards.remove(guard)
            if not guards:
                del self._by_thread[thread]

    def here(self) -> list[Any]:
        """Guards entered by the calling thread, innermost last."""
        return list(self._by_thread.get(threading.get_ident(), ()))

    def for_new_capture(self) -> list[Any]:
        """The guards a capture begun now belongs to: this thread's, else every active one."""
        return self.here() or list(self._all)

    def mode(self, capture_guards: Sequence[Any] = ()) -> str:
        here = self._by_thread.get(threading.get_ident())
        if here:
            return here[-1].mode
        if capture_guards:
            return capture_guards[-1].mode
        return self._all[-1].mode if self._all else "warn"
