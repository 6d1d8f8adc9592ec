"""Finding the files to check: folders walked, .gitignore and configured excludes respected."""

from __future__ import annotations

import fnmatch
import os
import re
from functools import lru_cache
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

import pathspec

from ..config import DEFAULT_EXCLUDE, Settings, real_path
from .source import PACKAGE_FILES

PYTHON_SUFFIXES = (".py", ".pyi")


@dataclass
class Discovery:
    files: list[Path] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # Each found file's canonical path (computed once here: realpath costs syscalls).
    real: dict[Path, Path] = field(default_factory=dict)


def module_name(path: Path, real: Optional[Path] = None) -> str:
    """Dotted module name from the path: climb while the folder is a package."""
    path = real if real is not None else real_path(path)
    parts = [*_package_parts(path.parent), *([] if path.stem == "__init__" else [path.stem])]
    return ".".join(parts) or path.stem


@lru_cache(maxsize=4096)
def _package_parts(directory: Path) -> tuple[str, ...]:
    # Memoized per folder: every file of a folder climbs the same packages (one run's stats).
    if not any((directory / name).is_file() for name in PACKAGE_FILES):
        return ()
    if directory.parent == directory:
        return (directory.name,)
    return (*_package_parts(directory.parent), directory.name)


def _one_regex(patterns: Iterable[str]) -> re.Pattern:
    """fnmatch patterns as one compiled alternation (fnmatch's own semantics, one call)."""
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns) or "(?!)")


class _Excluder:
    def __init__(self, settings: Settings):
        self.settings = settings
        self.patterns = tuple(DEFAULT_EXCLUDE) + tuple(settings.exclude) + tuple(settings.extend_exclude)
        self._name = _one_regex(self.patterns)
        self._relative = _one_regex([*self.patterns, *(p.rstrip("/") + "/*" for p in self.patterns)])
        self._root = os.path.realpath(settings.root) if settings.root is not None else None
        self._gitignores: dict[str, Optional[pathspec.PathSpec]] = {}
        self._is_repo: dict[str, bool] = {}

    def _matches_pattern(self, path: str, real: str) -> bool:
        if self._name.match(os.path.basename(path)):
            return True
        root = self._root
        if root is not None and real.startswith(root.rstrip(os.sep) + os.sep):
            relative = real[len(root.rstrip(os.sep)) + 1 :]
        elif root is not None and real == root:
            relative = "."
        else:
            relative = Path(path).as_posix()
        return self._relative.match(relative.replace(os.sep, "/")) is not None

    def _gitignore(self, directory: str) -> Optional[pathspec.PathSpec]:
        if directory not in self._gitignores:
            spec = None
            ignore_file = os.path.join(directory, ".gitignore")
            if os.path.isfile(ignore_file):
                try:
                    with open(ignore_file, encoding="utf-8", errors="replace") as stream:
                        lines = stream.read().splitlines()
                    spec = pathspec.PathSpec.from_lines("gitwildmatch", lines)
                except (OSError, ValueError):
                    spec = None
            self._gitignores[directory] = spec
        return self._gitignores[directory]

    def _repo_top(self, directory: str) -> bool:
        found = self._is_repo.get(directory)
        if found is None:
            found = self._is_repo[directory] = os.path.exists(os.path.join(directory, ".git"))
        return found

    def _git_ignored(self, path: str, is_dir: bool, top: str) -> bool:
        directory = os.path.dirname(path)
        # Every .gitignore from the walked root down to the file's folder applies.
        while True:
            spec = self._gitignore(directory)
            if spec is not None:
                relative = os.path.relpath(path, directory).replace(os.sep, "/") + ("/" if is_dir else "")
                if spec.match_file(relative):
                    return True
            parent = os.path.dirname(directory)
            if directory == top or parent == directory or self._repo_top(directory):
                break
            directory = parent
        return False

    def excluded(self, path, is_dir: bool, top, real: Optional[str] = None) -> bool:
        path, top = os.fspath(path), os.fspath(top)
        if real is None:
            real = os.path.realpath(path)
        return self._matches_pattern(path, real) or self._git_ignored(path, is_dir, top)


def discover(paths: Iterable[Path], settings: Settings, force_exclude: bool = False) -> Discovery:
    result = Discovery()
    _package_parts.cache_clear()  # a long-lived process (the language server) sees new packages
    excluder = _Excluder(settings)
    seen: set[str] = set()

    def add(file: Path, real: str) -> None:
        if real not in seen:
            seen.add(real)
            result.files.append(file)
            result.real[file] = Path(real)

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
            add(path, os.path.realpath(path))
            continue
        _walk(path, excluder, result, add)
    return result


def _walk(top: Path, excluder: _Excluder, result: Discovery, add) -> None:
    """Depth-first, folders and files in name order, following folder links (a loop is
    reported once and skipped)."""
    top_text = os.fspath(top)
    visited: set[tuple[int, int]] = set()
    stack = [(top_text, os.path.realpath(top_text))]
    while stack:
        directory, real_directory = stack.pop()
        try:
            stat = os.stat(directory)
        except OSError as error:
            result.errors.append(f"{directory}: {error.strerror or error}")
            continue
        if (stat.st_dev, stat.st_ino) in visited:
            result.errors.append(f"{directory}: symbolic link loop, skipped")
            continue
        visited.add((stat.st_dev, stat.st_ino))
        try:
            with os.scandir(directory) as listing:
                entries = list(listing)
        except OSError as error:
            result.errors.append(f"{error.filename}: {error.strerror}")
            continue
        folders = []
        files = []
        for entry in entries:
            try:
                is_folder = entry.is_dir()
            except OSError:
                is_folder = False
            (folders if is_folder else files).append(entry)

        def real_of(entry: os.DirEntry) -> str:
            # Only a link needs resolving; anything else lies in the resolved folder.
            return os.path.realpath(entry.path) if entry.is_symlink() else os.path.join(real_directory, entry.name)

        for entry in sorted(files, key=lambda e: e.name):
            if not entry.name.endswith(PYTHON_SUFFIXES):
                continue
            real = real_of(entry)
            if excluder.excluded(entry.path, False, top_text, real):
                continue
            if entry.is_symlink():
                try:
                    os.stat(entry.path)
                except OSError as error:
                    result.errors.append(f"{entry.path}: {error.strerror or error}")
                    continue
            add(Path(entry.path), real)
        kept = []
        for entry in sorted(folders, key=lambda e: e.name):
            real = real_of(entry)
            if not excluder.excluded(entry.path, True, top_text, real):
                kept.append((entry.path, real))
        stack.extend(reversed(kept))


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
