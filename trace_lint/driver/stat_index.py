"""What a run read from the file system, served again while the stat of what it was read from
stands: a project's discovery (while every folder it listed and every ignore file it looked
for is unchanged), module names and display paths (while that discovery stands), and each
file's content hash (while the file's stat is unchanged). The language server keeps these in
memory (`lsp/kept.py`); a command-line run with the cache keeps them in the cache folder
(`StatIndex`), so a run whose files all kept their stat finds its result without walking the
project or reading a file. Anything changed too recently to trust its stat (`quiet`) is read
again, as git does for its index ("racy git")."""

from __future__ import annotations

import json
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .. import __version__
from ..frontend.discovery import Discovery, discover
from ..frontend.source import PACKAGE_FILES
from .cache import ENTRY_FAULTS, FORMAT, BadEntry, _list, _text, tool_fingerprint
from .checker import RunInputs

# A file or folder changed this recently (nanoseconds) may change again within the same tick
# of the file system's clock without its stat showing it: read it again. A time in whole
# seconds may come from a file system that keeps no finer (FAT keeps 2 s); one with
# nanoseconds from one whose tick is the kernel's (a few milliseconds at most).
RACY_NS = 2_000_000_000
RACY_FINE_NS = 100_000_000

Stamp = tuple[int, int, int, int, int]


def _stamp(info: os.stat_result) -> Stamp:
    return (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino, info.st_dev)


def stat_key(path: str) -> Optional[Stamp]:
    try:
        return _stamp(os.stat(path))
    except OSError:
        return None


def entry_key(path: str) -> Optional[Stamp]:
    """`stat_key` of a regular file itself (entries are read without following links)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return _stamp(info) if stat.S_ISREG(info.st_mode) else None


# What a folder above the project can hold that changes a discovery or a module name.
MARKS = (".git", *PACKAGE_FILES)


def path_kind(path: str) -> Optional[bool]:
    """None: nothing there; True: a regular file; False: anything else."""
    try:
        return os.path.isfile(path) if os.path.lexists(path) else None
    except OSError:
        return None


def quiet(stamp: Optional[tuple], started: int) -> bool:
    """Whether a stat taken at `started` can be trusted to show any later change."""
    if stamp is None:
        return True
    changed = max(stamp[0], stamp[1])
    coarse = stamp[0] % 1_000_000_000 == 0 or stamp[1] % 1_000_000_000 == 0
    return changed < started - (RACY_NS if coarse else RACY_FINE_NS)


@dataclass
class DiscoveryRead:
    """A discovery's answer for `paths`, with what it was read from: the stat of every
    folder it listed and every ignore file it looked for, and above the named folders,
    whether each holds a repository's top or a package (module names climb packages)."""

    paths: list[str]
    found: Discovery
    stamps: list[tuple[str, Optional[Stamp]]]
    trusted: bool  # every stamp was quiet when taken
    marks: list[tuple[str, Optional[bool]]]

    @classmethod
    def read(cls, paths: list[Path], found: Discovery, started: int) -> "DiscoveryRead":
        stamps = [(path, stat_key(path)) for path in dict.fromkeys([*found.folders, *found.ignore_files])]
        trusted = all(quiet(stamp, started) for _path, stamp in stamps)
        above = dict.fromkeys(str(parent) for folder in paths for parent in Path(os.path.abspath(folder)).parents)
        marks = [(os.path.join(parent, name), path_kind(os.path.join(parent, name))) for parent in above for name in MARKS]
        return cls([os.fspath(path) for path in paths], found, stamps, trusted, marks)

    def holds(self, paths: list[Path]) -> bool:
        return (
            self.trusted
            and self.paths == [os.fspath(path) for path in paths]
            and all(stat_key(path) == stamp for path, stamp in self.stamps)
            and all(path_kind(path) == kind for path, kind in self.marks)
        )

    def answer(self) -> Discovery:
        """A copy: the caller extends and updates its own lists."""
        found = self.found
        return Discovery(list(found.files), list(found.errors), dict(found.real), list(found.folders), list(found.ignore_files))

    def listed(self) -> frozenset:
        """The folders this answer vouches for (their entries are as it read them)."""
        return frozenset(self.found.folders) if self.trusted else frozenset()


def discover_read(paths: list[Path], settings, force_exclude: bool) -> DiscoveryRead:
    started = time.time_ns()
    return DiscoveryRead.read(paths, discover(paths, settings, force_exclude=force_exclude), started)


def index_key(settings) -> str:
    """What every answer of a `StatIndex` depends on besides the file system."""
    import hashlib

    header = json.dumps(["inputs", FORMAT, __version__, tool_fingerprint(), settings.cache_key(), str(settings.root), os.getcwd()])
    return hashlib.blake2b(header.encode(), digest_size=20).hexdigest()


DISCOVERY_KEYS = ("paths", "force_exclude", "files", "real", "folders", "ignore_files", "stamps", "marks")


