"""Finding the files to check: folders walked, git's ignore rules and configured excludes
respected, anything but regular files and folders skipped with a message (a FIFO named
`x.py` would block the run on its first read)."""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from functools import lru_cache
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

import pathspec

from ..core.config import DEFAULT_EXCLUDE, Settings, real_path
from .source import PACKAGE_FILES

PYTHON_SUFFIXES = (".py", ".pyi")


@dataclass
class Discovery:
    files: list[Path] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # Each found file's canonical path (computed once here: realpath costs syscalls).
    real: dict[Path, Path] = field(default_factory=dict)
    # What the answer was read from besides the files: every folder listed and every ignore
    # file looked for (present or not). A long-lived caller (the language server) reuses the
    # answer while none of them has changed.
    folders: list[str] = field(default_factory=list)
    ignore_files: list[str] = field(default_factory=list)


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


def matches_exclude(patterns: Iterable[str], relative: str, name: str) -> bool:
    """Whether exclude globs match a path (POSIX, relative to its config's folder) by its
    relative path or its name, as `exclude` is matched during discovery."""
    patterns = tuple(patterns)
    return _one_regex(patterns).match(name) is not None or _one_regex([*patterns, *(p.rstrip("/") + "/*" for p in patterns)]).match(relative) is not None


class _Excluder:
    def __init__(self, settings: Settings):
        self.settings = settings
        self.patterns = tuple(DEFAULT_EXCLUDE) + tuple(settings.exclude) + tuple(settings.extend_exclude)
        self._name = _one_regex(self.patterns)
        self._relative = _one_regex([*self.patterns, *(p.rstrip("/") + "/*" for p in self.patterns)])
        self._root = os.path.realpath(settings.root) if settings.root is not None else None
        self.git = _GitIgnores()

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

    def excluded(self, path, is_dir: bool, top, real: Optional[str] = None, absolute: Optional[str] = None) -> bool:
        path, top = os.fspath(path), os.fspath(top)
        if real is None:
            real = os.path.realpath(path)
        if self._matches_pattern(path, real):
            return True
        return self.git.ignored(absolute or os.path.abspath(path), is_dir, os.path.abspath(top))


class _GitIgnores:
    """git's own ignore rules: in a work tree, every `.gitignore` from the repository root
    down to a file's folder (the deeper file wins; in a file, the last matching line wins,
    so `!pattern` re-includes) and then `.git/info/exclude`, whichever folder was named.
    Outside a work tree, the `.gitignore` files from the named folder down."""

    def __init__(self) -> None:
        self._patterns: dict[str, tuple] = {}
        self._sources: dict[tuple[str, Optional[str]], tuple] = {}
        self._repo_root: dict[str, Optional[str]] = {}

    def ignored(self, path: str, is_dir: bool, top: str) -> bool:
        directory = os.path.dirname(path)
        for base, patterns in self._sources_for(directory, top):
            relative = path[len(base) :].lstrip(os.sep) if path.startswith(base) else os.path.relpath(path, base)
            relative = relative.replace(os.sep, "/") + ("/" if is_dir else "")
            verdict = None
            for pattern in patterns:
                if pattern.include is not None and pattern.match_file(relative) is not None:
                    verdict = pattern.include  # the last matching line decides
            if verdict is not None:
                return verdict
        return False

    def repo_root(self, directory: str) -> Optional[str]:
        if directory not in self._repo_root:
            if os.path.exists(os.path.join(directory, ".git")):
                found: Optional[str] = directory
            else:
                parent = os.path.dirname(directory)
                found = None if parent == directory else self.repo_root(parent)
            self._repo_root[directory] = found
        return self._repo_root[directory]

    def _sources_for(self, directory: str, top: str) -> tuple:
        """(folder, patterns) pairs that apply to the entries of `directory`, deepest first."""
        root = self.repo_root(directory)
        key = (directory, None if root is not None else top)
        found = self._sources.get(key)
        if found is None:
            own = self._read(os.path.join(directory, ".gitignore"))
            here = ((directory, own),) if own else ()
            parent = os.path.dirname(directory)
            if root is not None and directory == root:
                exclude = self._read(_info_exclude(directory))
                found = here + (((directory, exclude),) if exclude else ())
            elif (root is None and directory == top) or parent == directory:
                found = here
            else:
                found = here + self._sources_for(parent, top)
            self._sources[key] = found
        return found

    def _read(self, ignore_file: str) -> tuple:
        if ignore_file not in self._patterns:
            patterns: tuple = ()
            try:
                with open(ignore_file, encoding="utf-8", errors="replace") as stream:
                    lines = stream.read().splitlines()
                patterns = tuple(pathspec.GitIgnoreSpec.from_lines(lines).patterns)
            except (OSError, ValueError):
                patterns = ()  # no file, or one pathspec cannot read: nothing from it
            self._patterns[ignore_file] = patterns
        return self._patterns[ignore_file]


