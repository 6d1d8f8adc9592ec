"""One check run: discover files -> project -> engine -> suppressions and ignores -> findings."""

from __future__ import annotations

import gc
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Sequence

from ..frontend.discovery import discover, display_path, matches_per_file_glob
from ..semantic.module_names import module_names, source_roots
from ..core.findings import Finding, attach_related
from ..core.config import Settings, real_path

# The engine, the rules and libcst are imported only when something needs analysing: a run
# answered from the cache never loads them.


@dataclass
class CheckResult:
    findings: list[Finding] = field(default_factory=list)
    # Problems that are not findings: missing paths, unreadable files (exit status 2).
    errors: list[str] = field(default_factory=list)
    files_checked: int = 0


def _unused_message(unknown: list[str], unused: list[str]) -> str:
    parts = []
    if unknown:
        parts.append("unknown code" + ("s " if len(unknown) > 1 else " ") + ", ".join(f"`{c}`" for c in unknown))
    if unused:
        parts.append("unused suppression of " + ", ".join(f"`{c}`" for c in unused))
    return "; ".join(parts)


def project_root(path: Path) -> Path:
    """The folder of the project that holds `path`: the outermost folder inside the git
    repository with a `pyproject.toml` holding `[tool.trace-lint]` or a `trace-lint.toml`
    (outside a repository, the nearest), else the repository's top folder, else the current
    directory when it holds `path` (as in ruff), else the folder named (a file's own folder)."""
    start = real_path(path)
    if not start.is_dir():
        start = start.parent
    folders = [start, *start.parents]
    # A .git folder or file (a worktree, a submodule) marks the repository's top folder.
    repository = next((folder for folder in folders if (folder / ".git").exists()), None)
    if repository is not None:
        # A configuration outside the repository never widens the project beyond it.
        folders = folders[: folders.index(repository) + 1]
    from ..core.config import config_in

    # Inside a repository the outermost config is the project's (one further down, such as
    # tests/'s own, decides only what is reported there: `hierarchy`); outside one, the nearest.
    configured = [folder for folder in folders if config_in(folder) is not None]
    if configured:
        return configured[-1] if repository is not None else configured[0]
    if repository is not None:
        return repository
    current = real_path(Path.cwd())
    return current if current in folders else start


class RunInputs:
    """How a run reads what it checks: the project's files, their module names and display
    paths, their bytes and content hashes, and what the prefilter admits, each computed
    afresh. A caller that keeps them between runs passes its own: the language server in
    memory (`lsp.kept.KeptInputs`), a command-line run with the cache in the cache folder
    (`stat_index.StatIndex`); every answer it gives must equal this one's."""

    def discover_project(self, folders: list[Path], settings: Settings):
        return discover(folders, settings, force_exclude=True)

    def discover_named(self, paths: list[Path], settings: Settings, force_exclude: bool):
        return discover(paths, settings, force_exclude=force_exclude)

    def module_names(self, real: Path, roots: tuple[Path, ...]) -> tuple[str, ...]:
        return module_names(real, roots)

    def display_path(self, path: Path) -> str:
        return display_path(path)

    def read_bytes(self, path: Path) -> bytes:
        return path.read_bytes()

    def content_hash(self, data: bytes) -> str:
        from ..core.file_facts import content_digest

        return content_digest(data)

    def file_hash(self, path: Path) -> tuple[bytes, str]:
        """The file's bytes and their content hash."""
        data = self.read_bytes(path)
        return data, self.content_hash(data)

    def known_hash(self, path: Path) -> Optional[str]:
        """The file's content hash where it is known without reading the file (None: read it)."""
        return None

    def admits(self, prefilter, data: bytes, name: str, is_package: bool) -> bool:
        return prefilter.admits(data, name, is_package)