def _big_int(value) -> int:
    # Times in nanoseconds, inode and device numbers outgrow a cached record's row numbers.
    if type(value) is not int or value < 0 or value >= 1 << 64:
        raise BadEntry(f"bad number {value!r:.40}")
    return value


def _file_stamp(value) -> Stamp:
    return tuple(_big_int(part) for part in _list(value, 5, 5))  # type: ignore[return-value]


def _kind_of(value) -> Optional[bool]:
    if value is not None and type(value) is not bool:
        raise BadEntry("bad kind")
    return value


def _texts(value) -> list[str]:
    return [_text(item) for item in _list(value, 1 << 24)]


def _discovery_key(value) -> tuple[tuple[str, ...], bool]:
    """The paths and flag a kept discovery answers for (the rest is decoded when asked)."""
    items = _list(value, len(DISCOVERY_KEYS), len(DISCOVERY_KEYS))
    if type(items[1]) is not bool:
        raise BadEntry("bad flag")
    return tuple(_texts(items[0])), items[1]


def _decoded_discovery(value) -> DiscoveryRead:
    paths, _force, files, real, folders, ignore_files, stamps, marks = value
    files, real = _texts(files), _texts(real)
    if len(files) != len(real):
        raise BadEntry("files and real paths differ in number")
    found_files = [Path(name) for name in files]
    # Most files are their own canonical path: one Path object serves both.
    canonical_paths = {path: path if canonical == name else Path(canonical) for path, name, canonical in zip(found_files, files, real)}
    found = Discovery(found_files, [], canonical_paths, _texts(folders), _texts(ignore_files))
    return DiscoveryRead(
        _texts(paths),
        found,
        [(_text(path), None if stamp is None else _file_stamp(stamp)) for path, stamp in (_list(row, 2, 2) for row in _list(stamps, 1 << 24))],
        True,
        [(_text(path), _kind_of(kind)) for path, kind in (_list(row, 2, 2) for row in _list(marks, 1 << 24))],
    )


def _discovery_data(force: bool, read: DiscoveryRead) -> list:
    found = read.found
    return [
        read.paths,
        force,
        [os.fspath(path) for path in found.files],
        [os.fspath(found.real.get(path) or path) for path in found.files],
        found.folders,
        found.ignore_files,
        [[path, None if stamp is None else list(stamp)] for path, stamp in read.stamps],
        [[path, kind] for path, kind in read.marks],
    ]


KEPT_ASKS = 8


