"""The result cache: a run's findings, keyed by everything that can change them, and the
engine's findings for a project, with what they depend on.

Result entries: a finding in one file can depend on any other file (call chains cross
modules), so the key covers the content hash of every checked file with its path and module
name, the files named on the command line, the settings (`Settings.cache_key()`, the config
root) and the tool version. A warm run then only discovers, reads and hashes files.

Per-file facts (`core.file_facts.FileFacts`), each kind in an entry of its own: what the
prefilter admits, by content hash, module name and package flag, under the prefilter's key;
the syntax limits' scan of a text (`syntax_limits.scan`), by the text's digest, and a
module's `ast` outline as data (`outline.OutlineFacts`), by the text's digest, the module's
names and package flag, under the tool's. A run computes only the facts it has not seen.

Analysis records (`AnalysisRecord`): the engine's findings before suppressions and before a
run picks what it reports, keyed by the project's files without their contents, and stored
per group of candidate files (each group one engine run) with the files its findings can
depend on (parsed, admitted by the prefilter, or returned by a text search) and what it
searched for. A run after an edit reruns only the groups that can see it; an edit none can
see (most files of a model repository: no capture reaches them), or a run on one file of a
project checked before, reuses everything and only applies suppressions. Several records per project are
kept, so undoing an edit finds the one from before it.

Entries are a JSON header line (format, version, key, and the digest of the payload's
bytes) over a JSON payload (`sealed`), written to a temporary file and moved into place with
`os.replace`, so concurrent runs never see half an entry. An entry is validated before it is
served (a regular file of bounded size, the header and the digest, the schema, every type
and range, files of this run only); one that fails is ignored and rewritten, so a cached run
always equals a `--no-cache` run. An analysis record's findings are checked and decoded only
for the record a run uses (`ResultCache.complete`). Nothing here imports libcst.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Optional

from .. import __version__
from ..core.file_facts import FileFacts
from ..core.files import mark_cache_folder, read_regular_file as _read_regular_file, write_atomically
from ..core.findings import Edit, Finding, Fix, Location, Related, attach_related, union
from ..frontend.syntax_limits import Refusal
from ..frontend.text_index import called_names, defined_names

FORMAT = 7
# Result entries kept per cache folder; older ones are removed (a key changes with every edit).
KEEP = 16
# Analysis records of one project tried before a run gives up on reusing one.
ANALYSIS_TRIES = 4

_TOOL_FINGERPRINT: list[str] = []


def tool_fingerprint() -> str:
    """The size and mtime of every source and data file of trace-lint itself: an edited
    checkout (same version number) must not reuse results of the code before the edit."""
    if not _TOOL_FINGERPRINT:
        package = Path(__file__).resolve().parent.parent
        digest = hashlib.blake2b(digest_size=16)
        for path in sorted(package.rglob("*")):
            if path.suffix in (".py", ".toml"):
                stat = path.stat()
                digest.update(f"{path.relative_to(package)}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
        _TOOL_FINGERPRINT.append(digest.hexdigest())
    return _TOOL_FINGERPRINT[0]


def _observed_key(settings) -> str:
    """The runtime guard's records the analysis follows (their digest): a changed record
    never serves findings computed without it."""
    from ..core.observed import cache_key

    return cache_key(settings)


def run_key(settings, files: Iterable[tuple[str, str, str, bool]]) -> str:
    """files: (display path, module name, content hash, named on the command line), in run order."""
    digest = hashlib.blake2b(digest_size=20)
    header = json.dumps([FORMAT, __version__, tool_fingerprint(), settings.cache_key(), str(settings.root), os.getcwd(), _observed_key(settings)])
    digest.update(header.encode())
    for display, name, content, explicit in files:
        digest.update(f"\0{display}\0{name}\0{content}\0{int(explicit)}".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def analysis_key(settings, files: Iterable[tuple[str, str]]) -> str:
    """The key of an analysis record: the project's files (display path, module name) without
    their contents. Which files a run names or reports on is not part of it: any run over the
    same project can reuse the analysis (a one-file run after a whole run)."""
    digest = hashlib.blake2b(digest_size=20)
    header = json.dumps(["analysis", FORMAT, __version__, tool_fingerprint(), settings.cache_key(), str(settings.root), os.getcwd(), _observed_key(settings)])
    digest.update(header.encode())
    for display, name in sorted(files):
        digest.update(f"\0{display}\0{name}".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


@dataclass
class Searches:
    """What an analysis looked for in every file's raw text: substrings, names called
    (`name(`) and names defined (`def name(`)."""

    tokens: set[bytes] = field(default_factory=set)
    calls: set[str] = field(default_factory=set)
    defs: set[str] = field(default_factory=set)
    # Names called outside the chunks some run searches as candidates (`Project.searched_outside`).
    outside: set[str] = field(default_factory=set)

    def would_find(self, text: "ChangedText") -> bool:
        """Whether one of the searches finds this text."""
        return (
            any(token in text.data for token in self.tokens)
            or (bool(self.calls) and not self.calls.isdisjoint(text.called))
            or (bool(self.defs) and not self.defs.isdisjoint(text.defined))
            or (bool(self.outside) and not self.outside.isdisjoint(text.called) and text.calls_outside_candidates(self.outside))
        )


class ChangedText:
    """A changed file's bytes, with the names it calls and defines read once (every group of
    a record asks)."""

    def __init__(self, data: bytes, display: str = "", module: Optional[tuple] = None, candidate_chunks=None):
        self.data = data
        self.display = display
        # (path, module names) of the file, and the test of a module's candidate chunks
        # (`Engine.candidate_chunks`, None: admitted by the prefilter or not): without them,
        # every call of a name counts as outside them.
        self.module = module
        self.candidate_chunks = candidate_chunks
        self._outside: Optional[list[str]] = None
        self._called: Optional[set[str]] = None
        self._defined: Optional[set[str]] = None
        self._parts: dict[tuple, Optional[tuple]] = {}
        self._probes: dict[tuple, object] = {}

    @property
    def called(self) -> set[str]:
        if self._called is None:
            self._called = called_names(self.data)
        return self._called

    @property
    def defined(self) -> set[str]:
        if self._defined is None:
            self._defined = set(defined_names(self.data))
        return self._defined

    def calls_outside_candidates(self, names: set[str]) -> bool:
        """Whether a chunk of this text that no run searches as a candidate mentions one of
        the names (as `CallResolver.spelled_calls` with `skipped` chooses chunks)."""
        if self.module is None or self.candidate_chunks is None:
            return True
        if self._outside is None:
            from ..frontend.source import PACKAGE_FILES

            path, module_names = self.module
            probe = self._probe(module_names, Path(path).name in PACKAGE_FILES)
            if probe is None:
                return True
            skip = self.candidate_chunks(self.data, probe)
            self._outside = [text for text in probe.chunk_texts() if skip is None or not skip(text)]
        return any(name in text for text in self._outside for name in names)

    def keeps(self, read: tuple) -> bool:
        """Whether this text keeps what a run read of the file's earlier text (a
        `read_parts` entry): the same outline facts and the same text in each chunk it read.
        Then that run's findings cannot have changed (its positions included: the outline
        holds every chunk's lines)."""
        names, is_package, outline, chunks = read
        key = (names, is_package)
        if key not in self._parts:
            module = self._probe(names, is_package)
            self._parts[key] = None if module is None else module.parts_signature(range(len(module._chunks) if module.ok else 0))
        found = self._parts[key]
        if found is None or found[0] != outline:
            return False
        now = dict(found[1])
        return all(now.get(index) == digest for index, digest in chunks)

    def _probe(self, names: tuple, is_package: bool):
        """The text as a module of these names, outlined once for every ask (`keeps`,
        `calls_outside_candidates`); None where it does not decode. An `ast` outline needs no
        libcst; only a text `ast` refuses is given to libcst, as loading the module would."""
        key = (tuple(names), is_package)
        if key not in self._probes:
            from ..frontend.source import decode
            from ..semantic.outline import ModuleOutline

            source = decode(self.data)
            module = None
            if source.error is None:
                path = Path(self.module[0]) if self.module is not None else Path(self.display)
                module = ModuleOutline(path, names, self.display, text=source.text)
                module.is_package = is_package
                module.load()
                if module.needs_parser:
                    from ..semantic.project import ModuleInfo

                    module = ModuleInfo(path, names, self.display, text=source.text)
                    module.is_package = is_package
            self._probes[key] = module
        return self._probes[key]