def check(
    paths: Sequence[Path],
    settings: Settings,
    *,
    force_exclude: bool = False,
    sources: Optional[dict[Path, str]] = None,
    jobs: int = 1,
    cache=None,
    progress=None,
    whole_program: bool = False,
    configure=None,
    root: Optional[Path] = None,
    inputs: Optional[RunInputs] = None,
) -> CheckResult:
    """Check files and folders. `sources` gives text for paths that are not on disk as-is
    (stdin, unsaved editor buffers); such a path is checked even if it does not exist.
    `jobs` > 1 checks in up to that many processes, `parallel.AUTO` where it pays; `cache` (a
    `cache.ResultCache`) answers a run whose files and settings it has seen; `progress` (a
    `progress.Progress`) is told how the run goes.

    `whole_program`: analyse the whole project holding each path (`project_root`), so that
    callers, callees and suppressions in other files count, and report only what the named
    paths select: findings located in them, and findings elsewhere whose call chain starts
    at a capture in them. Without it, the named paths are the whole program.

    `root` (with `whole_program`): the project's folder where the caller knows it (the
    language server's workspace), instead of `project_root` of each path.

    `configure` (with `whole_program`): follow each file's nearest config for what is
    reported (`hierarchy`); it turns a config file's settings into the run's (the command
    line's options over them).

    `inputs` (a `RunInputs`): how the project's files are found and read."""
    result = CheckResult()
    inputs = inputs if inputs is not None else RunInputs()
    from .parallel import AUTO, start_cpu_sample

    if jobs == AUTO:
        start_cpu_sample()  # the time until the jobs are planned is the sample of idle CPUs
    from ..core.observed import new_warnings

    for warning in new_warnings(settings):  # a bad record is never an error of the run
        print(f"trace-lint: warning: {warning}", file=sys.stderr)
    sources = {real_path(p): text for p, text in (sources or {}).items()}
    on_disk = [p for p in paths if real_path(p) not in sources]
    found = inputs.discover_named(on_disk, settings, force_exclude)
    result.errors.extend(found.errors)
    files = list(found.files)
    explicit = {real_path(p) for p in paths if p.exists() and not p.is_dir()} | set(sources)
    # What the named paths select for reporting (all of the program without whole_program).
    selected = {found.real.get(path) or real_path(path) for path in files} | ({real_path(p) for p in paths} & set(sources))
    project_roots: list[Path] = []
    if whole_program and not result.errors:
        if root is not None:
            project_roots.append(real_path(root))
        for path in paths if root is None else ():
            anchor = path if path.exists() else path.parent
            if anchor.exists():
                folder = project_root(anchor)
                if folder not in project_roots:
                    project_roots.append(folder)
        # Problems elsewhere in the project (an unreadable folder) are not this run's errors.
        # A root that is a named folder was walked already: the same files, found again.
        walked = {real_path(p) for p in on_disk if p.is_dir()}
        around = inputs.discover_project([folder for folder in project_roots if folder not in walked], settings)
        files.extend(around.files)
        found.real.update(around.real)
    if configure is not None and whole_program and project_roots:
        from ..report.hierarchy import excluded_by_own_config, with_nested_configs

        settings = with_nested_configs(settings, [found.real.get(p) or real_path(p) for p in [*files, *(Path(p) for p in sources)]], configure, result.errors)
        if settings.nested:
            # A nested config's excludes: its files are analysed, not reported (a named file
            # only with --force-exclude, as the run's own excludes).
            selected = {p for p in selected if (p in explicit and not force_exclude) or not excluded_by_own_config(p, settings.for_file(p))}
    entries: list[tuple[Path, tuple[str, ...], str, Optional[str], int]] = []
    seen: set[Path] = set()
    # Source roots: configured ones, the project root(s) and each folder named.
    roots = source_roots(settings.src, settings.root, [*project_roots, *(p for p in on_disk if p.is_dir())])
    for path in [*files, *(Path(p) for p in sources)]:
        key = found.real.get(path) or real_path(path)
        if key in seen:
            continue
        seen.add(key)
        role = (EXPLICIT if key in explicit else 0) | (SELECTED if key in selected else 0)
        entries.append((path, inputs.module_names(key, roots), inputs.display_path(path), sources.get(key), role))
    result.files_checked = sum(1 for entry in entries if entry[4] & SELECTED)

    raw = EntryBytes(entries, inputs)
    run_key = None
    hashes: Optional[list[tuple[str, tuple[str, ...], str, int]]] = None
    if cache is not None and not result.errors:
        from .cache import run_key as make_key

        hashes = []
        for index, (path, name, display, text, role) in enumerate(entries):
            if text is not None:
                data = raw[index] = text.encode("utf-8", "surrogatepass")
                digest = inputs.content_hash(data)
            else:
                # A file that kept its stat since a run hashed it is read only if the
                # analysis needs its bytes (`EntryBytes`).
                digest = inputs.known_hash(path)
                if digest is not None:
                    raw.expect(index, digest)
                else:
                    try:
                        raw[index], digest = inputs.file_hash(path)
                    except OSError:
                        hashes = None  # a file that cannot be read: report it, cache nothing
                        break
            hashes.append((display, name, digest, role))
        if hashes is not None:
            run_key = make_key(settings, hashes)
            hit = cache.load(run_key, [entry[2] for entry in entries], result.files_checked)
            if hit is not None:
                cache.touch_analysis(*_analysis_inputs(settings, entries, hashes))
                findings, files_checked = hit
                return CheckResult(findings, [], files_checked)
    try:
        with collection_paused():
            findings = _analyse(entries, raw, settings, result, jobs, progress, cache if run_key is not None else None, hashes, inputs)
    except ChangedDuringRun:
        # A file changed between its stat and its read: this run's hashes are not of what it
        # read. It is made again reading every file, as a run without what `inputs` keeps.
        return check(paths, settings, force_exclude=force_exclude, sources=sources, jobs=jobs, cache=cache, progress=progress, whole_program=whole_program, configure=configure, root=root)
    if run_key is not None and not result.errors:
        cache.store(run_key, findings, result.files_checked)
    return result if not findings else CheckResult(findings, result.errors, result.files_checked)


