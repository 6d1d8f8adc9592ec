"""trace-lint against ruff, in one run, on the same trees.

    python bench/bench.py [PATH] [--repeat 5] [--dense 1000] [--models 90] [--dense-captures 4546] [--no-lsp | --only-lsp]

1. PATH (default: a copy of the installed torch package's source folder): ruff
   `check --no-cache --select E9,F`, then `trace-lint check` cold (`--no-cache`), warm (from
   its cache), after a one-file edit (cache filled before, one file changed; also of a file no
   capture reads), one file alone (`--no-cache`, and after a whole run filled the cache),
   `-j1` against the default jobs, and the peak memory of the cold run.
Every tree is made a git repository with its files committed, as users run inside a checkout.

2. A generated tree shaped like a TT-NN model repository (bench/gen_model_repo.py: `--models`
   model folders, one file with `--dense-captures` captures; 0 models: skip): the same rows,
   the 50,000-line capture file alone, and the language server's time from a `didChange` to
   its diagnostics for an edit in the tree's 2,000-line model file, and in a file no capture
   reads (each edit after a user's pause, and edits back to back).
   `--only-lsp`: only these language-server rows (and ruff's time on the tree, for the load),
   with the server's CPU seconds per edit.
3. The older generated trace-dense tree (bench/gen_tree.py, `--dense` modules of each kind;
   0: skip): the same rows plus libcst's bare `parse_module` of every file (the floor).
4. The runtime guard's idle overhead (bench/guard_overhead.py) with $TRACE_LINT_TTNN_PYTHON.

Needs ruff on PATH (`python -m pip install ruff`): every row is a ratio against it.
Prints medians of the wall times, the ratios against ruff's `--no-cache` run on the same tree,
and peak memory (maxrss of the process and its workers, from wait4 / getrusage). Timings are
measured, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Optional

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
# A user's pause between edits in the language-server rows (seconds).
LSP_PAUSE = 1.0


def _tool(name: str) -> str:
    found = BIN / name
    if found.exists():
        return str(found)
    located = shutil.which(name)
    if located is None:
        # ruff is what every row is measured against; it is no dependency of trace-lint.
        raise SystemExit(f"bench: `{name}` is not on PATH (`python -m pip install {name}`)")
    return located


def run_once(command: list[str], cwd: Path) -> tuple[float, int]:
    """(wall seconds, peak RSS in MB of the process and its children) of one run; exit
    status 0 or 1 accepted."""
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if hasattr(os, "wait4"):
        # The stderr pipe is read after the wait: a command that writes much would block.
        collected: list[bytes] = []
        reader = threading.Thread(target=lambda: collected.append(process.stderr.read()), daemon=True)
        reader.start()
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        reader.join()
        process.returncode = os.waitstatus_to_exitcode(status)
        stderr = b"".join(collected)
        peak = usage.ru_maxrss
    else:
        _, stderr = process.communicate()
        seconds = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if process.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed ({process.returncode}): {stderr.decode(errors='replace')[-2000:]}")
    return seconds, peak // 1024 if sys.platform != "darwin" else peak // (1024 * 1024)


def timed(command: list[str], repeat: int, cwd: Path, before: Optional[Callable[[], None]] = None) -> tuple[float, int]:
    """Median wall seconds of `command` over `repeat` runs and the highest peak RSS (MB)."""
    samples, peaks = [], []
    for _ in range(repeat):
        if before is not None:
            before()
        seconds, peak = run_once(command, cwd)
        samples.append(seconds)
        peaks.append(peak)
    return statistics.median(samples), max(peaks)


def bare_parse(root: Path, repeat: int) -> float:
    """libcst's parse_module of every .py file under root, in a fresh process (one core),
    without cyclic garbage collection (as trace-lint runs its analysis)."""
    script = (
        "import gc, sys, pathlib, libcst\n"
        "gc.disable()\n"
        "files = [p.read_text() for p in pathlib.Path(sys.argv[1]).rglob('*.py')]\n"
        "for text in files:\n"
        "    libcst.parse_module(text)\n"
    )
    return timed([sys.executable, "-c", script, str(root)], repeat, root)[0]


class Table:
    def __init__(self, title: str, ruff_seconds: float):
        self.ruff = ruff_seconds
        print(f"\n### {title}\n")
        print("| run | seconds | vs ruff | peak MB |")
        print("|---|---:|---:|---:|")

    def row(self, name: str, seconds: float, peak: Optional[int] = None) -> float:
        ratio = f"{seconds / self.ruff:6.2f}x" if self.ruff else ""
        print(f"| {name:<52} | {seconds:8.3f} | {ratio:>8} | {peak if peak is not None else '':>7} |")
        sys.stdout.flush()
        return seconds / self.ruff if self.ruff else 0.0


class Edits:
    """Before each run: one more comment line at the end of `path` (content changes, findings
    do not). `restore()` puts the original text back."""

    def __init__(self, path: Path):
        self.path = path
        self.original = path.read_bytes()
        self.count = 0

    def __call__(self) -> None:
        self.count += 1
        self.path.write_bytes(self.original + f"\n# bench edit {self.count}\n".encode())

    def restore(self) -> None:
        self.path.write_bytes(self.original)


def floor_rows(table: "Table", root: Path, repeat: int, work: Path, edit_file: Path) -> dict:
    """The lower bounds of `floors.py`, as rows of the tree's table."""
    recorded = work / "floors.json"
    script = str(HERE / "floors.py")
    subprocess.run([sys.executable, script, "record", str(recorded), str(root)], cwd=root, check=True, stdout=subprocess.DEVNULL)
    floors = {}
    for stage, name in (
        ("start", "floor: the interpreter starts"),
        ("inputs", "floor: start, discover, read, hash every file (any run)"),
        ("imports", "floor: import what an analysing run imports"),
        ("cold", "floor: both + outline and parse what a cold run parses"),
    ):
        floors[stage] = table.row(name, timed([sys.executable, script, stage, str(recorded)], repeat, root)[0])
    floors["edit"] = table.row(
        f"floor: both + parse only {edit_file.relative_to(root)} (an edit)",
        timed([sys.executable, script, "edit", str(recorded), str(edit_file)], repeat, root)[0],
    )
    return floors


