"""Dotted module names, as Python would import a file from the project's source roots.

A file gets one name per source root that holds it (PEP 420: folders need no `__init__.py`),
plus the name its `__init__.py` packages give it. Imports are resolved by these names only,
never by a file's stem.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

from ..frontend.discovery import module_name as package_climb_name
from ..frontend.source import PACKAGE_FILES


def source_roots(configured: Iterable[Path], project_root: Path | None, named: Iterable[Path]) -> tuple[Path, ...]:
    """Configured roots (`src`), the project root and each folder named on the command line,
    and for a named folder that is a package (it holds an `__init__.py`) the folder above its
    outermost package, since a package is imported by its own name (`check pkg` where
    `pkg/sub/mod.py` is `pkg.sub.mod`); canonical, without repeats, deepest first (the most
    specific root names a file first)."""
    roots: list[Path] = []

    def add(folder: Path) -> None:
        if folder.is_dir() and folder not in roots:
            roots.append(folder)

    for root in (*configured, *([project_root] if project_root is not None else [])):
        add(Path(os.path.realpath(root)))
    for root in named:
        real = Path(os.path.realpath(root))
        add(real)
        above = real
        while _is_package(above) and above.parent != above:
            above = above.parent
        if above != real:
            add(above)
    roots.sort(key=lambda p: len(p.parts), reverse=True)
    return tuple(roots)


def _is_package(folder: Path) -> bool:
    return any((folder / name).is_file() for name in PACKAGE_FILES)


def _dotted(parts: Sequence[str]) -> str | None:
    return ".".join(parts) if parts and all(part.isidentifier() for part in parts) else None


@lru_cache(maxsize=4096)
def _folder_parts(folder: Path, roots: tuple[Path, ...]) -> tuple[tuple[str, ...], ...]:
    """The folder's parts below each root that holds it, in the roots' order: memoized per
    folder, since every file of a folder asks the same."""
    found = []
    for root in roots:
        try:
            found.append(folder.relative_to(root).parts)
        except ValueError:
            continue
    return tuple(found)


def module_names(real: Path, roots: Sequence[Path]) -> tuple[str, ...]:
    """Every dotted name the file can be imported by; the first is its primary name (the
    deepest root's). A file no root can import is named by its package climb (or stem)."""
    names: list[str] = []
    stem_parts = [] if real.name in PACKAGE_FILES else [real.name.rsplit(".", 1)[0]]
    for parts in _folder_parts(real.parent, tuple(roots)):
        name = _dotted([*parts, *stem_parts])
        if name is not None and name not in names:
            names.append(name)
    climbed = package_climb_name(real, real)
    if climbed not in names:
        names.append(climbed)
    return tuple(names)