@dataclass
class GroupRecord:
    """One group's engine run (see checker._engine_findings): the candidate files it was
    rooted in, the files it parsed, the prefilter admitted or a text search returned
    (`dependent`), what it searched every file's text for, its findings, and the kinds of
    capture that reach each function it reached (display path, qualified name)."""

    members: list[str]
    dependent: set[str]
    searches: Searches
    findings: list[Finding]
    kinds: dict[tuple[str, str], frozenset] = field(default_factory=dict)
    # Dependent files it read only in part (`read_parts`): an edit of one that keeps those
    # parts does not touch it.
    parts: dict[str, tuple] = field(default_factory=dict)
    # The findings as stored, until `ResultCache.complete` decodes them (a run decodes only
    # the record it uses), and then kept: writing the group again writes them as they were.
    stored: Optional[list] = None
    decoded: bool = True

    def touched(self, changed: dict[str, ChangedText], admitted: set[str]) -> bool:
        """Whether a changed file (display path -> its text now) can change what this
        group's engine run finds: one it depends on, one a search finds, or a member the
        prefilter no longer admits."""
        if any(member not in admitted for member in self.members):
            return True
        return any(
            display in self.members
            or (display in self.dependent and not (display in self.parts and text.keeps(self.parts[display])))
            or self.searches.would_find(text)
            for display, text in changed.items()
        )


class ReadOnDemand:
    """The records `ResultCache.analysis_records` yields, each read (and decoded) when a loop
    first reaches it and kept for the next loop: a run the newest record settles reads no
    other (a record is megabytes of JSON)."""

    def __init__(self, records: Iterator["AnalysisRecord"]):
        self._records = records
        self._read: list[AnalysisRecord] = []

    def __iter__(self) -> Iterator["AnalysisRecord"]:
        index = 0
        while True:
            if index == len(self._read):
                record = next(self._records, None)
                if record is None:
                    return
                self._read.append(record)
            yield self._read[index]
            index += 1