def bench_tree(root: Path, repeat: int, work: Path, edit_file: Path, one_file: Path, title: str, floor: bool = False, floors: bool = True, base_file: Optional[Path] = None, capture_file: Optional[Path] = None) -> dict:
    """The rows for one tree; returns the ratios by name. `base_file`: a module every model
    imports (its base class), edited as the others are; `capture_file`: a file holding
    captures whose shape many others share (a model's generator)."""
    trace_lint = _tool("trace-lint")
    ruff = _tool("ruff")
    work.mkdir(parents=True, exist_ok=True)
    config = work / "pyproject.toml"
    config.write_text(f'[tool.trace-lint]\ncache-dir = "{(work / "cache").as_posix()}"\n')
    check = [trace_lint, "check", "--config", str(config), "--exit-zero", "--output-format", "concise"]
    ruff_check = [ruff, "check", "--no-cache", "--select", "E9,F", "--exit-zero", "--quiet"]
    files = sum(1 for _ in root.rglob("*.py"))
    ruff_time, ruff_peak = timed([*ruff_check, str(root)], repeat, root)
    table = Table(f"{title}: {root} ({files} .py files), median of {repeat}", ruff_time)
    ratios = {}
    table.row("ruff check --no-cache --select E9,F", ruff_time, ruff_peak)
    cold, cold_peak = timed([*check, str(root), "--no-cache"], repeat, root)
    ratios["cold"] = table.row("trace-lint check --no-cache (cold, default jobs)", cold, cold_peak)
    one_job, one_peak = timed([*check, str(root), "--no-cache", "-j1"], repeat, root)
    ratios["-j1"] = table.row("trace-lint check --no-cache -j1", one_job, one_peak)
    run_once([*check, str(root)], root)  # fill the cache
    warm, warm_peak = timed([*check, str(root)], repeat, root)
    ratios["warm"] = table.row("trace-lint check (warm cache)", warm, warm_peak)
    edited, edited_peak = timed_after_edits(check, root, edit_file, repeat)
    ratios["edit"] = table.row(f"trace-lint check after editing {edit_file.relative_to(root)}", edited, edited_peak)
    if base_file is not None and base_file.is_file():
        edited, edited_peak = timed_after_edits(check, root, base_file, repeat)
        ratios["edit base"] = table.row(f"trace-lint check after editing {base_file.relative_to(root)} (the base class every model imports)", edited, edited_peak)
    if capture_file is not None and capture_file.is_file():
        edited, edited_peak = timed_after_edits(check, root, capture_file, repeat)
        ratios["edit capture"] = table.row(f"trace-lint check after editing {capture_file.relative_to(root)} (captures; every model has one like it)", edited, edited_peak)
    unread = unread_file(work / "cache", root)
    if unread is not None:
        edited, edited_peak = timed_after_edits(check, root, unread, repeat)
        ratios["edit unread"] = table.row(f"trace-lint check after editing {unread.relative_to(root)} (no capture reads it)", edited, edited_peak)
    ruff_one, _ = timed([*ruff_check, str(one_file)], repeat, root)
    table.row(f"ruff on one file ({one_file.relative_to(root)})", ruff_one)
    one, one_file_peak = timed([*check, str(one_file), "--no-cache"], repeat, root)
    ratios["one file"] = table.row("trace-lint check ONE FILE --no-cache", one, one_file_peak)
    run_once([*check, str(root)], root)

    def forget_results():
        for entry in (work / "cache").glob("results-*.json"):
            entry.unlink()

    one_cached, one_cached_peak = timed([*check, str(one_file)], repeat, root, before=forget_results)
    ratios["one file cached"] = table.row("trace-lint check ONE FILE (after a whole run)", one_cached, one_cached_peak)
    if floor:
        table.row("libcst parse_module of every file (floor)", bare_parse(root, repeat))
    lower = floor_rows(table, root, repeat, work, edit_file) if floors else {}
    print(
        f"\ncold {ratios['cold']:.2f}x ruff (target <= 4x); warm {ratios['warm']:.2f}x (<= 1x); "
        f"after an edit {ratios['edit']:.2f}x (<= 1x), of a file no capture reads {ratios.get('edit unread', float('nan')):.2f}x; "
        f"one file {ratios['one file']:.2f}x ruff on the tree (<= 1x), after a whole run {ratios['one file cached']:.2f}x, "
        f"{one / ruff_one:.1f}x ruff on that file; "
        f"default jobs / -j1 {cold / one_job:.2f} (<= 1); peak {cold_peak} MB (<= 300)"
    )
    if lower:
        print(
            f"lower bounds: cold {lower['cold']:.2f}x ruff, any run (warm, one file after a whole run) "
            f"{lower['inputs']:.2f}x, an edit that must be analysed {lower['edit']:.2f}x, "
            f"importing the analysis alone {lower['imports']:.2f}x"
        )
    return ratios