class ChangedDuringRun(Exception):
    """A file whose hash a run took from its stat was read with other contents (or could
    not be read): what the run computed from its hashes is not of what it read."""


class EntryBytes(dict):
    """Each entry's bytes by its index, read when first asked for. An entry whose content
    hash the run took from its stat (`expect`) is read only if something needs its bytes,
    and must read back as those contents (else `ChangedDuringRun`); any other entry is read
    as it always was (`ReadError` where it cannot be)."""

    def __init__(self, entries, inputs: RunInputs) -> None:
        super().__init__()
        self._entries = entries
        self._inputs = inputs
        self._expected: dict[int, str] = {}

    def expect(self, index: int, digest: str) -> None:
        self._expected[index] = digest

    def __missing__(self, index: int) -> bytes:
        from ..frontend.source import ReadError, read_bytes

        path, _names, _display, text, _role = self._entries[index]
        if text is not None:
            data = text.encode("utf-8", "surrogatepass")
        elif index not in self._expected:
            data = read_bytes(path)
        else:
            try:
                data = read_bytes(path)
            except ReadError:
                raise ChangedDuringRun(str(path)) from None
            if self._inputs.content_hash(data) != self._expected[index]:
                raise ChangedDuringRun(str(path))
        self[index] = data
        return data

    def by_display(self) -> "_BytesByDisplay":
        return _BytesByDisplay(self, {entry[2]: index for index, entry in enumerate(self._entries)})


class _BytesByDisplay:
    """`EntryBytes` by display path, read when asked for (`AnalysisRecord.plan` reads only
    the changed files)."""

    def __init__(self, raw: EntryBytes, index_of: dict[str, int]) -> None:
        self._raw, self._index_of = raw, index_of

    def __getitem__(self, display: str) -> bytes:
        return self._raw[self._index_of[display]]


# An entry's role in a run: named as a file (always parsed), and selected for reporting.
EXPLICIT, SELECTED = 1, 2