@dataclass
class AnalysisRecord:
    """The engine's findings for a project (before suppressions and before choosing what a
    run reports), as the groups of candidate files that were analysed by their own engine
    runs, each with what its findings can depend on (`GroupRecord`), and each file's content
    hash. A later run reruns only the groups its changed files touch, and the files the
    prefilter now admits that no group holds, as a group of their own; the findings are the
    union of the groups' (as a parallel run's are). Which files a run names is not part of
    it: the checker checks those the prefilter does not admit for parse errors on their own."""

    hashes: dict[str, str]
    groups: list[GroupRecord]
    # display path -> what suppressions need of the file's parse (suppressions.suppression_facts),
    # for the files with findings: a reused analysis applies suppressions without parsing them.
    facts: dict[str, tuple] = field(default_factory=dict)
    # display path -> what the file reports whatever a run names (its findings after its
    # suppressions and per-file ignores, before choosing the run's files), for every file the
    # recording run settled; None where that run stopped short (a file it could not read).
    reported: Optional[dict[str, list[Finding]]] = None
    # Read back by this run and found to match every file the analysis read (not stored).
    reused: bool = False
    # The display paths it was checked against and `reported` as stored, until
    # `ResultCache.complete` decodes its findings.
    files: frozenset = frozenset()
    stored_reported: Optional[dict] = None
    # The last plan, by what it was planned from: a run plans twice (is everything settled?
    # which groups run?), and a changed file read in part is outlined once.
    _planned: Optional[tuple] = field(default=None, repr=False, compare=False)

    def plan(self, hashes: dict[str, str], data: dict[str, bytes], admitted: set[str], modules: Optional[dict[str, tuple]] = None, candidate_chunks=None) -> Optional[tuple[list[int], list[str]]]:
        """(indexes of the groups this run must analyse again, admitted files no group
        holds), or None where the record is of other files. `hashes`/`data`: this run's
        content hash and bytes per display path; `admitted`: what the prefilter admits now;
        `modules`: each file's (path, module names), and `candidate_chunks(data, probe)` the
        test of its candidate chunks (see `ChangedText`)."""
        if hashes.keys() != self.hashes.keys():
            return None
        key = (tuple(sorted(hashes.items())), tuple(sorted(admitted)))
        if self._planned is not None and self._planned[0] == key:
            return (list(self._planned[1][0]), list(self._planned[1][1]))
        modules = modules or {}
        changed = {
            display: ChangedText(data[display], display, modules.get(display), candidate_chunks)
            for display, content in hashes.items()
            if content != self.hashes[display]
        }
        members = {member for group in self.groups for member in group.members}
        stale = [index for index, group in enumerate(self.groups) if group.touched(changed, admitted)]
        planned = (stale, sorted(admitted - members))
        self._planned = (key, planned)
        return (list(planned[0]), list(planned[1]))

    @property
    def findings(self) -> list[Finding]:
        from ..core.findings import union

        return union(group.findings for group in self.groups)


def _location(location: Location) -> list[int]:
    return [location.row, location.column]


def _related(step: Related) -> list:
    return [step.filename, _location(step.location), step.message]


def finding_to_data(finding: Finding) -> dict:
    """`related` is not stored: it is derived from the chains on load (one source of truth)."""
    return {
        "code": finding.code,
        "message": finding.message,
        "filename": finding.filename,
        "location": _location(finding.location),
        "end_location": _location(finding.end_location),
        "severity": finding.severity,
        "noqa_row": finding.noqa_row,
        "chains": [[_related(step) for step in chain] for chain in finding.chains],
        "help": finding.help,
        "fix": None
        if finding.fix is None
        else {
            "applicability": finding.fix.applicability,
            "message": finding.fix.message,
            "edits": [[e.content, _location(e.location), _location(e.end_location)] for e in finding.fix.edits],
        },
    }


class BadEntry(ValueError):
    """A cache entry that must not be served."""


# What decoding a damaged entry can raise (RecursionError: JSON nested deeper than the
# parser's stack allows; UnicodeDecodeError is a ValueError).
ENTRY_FAULTS = (BadEntry, ValueError, RecursionError, MemoryError)


# What a valid entry can hold. Anything else is damage, and the run is recomputed.
MAX_ENTRY_BYTES = 64 * 1024 * 1024
MAX_INT = 2**31 - 1
MAX_TEXT = 1 << 20
MAX_CHAINS = 10_000
MAX_CHAIN_STEPS = 10_000
MAX_EDITS = 10_000
CODE = re.compile(r"TRC[0-9]{3}")
SEVERITIES = frozenset({"error", "warning", "info", "hint"})
APPLICABILITIES = frozenset({"safe", "unsafe", "display-only"})
FINDING_KEYS = frozenset({"code", "message", "filename", "location", "end_location", "severity", "noqa_row", "chains", "fix", "help"})
FIX_KEYS = frozenset({"applicability", "message", "edits"})
ENTRY_KEYS = frozenset({"files_checked", "findings"})
ANALYSIS_KEYS = frozenset({"hashes", "groups", "facts", "reported"})
INPUTS_KEYS = frozenset({"discoveries", "names", "displays", "files"})
GROUP_KEYS = frozenset({"members", "dependent", "parts", "tokens", "calls", "defs", "outside", "kinds", "findings"})
HASH = re.compile(r"[0-9a-f]{32}")


HEADER_KEYS = frozenset({"format", "version", "key", "digest"})


