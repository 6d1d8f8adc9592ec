"""Records of the call edges the runtime guard observed while captures were open.

The guard (trace_lint/runtime_guard/observed.py) writes records into the project's cache
folder (`<cache-dir>/observed/`, config key `observed`); each holds, per capture (its begin
site), the project functions that ran and the call site that ran them, with the content
hash of both files. The engine follows such an edge where static resolution finds no target
for that call site (capture/observed.py); an edge whose caller or callee file changed since
it was recorded is stale and ignored.

This module is the one definition of the record format: the guard writes and merges records
through it, the checker reads them (their digest is part of the cache keys). Reading never
raises: a record that cannot be read, is not JSON, or is of another format is a warning, and
its edges are not used. Nothing here imports libcst.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional

from .files import cache_folder, mark_cache_folder, read_regular_file, write_atomically

FORMAT_NAME = "trace-lint-observed"
FORMAT_VERSION = 1
FOLDER_NAME = "observed"
RECORD_GLOB = "observed-*.json"
# A record larger than this is not read (a runaway writer, or not a record at all).
MAX_RECORD_BYTES = 64 * 1024 * 1024
# Tests named per edge: enough to find one that shows the edge.
MAX_SEEN_BY = 3


def file_hash(data: bytes) -> str:
    """The content hash records keep per file (the result cache's, so both agree)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass(frozen=True)
class Site:
    """A call site in a project file: path relative to the project root ("/"-separated),
    1-based line, 0-based UTF-8 column where the Python that recorded it knows it (3.11+)."""

    file: str
    line: int
    column: Optional[int]
    function: str


@dataclass(frozen=True)
class Callee:
    file: str
    qualname: str  # co_qualname (3.11+), else the function's name
    line: int  # co_firstlineno: the first decorator's line, or the `def` line


@dataclass(frozen=True)
class Capture:
    """A capture, identified by its begin site."""

    file: str
    line: int
    function: str
    kind: str  # "ttnn" or "cuda-graph"


@dataclass
class Edge:
    capture: Capture
    caller: Site
    callee: Callee
    caller_hash: str
    callee_hash: str
    seen_by: list[str] = field(default_factory=list)

    def key(self) -> tuple:
        return (self.capture, self.caller, self.callee, self.caller_hash, self.callee_hash)

    def witness(self) -> str:
        """Who saw it: the first test, else the capture."""
        if self.seen_by:
            return self.seen_by[0]
        capture = self.capture
        return f"the capture begun at {capture.file}:{capture.line} in `{capture.function}`"


@dataclass
class Records:
    """Every edge of a records folder, and what could not be used."""

    edges: list[Edge] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Over the records' bytes: part of the cache keys, so a changed record never serves
    # findings computed without it.
    digest: str = ""
    files: list[Path] = field(default_factory=list)


class BadRecord(Exception):
    pass


# ------------------------------------------------------------------ the format
def _int(value: Any, lowest: int) -> int:
    if type(value) is not int or value < lowest:
        raise BadRecord(f"expected an integer >= {lowest}, got {value!r}")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value or "\0" in value:
        raise BadRecord(f"expected a non-empty string, got {value!r}")
    return value


def _path(value: Any) -> str:
    text = _text(value)
    if text.startswith("/") or ".." in text.split("/") or "\\" in text:
        raise BadRecord(f"expected a path relative to the project root, got {value!r}")
    return text


def _list(value: Any, length: Optional[int] = None) -> list:
    if not isinstance(value, list) or (length is not None and len(value) != length):
        raise BadRecord(f"expected a list{'' if length is None else f' of {length}'}, got {type(value).__name__}")
    return value


def edge_to_data(edge: Edge) -> dict:
    return {
        "caller": [edge.caller.file, edge.caller.line, edge.caller.column, edge.caller.function, edge.caller_hash],
        "callee": [edge.callee.file, edge.callee.qualname, edge.callee.line, edge.callee_hash],
        "seen_by": list(edge.seen_by),
    }


def _edge(value: Any, capture: Capture) -> Edge:
    if not isinstance(value, dict):
        raise BadRecord("an edge is not an object")
    caller = _list(value.get("caller"), 5)
    callee = _list(value.get("callee"), 4)
    column = None if caller[2] is None else _int(caller[2], 0)
    seen_by = [_text(test) for test in _list(value.get("seen_by", []))][:MAX_SEEN_BY]
    return Edge(
        capture,
        Site(_path(caller[0]), _int(caller[1], 1), column, _text(caller[3])),
        Callee(_path(callee[0]), _text(callee[1]), _int(callee[2], 1)),
        _text(caller[4]),
        _text(callee[3]),
        seen_by,
    )


def records_data(edges: Iterable[Edge], tool_version: str) -> dict:
    """A record's JSON: edges grouped by capture, in a stable order."""
    by_capture: dict[Capture, list[Edge]] = {}
    for edge in edges:
        by_capture.setdefault(edge.capture, []).append(edge)
    captures = []
    for capture in sorted(by_capture, key=lambda c: (c.file, c.line, c.function, c.kind)):
        found = sorted(by_capture[capture], key=lambda e: (e.caller.file, e.caller.line, e.caller.column or 0, e.callee.file, e.callee.line, e.callee.qualname))
        captures.append({
            "begin": [capture.file, capture.line, capture.function],
            "kind": capture.kind,
            "edges": [edge_to_data(edge) for edge in found],
        })
    return {"format": FORMAT_NAME, "version": FORMAT_VERSION, "tool": tool_version, "captures": captures}


def parse_record(data: bytes) -> list[Edge]:
    """The edges of one record; BadRecord says why it cannot be used."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadRecord(f"not JSON ({error})") from None
    if not isinstance(value, dict) or value.get("format") != FORMAT_NAME:
        raise BadRecord("not a trace-lint observed-calls record")
    if value.get("version") != FORMAT_VERSION:
        raise BadRecord(f"record format version {value.get('version')!r}, this trace-lint reads version {FORMAT_VERSION}")
    edges = []
    try:
        for entry in _list(value.get("captures")):
            if not isinstance(entry, dict):
                raise BadRecord("a capture is not an object")
            begin = _list(entry.get("begin"), 3)
            capture = Capture(_path(begin[0]), _int(begin[1], 1), _text(begin[2]), _text(entry.get("kind")))
            edges.extend(_edge(item, capture) for item in _list(entry.get("edges")))
    except (BadRecord, TypeError, ValueError) as error:
        raise BadRecord(f"malformed: {error}") from None
    return edges


def merge(edges: Iterable[Edge]) -> list[Edge]:
    """One edge per (capture, caller, callee, hashes), the tests that saw it joined."""
    merged: dict[tuple, Edge] = {}
    for edge in edges:
        known = merged.get(edge.key())
        if known is None:
            merged[edge.key()] = Edge(edge.capture, edge.caller, edge.callee, edge.caller_hash, edge.callee_hash, list(edge.seen_by))
            continue
        for test in edge.seen_by:
            if test not in known.seen_by and len(known.seen_by) < MAX_SEEN_BY:
                known.seen_by.append(test)
    return list(merged.values())


# ------------------------------------------------------------------ the folder
def records_folder(settings) -> Optional[Path]:
    """Where a project's records are: config `observed` (a folder, relative to the config's
    folder), by default `<cache-dir>/observed`; None when it is turned off."""
    value = getattr(settings, "observed", True)
    if value is False:
        return None
    if isinstance(value, str):
        folder = Path(value)
        return folder if folder.is_absolute() else Path(settings.root) / folder
    return cache_folder(settings) / FOLDER_NAME


def in_cache_folder(settings) -> bool:
    """The records are in their default place, inside the cache folder."""
    return getattr(settings, "observed", True) is True


def read_folder(folder: Path) -> Records:
    """Every record in the folder, merged; bad records are warnings."""
    records = Records()
    digest = hashlib.blake2b(digest_size=16)
    try:
        paths = sorted(folder.glob(RECORD_GLOB))
    except OSError:
        paths = []
    edges: list[Edge] = []
    for path in paths:
        data = read_regular_file(path, MAX_RECORD_BYTES)
        if data is None:
            if path.exists():
                records.warnings.append(f"{path}: observed-calls record ignored: not a readable regular file of at most {MAX_RECORD_BYTES} bytes")
            continue
        try:
            found = parse_record(data)
        except BadRecord as error:
            records.warnings.append(f"{path}: observed-calls record ignored: {error}")
            continue
        digest.update(path.name.encode() + b"\0" + file_hash(data).encode() + b"\0")
        records.files.append(path)
        edges.extend(found)
    records.edges = merge(edges)
    records.digest = digest.hexdigest() if records.files else ""
    return records


_memo: dict[str, tuple[tuple, Records]] = {}


def _signature(folder: Path) -> tuple:
    entries = []
    try:
        for path in folder.glob(RECORD_GLOB):
            try:
                status = path.stat()
            except OSError:
                continue
            entries.append((path.name, status.st_size, status.st_mtime_ns))
    except OSError:
        pass
    return tuple(sorted(entries))


def load(settings) -> Records:
    """The records of the project `settings` belong to (memoised while the folder's files
    keep their sizes and times: the language server checks many times)."""
    folder = records_folder(settings)
    if folder is None:
        return Records()
    signature = _signature(folder)
    if not signature:
        return Records()
    key = str(folder)
    known = _memo.get(key)
    if known is not None and known[0] == signature:
        return known[1]
    records = read_folder(folder)
    _memo[key] = (signature, records)
    return records


_warned: set[str] = set()


def new_warnings(settings) -> list[str]:
    """The records' warnings this process has not given yet (the language server checks
    the same project many times)."""
    fresh = [warning for warning in load(settings).warnings if warning not in _warned]
    _warned.update(fresh)
    return fresh


def cache_key(settings) -> str:
    """What the result cache keys on: the records' digest ("" without records)."""
    return load(settings).digest


