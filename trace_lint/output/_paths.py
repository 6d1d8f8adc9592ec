"""Paths as CI systems want them: relative to the repository root, with forward slashes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional


def repository_root(start: Optional[Path] = None) -> Path:
    """The enclosing git work tree (a `.git` folder, or a `.git` file in a worktree), else `start`."""
    start = (start or Path.cwd()).resolve()
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return start


def relative_to_root(filename: str, root: Path) -> Optional[str]:
    """`filename` (as findings carry it: relative to the working folder, or absolute) relative
    to `root` in POSIX form, or None when it lies outside `root`."""
    path = Path(os.path.abspath(filename))
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        try:
            return path.resolve().relative_to(root).as_posix()
        except ValueError:
            return None