def timed_after_edits(check: list[str], root: Path, path: Path, repeat: int) -> tuple[float, int]:
    """`check` on the tree, each time after the cache was filled and then `path` edited."""
    edits = Edits(path)

    def edit_after_filling():
        edits.restore()
        run_once([*check, str(root)], root)
        edits()

    try:
        return timed([*check, str(root)], repeat, root, before=edit_after_filling)
    finally:
        edits.restore()


def unread_file(cache: Path, root: Path) -> Optional[Path]:
    """A file of the tree that the last run's analysis did not read (see cache.AnalysisRecord):
    the first in path order."""
    records = sorted(cache.glob("analysis-*.json"), key=lambda p: p.stat().st_mtime)
    if not records:
        return None
    record = json.loads(records[-1].read_text().partition("\n")[2])  # the payload, below the entry's header line
    read = {display for group in record["groups"] for display in group["dependent"]}
    unread = sorted(set(record["hashes"]) - read)
    return root / unread[0] if unread else None


# -- the language server -------------------------------------------------------------------


class LspClient:
    """A minimal JSON-RPC client over a server's stdio (Content-Length framing)."""

    def __init__(self, command: list[str], cwd: Path, env: dict):
        self.process = subprocess.Popen(command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.next_id = 0
        self.messages: list[dict] = []
        self.arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            body = stream.read(length or 0)
            with self.arrived:
                self.messages.append({"time": time.perf_counter(), **json.loads(body)})
                self.arrived.notify_all()

    def send(self, method: str, params: dict, request: bool = False) -> Optional[int]:
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self.next_id += 1
            message["id"] = self.next_id
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()
        return message.get("id")

    def wait_for(self, predicate: Callable[[dict], bool], timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        with self.arrived:
            while True:
                for message in self.messages:
                    if predicate(message):
                        self.messages.remove(message)
                        return message
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no answer from the language server")
                self.arrived.wait(left)

    def close(self) -> None:
        try:
            request = self.send("shutdown", {}, request=True)
            self.wait_for(lambda m: m.get("id") == request, 30)
            self.send("exit", {})
            self.process.wait(timeout=30)
        except (OSError, TimeoutError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()


def _process_seconds(pid: int) -> Optional[float]:
    """CPU seconds (user + system) a process has used, from /proc (None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def bench_lsp(root: Path, path: Path, repeat: int, timeout: float, cpu: bool = False, pause: float = LSP_PAUSE) -> None:
    """Time from a didChange (one line edited) to the diagnostics for that version, with the
    debounce set to 0 (the time measured is what comes after the debounce), twice: each edit
    after a pause of `pause` seconds, as a user pauses (the server writes its cache after
    the publish, in the pause), and edits back to back, each sent as soon as the last one's
    diagnostics arrive (the next check then waits for those writes). `cpu`: also the
    server's CPU seconds per edit (a shared machine's load stretches the wall time, not this)."""
    env = dict(os.environ, TRACE_LINT_LSP_DEBOUNCE="0")
    client = LspClient([_tool("trace-lint"), "lsp"], root, env)
    uri = path.as_uri()
    text = path.read_text()
    try:
        request = client.send("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {}, "workspaceFolders": [{"uri": root.as_uri(), "name": "bench"}]}, request=True)
        client.wait_for(lambda m: m.get("id") == request, timeout)
        client.send("initialized", {})
        start = time.perf_counter()
        client.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})
        first = client.wait_for(lambda m: _diagnostics_for(m, uri, 1), timeout)
        opened = first["time"] - start
        lines = text.splitlines(keepends=True)
        middle = len(lines) // 2
        versions = iter(range(2, 2 * repeat + 2))

        def edits(wait: float) -> tuple[list[float], list[float]]:
            samples, cpu_samples = [], []
            for _ in range(repeat):
                version = next(versions)
                time.sleep(wait)
                edited = "".join(lines[:middle] + [f"# edited {version}\n"] + lines[middle:])
                used = _process_seconds(client.process.pid) if cpu else None
                start = time.perf_counter()
                client.send("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": edited}]})
                message = client.wait_for(lambda m: _diagnostics_for(m, uri, version), timeout)
                samples.append(message["time"] - start)
                if used is not None:
                    after = _process_seconds(client.process.pid)
                    if after is not None:
                        cpu_samples.append(after - used)
            return samples, cpu_samples

        paused, paused_cpu = edits(pause)
        rushed, rushed_cpu = edits(0.0)
        count = len(first["params"]["diagnostics"])
        print(f"\n### language server: {path.relative_to(root)} ({len(lines)} lines), debounce 0\n")
        print(f"didOpen -> diagnostics: {opened:.3f} s ({count} diagnostics)")
        print(f"didChange -> diagnostics, each edit after a {pause:g} s pause: median {statistics.median(paused):.3f} s over {len(paused)} edits (target <= 0.200 s)")
        print(f"didChange -> diagnostics, edits back to back: median {statistics.median(rushed):.3f} s over {len(rushed)} edits")
        ticks = f"user + system, {1 / os.sysconf('SC_CLK_TCK'):.2f} s ticks"
        if paused_cpu:
            print(f"server CPU from each paused edit to its diagnostics ({ticks}): median {statistics.median(paused_cpu):.3f} s")
        if rushed_cpu:
            print(f"server CPU per back-to-back edit ({ticks}; with the last one's cache writes): median {statistics.median(rushed_cpu):.3f} s")
    except TimeoutError:
        print(f"\nlanguage server: no diagnostics within {timeout:.0f} s (the row is missing, not zero)")
    finally:
        client.close()


def _diagnostics_for(message: dict, uri: str, version: int) -> bool:
    if message.get("method") != "textDocument/publishDiagnostics":
        return False
    params = message.get("params", {})
    return params.get("uri") == uri and params.get("version") in (version, None)


def bench_lsp_only(work: Path, args) -> None:
    """The language server rows alone: the TT-NN-shaped tree, one run to find a file no
    capture reads, then the same measurements as the full bench."""
    import gen_model_repo

    repo = gen_model_repo.generate(work / "repo", max(args.models, 1), args.dense_captures)
    model_file = gen_model_repo.lsp_file(repo)
    ruff_time, _ = timed([_tool("ruff"), "check", "--no-cache", "--select", "E9,F", "--exit-zero", "--quiet", str(repo)], args.repeat, repo)
    print(f"ruff check --no-cache --select E9,F on the tree: {ruff_time:.3f} s (the machine's load)")
    config = work / "b" / "pyproject.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[tool.trace-lint]\ncache-dir = "{(work / "b" / "cache").as_posix()}"\n')
    run_once([_tool("trace-lint"), "check", "--config", str(config), "--exit-zero", "--output-format", "concise", str(repo)], repo)
    bench_lsp(repo, model_file, args.repeat, args.lsp_timeout, cpu=True)
    unread = unread_file(work / "b" / "cache", repo)
    if unread is not None:
        bench_lsp(repo, unread, args.repeat, args.lsp_timeout, cpu=True)


# -- trees -----------------------------------------------------------------------------------


def torch_tree() -> Path:
    found = subprocess.run(
        [sys.executable, "-c", "import importlib.util, os; print(os.path.dirname(importlib.util.find_spec('torch').origin))"],
        capture_output=True, text=True,
    )
    if found.returncode != 0 or not found.stdout.strip():
        raise SystemExit("torch is not installed here: give a PATH to benchmark")
    return Path(found.stdout.strip())


def copy_python_files(source: Path, target: Path) -> Path:
    """The .py files of `source` under `target`: edits never touch the original."""
    for path in source.rglob("*.py"):
        destination = target / path.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
    return target


def as_git_checkout(root: Path) -> Path:
    """Make the tree a git repository with everything committed: users run inside their
    checkout, where discovery reads git's ignore rules and the repository root is the
    project's root."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.org", "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.org"}
    for command in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "tree"]):
        subprocess.run(command, cwd=root, env=env, check=True, stdout=subprocess.DEVNULL)
    return root