@contextmanager
def collection_paused():
    """No cyclic garbage collection during analysis: syntax trees are millions of objects
    that all stay alive to the end, and each collection walks them again (the parse alone
    takes a third longer with it)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _admitted(entries, raw: EntryBytes, settings: Settings, inputs: RunInputs, cache=None, hashes=None) -> Optional[list[int]]:
    """Indexes of the entries the prefilter admits (files that can hold captured code's
    start); None when a file cannot be read (the analysis reports it). With a cache (and
    each file's content hash), the prefilter is asked only about contents the cache has no
    answer for, and only their bytes are read. Needs neither libcst nor the rules."""
    from ..frameworks import prefilter_for
    from ..frontend.prefilter import enabled
    from ..frontend.source import PACKAGE_FILES, ReadError

    prefilter = prefilter_for(settings)
    admitted = []
    if not enabled():
        # Every file is searched (the engine leaves out those that do not parse and that
        # the prefilter would not admit: see `prefilter.enabled`).
        return list(range(len(entries)))
    admissions = key = None
    if cache is not None and hashes is not None:
        from .cache import admissions_key

        key = admissions_key(prefilter)
        admissions = cache.load_facts("admitted", key)
    for index, (path, name, _display, text, _explicit) in enumerate(entries):
        is_package = path.name in PACKAGE_FILES
        try:
            if admissions is not None:
                found = admissions.get((hashes[index][2], name[0], is_package), lambda: inputs.admits(prefilter, raw[index], name[0], is_package))
            else:
                found = inputs.admits(prefilter, raw[index], name[0], is_package)
        except ReadError:
            return None
        if found:
            admitted.append(index)
    if admissions is not None and admissions.new:
        cache.store_facts("admitted", key, admissions)
    return admitted


def _analyse(entries, raw: EntryBytes, settings: Settings, result: CheckResult, jobs: int, progress, cache, hashes, inputs: RunInputs) -> list[Finding]:
    admitted = _admitted(entries, raw, settings, inputs, cache, hashes)
    explicit_indexes = [index for index, entry in enumerate(entries) if entry[4] & EXPLICIT]
    selected_data = (raw[index] for index, entry in enumerate(entries) if entry[4] & SELECTED)
    if admitted == [] and not explicit_indexes and not any(_may_hold_suppressions_in(data) for data in selected_data):
        # Nothing can be found: libcst and the rules are never imported.
        return []
    from ..frontend.prefilter import enabled as prefilter_enabled

    records: Iterable = []
    if cache is not None and hashes is not None and admitted is not None and prefilter_enabled():
        record_key, current = _analysis_inputs(settings, entries, hashes)
        from .cache import ReadOnDemand

        records = ReadOnDemand(cache.analysis_records(record_key, current))
        settled = _settled(records, entries, raw, current, admitted, settings, cache, record_key)
        if settled is not None:
            # Nothing the analysis read has changed, and every file this run reports on was
            # settled by the run that recorded it: neither libcst nor the rules are loaded.
            if progress is not None:
                progress.start(len(entries))
                progress.finish()
            return _finished(settled)
    if cache is None:
        return _analysed(entries, raw, settings, result, jobs, progress, cache, hashes, admitted, explicit_indexes, records)
    from ..frontend.syntax_limits import KnownScans
    from ..semantic.outline import KnownOutlines
    from .cache import tool_key

    # Each file's syntax-limits scan (TRC001's measure, before any parser sees the text) and
    # its module's outline are facts of its text: a run computes them only for texts the
    # cache has not seen.
    known = {"scans": KnownScans, "outlines": KnownOutlines}
    facts = {kind: holder(cache.load_facts(kind, tool_key(kind)).known) for kind, holder in known.items()}
    with facts["scans"], facts["outlines"]:
        findings = _analysed(entries, raw, settings, result, jobs, progress, cache, hashes, admitted, explicit_indexes, records)
    for kind, found in facts.items():
        if found.new:
            cache.store_facts(kind, tool_key(kind), found)
    return findings


def _analysed(entries, raw: EntryBytes, settings: Settings, result: CheckResult, jobs: int, progress, cache, hashes, admitted, explicit_indexes: list[int], records: Iterable) -> list[Finding]:
    """The analysis of the project (`_analyse` once nothing could be answered from the cache)."""
    from ..frontend.prefilter import enabled as prefilter_enabled
    from ..semantic.project import ModuleInfo, Project

    modules = [ModuleInfo(path, name, display, text=text) for path, name, display, text, _ in entries]
    project = Project(modules)
    from ..frontend.source import ReadError

    for index, module in enumerate(modules):
        try:
            project._raw[id(module)] = raw[index]
        except ReadError:
            pass  # the project reads it again and reports it
    explicit = {id(m) for m, entry in zip(modules, entries) if entry[4] & EXPLICIT}
    enabled = settings.enabled_codes()
    # What the engine would compute itself: admitted modules and explicit ones, in order.
    candidates = None if admitted is None else [modules[i] for i in sorted({*admitted, *explicit_indexes})]
    named_only: list = []
    if admitted is not None and prefilter_enabled():
        # A named file the prefilter does not admit holds no capture: naming it adds only its
        # parse error (TRC001), checked on its own below, so the analysis does not depend
        # on which files a run names.
        admitted_indexes = set(admitted)
        named_only = [modules[i] for i in explicit_indexes if i not in admitted_indexes]
        candidates = [modules[i] for i in sorted(admitted_indexes)]
        explicit = set()

    raw_findings, facts, record = _engine_findings(project, modules, entries, raw, hashes, admitted, candidates, explicit, settings, result, enabled, jobs, progress, cache, records)
    if named_only:
        raw_findings = raw_findings + _parse_errors(project, settings, named_only, enabled, raw_findings)
    layer: Optional[dict[str, list[Finding]]] = {} if record is not None else None
    errors_before = len(result.errors)
    findings = _reported(raw_findings, project, modules, entries, facts, settings, result, enabled, progress, layer)
    if record is not None:
        for module in named_only:
            # Its parse check is this run's, because it was named: not what any run reports.
            layer.pop(module.display_path, None)
        # What this run settled joins what the record had settled, for the files whose
        # contents are the record's (a file that cannot be read settles nothing).
        record_key, current = _analysis_inputs(settings, entries, hashes)
        known = record.reported
        if errors_before == len(result.errors):
            settled = {**(record.reported or {}), **layer}
            record.reported = {display: found for display, found in settled.items() if record.hashes.get(display) == current.get(display)}
        # A record read back that this run settled nothing new in is already on disk: a file
        # it settled again gives the same from the same engine findings and contents.
        if not (record.reused and known is not None and record.reported is not None and record.reported.keys() == known.keys()):
            cache.store_analysis(record_key, record)
    return findings


def _settled(records: Iterable, entries, raw: EntryBytes, current: dict[str, str], admitted: list[int], settings: Settings, cache, record_key: str) -> Optional[list[Finding]]:
    """What this run reports, from the newest analysis record when no file the engine's
    findings depend on has changed and that record settled every file the run reports on
    (`AnalysisRecord.reported`); None otherwise. `current`: each file's content hash. A named file the prefilter does not admit
    is checked for its syntax errors on its own first: only one that parses is answered here."""
    admitted_set = set(admitted)
    named_only = [index for index, entry in enumerate(entries) if entry[4] & EXPLICIT and index not in admitted_set]
    data = raw.by_display()
    admitted_paths = {entries[i][2] for i in admitted}
    context = _plan_context(entries, settings)
    for record in records:
        plan = record.plan(current, data, admitted_paths, *context)
        if plan is None:
            continue
        if plan != ([], []):
            return None
        selected = {entry[2] for entry in entries if entry[4] & SELECTED}
        found = cache.reported_slice(record, selected)
        if found is None or not found.needed <= found.reported.keys():
            return None
        needed = found.needed
        # A file edited since (a new comment can be a suppression) is settled again: here
        # where that is known to report nothing, else by the analysis.
        edited = {display for display in needed if current[display] != record.hashes[display]}
        if edited and not _edits_report_nothing(edited, data, found.located):
            return None
        if named_only and _named_files_have_parse_errors(entries, raw, named_only, settings, cache, current):
            return None
        changed = {display for display, content in current.items() if content != record.hashes[display]}
        if len(changed) > 1 and changed == edited:
            # Each later run would outline every file changed since the record again (one, a
            # file edited again and again, it outlines anyway). A run that settles only some
            # (a one-file run) leaves the record as it is.
            if not cache.complete(record) or record.reported is None:
                return None
            _store_settled(cache, record_key, record, current, edited)
        return [f for display in sorted(needed - edited) for f in found.reported[display] if display in selected or _reported_elsewhere(f, selected)]
    return None


def _store_settled(cache, record_key: str, record, current: dict[str, str], edited: set[str]) -> None:
    """The record of the files as they are now, as an analysis of them would store it: the
    same groups (no changed file touches one), and the edited files (every file changed
    since `record`) settled as reporting nothing."""
    from .cache import AnalysisRecord

    reported = {display: found for display, found in record.reported.items() if display not in edited}
    reported.update((display, []) for display in edited)
    facts = {display: value for display, value in record.facts.items() if display not in edited}
    cache.store_analysis(record_key, AnalysisRecord(dict(current), record.groups, facts, reported))


def _edits_report_nothing(edited: set[str], data: dict[str, bytes], located: set[str]) -> bool:
    """Whether each edited file reports nothing, as `_reported` would settle it, when the
    engine's findings are the record's (no group is touched): it holds none of them
    (`located`: the files that hold one) and cannot hold a suppression (so no unused one
    either)."""
    return not any(display in located or _may_hold_suppressions_in(data[display]) for display in edited)


def _plan_context(entries, settings: Settings) -> tuple[dict[str, tuple], object]:
    """What `AnalysisRecord.plan` reads a changed file's candidate chunks with: each file's
    (path, module names), and the prefilter's test of them."""
    from ..frameworks import prefilter_for
    from ..frontend.prefilter import candidate_chunks

    prefilter = prefilter_for(settings)
    return {entry[2]: (entry[0], entry[1]) for entry in entries}, lambda data, probe: candidate_chunks(prefilter, data, probe)


def _named_files_have_parse_errors(entries, raw: EntryBytes, indexes: list[int], settings: Settings, cache=None, current: Optional[dict[str, str]] = None) -> bool:
    """Whether the parse check a run makes of these named files (`_parse_errors`) finds
    anything: the same check, on a project of each file alone (a file's parse error is its
    own). With a cache (and each file's content hash), a file's answer is a fact of its
    content (`parse_checks`), computed only for contents the cache has not seen."""
    if UNPARSABLE not in settings.enabled_codes():
        return False
    checks = None
    if cache is not None and current is not None:
        from .cache import tool_key

        checks = cache.load_facts("parse_checks", tool_key("parse_checks"))
    found = False
    for index in indexes:
        if checks is None:
            found = _has_parse_errors(entries, raw, index, settings)
        else:
            found = checks.get(current[entries[index][2]], lambda: _has_parse_errors(entries, raw, index, settings))
        if found:
            break
    if checks is not None and checks.new:
        cache.store_facts("parse_checks", tool_key("parse_checks"), checks)
    return found


# rules.analysis.UnparsableFile.code, named without loading the rules.
UNPARSABLE = "TRC001"


def _has_parse_errors(entries, raw: EntryBytes, index: int, settings: Settings) -> bool:
    from ..semantic.project import ModuleInfo, Project

    path, names, display, text, _role = entries[index]
    module = ModuleInfo(path, names, display, text=text)
    project = Project([module])
    from ..frontend.source import ReadError

    try:
        project._raw[id(module)] = raw[index]
    except ReadError:
        pass  # the parse check reports it
    return bool(_parse_errors(project, settings, [module], {UNPARSABLE}, []))


def _finished(findings: list[Finding]) -> list[Finding]:
    """Findings as a run reports them: related steps attached, each with its rule's advice,
    in order."""
    from ..core.registry import spec_for

    for finding in findings:
        attach_related(finding)
        spec = spec_for(finding.code)
        finding.help = spec.help if spec is not None and spec.help else None
    findings.sort(key=Finding.sort_key)
    return findings


def _engine_findings(project, modules, entries, raw, hashes, admitted, candidates, explicit, settings, result, enabled, jobs, progress, cache, records) -> tuple[list[Finding], dict, Optional[object]]:
    """The engine's findings (before suppressions), the suppression facts of files that
    this process did not parse, and the analysis record to store once the run has reported
    (None: none). With a cache, the candidate files are analysed in groups and a record keeps
    each group's findings; a later run reruns only the groups its edits touch."""
    from ..frontend.prefilter import enabled as prefilter_enabled

    if cache is not None and admitted is not None and prefilter_enabled():
        return _grouped_findings(project, modules, entries, raw, hashes, admitted, settings, result, enabled, jobs, progress, cache, records)
    from ..capture.engine import Engine
    from ..rules import ALL_RULES

    if progress is not None:
        progress.start(len(modules))
    if jobs != 1:
        from .parallel import run_parallel

        parallel = run_parallel(project, settings, enabled, explicit, jobs, candidates=candidates, on_shard_done=progress.shard_done if progress else None)
        if parallel is not None:
            result.errors.extend(parallel.internal_errors)
            _print_notes(parallel.notes)
            return parallel.findings, parallel.facts, None
    engine = Engine(project, settings, [rule for rule in ALL_RULES if rule.code in enabled], roots_in=candidates)
    engine.always_parse = explicit
    findings = engine.run()
    result.errors.extend(engine.internal_errors)
    return findings, {}, None


def _import_links(entries, raw: EntryBytes, positions: list[int]) -> list[tuple[int, int]]:
    """Pairs of positions (in `positions`, entry indexes) whose files import one another,
    read from the text: a guess that only decides how the work is grouped."""
    from ..frontend.source import PACKAGE_FILES
    from ..frontend.text_index import imported_modules

    at: dict[str, int] = {}
    for position, index in enumerate(positions):
        for name in entries[index][1]:
            at.setdefault(name, position)
    links = []
    for position, index in enumerate(positions):
        path, names = entries[index][0], entries[index][1]
        for name in imported_modules(raw[index], names[0], path.name in PACKAGE_FILES):
            other = at.get(name)
            if other is not None and other != position:
                links.append((position, other))
    return links


def _print_notes(notes: list[str]) -> None:
    for note in notes:
        print(f"trace-lint: {note}", file=sys.stderr)


def _grouped_findings(project, modules, entries, raw, hashes, admitted, settings, result, enabled, jobs, progress, cache, records) -> tuple[list[Finding], dict, Optional[object]]:
    """The engine's findings as the union of groups of candidate files, each analysed by its
    own engine run (`parallel.analyse_groups`), as a parallel run's shards are: sound where
    the groups agree on the kinds of capture that reach each function (else one engine run
    over all of them decides). The newest analysis record of the project gives the groups
    that no changed file touches (`cache.AnalysisRecord.plan`); only the others run."""
    from ..core.findings import union
    from .cache import AnalysisRecord, GroupRecord
    from .parallel import analyse_groups, fresh_copy, kinds_agree, plan_groups, run_parallel

    admitted_paths = {entries[i][2] for i in admitted}
    current = _analysis_inputs(settings, entries, hashes)[1]
    data = raw.by_display()
    previous, plan = None, None
    context = _plan_context(entries, settings)
    for record in records:
        found = record.plan(current, data, admitted_paths, *context)
        if found is None or (found != ([], []) and previous is not None):
            continue
        if not cache.complete(record):
            continue  # a damaged record is never used
        if found == ([], []):
            # No file the engine's findings depend on has changed: the engine would find
            # the same (tests/test_analysis_reuse.py checks runs with and without it). The
            # record keeps its contents: later runs compare with them, which is as sound.
            record.reused = True
            return record.findings, record.facts, record
        previous, plan = record, found
    index_of = {module.display_path: index for index, module in enumerate(modules)}
    kept: list[GroupRecord] = []
    if previous is not None and plan is not None:
        stale, new = set(plan[0]), plan[1]
        kept = [group for index, group in enumerate(previous.groups) if index not in stale]
        runs = [[index_of[m] for m in previous.groups[index].members if m in admitted_paths] for index in sorted(stale)]
        runs = [group for group in runs if group]
        if new:
            runs.append(sorted(index_of[display] for display in new))
        if not kept and not runs:
            runs = [[]]  # every candidate gone: still one engine run, as with none at the start
    else:
        positions = sorted(admitted)
        # No candidate at all is still one engine run (project-level rules run in every one).
        groups = plan_groups([len(raw[i]) for i in positions], links=_import_links(entries, raw, positions))
        runs = [[positions[p] for p in group] for group in groups] or [[]]

    if progress is not None:
        progress.start(len(modules))
    parts = []
    if jobs != 1 and runs:
        parallel = run_parallel(project, settings, enabled, set(), jobs, on_shard_done=progress.shard_done if progress else None, groups=runs)
        if parallel is not None:
            _print_notes(parallel.notes)
            parts = parallel.parts
    if runs and not parts:
        parts = analyse_groups(project, settings, enabled, [], runs, with_facts=False)
    if not kinds_agree([*(group.kinds for group in kept), *(part.kinds for part in parts)]):
        # A function captured one way from one group and another way from another: one
        # engine run over every candidate file.
        kept = []
        parts = analyse_groups(fresh_copy(project), settings, enabled, [], [sorted(admitted)], with_facts=True)
    for part in parts:
        result.errors.extend(error for error in part.internal_errors if error not in result.errors)
    groups = [
        *kept,
        *(GroupRecord([modules[i].display_path for i in part.share], part.dependent, part.searches, part.findings, part.kinds, part.parts) for part in parts),
    ]
    findings = union(group.findings for group in groups)
    facts: dict[str, tuple] = {}
    for part in parts:
        for display, value in part.facts.items():
            facts.setdefault(display, value)
    if previous is not None:
        for group in kept:
            for finding in group.findings:
                if finding.filename in previous.facts:
                    facts.setdefault(finding.filename, previous.facts[finding.filename])
    record = None
    if not result.errors:
        from ..report.suppressions import suppression_facts

        record = AnalysisRecord(current, groups)
        by_display = {m.display_path: m for m in modules}
        for display in {f.filename for f in findings}:
            module = by_display.get(display)
            if display in facts:
                record.facts[display] = facts[display]
            elif module is not None and module._loaded and not module.read_error:
                record.facts[display] = suppression_facts(module)
    return findings, facts, record


def _analysis_inputs(settings: Settings, entries, hashes) -> tuple[str, dict[str, str]]:
    """The key of the project's analysis records, and each file's content hash by display path."""
    from .cache import analysis_key

    return analysis_key(settings, [(entry[2], entry[1]) for entry in entries]), {display: content for display, _name, content, _role in hashes}


def _parse_errors(project, settings: Settings, named: list, enabled, found: list[Finding]) -> list[Finding]:
    """TRC001 for named files that do not parse (an engine run with only that rule, rooted
    in them), less what the analysis already reported."""
    from ..capture.engine import Engine
    from ..rules.analysis import UnparsableFile

    if UnparsableFile.code not in enabled:
        return []
    engine = Engine(project, settings, [UnparsableFile], roots_in=named)
    engine.always_parse = {id(m) for m in named}
    displays = {m.display_path for m in named}
    known = {(f.filename, f.location, f.code) for f in found}
    return [f for f in engine.run() if f.filename in displays and (f.filename, f.location, f.code) not in known]


def _reported(raw_findings: list[Finding], project, modules, entries, facts, settings: Settings, result: CheckResult, enabled, progress, layer: Optional[dict] = None) -> list[Finding]:
    """What the run reports of the engine's findings: those the named paths select, after
    suppressions (reported unused ones included) and per-file ignores. `layer`: filled with
    what each file it settles reports whatever the run names (`AnalysisRecord.reported`)."""
    from ..frontend.source import decode
    from ..report.suppressions import apply_suppressions, install_suppression_facts
    from ..rules import BY_CODE
    from ..rules.analysis import UnusedSuppression

    selected = {m.display_path for m, entry in zip(modules, entries) if entry[4] & SELECTED}
    for module in modules:
        if module.read_error and module.display_path in selected:
            result.errors.append(module.read_error)

    by_file: dict[str, list[Finding]] = {}
    for finding in raw_findings:
        by_file.setdefault(finding.filename, []).append(finding)
    findings: list[Finding] = []
    enabled_by_config: dict[int, set[str]] = {}
    for module in modules:
        file_findings = by_file.pop(module.display_path, [])
        if module.read_error:
            continue
        is_selected = module.display_path in selected
        if not is_selected and not any(_reported_elsewhere(f, selected) for f in file_findings):
            continue  # nothing here that this run reports: its suppressions need not be read
        file_settings, file_enabled = settings, enabled
        if settings.nested:
            # Hierarchical configuration: this file's own config decides what is reported.
            file_settings = settings.for_file(real_path(module.path))
            if id(file_settings) not in enabled_by_config:
                enabled_by_config[id(file_settings)] = file_settings.enabled_codes()
            file_enabled = enabled_by_config[id(file_settings)]
            file_findings = [f for f in file_findings if f.code in file_enabled]
        if file_findings or _may_hold_suppressions(project, module):
            text = None
            if module.display_path in facts and not module._loaded:
                # Parsed in a worker: its facts and the raw text are all suppressions need.
                install_suppression_facts(module, facts[module.display_path])
                source = decode(project.raw_bytes(module))
                text = source.text if source.error is None else ""
            else:
                module.load()
            file_findings = apply_suppressions(module, file_findings, BY_CODE, file_enabled, UnusedSuppression.code, _unused_message, text=text)
        ignored = [codes for glob, codes in file_settings.per_file_ignores if matches_per_file_glob(module.display_path, module.path, glob, file_settings.root)]
        kept = [f for f in file_findings if not any(f.code.startswith(code) or code == "ALL" for codes in ignored for code in codes)]
        if layer is not None:
            layer[module.display_path] = kept
        findings.extend(f for f in kept if is_selected or _reported_elsewhere(f, selected))
    if progress is not None:
        progress.finish()
    return _finished(findings)


def _reported_elsewhere(finding: Finding, selected: set[str]) -> bool:
    """A finding outside the named paths that a run on them reports: one of its call
    chains starts at a capture in them."""
    return any(chain and chain[0].filename in selected for chain in finding.chains)


def _may_hold_suppressions(project, module) -> bool:
    return _may_hold_suppressions_in(project.raw_bytes(module))


def _may_hold_suppressions_in(data: bytes) -> bool:
    return b"TRC" in data or b"trace-lint:" in data
