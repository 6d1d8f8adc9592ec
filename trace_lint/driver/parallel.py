"""Checking across processes by sharding the roots of captured code.

The candidate modules are split into shares of similar size. The parent process analyses the
first share itself; each other share goes to a worker process, which starts from the
parent's project (forked on Linux: raw bytes read, nothing parsed) or rebuilds it from the
file list (where processes are spawned). Every process parses what its own roots reach. The
parent merges the findings: a finding reported by several processes (the same file, line and
code) gets the union of their call chains. Project-level rules run in every process and give
the same findings there (TRC001 reports the files a process parsed, so the union is the
serial set; TRC405 is complete in any process that holds a ttnn capture), and merge away.

With a cache, the unit of work is a group of neighbouring candidate files (`plan_groups`),
one engine run each on an unparsed copy of the project (`analyse_groups`), so that the
cache can keep each group's findings with what they depend on; shares are then groups spread
over the processes, and the caller checks that the groups agree on capture kinds.

Rules may look at which kinds of capture reach a function (ttnn, CUDA graph, declared); a
function reached from roots in two shards sees only its shard's kinds. When that happens with
different kinds, the parallel result could differ from a serial one, so the run is redone
serially. Each worker also sends what suppressions need from the parse trees of the files it
reported on, so that the parent applies suppressions without parsing those files again.

Faults: each worker is one process with one pipe whose writing end only the worker holds, so
a worker that dies (killed, out of memory) is seen as end-of-file and its share is redone in
the parent: the run takes longer and gives the same findings. Workers end with their parent
(PR_SET_PDEATHSIG on Linux, and a thread that watches the parent everywhere).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Optional, Sequence

from ..core.findings import Finding

if TYPE_CHECKING:
    from .cache import Searches

# `jobs` for "decide from the work and the machine" (no -j given).
AUTO = 0
# Below this much candidate source, process start-up costs more than it saves. Measured with
# bench/jobs_estimate.py on TT-NN-shaped trees (-j2 / -j1 on an idle machine: 25 KB 1.03,
# 49 KB 0.87, 97 KB 0.68, 195 KB 0.74): twice the break-even, and half of that per process.
MIN_CANDIDATES = 4
MIN_CANDIDATE_BYTES = 100_000
MIN_SHARE_BYTES = 50_000


@dataclass
class ShardResult:
    findings: list[Finding] = field(default_factory=list)
    internal_errors: list[str] = field(default_factory=list)
    # display path -> (first code line, statement first lines), for files with findings.
    facts: dict[str, tuple] = field(default_factory=dict)
    # (display path, qualname) -> the capture kinds that reach the function in this shard.
    kinds: dict[tuple[str, str], frozenset] = field(default_factory=dict)
    # What the shard's findings can depend on (see cache.dependent_files).
    dependent: set[str] = field(default_factory=set)
    # The dependent files it read only in part (see cache.read_parts).
    parts: dict[str, tuple] = field(default_factory=dict)
    searches: Optional["Searches"] = None
    # The module indexes this result's engine was rooted in (its group).
    share: list[int] = field(default_factory=list)


@dataclass
class ParallelResult:
    findings: list[Finding]
    internal_errors: list[str]
    facts: dict[str, tuple]
    # Things the user may want to know that change no finding (a worker that died).
    notes: list[str] = field(default_factory=list)
    # Each group's own result, in no particular order.
    parts: list[ShardResult] = field(default_factory=list)


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _cpu_times() -> Optional[tuple[int, int]]:
    """(idle, total) jiffies of all CPUs from /proc/stat; None where there is none."""
    try:
        with open("/proc/stat", "rb") as stat_file:
            fields = stat_file.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != b"cpu" or len(fields) < 5:
        return None
    values = [int(v) for v in fields[1:9]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    return idle, sum(values)


# How long the CPUs are watched before a parallel run is planned: the load average lags by a
# minute, so a run right after another saw the machine as busy.
IDLE_SAMPLE_SECONDS = 0.05

# The CPUs' times when the run began (`start_cpu_sample`), with this process's own CPU time
# and the clock: by the time the run plans its processes, the time since is the sample, and
# planning waits for nothing (a wait is time a serial run never spends).
_started: Optional[tuple[tuple[int, int], float, float]] = None


def _own_cpu_seconds() -> float:
    return time.process_time()


# A sample begun longer ago than this belongs to an earlier run in the same process (the
# language server, a run that planned no jobs): it says nothing about the CPUs now.
LONGEST_SAMPLE_SECONDS = 30.0


def start_cpu_sample() -> None:
    """Begin watching the CPUs for `idle_cpus` (at the start of a run that plans its jobs)."""
    global _started
    times = _cpu_times()
    _started = None if times is None else (times, _own_cpu_seconds(), time.monotonic())


def idle_cpus() -> int:
    """CPUs this process may use that are idle now, at least 1: a worker on a busy CPU only
    slows the run down. Sampled from /proc/stat since `start_cpu_sample` (this process's own
    work counted as a CPU it holds), or over a short wait without one, else from the load of
    the last minute."""
    global _started
    cpus = default_jobs()
    started, _started = _started, None
    if started is not None and IDLE_SAMPLE_SECONDS <= time.monotonic() - started[2] <= LONGEST_SAMPLE_SECONDS:
        before, own_before = started[0], started[1]
    else:
        before, own_before = _cpu_times(), None
        if before is not None:
            time.sleep(IDLE_SAMPLE_SECONDS)
    if before is not None:
        after = _cpu_times()
        if after is not None and after[1] > before[1]:
            idle = after[0] - before[0]
            if own_before is not None:
                # What this process used meanwhile is a CPU the parent keeps as one of the jobs.
                idle += (_own_cpu_seconds() - own_before) * _CLOCK_TICKS
            idle_share = min(1.0, idle / (after[1] - before[1]))
            return max(1, min(cpus, int(idle_share * (os.cpu_count() or cpus) + 0.5)))
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return cpus
    return max(1, min(cpus, int(cpus - load + 0.5)))


def _clock_ticks() -> int:
    """The unit of /proc/stat's times, per second."""
    try:
        return int(os.sysconf("SC_CLK_TCK"))
    except (AttributeError, ValueError, OSError):
        return 100


