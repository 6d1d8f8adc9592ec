"""What the language server keeps in memory between its checks of one project: what does not
change with an edited buffer, so that a check after an edit redoes only what the edit can
change. Each kept item is keyed by what it is computed from (a file's text or bytes) or
served only while what it was read from is unchanged (the stat of files and folders), so a
check gives what a fresh run gives; memory stays bounded by dropping what the last check
did not use."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Optional

from ..core.file_facts import FileFacts
from ..core.files import read_regular_file
from ..driver.cache import ENTRY_FAULTS, MAX_ENTRY_BYTES, AnalysisRecord, ResultCache
from ..driver.checker import RunInputs
from ..driver.stat_index import DiscoveryRead, discover_read, entry_key as _entry_key, quiet as _quiet, stat_key as _stat_key


class _UsedDict(dict):
    """A dict that remembers which keys were read or written since `forget_unused`."""

    def __init__(self) -> None:
        super().__init__()
        self.used: set = set()

    def get(self, key, default=None):
        if key in self:
            self.used.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        value = super().__getitem__(key)
        self.used.add(key)
        return value

    def __setitem__(self, key, value) -> None:
        self.used.add(key)
        super().__setitem__(key, value)

    def forget_unused(self) -> None:
        """Drop what was not used since the last call; nothing when nothing was used (a
        check answered without reading any)."""
        if self.used:
            for key in [key for key in self if key not in self.used]:
                del self[key]
        self.used = set()


class KeptParses:
    """The project's parses, outlines and positions (`semantic.outline.SharedParses`, pure
    functions of a file's text and keyed by it) kept across checks: a check after an edit
    parses only the chunks of the edited file that changed. The server imports libcst when
    it starts (`server.py`: the binder's deferred libcst is not safe across threads); the
    protocol side never uses it."""

    def __init__(self) -> None:
        self._shared = None

    def __enter__(self) -> "KeptParses":
        from ..semantic.outline import SharedParses

        if self._shared is None:
            shared = SharedParses()
            shared.outlines, shared.trees, shared.spans = _UsedDict(), _UsedDict(), _UsedDict()
            shared.outline_facts.known = _UsedDict()
            self._shared = shared
        self._shared.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._shared.__exit__(*exc)

    def keep_used(self) -> None:
        """Drop what the check just made did not use."""
        shared = self._shared
        if shared is None:
            return
        facts = shared.outline_facts
        if not (shared.outlines.used or shared.trees.used or shared.spans.used or facts.known.used):
            return
        shared.outlines.forget_unused()
        shared.trees.forget_unused()
        shared.spans.forget_unused()
        facts.known.forget_unused()
        facts.used = {}

    def outlines_used(self) -> dict:
        """The outline facts this check used or made so far (by the key `KnownOutlines` uses)."""
        return {} if self._shared is None else self._shared.outline_facts.used

    def sizes(self) -> Optional[tuple[int, int, int]]:
        """(outlines, trees, position maps) kept; None before the first check."""
        shared = self._shared
        return None if shared is None else (len(shared.outlines), len(shared.trees), len(shared.spans))


class KeptInputs(RunInputs):
    """`checker.RunInputs` that keep, between checks of one project: the project's discovery
    (served while every folder it listed and every ignore file it looked for has the same
    stat), each file's bytes (while the file's stat is the same), content hashes and the
    prefilter's answers (keyed by the bytes themselves), module names and display paths
    (while the discovery stands). Anything changed too recently to trust its stat (`_quiet`)
    is read again."""

    def __init__(self) -> None:
        self._settings_key: Optional[tuple] = None
        self._discovery: Optional[DiscoveryRead] = None
        self._files: _UsedDict = _UsedDict()  # path -> (stamp, bytes)
        self._hashes: _UsedDict = _UsedDict()  # bytes -> content hash
        self._admitted: _UsedDict = _UsedDict()  # (bytes, name, is_package) -> bool
        # Source roots -> real path (as text) -> module names; the roots last asked with and
        # their names (a check asks with one tuple of roots throughout).
        self._names: dict[tuple, dict[str, tuple[str, ...]]] = {}
        self._roots: Optional[tuple] = None
        self._names_now: dict[str, tuple[str, ...]] = {}
        self._displays: dict[tuple[str, str], str] = {}
        self._listed: frozenset = frozenset()  # folders the kept discovery vouches for
        self.discoveries = 0  # walks made (for tests)

    def forget(self) -> None:
        """Drop everything read from the file system (the editor says files changed)."""
        self._discovery = None
        self._files.clear()
        self._forget_names()
        self._listed = frozenset()

    def _forget_names(self) -> None:
        self._names.clear()
        self._roots, self._names_now = None, {}

    def begin(self, settings) -> None:
        """Before a check: settings other than the last check's drop every kept answer
        (excludes change the discovery; the prefilter's words come from the settings)."""
        from ..frontend.discovery import _package_parts

        key = (settings.cache_key(), str(settings.root), os.getcwd())
        if key != self._settings_key:
            self._settings_key = key
            self.forget()
            self._admitted.clear()
            self._displays.clear()
        # A fresh run clears the package climb's memo when it walks; a kept walk does not.
        _package_parts.cache_clear()

    def end(self) -> None:
        """After a check: drop what it did not use (files gone, buffers' old versions)."""
        self._files.forget_unused()
        self._hashes.forget_unused()
        self._admitted.forget_unused()

    # -- RunInputs -------------------------------------------------------------------------
    def discover_project(self, folders: list[Path], settings):
        kept = self._discovery
        if kept is None or not kept.holds(folders):
            kept = self._discovery = discover_read(list(folders), settings, True)
            self.discoveries += 1
            self._forget_names()
            self._listed = kept.listed()
        return kept.answer()

    # Called for every file of the project on every check: keyed by text (a Path hashes its
    # parts again each time), the roots compared by identity first.
    def module_names(self, real: Path, roots: tuple[Path, ...]) -> tuple[str, ...]:
        text = str(real)
        if os.path.dirname(text) not in self._listed:  # not a folder the kept discovery watches
            return super().module_names(real, roots)
        if roots is not self._roots:
            self._roots, self._names_now = roots, self._names.setdefault(roots, {})
        names = self._names_now.get(text)
        if names is None:
            names = self._names_now[text] = super().module_names(real, roots)
        return names

    def display_path(self, path: Path) -> str:
        key = (str(path), os.getcwd())
        display = self._displays.get(key)
        if display is None:
            if len(self._displays) > 100_000:
                self._displays.clear()
            display = self._displays[key] = super().display_path(path)
        return display

    def read_bytes(self, path: Path) -> bytes:
        name = os.fspath(path)
        stamp = _stat_key(name)
        kept = dict.get(self._files, name)
        if stamp is not None and kept is not None and kept[0] == stamp:
            self._files.used.add(name)
            return kept[1]
        started = time.time_ns()
        data = super().read_bytes(path)
        if stamp is not None and _quiet(stamp, started) and _stat_key(name) == stamp:
            self._files[name] = (stamp, data)
        else:
            self._files.pop(name, None)
        return data

    def content_hash(self, data: bytes) -> str:
        found = self._hashes.get(data)
        if found is None:
            found = self._hashes[data] = super().content_hash(data)
        return found

    def admits(self, prefilter, data: bytes, name: str, is_package: bool) -> bool:
        key = (data, name, is_package)
        found = self._admitted.get(key)
        if found is None:
            found = self._admitted[key] = super().admits(prefilter, data, name, is_package)
        return found


# New per-file facts of one kind the server gathers before it writes the kind's entry.
FACTS_WRITE_AFTER = 32


class KeptResultCache(ResultCache):
    """The project's result cache, with each analysis record decoded once: a record's
    decoding is a pure function of its bytes (and of the key and files it is checked
    against), kept by them; each read gets its own record around the decoded groups (a run
    marks and replaces a record's own fields, never a group's). Writes wait until `flush`
    (the server calls it once the diagnostics are out); any read flushes them first."""

    def __init__(self, folder: Path, parses: Optional[KeptParses] = None) -> None:
        super().__init__(folder)
        # The check's parses: what it outlined before the analysis opened its facts.
        self._parses = parses
        self._decoded: _UsedDict = _UsedDict()
        # Entry path -> (its stat, its bytes): an analysis record is megabytes, read (and its
        # memo key hashed) on every check otherwise.
        self._entries: _UsedDict = _UsedDict()
        self._pending: list = []
        # (kind, key) -> per-file facts, read from disk once and kept up to date; the keys
        # on disk (read or last written).
        self._facts: dict[tuple[str, str], dict] = {}
        self._written: dict[tuple[str, str], set] = {}

    def flush(self) -> None:
        pending, self._pending = self._pending, []
        for write in pending:
            write()

    def store_analysis(self, key: str, record: AnalysisRecord) -> None:
        def write() -> None:
            data = ResultCache.store_analysis(self, key, record)
            # The next check reads this record first: what decoding the bytes just written
            # gives is the record itself, its findings decoded (a read of other bytes, a
            # damaged entry, misses this and is decoded and checked as any other).
            files = frozenset(record.hashes)
            reported = None if record.reported is None else dict(record.reported)
            self._decoded[(data, key, files)] = AnalysisRecord(record.hashes, list(record.groups), dict(record.facts), reported, files=files)

        self._pending.append(write)

    def load_facts(self, kind: str, key: str) -> FileFacts:
        known = self._facts.get((kind, key))
        if known is None:
            known = self._facts[(kind, key)] = super().load_facts(kind, key).known
            self._written[(kind, key)] = set(known)
        facts = FileFacts(known)
        if kind == "outlines" and self._parses is not None:
            # The record's plan loads edited files before the analysis reads these facts (its
            # outlines go to the kept parses): the analysis's copy outlines them again else.
            # A fact is a pure function of its key, whichever store holds it.
            for fact_key, value in self._parses.outlines_used().items():
                facts.known.setdefault(fact_key, value)
        return facts

    def store_facts(self, kind: str, key: str, facts: FileFacts) -> None:
        """Kept in memory at once; on disk (for the command line, a later server) once
        `FACTS_WRITE_AFTER` new facts of the kind have gathered: an edit adds one or two,
        and rewriting the entry after each would cost the next check its time."""
        kept = self._facts[(kind, key)] = facts.kept()
        written = self._written.get((kind, key), set())
        if sum(1 for fact_key in kept if fact_key not in written) >= FACTS_WRITE_AFTER:
            self._written[(kind, key)] = set(kept)
            self._pending.append(lambda: ResultCache.store_facts(self, kind, key, facts))

    def write_kept_facts(self) -> None:
        """Every per-file fact kept in memory and not yet on disk, written now: the server is
        letting this cache go (nothing open, the folder moved, shutdown), and a later run
        should not compute them again."""
        for (kind, key), kept in self._facts.items():
            written = self._written.get((kind, key), set())
            if any(fact_key not in written for fact_key in kept):
                self._written[(kind, key)] = set(kept)
                self._pending.append(lambda kind=kind, key=key, known=kept: ResultCache.store_facts(self, kind, key, FileFacts.to_store(known)))
        self.flush()

    def store(self, key: str, findings, files_checked: int) -> None:
        self._pending.append(lambda: ResultCache.store(self, key, findings, files_checked))

    def load(self, key: str, files=(), files_checked: Optional[int] = None):
        self.flush()
        return super().load(key, files, files_checked)

    def touch_analysis(self, key: str, hashes: dict[str, str]) -> None:
        self.flush()
        super().touch_analysis(key, hashes)

    def analysis_records(self, key: str, files):
        self.flush()
        return super().analysis_records(key, files)

    def _read(self, path: Path, decode):
        """`ResultCache._read`, with the bytes of an entry whose stat is unchanged (and was
        quiet when read, as `KeptInputs.read_bytes`) kept: the same bytes object each time."""
        name = os.fspath(path)
        stamp = _entry_key(name)
        kept = dict.get(self._entries, name)
        if stamp is not None and kept is not None and kept[0] == stamp:
            self._entries.used.add(name)
            data = kept[1]
        else:
            started = time.time_ns()
            data = read_regular_file(path, MAX_ENTRY_BYTES)
            self._entries.pop(name, None)
            if data is None:
                return None
            if stamp is not None and _quiet(stamp, started) and _entry_key(name) == stamp:
                self._entries[name] = (stamp, data)
        try:
            return decode(data)
        except ENTRY_FAULTS as error:
            self._rejected(error)
            return None

    def _decode_analysis(self, data: bytes, key: str, files: frozenset) -> AnalysisRecord:
        memo = (data, key, files)
        record = self._decoded.get(memo)
        if record is None:
            record = self._decoded[memo] = super()._decode_analysis(data, key, files)
        reported = None if record.reported is None else dict(record.reported)
        return AnalysisRecord(record.hashes, list(record.groups), dict(record.facts), reported, files=record.files, stored_reported=record.stored_reported)

    def end(self) -> None:
        self._decoded.forget_unused()
        self._entries.forget_unused()
