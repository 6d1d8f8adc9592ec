"""The warm record: op signatures that ran on each device while a guard was active.

It belongs to the process, not to a guard: a warm-up seen by one guard (a pytest fixture's,
the session's) still counts in a capture under a later guard, after the first has exited.
Only `forget_warm_ups()` clears it, and ttnn's own word: a device whose program cache is empty
(`num_program_cache_entries() == 0`, checked at each begin_trace_capture) has nothing warm.
"""

from __future__ import annotations

import threading
from typing import Any, Optional

_lock = threading.Lock()
# id(device) -> (device, signatures). Holding the device keeps its id from naming another one.
_record: dict[int, tuple[Any, set]] = {}


def signatures_for(device: Any) -> set:
    """The device's set of warm signatures (made on first use; add to it freely)."""
    entry = _record.get(id(device))
    if entry is None or entry[0] is not device:
        with _lock:
            entry = _record.get(id(device))
            if entry is None or entry[0] is not device:
                entry = _record[id(device)] = (device, set())
    return entry[1]


def is_warm(device: Any, signature: tuple) -> bool:
    entry = _record.get(id(device))
    return entry is not None and entry[0] is device and signature in entry[1]


def forget_warm_ups(device: Optional[Any] = None) -> None:
    """Forget the warm-ups seen so far, on `device` or on every device: the next capture's ops
    must be warmed again (under a guard) to pass as warm."""
    with _lock:
        if device is None:
            _record.clear()
        else:
            _record.pop(id(device), None)


def check_program_cache(device: Any) -> None:
    """Forget the device's warm-ups when ttnn says its program cache is empty."""
    count = getattr(device, "num_program_cache_entries", None)
    if count is None or id(device) not in _record:
        return
    try:
        empty = int(count()) == 0
    except Exception:
        return
    if empty:
        forget_warm_ups(device)
