"""Modules whose body runs when first used (`importlib.util.LazyLoader`).

The binder names libcst throughout, and its `ast` half (module scope, for an outline) is
used where nothing else needs libcst: a run the cache settles outlines its edited files and
never parses one. Importing libcst costs about as much as that whole run, so the binder
defers it; every other importer of libcst loads it as usual (an `import` of a deferred module
runs its body).
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def deferred_module(name: str) -> ModuleType:
    """`name` as `import name` binds it, its body run on the first attribute read (at once
    where it is imported already, or cannot be found: the import then raises as usual)."""
    found = sys.modules.get(name)
    if found is not None:
        return found
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        return importlib.import_module(name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