def payload_digest(payload: bytes) -> str:
    """Guards an entry's payload against damage (a torn write, a flipped byte, an edit by hand)."""
    return hashlib.blake2b(payload, digest_size=16).hexdigest()


def sealed(key: str, fields: dict) -> bytes:
    """An entry's bytes: a header line (this format, version and key, and the digest of the
    payload's bytes), then the payload, `fields` as JSON. The digest is of bytes, so reading
    an entry never encodes it again."""
    payload = json.dumps(fields, separators=(",", ":")).encode("ascii")  # the C encoder
    header = {"format": FORMAT, "version": __version__, "key": key, "digest": payload_digest(payload)}
    return json.dumps(header, separators=(",", ":")).encode("ascii") + b"\n" + payload


def _opened(data: bytes, keys: frozenset, key: str) -> dict:
    """The payload of an entry (`sealed`) of this format, version and key, whose digest
    matches, with exactly `keys`."""
    head, newline, payload = data.partition(b"\n")
    if not newline:
        raise BadEntry("no header line")
    header = _keys(json.loads(head.decode("utf-8")), HEADER_KEYS)
    if header["format"] != FORMAT or header["version"] != __version__ or header["key"] != key:
        raise BadEntry("an entry of another version or key")
    if header["digest"] != payload_digest(payload):
        raise BadEntry("a payload that does not match its digest")
    return _keys(json.loads(payload.decode("utf-8")), keys)


def _int(value, lowest: int) -> int:
    if type(value) is not int or not lowest <= value <= MAX_INT:  # bool is no row number
        raise BadEntry(f"bad number {value!r:.40}")
    return value


def _text(value) -> str:
    if type(value) is not str or len(value) > MAX_TEXT:
        raise BadEntry("bad text")
    return value


def _list(value, most: int, length: Optional[int] = None) -> list:
    if type(value) is not list or len(value) > most or (length is not None and len(value) != length):
        raise BadEntry("bad list")
    return value


def _loc(value) -> Location:
    row, column = _list(value, 2, 2)
    return Location(_int(row, 1), _int(column, 0))


def _step(value) -> Related:
    # A step may lie in a file of the project that this run does not report on.
    filename, location, message = _list(value, 3, 3)
    return Related(_text(filename), _loc(location), _text(message))


def _keys(value, keys: frozenset) -> dict:
    if type(value) is not dict or value.keys() != keys:
        raise BadEntry("bad keys")
    return value


def _fix(value) -> Optional[Fix]:
    if value is None:
        return None
    _keys(value, FIX_KEYS)
    if value["applicability"] not in APPLICABILITIES:
        raise BadEntry("bad fix applicability")
    edits = []
    for edit in _list(value["edits"], MAX_EDITS):
        content, start, end = _list(edit, 3, 3)
        start, end = _loc(start), _loc(end)
        if end < start:
            raise BadEntry("an edit that ends before it starts")
        edits.append(Edit(_text(content), start, end))
    return Fix(value["applicability"], _text(value["message"]), tuple(edits))


def finding_from_data(data, files: frozenset) -> Finding:
    """A finding from an entry, checked field by field; BadEntry on anything a run could not
    have written. `files`: display paths of the run's files."""
    _keys(data, FINDING_KEYS)
    code, filename = _text(data["code"]), _text(data["filename"])
    if not CODE.fullmatch(code) or data["severity"] not in SEVERITIES or filename not in files:
        raise BadEntry("bad code, severity or file")
    location, end_location = _loc(data["location"]), _loc(data["end_location"])
    if end_location < location:
        raise BadEntry("a finding that ends before it starts")
    noqa_row = data["noqa_row"]
    finding = Finding(
        code=code,
        message=_text(data["message"]),
        filename=filename,
        location=location,
        end_location=end_location,
        severity=data["severity"],
        noqa_row=None if noqa_row is None else _int(noqa_row, 1),
        chains=[[_step(step) for step in _list(chain, MAX_CHAIN_STEPS)] for chain in _list(data["chains"], MAX_CHAINS)],
        fix=_fix(data["fix"]),
        help=None if data["help"] is None else _text(data["help"]),
    )
    return finding


def _facts(value, files: frozenset) -> dict[str, tuple]:
    """Suppression facts from a record: display path -> (first code line or None, {line:
    first line of its statement})."""
    if type(value) is not dict or not value.keys() <= files:
        raise BadEntry("bad suppression facts")
    facts = {}
    for display, item in value.items():
        first, pairs = _list(item, 2, 2)
        lines = {}
        for pair in _list(pairs, MAX_INT):
            line, start = _list(pair, 2, 2)
            lines[_int(line, 1)] = _int(start, 1)
        facts[display] = (None if first is None else _int(first, 1), lines)
    return facts


def _reported(value, files: frozenset, engine_findings: list[Finding]) -> Optional[dict[str, list[Finding]]]:
    """What each settled file reports (AnalysisRecord.reported), or None; null for a file:
    the engine's findings in it."""
    if value is None:
        return None
    if type(value) is not dict or not value.keys() <= files:
        raise BadEntry("bad reported findings")
    by_file: dict[str, list[Finding]] = {}
    for finding in engine_findings:
        by_file.setdefault(finding.filename, []).append(finding)
    reported = {}
    for display, items in value.items():
        if items is None:
            reported[display] = list(by_file.get(display, []))
            continue
        found = [finding_from_data(item, files) for item in _list(items, MAX_INT)]
        if any(finding.filename != display for finding in found):
            raise BadEntry("a reported finding of another file")
        reported[display] = found
    return reported