def a_candidate(root: Path, preferred: str) -> Path:
    """`preferred` under root if it exists, else the first file that mentions a capture."""
    if (root / preferred).is_file():
        return root / preferred
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(errors="replace")
        if "begin_trace_capture" in text or "cuda.graph" in text:
            return path
    return next(iter(sorted(root.rglob("*.py"))))


def _compile_installed_package() -> None:
    """Bytecode for the trace-lint that `trace-lint` runs (an editable install has none yet)."""
    probe = "import pathlib, trace_lint; print(pathlib.Path(trace_lint.__file__).parent)"
    tool_python = Path(_tool("trace-lint")).parent / "python"
    python = str(tool_python) if tool_python.exists() else sys.executable
    package = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([python, "-m", "compileall", "-q", package], check=False, stdout=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", nargs="?", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dense", type=int, default=0, help="modules of each kind in the older generated tree (0: skip)")
    parser.add_argument("--models", type=int, default=90, help="model folders in the TT-NN-shaped tree (0: skip)")
    parser.add_argument("--dense-captures", type=int, default=4546, help="captures in that tree's one big test file")
    parser.add_argument("--no-lsp", action="store_true", help="skip the language server measurement")
    parser.add_argument("--no-floors", action="store_true", help="skip the lower bounds (floors.py)")
    parser.add_argument("--only-lsp", action="store_true", help="only the language server rows (on the TT-NN-shaped tree)")
    parser.add_argument("--lsp-timeout", type=float, default=300.0)
    args = parser.parse_args()
    # Measure as an installed package runs: from bytecode (pip compiles it at install; an
    # environment that forbids writing it would charge every run for compiling trace_lint).
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False
    _compile_installed_package()
    sys.path.insert(0, str(HERE))
    import gen_model_repo
    from gen_tree import generate

    with tempfile.TemporaryDirectory(prefix="trace-lint-bench-") as temporary:
        work = Path(temporary)
        if args.only_lsp:
            bench_lsp_only(work, args)
            return
        if args.path is not None:
            tree = args.path.resolve()
            title = "given tree"
        else:
            tree = as_git_checkout(copy_python_files(torch_tree(), work / "torch"))
            title = "torch (a copy of the installed package's .py files)"
        edit = a_candidate(tree, "cuda/graphs.py")
        bench_tree(tree, args.repeat, work / "a", edit, edit, title, floors=not args.no_floors)
        if args.models:
            repo = as_git_checkout(gen_model_repo.generate(work / "repo", args.models, args.dense_captures))
            model_file = gen_model_repo.lsp_file(repo)
            base = repo / gen_model_repo.BASE_FILE
            generator = repo / gen_model_repo.GENERATOR_FILE
            bench_tree(repo, args.repeat, work / "b", model_file, model_file, "TT-NN-shaped model repository", floors=not args.no_floors, base_file=base, capture_file=generator)
            dense_file = repo / gen_model_repo.DENSE_FILE
            captures = Table(f"{dense_file.relative_to(repo)} alone ({dense_file.read_text().count(chr(10))} lines, {args.dense_captures} captures)", timed([_tool("ruff"), "check", "--no-cache", "--select", "E9,F", "--exit-zero", "--quiet", str(dense_file)], args.repeat, repo)[0])
            captures.row("ruff check --no-cache --select E9,F", captures.ruff)
            captures.row("trace-lint check --no-cache (target <= 3 s)", *timed([_tool("trace-lint"), "check", str(dense_file), "--no-cache", "--exit-zero", "--output-format", "concise"], args.repeat, repo))
            if not args.no_lsp:
                bench_lsp(repo, model_file, args.repeat, args.lsp_timeout)
                unread = unread_file(work / "b" / "cache", repo)
                if unread is not None:  # an edit no capture reads: the analysis is reused
                    bench_lsp(repo, unread, args.repeat, args.lsp_timeout)
        if args.dense:
            dense = as_git_checkout(generate(work / "tree", args.dense))
            bench_tree(dense, args.repeat, work / "c", dense / "dense" / "layers_0.py", dense / "dense" / "model_0.py", "generated trace-dense tree (gen_tree.py)", floor=True)

    ttnn_python = os.environ.get("TRACE_LINT_TTNN_PYTHON")
    if not ttnn_python:
        print("\nruntime guard idle overhead: skipped (set TRACE_LINT_TTNN_PYTHON, see scripts/setup_ttnn_mock.sh)")
        return
    print("\n### runtime guard idle overhead\n")
    sys.stdout.flush()
    subprocess.run([ttnn_python, str(HERE / "guard_overhead.py")], check=False)


if __name__ == "__main__":
    main()
