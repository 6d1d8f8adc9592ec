"""Names bound before the guard started, in the program's own modules: `from ttnn import
execute_trace`, `read = ttnn.Tensor.cpu` at module level, or bound under an earlier guard (that
guard's wrapper). Patching `ttnn.execute_trace` does not reach them, so at install the guard
points each such module attribute at its own wrapper too (and puts it back on exit, with every
other patch).

Only the program's modules are scanned: not the standard library, not installed packages
(site-packages), not ttnn, torch or the guard. Local variables, closures and attributes of
objects holding an early reference are not reached this way (on Python 3.12+ the call monitor
sees those while a capture records).
"""

from __future__ import annotations

import os
import sys
import sysconfig
from typing import Any, Callable

from trace_lint.runtime_guard.patching import Patcher


def _library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    found = {os.path.abspath(paths[key]) + os.sep for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    return tuple(sorted(found))


_LIBRARIES = _library_dirs()
# filename -> True for the program's own modules; a module's file does not move, so each is
# decided once per process (every guard install scans sys.modules).
_is_program: dict[str, bool] = {}


def patch_early_references(patcher: Patcher, wrappers: dict[int, tuple[Any, Any]],
                           skipped: Callable[[str], bool]) -> list[str]:
    """Point every module attribute of the program that is one of the originals in `wrappers`
    (id -> (original, wrapper)) at its wrapper. Returns "module.name" for each one patched."""
    if not wrappers:
        return []
    patched = []
    for module in list(sys.modules.values()):
        filename = getattr(module, "__file__", None)
        if not isinstance(filename, str):
            continue
        program = _is_program.get(filename)
        if program is None:
            absolute = os.path.abspath(filename)
            program = _is_program[filename] = not (absolute.startswith(_LIBRARIES) or skipped(absolute))
        if not program:
            continue
        try:
            names = list(vars(module).items())
        except TypeError:
            continue
        for name, value in names:
            entry = wrappers.get(id(value))
            if entry is None and getattr(value, "__trace_lint_guard__", False) is True:
                # An earlier guard's wrapper, bound while that guard was on: this guard's wrapper
                # of the same original takes its place until exit.
                entry = wrappers.get(id(getattr(value, "__wrapped__", None)))
                if entry is not None and entry[0] is not value.__wrapped__:
                    entry = None
                elif entry is not None:
                    entry = (value, entry[1])
            if entry is not None and entry[0] is value:
                patcher.patch(module, name, entry[1])
                patched.append(f"{getattr(module, '__name__', '?')}.{name}")
    return patched