_CLOCK_TICKS = _clock_ticks()


def planned_jobs(jobs: int, sizes: Sequence[int]) -> int:
    """Processes for a run over candidate files of `sizes` bytes. An explicit -jN gets up
    to N (one file per process at least). AUTO runs in parallel only where it pays: enough
    candidate source (every process re-parses what its roots reach, so the shared part of
    the tree is parsed once per process) and CPUs that are idle."""
    if jobs != AUTO:
        return max(1, min(jobs, len(sizes)))
    total = sum(sizes)
    if len(sizes) < MIN_CANDIDATES or total < MIN_CANDIDATE_BYTES:
        return 1
    return max(1, min(idle_cpus(), total // MIN_SHARE_BYTES, len(sizes)))


def shard(sizes: Sequence[int], count: int) -> list[list[int]]:
    """Indexes split into `count` shards of similar total size (largest first, to the lightest)."""
    shards: list[list[int]] = [[] for _ in range(count)]
    totals = [0] * count
    for index in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        lightest = min(range(count), key=lambda s: (totals[s], s))
        shards[lightest].append(index)
        totals[lightest] += sizes[index]
    return [sorted(s) for s in shards if s]


# Analysis groups (see checker._engine_findings): neighbouring candidate files, about this
# much source each (files that import one another stay together), or None for one group of
# all. Each group is its own engine run, so a cached record keeps each group's findings with
# what they depend on and an edit reruns only the groups it touches; groups in one process
# share each file's parse (`outline.SharedParses`). Measured cold with a cache against one
# engine (-j1): nemo +7%, flashinfer +12%, a generated TT-NN-shaped tree +4%; after an edit
# of a file a capture reads: 4.9 -> 3.9 s, 22.8 -> 13.8 s, 10.9 -> 2.3 s. 16 kB rather than
# 64 kB keeps a model folder's linked files out of other models' groups: the language
# server's check after an edit of the bench's 2,000-line model file 0.18-0.24 -> 0.13-0.14 s
# (quiet machine); the command line's cold, edit and base-class-edit CPU unchanged within
# noise on that tree and torch's; peak memory cold 98 -> 111 MB there.
GROUP_BYTES: Optional[int] = 16_000


def plan_groups(sizes: Sequence[int], target: Optional[int] = None, links: Iterable[tuple[int, int]] = ()) -> list[list[int]]:
    """Positions 0..n-1 (candidate files in path order, so a model's code, demos and tests
    are neighbours) cut into groups of about `target` bytes; `links` (one imports the other)
    keep two files in one group, since both runs would parse what they share. A file or
    linked set over the target is a group alone. Without a target (nor `GROUP_BYTES`): one
    group of all."""
    target = GROUP_BYTES if target is None else target
    if target is None:
        return [list(range(len(sizes)))] if sizes else []
    parent = list(range(len(sizes)))

    def root(position: int) -> int:
        while parent[position] != position:
            parent[position] = parent[parent[position]]
            position = parent[position]
        return position

    for a, b in links:
        parent[root(a)] = root(b)
    components: dict[int, list[int]] = {}
    for position in range(len(sizes)):
        components.setdefault(root(position), []).append(position)
    groups: list[list[int]] = []
    current: list[int] = []
    total = 0
    for component in sorted(components.values()):
        size = sum(sizes[p] for p in component)
        if current and total + size > target:
            groups.append(sorted(current))
            current, total = [], 0
        current.extend(component)
        total += size
    if current:
        groups.append(sorted(current))
    return groups


def fresh_copy(project):
    """The same files, bytes already read, nothing parsed: an engine run on it parses only
    what its own roots reach, so what it reports as parsed is its own dependence."""
    from ..semantic.project import ModuleInfo, Project

    modules = [ModuleInfo(m.path, m.names, m.display_path, text=m._text) for m in project.modules]
    copy = Project(modules)
    for old, new in zip(project.modules, modules):
        data = project._raw.get(id(old))
        if data is not None:
            copy._raw[id(new)] = data
    return copy


def analyse_groups(project, settings, codes, explicit, groups: Sequence[list[int]], with_facts: bool) -> list[ShardResult]:
    """One engine run per group, one after another: the first on `project` (which nothing
    has parsed yet), the others on fresh copies of it (with the suppression facts of their
    findings' files, which `project` never parses)."""
    from ..semantic.outline import SharedParses

    results = []
    with SharedParses():  # a file several groups read is parsed once
        for number, group in enumerate(groups):
            own = project if number == 0 else fresh_copy(project)
            results.append(_analyse_share(own, settings, codes, explicit, group, with_facts=with_facts or number > 0))
    return results


def _analyse_share(project, settings, codes, explicit, share, with_facts: bool) -> ShardResult:
    """The engine run with only `share` (module indexes) searched for captures and roots."""
    from ..capture.engine import Engine
    from ..report.suppressions import suppression_facts
    from ..rules import ALL_RULES

    modules = project.modules
    engine = Engine(project, settings, [r for r in ALL_RULES if r.code in codes], roots_in=[modules[i] for i in share])
    engine.always_parse = {id(modules[i]) for i in explicit}
    result = ShardResult(findings=engine.run(), internal_errors=list(engine.internal_errors), share=list(share))
    if with_facts:
        by_display = {m.display_path: m for m in modules}
        for finding in result.findings:
            module = by_display.get(finding.filename)
            if module is not None and finding.filename not in result.facts and not module.read_error:
                result.facts[finding.filename] = suppression_facts(module)
    for function in engine.reach:
        key = (function.module.display_path, function.qualname)
        result.kinds[key] = engine.capture_kinds(function, None)
    from .cache import dependent_files, read_parts, searches_of

    result.dependent = dependent_files(project)
    result.parts = read_parts(project, result.findings)
    result.searches = searches_of(project)
    return result


# The parent's project as it was when the worker processes were forked from it: raw bytes
# already read, nothing parsed. Set only around a fork.
_INHERITED = None

# Tests set this to a file name: a worker waits (at most HOLD_SECONDS) until the file exists
# before it starts, so a test can kill workers or their leader at a known point.
HOLD_ENV = "TRACE_LINT_TEST_HOLD_WORKERS"
HOLD_SECONDS = 60.0
# How often a worker looks whether its leader is still there (where prctl is missing).
WATCH_INTERVAL = 0.2
# A worker that has sent its result exits at once; one that does not within this is killed.
EXIT_GRACE = 10.0
PR_SET_PDEATHSIG = 1


def _run_shard(entries, settings, codes, explicit, share) -> list[ShardResult]:
    """In a worker process, one result per group of the share: the project comes by fork
    (`entries` None) or is rebuilt from `entries` where processes are spawned."""
    import gc

    gc.disable()  # worker processes live for one run; see checker.collection_paused
    if entries is None:
        project = _INHERITED
    else:
        from ..semantic.project import ModuleInfo, Project

        project = Project([ModuleInfo(Path(path), name, display, text=text) for path, name, display, text in entries])
    return analyse_groups(project, settings, codes, explicit, share, with_facts=True)


def die_with_leader(leader_pid: int, use_prctl: bool = True) -> None:
    """End this process when the process that started it ends (killed, crashed): the kernel
    sends SIGKILL on Linux; elsewhere, or if that fails, a thread watches the leader."""
    if use_prctl and sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError, ValueError):
            pass
    if os.getppid() != leader_pid:  # gone before the line above took effect
        os._exit(1)
    threading.Thread(target=_watch_leader, args=(leader_pid,), name="trace-lint-leader-watch", daemon=True).start()


def _watch_leader(leader_pid: int) -> None:
    """Poll for the leader's end: the parent pid changes (POSIX re-parents orphans), or the
    leader's sentinel that multiprocessing gives (closed when it exits, on every platform)."""
    import multiprocessing
    from multiprocessing.connection import wait

    parent = multiprocessing.parent_process()
    sentinel = getattr(parent, "sentinel", None) if parent is not None else None
    while True:
        if sentinel is not None:
            try:
                if wait([sentinel], timeout=WATCH_INTERVAL):
                    os._exit(1)
            except OSError:
                sentinel = None
        else:
            time.sleep(WATCH_INTERVAL)
        if os.getppid() != leader_pid:
            os._exit(1)


def _hold_for_tests() -> None:
    flag = os.environ.get(HOLD_ENV)
    if not flag:
        return
    deadline = time.monotonic() + HOLD_SECONDS
    while not os.path.exists(flag) and time.monotonic() < deadline:
        time.sleep(0.02)


def _worker_main(writer, leader_pid, entries, settings, codes, explicit, share) -> None:
    """A worker process: its share's result (or what went wrong) through `writer`, then exit."""
    die_with_leader(leader_pid)
    _hold_for_tests()
    try:
        message = ("ok", _run_shard(entries, settings, codes, explicit, share))
    except BaseException as error:  # sent as text: the leader redoes the share itself
        message = ("error", f"{type(error).__name__}: {error}")
    writer.send(message)
    writer.close()


def _worker_context():
    """(multiprocessing context, whether workers inherit the parent's memory): fork where it
    is safe and cheap (Linux), spawn elsewhere."""
    import multiprocessing

    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork"), True
    return multiprocessing.get_context("spawn"), False


@dataclass
class _Worker:
    share: list[list[int]]  # groups
    process: object
    reader: object


def _start_worker(context, entries, settings, codes, explicit, share) -> Optional[_Worker]:
    """A started worker for `share`, or None if no process could be started (the leader then
    does the share itself)."""
    reader, writer = context.Pipe(duplex=False)
    process = context.Process(
        target=_worker_main, args=(writer, os.getpid(), entries, settings, codes, explicit, share), name="trace-lint-worker", daemon=True
    )
    try:
        process.start()
    except Exception:  # no process (EAGAIN, ENOMEM) or arguments that cannot be sent to one
        reader.close()
        writer.close()
        return None
    # Only the worker may hold the writing end: when it dies, the leader reads end-of-file
    # instead of waiting forever (and workers started later never inherit it).
    writer.close()
    return _Worker(share, process, reader)


def _collect(worker: _Worker) -> tuple[Optional[list[ShardResult]], str]:
    """The worker's result, or None and why there is none (it died, or its analysis failed).
    Never waits on a process that is gone: end-of-file on the pipe or the process sentinel
    ends the wait."""
    from multiprocessing.connection import wait

    message = None
    why = ""
    try:
        while True:
            ready = wait([worker.reader, worker.process.sentinel])
            if worker.reader in ready or worker.reader.poll(0):
                message = worker.reader.recv()
                break
            if worker.process.sentinel in ready:  # exited without a word
                break
    except Exception:  # a torn or unreadable message: the share is redone
        message = None
    finally:
        worker.reader.close()
    worker.process.join(EXIT_GRACE)
    if worker.process.is_alive():
        worker.process.kill()
        worker.process.join()
    if (
        isinstance(message, tuple)
        and len(message) == 2
        and message[0] == "ok"
        and isinstance(message[1], list)
        and len(message[1]) == len(worker.share)
        and all(isinstance(part, ShardResult) for part in message[1])
    ):
        return message[1], ""
    if isinstance(message, tuple) and len(message) == 2 and message[0] == "error":
        why = f"failed ({message[1]})"
    else:
        code = worker.process.exitcode
        why = f"ended by signal {-code}" if code is not None and code < 0 else f"ended (exit status {code}) without its result"
    return None, why


def _stop(workers: Sequence[_Worker]) -> None:
    for worker in workers:
        try:
            if worker.process.is_alive():
                worker.process.kill()
            worker.process.join(EXIT_GRACE)
            worker.reader.close()
        except (OSError, ValueError, AssertionError):
            pass


def run_parallel(project, settings, codes: set[str], explicit: set[int], jobs: int, candidates=None, on_shard_done=None, groups=None) -> Optional[ParallelResult]:
    """Findings as a serial engine run gives them, or None where a serial run is due (too
    little work, one job, or shards that disagree about how a function is captured).
    `candidates`: the modules the prefilter admits plus the explicit ones, if known.
    `jobs`: worker processes wanted, or AUTO to decide from the work and the idle CPUs.
    `groups`: module indexes to analyse one engine run each (see `analyse_groups`), spread
    over the processes; the result then keeps each group's part (`parts`) and the caller
    checks how they agree on capture kinds.

    The parent process analyses the first share itself while workers take the others. A
    worker that dies or fails costs time, never findings: the parent redoes its share."""
    global _INHERITED
    from ..frameworks import prefilter_for
    from ..frontend.prefilter import candidate_modules

    if jobs == 1:
        return None
    modules = project.modules
    index_of = {id(m): i for i, m in enumerate(modules)}
    explicit_indexes = sorted(index_of[i] for i in explicit if i in index_of)
    if groups is None:
        if candidates is None:  # the prefilter's modules and the explicit ones
            candidates = candidate_modules(project, prefilter_for(settings), {id(modules[i]) for i in explicit_indexes})
        sizes = [len(project.raw_bytes(m)) for m in candidates]
        count = planned_jobs(jobs, sizes)
        if count < 2:
            return None
        # Each share is one group: all its modules in one engine run.
        shares = [[[index_of[id(candidates[i])] for i in share]] for share in shard(sizes, count)]
    else:
        count = min(planned_jobs(jobs, [len(project.raw_bytes(modules[i])) for group in groups for i in group]), len(groups))
        if count < 2:
            return None
        group_sizes = [sum(len(project.raw_bytes(modules[i])) for i in group) for group in groups]
        shares = [[groups[g] for g in share] for share in shard(group_sizes, count)]
    if len(shares) < 2:
        return None
    context, inherits = _worker_context()
    entries = None if inherits else [(str(m.path), m.names, m.display_path, m._text) for m in modules]
    shard_results: list[ShardResult] = []
    notes: list[str] = []
    workers: list[_Worker] = []
    own = [shares[0]]
    _INHERITED = project
    try:
        try:
            for share in shares[1:]:
                worker = _start_worker(context, entries, settings, codes, explicit_indexes, share)
                if worker is None:
                    own.append(share)
                else:
                    workers.append(worker)
        finally:
            _INHERITED = None
        for number, share in enumerate(own):
            # Shares after the first start from nothing parsed, as a worker's would.
            start = project if number == 0 else fresh_copy(project)
            shard_results.extend(analyse_groups(start, settings, codes, explicit_indexes, share, with_facts=number > 0))
            _report_share_done(on_shard_done, number + 1, len(shares))
        done = len(own)
        pending = list(workers)
        while pending:
            worker = pending.pop(0)
            parts, why = _collect(worker)
            if parts is None:
                files = sum(len(group) for group in worker.share)
                notes.append(f"a worker process {why}; its share of {files} files was checked again in the main process")
                parts = analyse_groups(fresh_copy(project), settings, codes, explicit_indexes, worker.share, with_facts=True)
            shard_results.extend(parts)
            done += 1
            _report_share_done(on_shard_done, done, len(shares))
    finally:
        _stop(workers)
    if groups is None and not kinds_agree(part.kinds for part in shard_results):
        return None
    merged = merge(shard_results)
    merged.notes = notes
    merged.parts = shard_results
    return merged


def kinds_agree(parts) -> bool:
    """`parts`: for each engine run, the kinds of capture reaching each function it reached.
    True where every function reached in several runs is reached by the same kinds in each:
    then the union of the runs' findings is what one engine run over all their roots finds
    (rules read those kinds; nothing else of one run changes another's findings)."""
    kinds: dict[tuple[str, str], frozenset] = {}
    for part in parts:
        for key, value in part.items():
            if kinds.setdefault(key, value) != value:
                return False
    return True


def _report_share_done(on_shard_done, done: int, total: int) -> None:
    if on_shard_done is not None:
        on_shard_done(done, total)


def merge(parts: Sequence[ShardResult]) -> ParallelResult:
    from ..core.findings import union

    errors: list[str] = []
    facts: dict[str, tuple] = {}
    for part in parts:
        for error in part.internal_errors:
            if error not in errors:
                errors.append(error)
        for name, value in part.facts.items():
            facts.setdefault(name, value)
    return ParallelResult(union(part.findings for part in parts), errors, facts)