class StatIndex(RunInputs):
    """`RunInputs` of a command-line run with the cache, answering from what the last run
    read while the stat of what it was read from stands (the module's docstring); `save`
    writes what this run read for the next. Every answer equals `RunInputs`' own
    (`tests/test_stat_index.py` compares runs with it and without)."""

    def __init__(self, cache, settings) -> None:
        self._cache = cache
        self._key = index_key(settings)
        # A kept discovery, or its stored form until it is asked for.
        self._discoveries: dict[tuple[tuple[str, ...], bool], "DiscoveryRead | list"] = {}
        self._names: dict[tuple[str, ...], dict[str, tuple[str, ...]]] = {}
        self._displays: dict[str, str] = {}
        self._files: dict[str, tuple[Stamp, str]] = {}
        self._listed: frozenset = frozenset()
        self._changed = False
        # What this run asked (the rest is dropped when it saves: files gone, other roots).
        self._used: set[str] = set()
        self._used_discoveries: set = set()
        self._used_names: set[tuple] = set()
        self._absolute: dict[str, str] = {}  # each path as a run spelled it -> its absolute path
        self.discoveries = 0  # walks made (for tests)
        self.files_read = 0  # files read (for tests)
        entry = cache.load_inputs(self._key, self._decode)
        if entry is not None:
            self._discoveries, self._names, self._displays, self._files = entry

    @staticmethod
    def _decode(fields: dict):
        # Decoded when asked: a run asks one or two of them (Path objects cost most).
        discoveries = {_discovery_key(item): item for item in _list(fields["discoveries"], 1 << 10)}
        names = {}
        for roots, by_file in (_list(row, 2, 2) for row in _list(fields["names"], 1 << 10)):
            if type(by_file) is not dict:
                raise BadEntry("bad names")
            names[tuple(_texts(roots))] = {_text(real): tuple(_texts(found)) for real, found in by_file.items()}
        displays = fields["displays"]
        if type(displays) is not dict:
            raise BadEntry("bad displays")
        displays = {_text(path): _text(display) for path, display in displays.items()}
        files = fields["files"]
        if type(files) is not dict:
            raise BadEntry("bad files")
        kept = {}
        for path, row in files.items():
            stamp, digest = _list(row, 2, 2)
            if type(path) is not str or type(digest) is not str or type(stamp) is not list or len(stamp) != 5:
                raise BadEntry("a bad file")
            # Its parts are not checked one by one: a stamp is only ever compared with a stat
            # (`known_hash`), which nothing but five equal numbers matches.
            kept[path] = (tuple(stamp), digest)
        return discoveries, names, displays, kept

    def _discovered(self, paths: list[Path], settings, force_exclude: bool) -> Discovery:
        key = (tuple(os.fspath(path) for path in paths), force_exclude)
        self._used_discoveries.add(key)
        kept = self._discoveries.get(key)
        if isinstance(kept, list):
            try:
                kept = self._discoveries[key] = _decoded_discovery(kept)
            except ENTRY_FAULTS:
                kept = None
        if kept is None or not kept.holds(paths):
            # Module names were found with the folders as they stood: one changed, or this is
            # a new ask, so none is trusted any more.
            if self._names:
                self._names.clear()
                self._changed = True
            kept = discover_read(paths, settings, force_exclude)
            self.discoveries += 1
            if kept.trusted and not kept.found.errors:
                self._discoveries[key] = kept
                self._changed = True
            else:
                self._discoveries.pop(key, None)
        self._listed = self._listed | kept.listed()
        return kept.answer()

    # -- RunInputs -------------------------------------------------------------------------
    def discover_project(self, folders: list[Path], settings):
        return self._discovered(list(folders), settings, True)

    def discover_named(self, paths: list[Path], settings, force_exclude: bool):
        if not paths or not all(os.path.isdir(path) and not os.path.islink(path) for path in paths):
            return super().discover_named(paths, settings, force_exclude)
        return self._discovered(list(paths), settings, force_exclude)

    def module_names(self, real: Path, roots: tuple[Path, ...]) -> tuple[str, ...]:
        text = str(real)
        if os.path.dirname(text) not in self._listed:
            return super().module_names(real, roots)
        roots_key = tuple(map(str, roots))
        by_file = self._names.setdefault(roots_key, {})
        self._used_names.add((roots_key, text))
        names = by_file.get(text)
        if names is None:
            names = by_file[text] = super().module_names(real, roots)
            self._changed = True
        return names

    def display_path(self, path: Path) -> str:
        text = str(path)
        display = self._displays.get(text)
        if display is None:
            display = self._displays[text] = super().display_path(path)
            self._changed = True
        return display

    def _absolute_of(self, path: Path) -> str:
        # One project file is named relative or absolute by different runs.
        text = os.fspath(path)
        name = self._absolute.get(text)
        if name is None:
            name = self._absolute[text] = os.path.abspath(text)
        return name

    def known_hash(self, path: Path) -> Optional[str]:
        name = self._absolute_of(path)
        kept = self._files.get(name)
        if kept is None or stat_key(name) != kept[0]:
            return None
        self._used.add(name)
        return kept[1]

    def file_hash(self, path: Path) -> tuple[bytes, str]:
        name = self._absolute_of(path)
        stamp = stat_key(name)
        started = time.time_ns()
        data = self.read_bytes(path)
        self.files_read += 1
        digest = self.content_hash(data)
        if stamp is not None and quiet(stamp, started) and stat_key(name) == stamp:
            self._used.add(name)
            if self._files.get(name) != (stamp, digest):
                self._files[name] = (stamp, digest)
                self._changed = True
        elif self._files.pop(name, None) is not None:
            self._changed = True
        return data, digest

    def save(self) -> None:
        """Write what this run read, for the next run (nothing when nothing changed): only
        the files this run hashed or found by their stat."""
        # Runs of one project name different paths (a folder, one file): each keeps its own
        # discovery and names, the latest `KEPT_ASKS`; the files are the project's.
        used_roots = {roots for roots, _text in self._used_names}
        # Display paths are kept per spelling (relative, absolute) while their file is.
        displays = {text: display for text, display in self._displays.items() if self._absolute_of(text) in self._used}
        unused = (
            len(self._used) != len(self._files)
            or len(displays) != len(self._displays)
            or len(self._used_names) != sum(len(self._names.get(roots, ())) for roots in used_roots)
        )
        if not self._changed and not unused:
            return
        names: dict[tuple, dict] = {roots: {text: list(found) for text, found in by_file.items()} for roots, by_file in self._names.items() if roots not in used_roots}
        for roots, text in self._used_names:
            found = self._names.get(roots, {}).get(text)
            if found is not None:
                names.setdefault(roots, {})[text] = list(found)
        discoveries = [key for key in self._discoveries if key not in self._used_discoveries] + [key for key in self._discoveries if key in self._used_discoveries]
        fields = {
            "discoveries": [_discovery_data(key[1], kept) if isinstance(kept, DiscoveryRead) else kept for key in discoveries[-KEPT_ASKS:] for kept in (self._discoveries[key],)],
            "names": [[list(roots), by_file] for roots, by_file in list(names.items())[-KEPT_ASKS:]],
            "displays": displays,
            "files": {name: [list(stamp), digest] for name, (stamp, digest) in self._files.items() if name in self._used},
        }
        self._cache.store_inputs(self._key, fields)
        self._changed = False
