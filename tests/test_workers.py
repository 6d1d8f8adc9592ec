"""Worker processes that die: the run completes with the serial findings, never waits on a
dead process, and workers never outlive their leader. Workers are killed from outside a real
CLI run (SIGKILL, as the OOM killer does); a test-only hold keeps them at a known point."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli_helpers import cli_path
from trace_lint.driver import parallel
from trace_lint.driver.checker import check
from trace_lint.core.config import load_settings

sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
from gen_tree import generate  # noqa: E402

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds worker processes through /proc")

WAIT = 60.0


def _children(pid: int) -> list[int]:
    """Live (not zombie) child processes of `pid`, read from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses.
        state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
        if int(ppid) == pid and state != "Z":
            found.append(int(entry))
    return sorted(found)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def _wait_for(predicate, what: str, timeout: float = WAIT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def _start(tree: Path, jobs: int, hold: Path) -> subprocess.Popen:
    env = dict(os.environ, **{parallel.HOLD_ENV: str(hold)})
    command = [cli_path(), "check", str(tree), f"-j{jobs}", "--no-cache", "--output-format", "json"]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def _serial(tree: Path) -> subprocess.CompletedProcess:
    return subprocess.run([cli_path(), "check", str(tree), "-j1", "--no-cache", "--output-format", "json"], capture_output=True, timeout=WAIT * 2)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return generate(tmp_path_factory.mktemp("workers") / "tree", 8)


@pytest.mark.parametrize("jobs,killed", [(2, 1), (3, 2)])
def test_killed_workers_cost_time_never_findings(tree, tmp_path, jobs, killed):
    serial = _serial(tree)
    assert serial.returncode == 1, serial.stderr.decode()
    hold = tmp_path / "go"
    run = _start(tree, jobs, hold)
    try:
        workers = _wait_for(lambda: len(_children(run.pid)) == jobs - 1 and _children(run.pid), f"{jobs - 1} workers")
        for pid in workers[:killed]:
            os.kill(pid, signal.SIGKILL)
        hold.touch()
        out, err = run.communicate(timeout=WAIT * 2)
    finally:
        run.kill()
        run.wait()
    assert run.returncode == serial.returncode, err.decode()
    assert out == serial.stdout
    assert err.decode().count("worker process ended by signal 9") == killed, err.decode()
    assert "internal error" not in err.decode()


def test_workers_die_with_their_leader(tree, tmp_path):
    hold = tmp_path / "never"  # the workers wait until the leader is gone
    run = _start(tree, 8, hold)
    try:
        workers = _wait_for(lambda: len(_children(run.pid)) == 7 and _children(run.pid), "7 workers")
        os.kill(run.pid, signal.SIGKILL)
        run.wait(timeout=WAIT)
        _wait_for(lambda: not any(_alive(pid) for pid in workers), "the workers to end", timeout=10)
    finally:
        run.kill()
        run.wait()


_WATCHED = """
import multiprocessing, os, sys, time
from trace_lint.driver.parallel import die_with_leader

def child(leader, ready):
    die_with_leader(leader, use_prctl=False)
    open(ready, "w").close()
    time.sleep(120)

if __name__ == "__main__":
    process = multiprocessing.get_context(sys.argv[2]).Process(target=child, args=(os.getpid(), sys.argv[1]))
    process.start()
    print(process.pid, flush=True)
    time.sleep(120)
"""


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_the_watchdog_ends_a_worker_without_prctl(tmp_path, start):
    """The portable fallback alone: a worker whose leader is killed ends within a second."""
    script = tmp_path / "leader.py"
    script.write_text(_WATCHED)
    ready = tmp_path / "ready"
    leader = subprocess.Popen([sys.executable, str(script), str(ready), start], stdout=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    try:
        worker = int(leader.stdout.readline())
        _wait_for(ready.exists, "the worker to start")
        assert _alive(worker)
        os.kill(leader.pid, signal.SIGKILL)
        leader.wait(timeout=WAIT)
        _wait_for(lambda: not _alive(worker), "the worker to end", timeout=10)
    finally:
        leader.kill()
        leader.wait()


def _dump(result):
    return [f.to_json() for f in result.findings], result.errors


@pytest.mark.parametrize("how", ["raises", "exits", "killed"])
def test_a_failing_worker_is_redone_in_the_leader(tmp_path, monkeypatch, capsys, how):
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("the failure is planted by fork")
    tree = generate(tmp_path / "tree", 6)
    settings = load_settings(tree)
    serial = check([tree], settings, jobs=1)

    def broken(*args):
        if how == "raises":
            raise MemoryError("planted")
        if how == "exits":
            os._exit(3)
        os.kill(os.getpid(), signal.SIGKILL)

    monkeypatch.setattr(parallel, "_worker_context", lambda: (multiprocessing.get_context("fork"), True))
    monkeypatch.setattr(parallel, "_run_shard", broken)
    sharded = check([tree], settings, jobs=3)
    assert _dump(sharded) == _dump(serial)
    notes = capsys.readouterr().err
    expected = {"raises": "failed (MemoryError: planted)", "exits": "exit status 3", "killed": "signal 9"}[how]
    assert notes.count(expected) == 2, notes


def test_explicit_jobs_and_auto_plan():
    sizes = [100_000] * 10
    assert parallel.planned_jobs(1, sizes) == 1
    assert parallel.planned_jobs(8, sizes[:3]) == 3  # one file per process at least


def test_auto_jobs_run_serially_on_busy_or_small_work(monkeypatch):
    monkeypatch.setattr(parallel, "idle_cpus", lambda: 8)
    share = parallel.MIN_SHARE_BYTES
    assert parallel.planned_jobs(parallel.AUTO, [share // 10] * 3) == 1  # too few files
    assert parallel.planned_jobs(parallel.AUTO, [100] * 100) == 1  # too little source
    assert parallel.planned_jobs(parallel.AUTO, [share] * 4) == 4
    assert parallel.planned_jobs(parallel.AUTO, [share] * 20) == 8
    monkeypatch.setattr(parallel, "idle_cpus", lambda: 1)
    assert parallel.planned_jobs(parallel.AUTO, [share] * 20) == 1


def test_idle_cpus_follow_the_cpus_idle_time_now(monkeypatch):
    monkeypatch.setattr(parallel, "_started", None)  # no run in this process began a sample
    monkeypatch.setattr(parallel, "default_jobs", lambda: 4)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.setattr(parallel, "IDLE_SAMPLE_SECONDS", 0)
    monkeypatch.setattr(os, "getloadavg", lambda: (9.0, 0, 0))  # a minute ago: busy
    samples = iter([(100, 1000), (100 + 390, 1000 + 400)])  # now: 3.9 of 4 CPUs idle
    monkeypatch.setattr(parallel, "_cpu_times", lambda: next(samples))
    assert parallel.idle_cpus() == 4
    samples = iter([(100, 1000), (100 + 150, 1000 + 400)])  # 1.5 of 4 idle
    monkeypatch.setattr(parallel, "_cpu_times", lambda: next(samples))
    assert parallel.idle_cpus() == 2
    samples = iter([(100, 1000), (100, 1000 + 400)])  # none idle
    monkeypatch.setattr(parallel, "_cpu_times", lambda: next(samples))
    assert parallel.idle_cpus() == 1


def test_idle_cpus_follow_the_load_without_proc_stat(monkeypatch):
    monkeypatch.setattr(parallel, "_started", None)
    monkeypatch.setattr(parallel, "default_jobs", lambda: 4)
    monkeypatch.setattr(parallel, "_cpu_times", lambda: None)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.2, 0, 0))
    assert parallel.idle_cpus() == 4
    monkeypatch.setattr(os, "getloadavg", lambda: (2.6, 0, 0))
    assert parallel.idle_cpus() == 1
    monkeypatch.setattr(os, "getloadavg", lambda: (9.0, 0, 0))
    assert parallel.idle_cpus() == 1


def test_the_cli_leaves_the_number_of_processes_to_the_plan(tmp_path, monkeypatch):
    """No -j: AUTO (work and idle CPUs decide); -jN: N."""
    from typer.testing import CliRunner

    from trace_lint.cli import app

    tree = generate(tmp_path / "tree", 2)
    asked = []
    real = parallel.planned_jobs
    monkeypatch.setattr(parallel, "planned_jobs", lambda jobs, sizes: asked.append(jobs) or real(jobs, sizes))
    for extra in ([], ["-j3"]):
        result = CliRunner().invoke(app, ["check", str(tree), "--no-cache", *extra])
        assert result.exit_code == 1, result.output
    assert asked == [parallel.AUTO, 3]


def test_a_worker_that_cannot_start_is_done_in_the_leader(tmp_path, monkeypatch):
    """fork/spawn failing (EAGAIN under a process limit, ENOMEM) costs time, not findings."""
    tree = generate(tmp_path / "tree", 6)
    settings = load_settings(tree)
    serial = check([tree], settings, jobs=1)
    context = multiprocessing.get_context("spawn")

    class Refused(type(context).Process):
        def start(self):
            raise BlockingIOError(11, "Resource temporarily unavailable")

    class RefusingContext:
        def __getattr__(self, name):
            return getattr(context, name)

        Process = Refused

    monkeypatch.setattr(parallel, "_worker_context", lambda: (RefusingContext(), False))
    done = []
    real = parallel._analyse_share
    monkeypatch.setattr(parallel, "_analyse_share", lambda *a, **k: done.append(1) or real(*a, **k))
    assert _dump(check([tree], settings, jobs=3)) == _dump(serial)
    assert len(done) == 3  # every share, in the leader


def test_idle_cpus_sampled_since_the_run_began_wait_for_nothing(monkeypatch):
    """Planning after `start_cpu_sample` reads the CPUs' times since then (the run's own
    work counted as the CPU the parent holds) without a wait: a serial plan costs a busy
    machine nothing that -j1 does not spend."""
    monkeypatch.setattr(parallel, "default_jobs", lambda: 4)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.setattr(parallel, "IDLE_SAMPLE_SECONDS", 0)
    monkeypatch.setattr(parallel, "_CLOCK_TICKS", 100)

    def no_wait(seconds):
        raise AssertionError("planning waited")

    monkeypatch.setattr(parallel.time, "sleep", no_wait)
    own = iter([10.0, 11.0])  # one CPU second of this process's own work meanwhile
    monkeypatch.setattr(parallel, "_own_cpu_seconds", lambda: next(own))
    samples = iter([(100, 1000), (100 + 190, 1000 + 400)])  # others left 1.9 of 4 CPUs idle
    monkeypatch.setattr(parallel, "_cpu_times", lambda: next(samples))
    parallel.start_cpu_sample()
    assert parallel.idle_cpus() == 3  # 1.9 idle + the parent's own 1.0
    own = iter([10.0, 10.2])
    samples = iter([(100, 1000), (100, 1000 + 400)])  # the others keep every CPU busy
    parallel.start_cpu_sample()
    assert parallel.idle_cpus() == 1


def test_a_sample_an_earlier_run_began_long_ago_is_not_read(monkeypatch):
    """A long-lived process (the language server) whose earlier run began a sample and never
    planned its jobs: a later plan samples the CPUs now."""
    monkeypatch.setattr(parallel, "default_jobs", lambda: 4)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.setattr(parallel, "IDLE_SAMPLE_SECONDS", 0)
    monkeypatch.setattr(parallel, "_cpu_times", lambda: (100, 1000))
    parallel.start_cpu_sample()  # the earlier run's sample: (100, 1000)
    now = parallel.time.monotonic() + parallel.LONGEST_SAMPLE_SECONDS + 1
    monkeypatch.setattr(parallel.time, "monotonic", lambda: now)
    samples = iter([(500, 2000), (500 + 390, 2000 + 400)])  # now: 3.9 of 4 idle
    monkeypatch.setattr(parallel, "_cpu_times", lambda: next(samples))
    assert parallel.idle_cpus() == 4
