"""Finding the files to check: folders walked, .gitignore and configured excludes respected."""

from __future__ import annotations

import fnmatch
import os
from functools import lru_cache
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

import pathspec

from ..config import DEFAULT_EXCLUDE, Settings, real_path

PYTHON_SUFFIXES = (".py", ".pyi")


@dataclass
class Discovery:
    files: list[Path] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def module_name(path: Path) -> str:
    """Dotted module name from the path: climb while the folder is a package."""
    path = real_path(path)
    parts = [*_package_parts(path.parent), *([] if path.stem == "__init__" else [path.stem])]
    return ".".join(parts) or path.stem


@lru_cache(maxsize=4096)
def _package_parts(directory: Path) -> tuple[str, ...]:
    # Memoized per folder: every file of a folder climbs the same packages (one run's stats).
    if not ((directory / "__init__.py").is_file() or (directory / "__init__.pyi").is_file()):
        return ()
    if directory.parent == directory:
        return (directory.name,)
    return (*_package_parts(directory.parent), directory.name)


class _Excluder:
    def __init__(self, settings: Settings):
        self.settings = settings
        self.patterns = tuple(DEFAULT_EXCLUDE) + tuple(settings.exclude)
        self._gitignores: dict[Path, Optional[pathspec.PathSpec]] = {}

    def _matches_pattern(self, path: Path) -> bool:
        name = path.name
        try:
            relative = real_path(path).relative_to(self.settings.root).as_posix()
        except ValueError:
            relative = path.as_posix()
        for pattern in self.patterns:
            if fnmatch.fnmatch(name, pattern) or fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(relative, pattern.rstrip("/") + "/*"):
                return True
        return False

    def _gitignore(self, directory: Path) -> Optional[pathspec.PathSpec]:
        if directory not in self._gitignores:
            spec = None
            ignore_file = directory / ".gitignore"
            if ignore_file.is_file():
                try:
                    lines = ignore_file.read_text(encoding="utf-8", errors="replace").splitlines()
                    spec = pathspec.PathSpec.from_lines("gitwildmatch", lines)
                except (OSError, ValueError):
                    spec = None
            self._gitignores[directory] = spec
        return self._gitignores[directory]

    def _git_ignored(self, path: Path, is_dir: bool, top: Path) -> bool:
        directory = path.parent
        # Every .gitignore from the walked root down to the file's folder applies.
        while True:
            spec = self._gitignore(directory)
            if spec is not None:
                relative = path.relative_to(directory).as_posix() + ("/" if is_dir else "")
                if spec.match_file(relative):
                    return True
            if directory == top or directory.parent == directory or (directory / ".git").exists():
                break
            directory = directory.parent
        return False

    def excluded(self, path: Path, is_dir: bool, top: Path) -> bool:
        return self._matches_pattern(path) or self._git_ignored(path, is_dir, top)


def discover(paths: Iterable[Path], settings: Settings, force_exclude: bool = False) -> Discovery:
    result = Discovery()
    _package_parts.cache_clear()  # a long-lived process (the language server) sees new packages
    excluder = _Excluder(settings)
    seen: set[Path] = set()

    def add(file: Path) -> None:
        key = real_path(file)
        if key not in seen:
            seen.add(key)
            result.files.append(file)

    for path in paths:
        try:
            is_dir = path.is_dir()
            exists = path.exists() or path.is_symlink()
        except OSError as error:
            result.errors.append(f"{path}: {error.strerror or error}")
            continue
        if not exists:
            result.errors.append(f"{path}: no such file or directory")
            continue
        if not is_dir:
            if path.is_symlink() and not path.exists():
                result.errors.append(f"{path}: broken symbolic link")
                continue
            if force_exclude and excluder.excluded(path, False, path.parent):
                continue
            add(path)
            continue
        top = path
        visited_dirs: set[tuple[int, int]] = set()
        for directory, dirnames, filenames in os.walk(path, followlinks=True, onerror=lambda e: result.errors.append(f"{e.filename}: {e.strerror}")):
            current = Path(directory)
            try:
                stat = current.stat()
            except OSError as error:
                result.errors.append(f"{current}: {error.strerror or error}")
                dirnames[:] = []
                continue
            # A symlink loop shows up as a folder already visited.
            if (stat.st_dev, stat.st_ino) in visited_dirs:
                result.errors.append(f"{current}: symbolic link loop, skipped")
                dirnames[:] = []
                continue
            visited_dirs.add((stat.st_dev, stat.st_ino))
            dirnames[:] = sorted(d for d in dirnames if not excluder.excluded(current / d, True, top))
            for filename in sorted(filenames):
                file = current / filename
                if not filename.endswith(PYTHON_SUFFIXES):
                    continue
                if excluder.excluded(file, False, top):
                    continue
                try:
                    file.stat()
                except OSError as error:
                    result.errors.append(f"{file}: {error.strerror or error}")
                    continue
                add(file)
    return result


def display_path(path: Path) -> str:
    """Paths relative to the working directory where possible, as ruff prints them."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def matches_per_file_glob(display: str, path: Path, glob: str, root: Path) -> bool:
    try:
        relative = real_path(path).relative_to(root).as_posix()
    except ValueError:
        relative = display
    return fnmatch.fnmatch(relative, glob) or fnmatch.fnmatch(path.name, glob) or fnmatch.fnmatch(display, glob)