def write_record(folder: Path, edges: Iterable[Edge], tool_version: str, root: Path, in_cache: bool = False) -> Optional[Path]:
    """Write `edges` as a new record, merged with the records already in the folder; those
    are removed once the merged record is in place (every writer reads whole files written
    with os.replace, and removes only what it has read and written again, so parallel
    writers never lose an edge; at worst two merged records hold the same edges). Edges
    whose files changed since they were recorded are left out. `in_cache`: the folder is the
    default one inside the cache folder. Returns the record's path."""
    folder.mkdir(parents=True, exist_ok=True)
    if in_cache:
        mark_cache_folder(folder.parent)  # the default place: kept out of git as the cache is
    old = read_folder(folder)
    hashes: dict[str, Optional[str]] = {}
    kept = [edge for edge in [*old.edges, *edges] if _fresh_on_disk(edge, root, hashes)]
    if not kept and not old.files:
        return None
    target = folder / f"observed-{os.getpid()}-{uuid.uuid4().hex[:12]}.json"
    data = json.dumps(records_data(merge(kept), tool_version), indent=1, sort_keys=True) + "\n"
    write_atomically(target, data, prefix=".observed-")
    for path in old.files:
        try:
            path.unlink()
        except OSError:
            pass
    return target


def _fresh_on_disk(edge: Edge, root: Path, hashes: dict[str, Optional[str]]) -> bool:
    """Both files of the edge hold what they held when it was recorded."""
    for rel, recorded in ((edge.caller.file, edge.caller_hash), (edge.callee.file, edge.callee_hash)):
        if rel not in hashes:
            try:
                hashes[rel] = file_hash((root / rel).read_bytes())
            except OSError:
                hashes[rel] = None
        if hashes[rel] != recorded:
            return False
    return True


def summary(settings) -> str:
    """`--show-settings`: where the records are, and how many edges are usable and stale."""
    folder = records_folder(settings)
    if folder is None:
        return "observed records: off"
    records = load(settings)
    root = Path(settings.root)
    hashes: dict[str, Optional[str]] = {}
    stale = sum(1 for edge in records.edges if not _fresh_on_disk(edge, root, hashes))
    text = (
        f"observed records: {len(records.files)} in {folder}, {len(records.edges)} call edges, "
        f"{stale} stale (a caller or callee file changed since the guard saw it; ignored)"
    )
    if records.warnings:
        text += f", {len(records.warnings)} unusable record{'s' if len(records.warnings) != 1 else ''}"
    return text