@dataclass
class ReportedSlice:
    """A record's answer for a run on some files (`ResultCache.reported_slice`): `located`,
    the files that hold an engine finding; `needed`, the selected files and those holding a
    finding one of whose chains starts in them; `reported`, what each needed file the
    record settled reports (a needed file missing from it was not settled)."""

    located: set[str]
    needed: set[str]
    reported: dict[str, list[Finding]]

    @classmethod
    def of(cls, findings: list[Finding], reported: dict[str, list[Finding]], selected: set[str]) -> "ReportedSlice":
        needed = selected | {f.filename for f in findings if any(chain and chain[0].filename in selected for chain in f.chains)}
        return cls({f.filename for f in findings}, needed, {display: reported[display] for display in needed if display in reported})


def _decoded_slice(record: AnalysisRecord, selected: set[str]) -> ReportedSlice:
    """`ReportedSlice.of` a record read back, decoding the findings of the needed files only:
    the others are looked at for their file and where their chains start, nothing more. A
    digest guards the entry's bytes, so what is left undecoded was written by a run."""
    places = [[_finding_places(item) for item in _list(group.stored, MAX_INT)] for group in record.groups]
    located = {filename for group_places in places for filename, _starts in group_places}
    needed = set(selected) | {filename for group_places in places for filename, starts in group_places if not starts.isdisjoint(selected)}
    parts = [
        [finding_from_data(item, record.files) for item, (filename, _starts) in zip(group.stored, group_places) if filename in needed]
        for group, group_places in zip(record.groups, places)
    ]
    stored = record.stored_reported
    return ReportedSlice(located, needed, _reported({d: stored[d] for d in needed if d in stored}, record.files, union(parts)))


def _finding_places(item) -> tuple[str, set[str]]:
    """A stored finding's file and the files its chains start in, without decoding it."""
    try:
        filename = item["filename"]
        starts = {chain[0][0] for chain in item["chains"] if chain}
    except (TypeError, KeyError, IndexError) as error:
        raise BadEntry(f"a bad finding ({type(error).__name__})") from None
    if type(filename) is not str or not all(type(start) is str for start in starts):
        raise BadEntry("a bad finding")
    return filename, starts


def _paths(value, files: frozenset) -> list[str]:
    paths = _list(value, len(files))
    if not all(type(p) is str and p in files for p in paths):
        raise BadEntry("a file outside the run")
    return paths


def _group(value, files: frozenset) -> GroupRecord:
    _keys(value, GROUP_KEYS)
    tokens, calls, defs, outside = ([_text(t) for t in _list(value[k], MAX_INT)] for k in ("tokens", "calls", "defs", "outside"))
    kinds = {}
    for item in _list(value["kinds"], MAX_INT):
        display, qualname, names = _list(item, 3, 3)
        if display not in files:
            raise BadEntry("capture kinds of a file outside the run")
        kinds[(display, _text(qualname))] = frozenset(_text(name) for name in _list(names, MAX_INT))
    # Tokens are bytes; latin-1 maps each byte to one character and back.
    searches = Searches({t.encode("latin-1") for t in tokens}, set(calls), set(defs), set(outside))
    members, dependent = _paths(value["members"], files), set(_paths(value["dependent"], files))
    parts = {}
    for item in _list(value["parts"], MAX_INT):
        display, names, is_package, outline, chunks = _list(item, 5, 5)
        if display not in dependent or type(is_package) is not bool or type(outline) is not str or not HASH.fullmatch(outline):
            raise BadEntry("a bad read of a dependent file")
        read = []
        for number, digest in (_list(pair, 2, 2) for pair in _list(chunks, MAX_INT)):
            if type(digest) is not str or not HASH.fullmatch(digest):
                raise BadEntry("a bad chunk digest")
            read.append((_int(number, 0), digest))
        names = tuple(_text(name) for name in _list(names, MAX_INT))
        if not names:
            raise BadEntry("a dependent file without a module name")
        parts[display] = (names, is_package, outline, tuple(read))
    return GroupRecord(members, dependent, searches, [], kinds, parts, stored=_list(value["findings"], MAX_INT), decoded=False)


def _group_data(group: GroupRecord) -> dict:
    return {
        "members": list(group.members),
        "dependent": sorted(group.dependent),
        "parts": sorted([display, list(names), is_package, outline, [list(pair) for pair in chunks]] for display, (names, is_package, outline, chunks) in group.parts.items()),
        "tokens": sorted(t.decode("latin-1") for t in group.searches.tokens),
        "calls": sorted(group.searches.calls),
        "defs": sorted(group.searches.defs),
        "outside": sorted(group.searches.outside),
        "kinds": sorted([display, qualname, sorted(kinds)] for (display, qualname), kinds in group.kinds.items()),
        "findings": group.stored if group.stored is not None else [finding_to_data(f) for f in group.findings],
    }


FACTS_KEYS = frozenset({"entries"})


def _admission_item(item) -> tuple[tuple[str, str, bool], bool]:
    content, name, is_package, admitted = _list(item, 4, 4)
    if type(content) is not str or not HASH.fullmatch(content) or type(is_package) is not bool or type(admitted) is not bool:
        raise BadEntry("a bad admission")
    return (content, _text(name), is_package), admitted