def _info_exclude(root: str) -> str:
    """`.git/info/exclude` of the work tree at `root`; a linked work tree (`.git` is a file
    naming its git folder) shares the main repository's."""
    dot_git = os.path.join(root, ".git")
    if os.path.isdir(dot_git):
        return os.path.join(dot_git, "info", "exclude")
    try:
        with open(dot_git, encoding="utf-8", errors="replace") as stream:
            first = stream.readline().strip()
    except OSError:
        return os.path.join(dot_git, "info", "exclude")
    git_dir = first[len("gitdir:") :].strip() if first.startswith("gitdir:") else ""
    git_dir = os.path.join(root, git_dir) if git_dir and not os.path.isabs(git_dir) else git_dir
    common = git_dir
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8", errors="replace") as stream:
            common = os.path.join(git_dir, stream.readline().strip())
    except OSError:
        pass
    return os.path.join(common, "info", "exclude")


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
            try:
                kind = _special_kind(os.stat(path).st_mode)
            except OSError as error:
                result.errors.append(f"{path}: {error.strerror or error}")
                continue
            if kind is not None:
                result.errors.append(f"{path}: {kind}, skipped (never read)")
                continue
            add(path, os.path.realpath(path))
            continue
        _walk(path, excluder, result, add)
    result.ignore_files = list(excluder.git._patterns)
    return result


def _special_kind(mode: int) -> Optional[str]:
    """What a file that is neither a regular file nor a folder is, for the message."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    for test, name in ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def _walk(top: Path, excluder: _Excluder, result: Discovery, add) -> None:
    """Depth-first, folders and files in name order, following folder links (a loop is
    reported once and skipped)."""
    top_text = os.fspath(top)
    absolute_top = os.path.abspath(top_text)
    visited: set[tuple[int, int]] = set()
    stack = [(top_text, os.path.realpath(top_text), absolute_top)]
    while stack:
        directory, real_directory, absolute_directory = stack.pop()
        try:
            info = os.stat(directory)
        except OSError as error:
            result.errors.append(f"{directory}: {error.strerror or error}")
            continue
        if (info.st_dev, info.st_ino) in visited:
            result.errors.append(f"{directory}: symbolic link loop, skipped")
            continue
        visited.add((info.st_dev, info.st_ino))
        try:
            with os.scandir(directory) as listing:
                entries = list(listing)
        except OSError as error:
            result.errors.append(f"{error.filename}: {error.strerror}")
            continue
        result.folders.append(absolute_directory)
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
            if excluder.excluded(entry.path, False, top_text, real, os.path.join(absolute_directory, entry.name)):
                continue
            try:
                regular = entry.is_file()  # follows a link; a cached answer for the rest
            except OSError:
                regular = False
            if not regular:
                try:
                    kind = _special_kind(os.stat(entry.path).st_mode)
                except OSError as error:
                    result.errors.append(f"{entry.path}: {error.strerror or error}")
                    continue
                result.errors.append(f"{entry.path}: {kind or 'not a regular file'}, skipped (never read)")
                continue
            add(Path(entry.path), real)
        kept = []
        for entry in sorted(folders, key=lambda e: e.name):
            real = real_of(entry)
            absolute = os.path.join(absolute_directory, entry.name)
            if not excluder.excluded(entry.path, True, top_text, real, absolute):
                kept.append((entry.path, real, absolute))
        stack.extend(reversed(kept))


def display_path(path: Path) -> str:
    """Paths relative to the working directory where possible, as ruff prints them."""
    text = str(path)
    if not os.path.isabs(text):
        if _plain_relative(text):
            return text  # what relpath gives: nothing to normalise
    else:
        # A plain path inside the working folder (what discovery makes): the rest after it.
        folder = os.getcwd()
        prefix = folder if folder.endswith(os.sep) else folder + os.sep
        if text.startswith(prefix) and _plain_relative(text[len(prefix) :]):
            return text[len(prefix) :]
    try:
        return os.path.relpath(path)
    except ValueError:
        return text


def _plain_relative(text: str) -> bool:
    """A relative path with no empty, `.` or `..` part (pathlib leaves `..` as written)."""
    return all(part not in ("", ".", "..") for part in text.split(os.sep)) and (os.altsep is None or os.altsep not in text)


def matches_per_file_glob(display: str, path: Path, glob: str, root: Path) -> bool:
    try:
        relative = real_path(path).relative_to(root).as_posix()
    except ValueError:
        relative = display
    return fnmatch.fnmatch(relative, glob) or fnmatch.fnmatch(path.name, glob) or fnmatch.fnmatch(display, glob)
