"""Checking across processes by sharding the roots of captured code.

The candidate modules are split into shares of similar size. The parent process analyses the
first share itself; each other share goes to a worker process, which starts from the
parent's project (forked on Linux: raw bytes read, nothing parsed) or rebuilds it from the
file list (where processes are spawned). Every process parses what its own roots reach. The
parent merges the findings: a finding reported by several processes (the same file, line and
code) gets the union of their call chains. Project-level rules run in every process and give
the same findings there (TRC001 reports the files a process parsed, so the union is the
serial set; TRC405 is complete in any process that holds a ttnn capture), and merge away.

Rules may look at which kinds of capture reach a function (ttnn, CUDA graph, declared); a
function reached from roots in two shards sees only its shard's kinds. When that happens with
different kinds, the parallel result could differ from a serial one, so the run is redone
serially. Each worker also sends what suppressions need from the parse trees of the files it
reported on, so that the parent applies suppressions without parsing those files again.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from .analyzer.findings import Finding

# Below this much candidate source, process start-up costs more than it saves.
MIN_CANDIDATES = 4
MIN_CANDIDATE_BYTES = 200_000


@dataclass
class ShardResult:
    findings: list[Finding] = field(default_factory=list)
    internal_errors: list[str] = field(default_factory=list)
    # display path -> (first code line, statement first lines), for files with findings.
    facts: dict[str, tuple] = field(default_factory=dict)
    # (display path, qualname) -> the capture kinds that reach the function in this shard.
    kinds: dict[tuple[str, str], frozenset] = field(default_factory=dict)


@dataclass
class ParallelResult:
    findings: list[Finding]
    internal_errors: list[str]
    facts: dict[str, tuple]


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def shard(sizes: Sequence[int], count: int) -> list[list[int]]:
    """Indexes split into `count` shards of similar total size (largest first, to the lightest)."""
    shards: list[list[int]] = [[] for _ in range(count)]
    totals = [0] * count
    for index in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        lightest = min(range(count), key=lambda s: (totals[s], s))
        shards[lightest].append(index)
        totals[lightest] += sizes[index]
    return [sorted(s) for s in shards if s]


def _analyse_share(project, settings, codes, explicit, share, with_facts: bool) -> ShardResult:
    """The engine run with only `share` (module indexes) searched for captures and roots."""
    from .analyzer.engine import Engine
    from .analyzer.suppressions import suppression_facts
    from .rules import ALL_RULES

    modules = project.modules
    engine = Engine(project, settings, [r for r in ALL_RULES if r.code in codes], roots_in=[modules[i] for i in share])
    engine.always_parse = {id(modules[i]) for i in explicit}
    result = ShardResult(findings=engine.run(), internal_errors=list(engine.internal_errors))
    if with_facts:
        by_display = {m.display_path: m for m in modules}
        for finding in result.findings:
            module = by_display.get(finding.filename)
            if module is not None and finding.filename not in result.facts and not module.read_error:
                result.facts[finding.filename] = suppression_facts(module)
    for function in engine.reach:
        key = (function.module.display_path, function.qualname)
        result.kinds[key] = engine.capture_kinds(function, None)
    return result


# The parent's project as it was when the worker processes were forked from it: raw bytes
# already read, nothing parsed. Set only around a fork.
_INHERITED = None


def _run_shard(entries, settings, codes, explicit, share) -> ShardResult:
    """In a worker process: the project comes by fork (`entries` None) or is rebuilt from
    `entries` where processes are spawned."""
    import gc

    gc.disable()  # worker processes live for one run; see checker.collection_paused
    if entries is None:
        project = _INHERITED
    else:
        from .analyzer.project import ModuleInfo, Project

        project = Project([ModuleInfo(Path(path), name, display, text=text) for path, name, display, text in entries])
    return _analyse_share(project, settings, codes, explicit, share, with_facts=True)


def _worker_context():
    """(multiprocessing context, whether workers inherit the parent's memory): fork where it
    is safe and cheap (Linux), spawn elsewhere."""
    import multiprocessing
    import sys

    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork"), True
    return multiprocessing.get_context("spawn"), False


def run_parallel(project, settings, codes: set[str], explicit: set[int], jobs: int, candidates=None, on_shard_done=None) -> Optional[ParallelResult]:
    """Findings as a serial engine run gives them, or None where a serial run is due (too
    little work, one job, or shards that disagree about how a function is captured).
    `candidates`: the modules the prefilter admits plus the explicit ones, if known.

    The parent process analyses the first share itself while workers take the others."""
    global _INHERITED
    from .analyzer.prefilter import candidate_modules, prefilter_for
    from .api_tables import tables

    if jobs <= 1:
        return None
    modules = project.modules
    index_of = {id(m): i for i, m in enumerate(modules)}
    explicit_indexes = sorted(index_of[i] for i in explicit if i in index_of)
    if candidates is None:  # the prefilter's modules and the explicit ones
        candidates = candidate_modules(project, prefilter_for(settings, tables()), {id(modules[i]) for i in explicit_indexes})
    sizes = [len(project.raw_bytes(m)) for m in candidates]
    if len(candidates) < MIN_CANDIDATES or sum(sizes) < MIN_CANDIDATE_BYTES:
        return None
    shares = [[index_of[id(candidates[i])] for i in share] for share in shard(sizes, min(jobs, len(candidates)))]
    if len(shares) < 2:
        return None
    context, inherits = _worker_context()
    entries = None if inherits else [(str(m.path), m.names, m.display_path, m._text) for m in modules]
    shard_results: list[ShardResult] = []
    _INHERITED = project
    try:
        with ProcessPoolExecutor(max_workers=len(shares) - 1, mp_context=context) as pool:
            # A fork context starts every worker at the first submit, before the parent
            # parses anything of its own share.
            futures = [pool.submit(_run_shard, entries, settings, codes, explicit_indexes, share) for share in shares[1:]]
            _INHERITED = None
            shard_results.append(_analyse_share(project, settings, codes, explicit_indexes, shares[0], with_facts=False))
            _report_share_done(on_shard_done, 1, len(shares))
            for future in futures:
                shard_results.append(future.result())
                _report_share_done(on_shard_done, len(shard_results), len(shares))
    finally:
        _INHERITED = None
    kinds: dict[tuple[str, str], frozenset] = {}
    for part in shard_results:
        for key, value in part.kinds.items():
            if kinds.setdefault(key, value) != value:
                return None
    return merge(shard_results)


def _report_share_done(on_shard_done, done: int, total: int) -> None:
    if on_shard_done is not None:
        on_shard_done(done, total)


def merge(parts: Sequence[ShardResult]) -> ParallelResult:
    merged: dict[tuple[str, int, int, str], Finding] = {}
    errors: list[str] = []
    facts: dict[str, tuple] = {}
    for part in parts:
        for finding in part.findings:
            key = (finding.filename, finding.location.row, finding.location.column, finding.code)
            existing = merged.get(key)
            if existing is None:
                merged[key] = finding
                continue
            for chain in finding.chains:
                if chain not in existing.chains:
                    existing.chains.append(chain)
        for error in part.internal_errors:
            if error not in errors:
                errors.append(error)
        for name, value in part.facts.items():
            facts.setdefault(name, value)
    return ParallelResult(list(merged.values()), errors, facts)