def _parse_check_item(item) -> tuple[str, bool]:
    content, has_errors = _list(item, 2, 2)
    if type(content) is not str or not HASH.fullmatch(content) or type(has_errors) is not bool:
        raise BadEntry("a bad parse check")
    return content, has_errors


EDIT_KINDS = frozenset({"blank", "indent", "elif", "space"})


def _scan_item(item):
    """A scan of `syntax_limits` (refusal, edits, reduced) by its text's digest."""
    digest, refusal, edits, reduced = _list(item, 4, 4)
    if type(digest) is not str or not HASH.fullmatch(digest) or type(reduced) is not bool:
        raise BadEntry("a bad scan")
    if refusal is not None:
        message, line, column = _list(refusal, 3, 3)
        refusal = Refusal(_text(message), _int(line, 1), _int(column, 1))
    spans = []
    for edit in _list(edits, MAX_INT):
        start, end, kind = _list(edit, 3, 3)
        if kind not in EDIT_KINDS or _int(end, 0) < _int(start, 0):
            raise BadEntry("a bad edit of a scan")
        spans.append((start, end, kind))
    return digest, (refusal, spans, reduced)


def _scan_data(digest: str, scan) -> list:
    refusal, edits, reduced = scan
    return [digest, None if refusal is None else [refusal.message, refusal.line, refusal.column], [list(edit) for edit in edits], reduced]


def _outline_data(key, facts) -> list:
    digest, names, is_package = key
    return [
        digest,
        list(names),
        is_package,
        [list(span) for span in facts.spans],
        facts.owner,
        {name: list(held) for name, held in facts.method_chunks.items()},
        facts.imports,
        sorted(facts.globals),
        {name: [list(binding) for binding in found] for name, found in facts.bindings.items()},
        facts.first_code_line,
        sorted([line, first] for line, first in facts.statement_lines.items()),
    ]


BINDING_KINDS = frozenset({"def", "class", "import", "other"})


def _text_map(value) -> dict:
    if type(value) is not dict or not all(type(k) is str and type(v) is str for k, v in value.items()):
        raise BadEntry("a bad map of names")
    return value


def _outline_item(item):
    """A module's outline facts (`outline.OutlineFacts`) by (text digest, names, package flag)."""
    from ..semantic.outline import OutlineFacts

    digest, names, is_package, spans, owner, methods, imports, globals_, bindings, first_code, statements = _list(item, 11, 11)
    if type(digest) is not str or not HASH.fullmatch(digest) or type(is_package) is not bool:
        raise BadEntry("a bad outline key")
    names = tuple(_text(name) for name in _list(names, MAX_INT))
    spans = tuple((_int(first, 1), _int(last, 1)) for first, last in (_list(span, 2, 2) for span in _list(spans, MAX_INT)))
    if type(owner) is not dict or type(methods) is not dict or type(bindings) is not dict:
        raise BadEntry("bad outline maps")
    owner = {_text(name): _int(number, 0) for name, number in owner.items()}
    methods = {_text(name): tuple(_int(number, 0) for number in _list(held, MAX_INT)) for name, held in methods.items()}
    found = {}
    for name, entries in bindings.items():
        rows = []
        for kind, imported, conditional, is_none in (_list(row, 4, 4) for row in _list(entries, MAX_INT)):
            if kind not in BINDING_KINDS or type(conditional) is not bool or type(is_none) is not bool:
                raise BadEntry("a bad module-level binding")
            rows.append((kind, None if imported is None else _text(imported), conditional, is_none))
        found[_text(name)] = tuple(rows)
    lines = {_int(line, 1): _int(first, 1) for line, first in (_list(pair, 2, 2) for pair in _list(statements, MAX_INT))}
    facts = OutlineFacts(
        spans, owner, methods, _text_map(imports), frozenset(_text(name) for name in _list(globals_, MAX_INT)), found,
        None if first_code is None else _int(first_code, 1), lines,
    )
    return (digest, names, is_package), facts


# kind -> (encode one (key, fact), decode one stored item into (key, fact)).
FACT_CODECS = {
    "admitted": (lambda key, admitted: [*key, admitted], _admission_item),
    "scans": (_scan_data, _scan_item),
    "outlines": (_outline_data, _outline_item),
    "parse_checks": (lambda content, has_errors: [content, has_errors], _parse_check_item),
}


def tool_key(kind: str, *parts) -> str:
    """The key of facts of `kind`: this tool and `parts`, all they depend on besides their
    own key (a scan on its text alone, the limits being code; an outline on its text and
    module names)."""
    return hashlib.blake2b(json.dumps([kind, FORMAT, __version__, tool_fingerprint(), *parts]).encode(), digest_size=20).hexdigest()


def admissions_key(prefilter) -> str:
    """Everything a prefilter's answers depend on besides the file: its targets, words and
    stand-ins, and this tool."""
    return tool_key("admissions", *prefilter.identity())


class ResultCache:
    def __init__(self, folder: Path):
        self.folder = folder
        # Why the last load found no usable entry ("" for a hit or a plain miss); for tests.
        self.last_rejection = ""
        self.facts_rejections: dict[str, str] = {}

    def _entry(self, key: str) -> Path:
        return self.folder / f"results-{key}.json"

    def load(self, key: str, files: Iterable[str] = (), files_checked: Optional[int] = None) -> Optional[tuple[list[Finding], int]]:
        """(findings, files checked), or None for a miss or an entry that is foreign or damaged
        in any way (the run is then recomputed and the entry rewritten). `files`: display
        paths of the run's files; `files_checked`: how many the run checks, where known."""
        self.last_rejection = ""
        return self._read(self._entry(key), lambda data: self._decode(data, key, frozenset(files), files_checked))

    def _read(self, path: Path, decode):
        """`decode` of the entry's bytes, or None: missing, not a bounded regular file, or
        rejected (the reason goes to `last_rejection`)."""
        data = _read_regular_file(path, MAX_ENTRY_BYTES)
        if data is None:
            return None
        try:
            return decode(data)
        except ENTRY_FAULTS as error:
            self._rejected(error)
            return None

    def _rejected(self, error: BaseException) -> None:
        self.last_rejection = f"{type(error).__name__}: {error}"[:200]

    def _decode(self, data: bytes, key: str, files: frozenset, expected: Optional[int]) -> Optional[tuple[list[Finding], int]]:
        entry = _opened(data, ENTRY_KEYS, key)
        files_checked = _int(entry["files_checked"], 0)
        if expected is not None and files_checked != expected:
            raise BadEntry("another number of files")
        findings = [finding_from_data(item, files) for item in _list(entry["findings"], MAX_INT)]
        for finding in findings:
            attach_related(finding)
        order = [finding.sort_key() for finding in findings]
        if order != sorted(order):
            raise BadEntry("findings out of order")
        return findings, files_checked

    def store(self, key: str, findings: list[Finding], files_checked: int) -> None:
        """Write atomically; a cache that cannot be written is no error (the run stands)."""
        data = {"files_checked": files_checked, "findings": [finding_to_data(f) for f in findings]}
        self._write(self._entry(key), sealed(key, data), "results-*.json")

    def _write(self, path: Path, data: bytes, pattern: str) -> None:
        """Write atomically; a cache that cannot be written is no error (the run stands)."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._mark_folder()
            write_atomically(path, data)
            self._prune(pattern)
        except OSError:
            pass

    # -- what a run read from the file system (`stat_index.StatIndex`) -----------------------
    def _inputs_entry(self, key: str) -> Path:
        return self.folder / f"inputs-{key}.json"

    def load_inputs(self, key: str, decode):
        """`decode` of the entry's fields, or None (missing, foreign or damaged)."""
        return self._read(self._inputs_entry(key), lambda data: decode(_opened(data, INPUTS_KEYS, key)))

    def store_inputs(self, key: str, fields: dict) -> None:
        self._write(self._inputs_entry(key), sealed(key, fields), "inputs-*.json")

    # -- per-file facts --------------------------------------------------------------------
    def _facts_entry(self, kind: str, key: str) -> Path:
        return self.folder / f"{kind}-{key}.json"

    def load_facts(self, kind: str, key: str) -> FileFacts:
        """The stored facts of `kind` under `key` (none where missing or damaged; why a
        damaged one was not served goes to `facts_rejections[kind]`, not `last_rejection`)."""
        records_rejection, self.last_rejection = self.last_rejection, ""
        decode_item = FACT_CODECS[kind][1]
        found = self._read(self._facts_entry(kind, key), lambda data: self._decode_facts(data, key, decode_item))
        self.facts_rejections[kind], self.last_rejection = self.last_rejection, records_rejection
        return found if found is not None else FileFacts()

    def _decode_facts(self, data: bytes, key: str, decode_item) -> FileFacts:
        entry = _opened(data, FACTS_KEYS, key)
        return FileFacts(dict(decode_item(item) for item in _list(entry["entries"], MAX_INT)))

    def store_facts(self, kind: str, key: str, facts: FileFacts) -> None:
        encode_item = FACT_CODECS[kind][0]
        items = [encode_item(fact_key, value) for fact_key, value in facts.kept().items()]
        self._write(self._facts_entry(kind, key), sealed(key, {"entries": items}), f"{kind}-*.json")

    # -- analysis records -------------------------------------------------------------------
    def _analysis_entry(self, key: str, hashes: dict[str, str]) -> Path:
        state = hashlib.blake2b(json.dumps(hashes, sort_keys=True).encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
        return self.folder / f"analysis-{key}-{state}.json"

    def touch_analysis(self, key: str, hashes: dict[str, str]) -> None:
        """Mark the record of these contents as the newest (a run served from a result entry
        saw them last): the next edit starts from it."""
        try:
            os.utime(self._analysis_entry(key, hashes))
        except OSError:
            pass

    def analysis_records(self, key: str, files: Iterable[str]) -> Iterator[AnalysisRecord]:
        """The records stored under `key` (one per state of the files), newest first, the
        newest few that are sound. Several are kept so that undoing an edit finds the record
        of the files before it."""
        self.last_rejection = ""
        candidates = []
        for path in self.folder.glob(f"analysis-{key}-*.json"):
            try:
                candidates.append((path.stat().st_mtime_ns, path))
            except OSError:
                continue
        candidates.sort(reverse=True)
        files = frozenset(files)
        for _, path in candidates[:ANALYSIS_TRIES]:
            record = self._read(path, lambda data: self._decode_analysis(data, key, files))
            if record is not None:
                yield record

    def _decode_analysis(self, data: bytes, key: str, files: frozenset) -> AnalysisRecord:
        """The record with its groups' findings and its reported findings as stored: `complete`
        decodes them for the record a run uses."""
        entry = _opened(data, ANALYSIS_KEYS, key)
        hashes = entry["hashes"]
        if type(hashes) is not dict or hashes.keys() != files or not all(type(h) is str and HASH.fullmatch(h) for h in hashes.values()):
            raise BadEntry("bad content hashes")
        groups, reported = _list(entry["groups"], len(files) + 1), entry["reported"]
        if reported is not None and (type(reported) is not dict or not reported.keys() <= files):
            raise BadEntry("bad reported findings")
        record = AnalysisRecord(hashes, [_group(group, files) for group in groups], _facts(entry["facts"], files), files=files, stored_reported=reported)
        return record

    def complete(self, record: AnalysisRecord) -> bool:
        """Decode the findings of a record read back (its groups' and what it reported), checked
        field by field; False for a record that must not be used (why goes to
        `last_rejection`)."""
        try:
            for group in record.groups:
                if not group.decoded:
                    group.findings = [finding_from_data(item, record.files) for item in group.stored or []]
                    group.decoded = True
            if record.stored_reported is not None:
                record.reported = _reported(record.stored_reported, record.files, record.findings)
                record.stored_reported = None
        except ENTRY_FAULTS as error:
            self._rejected(error)
            return False
        return True

    def reported_slice(self, record: AnalysisRecord, selected: set[str]) -> Optional["ReportedSlice"]:
        """What a run on `selected` reports from the record, with only the findings it needs
        decoded (a one-file run after a whole run reads thousands it never shows); None for a
        record that must not be used. A record this run decoded is sliced as it is."""
        try:
            if record.stored_reported is None or all(group.decoded for group in record.groups):
                if not self.complete(record) or record.reported is None:
                    return None
                return ReportedSlice.of(record.findings, record.reported, selected)
            return _decoded_slice(record, selected)
        except ENTRY_FAULTS as error:
            self._rejected(error)
            return None

    def store_analysis(self, key: str, record: AnalysisRecord) -> bytes:
        """Write the record; its bytes (what a read of the entry decodes). Each group keeps
        its findings as stored, so that writing it again does not encode them again."""
        groups = [_group_data(group) for group in record.groups]
        for group, data in zip(record.groups, groups):
            if group.stored is None:
                group.stored = data["findings"]
        facts = {display: [first, sorted(lines.items())] for display, (first, lines) in record.facts.items()}
        reported = None
        if record.reported is not None:
            # A file whose suppressions and ignores change nothing (most) is stored as null:
            # what it reports is the engine's findings in it.
            engine: dict[str, list[Finding]] = {}
            for finding in record.findings:
                engine.setdefault(finding.filename, []).append(finding)
            reported = {}
            for display, found in record.reported.items():
                same = _same_findings(found, engine.get(display, []))
                reported[display] = None if same else [finding_to_data(f) for f in found]
        entry = sealed(key, {"hashes": record.hashes, "groups": groups, "facts": facts, "reported": reported})
        self._write(self._analysis_entry(key, record.hashes), entry, "analysis-*.json")
        return entry

    def _mark_folder(self) -> None:
        mark_cache_folder(self.folder)

    def _prune(self, pattern: str) -> None:
        entries = []
        for path in self.folder.glob(pattern):
            try:
                entries.append((path.stat().st_mtime, path))
            except OSError:
                continue
        entries.sort(reverse=True)
        for _, path in entries[KEEP:]:
            try:
                path.unlink()
            except OSError:
                pass


def _same_findings(found: list[Finding], engine: list[Finding]) -> bool:
    """Whether a file reports exactly the engine's findings in it (as stored, in any order)."""
    if len(found) != len(engine):
        return False
    if all(a is b for a, b in zip(found, engine)):
        return True  # most files: the engine's own findings, none suppressed
    return sorted(json.dumps(finding_to_data(f), sort_keys=True) for f in found) == sorted(json.dumps(finding_to_data(f), sort_keys=True) for f in engine)


def searches_of(project):
    return Searches(set(project.searched_tokens), set(project.searched_calls), set(project.searched_defs), set(project.searched_outside))


def dependent_files(project) -> set[str]:
    """Display paths of the files a run's findings can depend on: parsed, or returned by a
    search of every file's text."""
    hits = project.search_hits
    return {m.display_path for m in project.modules if m._loaded or id(m) in hits}


def read_parts(project, findings: Iterable[Finding]) -> dict[str, tuple]:
    """Display path -> (module names, package flag, outline digest, chunk digests) for the
    dependent files a run read only in part (`ModuleInfo.read_parts`): an edit that keeps
    that outline and those chunks cannot change its findings. Not for a file a text search
    returned or that holds a finding (its fixes and messages may read any of its text)."""
    hits = project.search_hits
    holding = {f.filename for f in findings}
    parts = {}
    for module in project.modules:
        if not module._loaded or id(module) in hits or module.display_path in holding:
            continue
        read = module.read_parts()
        if read is not None:
            parts[module.display_path] = (module.names, module.is_package, *read)
    return parts
