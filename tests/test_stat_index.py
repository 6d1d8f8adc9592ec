"""The stat index (driver/stat_index.py) never changes a finding, and what it keeps is used.

A command-line run with the cache keeps what it read from the file system: the project's
discovery, module names, display paths and each file's content hash, served again while the
stat of what they were read from stands. Runs with it are compared with `--no-cache` runs
over random changes to a generated model tree (edits, same-size edits whose time is set
back, new and removed files and packages, `.gitignore` edits), right after each change (its
stat too new to trust) and once the clock has moved past it. A run after an unchanged run
walks no folder and reads no file; a damaged index is rebuilt. The CLI runs in this process,
as in test_split_property."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trace_lint.driver import stat_index

from .cache_entries import resealed
from .cli_helpers import REPO
from .test_lsp_kept import HELPERS, MODEL
from .test_split_property import _edit, _python_files, _run

# Past the racy window of a file system with nanosecond times (stat_index.RACY_FINE_NS).
SETTLE_S = 2.5 * stat_index.RACY_FINE_NS / 1e9


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    subprocess.run([sys.executable, str(REPO / "bench" / "gen_model_repo.py"), str(root), "--models", "3", "--dense-captures", "6"], check=True, capture_output=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)  # inside a repository, as users run it
    monkeypatch.chdir(root)
    return root


class Reads:
    """Folders listed and files read under `root` while it is installed."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = str(root.resolve())
        self.listed: list[str] = []
        self.read: list[str] = []
        real_scandir, real_read_bytes = os.scandir, Path.read_bytes

        def scandir(path="."):
            if os.path.abspath(path).startswith(self.root):
                self.listed.append(os.fspath(path))
            return real_scandir(path)

        def read_bytes(path: Path) -> bytes:
            if path.suffix == ".py" and os.path.abspath(path).startswith(self.root):
                self.read.append(os.fspath(path))
            return real_read_bytes(path)

        monkeypatch.setattr(os, "scandir", scandir)
        monkeypatch.setattr(Path, "read_bytes", read_bytes)

    def clear(self) -> None:
        self.listed.clear()
        self.read.clear()


def _index_entries(root: Path) -> list[Path]:
    return sorted((root / ".trace-lint-cache").glob("inputs-*.json"))


def test_a_run_after_an_unchanged_run_walks_no_folder_and_reads_no_file(tree: Path, monkeypatch: pytest.MonkeyPatch):
    whole = _run(".", "--no-cache")
    assert {f[2] for f in whole} >= {"TRC401"}  # findings to agree on
    capture = next(name for name in _python_files(tree) if any(f[0] == name for f in whole))
    alone = {f for f in whole if f[0] == capture or capture in f[3]}
    assert _run(".") == whole
    assert _run(capture) == alone
    time.sleep(SETTLE_S)  # the files' stats are now old enough to trust
    assert _run(".") == whole
    assert _run(capture) == alone
    entry = _index_entries(tree)
    assert len(entry) == 1
    written = entry[0].stat().st_mtime_ns
    reads = Reads(tree, monkeypatch)
    for _ in range(2):
        assert _run(".") == whole
        assert (reads.listed, reads.read) == ([], []), "a folder run served by the index"
        assert _run(capture) == alone
        assert (reads.listed, reads.read) == ([], []), "a one-file run served by the index"
    assert entry[0].stat().st_mtime_ns == written, "runs that read nothing new rewrote the index"
    # One edit in place: the run misses (and reads what a run without the index reads),
    # then the next is served again.
    (tree / capture).write_text((tree / capture).read_text() + "\n# edited\n")
    time.sleep(SETTLE_S)
    edited = _run(".")
    assert str((tree / capture).resolve()) in {os.path.abspath(path) for path in reads.read}
    reads.clear()
    assert _run(".") == edited
    assert (reads.listed, reads.read) == ([], [])
    assert edited == _run(".", "--no-cache")


def _same_size_edit(text: str, rng: random.Random) -> str:
    """One character of a comment or name changed to another: the size stays."""
    spots = [i for i, ch in enumerate(text) if ch.isalpha()]
    if not spots:
        return text + "#"
    spot = rng.choice(spots)
    other = "q" if text[spot] != "q" else "z"
    return text[:spot] + other + text[spot + 1:]


def _change(root: Path, rng: random.Random, step: int) -> str:
    files = _python_files(root)
    kind = rng.randrange(8)
    name = rng.choice(files)
    path = root / name
    if kind <= 1:
        path.write_text(_edit(path.read_text(), rng))
        return f"edit {name}"
    if kind == 2:
        # Same size, and the modification time set back as `cp -p` or an archive does.
        before = path.stat()
        path.write_text(_same_size_edit(path.read_text(), rng))
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        return f"same-size edit of {name}, time kept"
    if kind == 3:
        new = path.with_name(f"added_{step}.py")
        new.write_text(path.read_text())
        return f"add {new.relative_to(root)}"
    if kind == 4 and len(files) > 4:
        path.unlink()
        return f"remove {name}"
    if kind == 5:
        ignore = root / ".gitignore"
        if ignore.exists() and rng.randrange(2):
            ignore.unlink()
            return "remove .gitignore"
        ignore.write_text((ignore.read_text() if ignore.exists() else "") + name + "\n")
        return f"ignore {name}"
    if kind == 6:
        package = path.parent / "__init__.py"
        if package.exists():
            package.unlink()
            return f"remove {package.relative_to(root)}"
        package.write_text("")
        return f"add {package.relative_to(root)}"
    path.write_text(path.read_text())  # written again, the same bytes
    return f"rewrite {name}"


@pytest.mark.parametrize("seed", range(3))
def test_runs_with_the_index_agree_with_runs_without_over_random_changes(tree: Path, seed: int):
    rng = random.Random(seed)
    assert _run(".") == _run(".", "--no-cache")
    time.sleep(SETTLE_S)
    for step in range(12):
        what = _change(tree, rng, step)
        settled = rng.randrange(2)
        if settled:
            time.sleep(SETTLE_S)
        whole = _run(".", "--no-cache")
        assert _run(".") == whole, f"step {step}: {what} (settled: {settled})"
        assert _run(".") == whole, f"step {step}: {what}, again"
        name = rng.choice(_python_files(tree))
        assert _run(name) == _run(name, "--no-cache"), f"step {step}: {what}, then {name} alone"


def _entry(tree: Path) -> Path:
    _run(".")
    time.sleep(SETTLE_S)
    _run(".")
    (entry,) = _index_entries(tree)
    return entry


def _files_as_text(fields: dict) -> None:
    for row in fields["files"].values():
        row[0] = [str(part) for part in row[0]]


def _digests_not_text(fields: dict) -> None:
    for row in fields["files"].values():
        row[1] = 7


def _discovery_cut(fields: dict) -> None:
    fields["discoveries"] = [item[:3] for item in fields["discoveries"]]


def _stamps_broken(fields: dict) -> None:
    for item in fields["discoveries"]:
        item[6] = [[path, "stamp"] for path, _stamp in item[6]]


def _names_not_a_map(fields: dict) -> None:
    fields["names"] = [[roots, list(by_file)] for roots, by_file in fields["names"]]


@pytest.mark.parametrize("fault", [_files_as_text, _digests_not_text, _discovery_cut, _stamps_broken, _names_not_a_map, None], ids=["files", "digests", "discovery", "stamps", "names", "truncated"])
def test_a_damaged_index_is_never_served_and_is_rebuilt(tree: Path, fault, monkeypatch: pytest.MonkeyPatch):
    whole = _run(".", "--no-cache")
    entry = _entry(tree)
    text = entry.read_text()
    entry.write_text(resealed(text, fault) if fault is not None else text[: len(text) // 2])
    assert _run(".") == whole
    name = _python_files(tree)[0]
    assert _run(name) == {f for f in whole if f[0] == name or name in f[3]}
    # Rebuilt: the next run is served again.
    time.sleep(SETTLE_S)
    _run(".")
    json.loads(entry.read_text().partition("\n")[2])
    reads = Reads(tree, monkeypatch)
    assert _run(".") == whole
    assert (reads.listed, reads.read) == ([], [])


# The language server's model, importing its helpers from a package.
MAIN = MODEL.replace("from helpers import", "from pkg.helpers import")


def test_a_package_file_added_or_removed_renames_the_modules_below_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """`from pkg.helpers import release` in deep/main.py finds deep/pkg/helpers.py only while
    deep/pkg/__init__.py makes `pkg` a package: the kept module names must follow it."""
    root = tmp_path / "project"
    (root / "deep" / "pkg").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "pyproject.toml").write_text("[tool.trace-lint]\n")
    (root / "deep" / "main.py").write_text(MAIN)
    (root / "deep" / "pkg" / "helpers.py").write_text(HELPERS)
    monkeypatch.chdir(root)
    package = root / "deep" / "pkg" / "__init__.py"
    codes = []
    for _ in range(2):
        for exists in (False, True):
            if exists:
                package.write_text("")
            elif package.exists():
                package.unlink()
            time.sleep(SETTLE_S)  # trusted stats, so the index serves what it may
            whole = _run(".", "--no-cache")
            assert _run(".") == whole, f"package file there: {exists}"
            assert _run(".") == whole, f"package file there: {exists}, again"
            assert _run("deep/main.py") == _run("deep/main.py", "--no-cache")
            codes.append(sorted(f[2] for f in whole))
    assert codes == [["TRC401"], ["TRC302", "TRC401"]] * 2  # the name decides a finding


def test_a_file_changed_too_recently_to_trust_its_stat_is_not_kept(tmp_path: Path):
    """Written within the racy window of the file system's clock, a file is hashed but its
    stat is not kept: a same-size write in the same clock tick would leave the stat as it
    was. Once the clock has moved past it, it is kept."""
    from trace_lint.core.config import load_settings
    from trace_lint.driver.cache import ResultCache

    path = tmp_path / "model.py"
    path.write_text("x = 1\n")
    settings = load_settings(tmp_path)
    inputs = stat_index.StatIndex(ResultCache(tmp_path / "cache"), settings)
    data, digest = inputs.file_hash(path)
    assert data == b"x = 1\n"
    assert inputs.known_hash(path) is None, "kept while its stat could still hide a change"
    time.sleep(SETTLE_S)
    assert inputs.file_hash(path) == (data, digest)
    assert inputs.known_hash(path) == digest
    # Another spelling of the same file is the same file.
    assert inputs.known_hash(Path(os.path.relpath(path))) == digest
    # Same size, time set back: the change time still shows it.
    before = path.stat()
    path.write_text("x = 2\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert inputs.known_hash(path) is None


def test_bytes_read_late_must_be_the_contents_the_stat_vouched_for(tmp_path: Path):
    from trace_lint.core.file_facts import content_digest
    from trace_lint.driver.checker import ChangedDuringRun, EntryBytes, RunInputs
    from trace_lint.frontend.source import ReadError

    kept, unknown, gone = tmp_path / "kept.py", tmp_path / "unknown.py", tmp_path / "gone.py"
    kept.write_bytes(b"x = 1\n")
    unknown.write_bytes(b"y = 2\n")
    entries = [(kept, ("kept",), "kept.py", None, 0), (unknown, ("unknown",), "unknown.py", None, 0), (gone, ("gone",), "gone.py", None, 0), (tmp_path / "buffer.py", ("buffer",), "buffer.py", "z = 3\n", 0)]
    raw = EntryBytes(entries, RunInputs())
    raw.expect(0, content_digest(b"x = 1\n"))
    assert raw[0] == b"x = 1\n" and raw[1] == b"y = 2\n" and raw[3] == b"z = 3\n"
    assert raw.by_display()["kept.py"] == b"x = 1\n"
    with pytest.raises(ReadError):
        raw[2]  # a file no stat vouched for: read as always
    changed = EntryBytes(entries, RunInputs())
    changed.expect(0, content_digest(b"x = 0\n"))
    with pytest.raises(ChangedDuringRun):
        changed[0]
    vanished = EntryBytes(entries, RunInputs())
    vanished.expect(2, content_digest(b""))
    with pytest.raises(ChangedDuringRun):
        vanished[2]


def test_a_file_changed_between_its_stat_and_its_read_makes_the_run_again(tree: Path, monkeypatch: pytest.MonkeyPatch):
    """Inputs that vouch by stat for contents the file no longer has (as a write in the same
    clock tick could): the analysis reads the file, finds other contents, and the run is made
    again reading every file, so its findings are of what is on disk."""
    from trace_lint.core.config import load_settings
    from trace_lint.core.file_facts import content_digest
    from trace_lint.driver import checker
    from trace_lint.driver.cache import ResultCache

    whole = _run(".", "--no-cache")
    capture = next(name for name in _python_files(tree) if any(f[0] == name for f in whole))
    settings = load_settings(tree)
    cache_folder = tree / "cache-for-test"
    cache = ResultCache(cache_folder)
    checker.check([Path(".")], settings, cache=cache, whole_program=True)  # a record of the tree
    stale = content_digest(b"# what the file held before\n")

    class Vouching(checker.RunInputs):
        def known_hash(self, path: Path):
            if os.path.abspath(path) == str((tree / capture).resolve()):
                return stale
            return self.content_hash(path.read_bytes())

    runs = []
    real_check = checker.check
    monkeypatch.setattr(checker, "check", lambda *args, **kwargs: runs.append(kwargs.get("inputs")) or real_check(*args, **kwargs))
    for entry in cache_folder.glob("results-*.json"):
        entry.unlink()
    found = checker.check([Path(capture)], settings, cache=cache, whole_program=True, inputs=Vouching())
    assert len(runs) == 2 and runs[1] is None, "the run was not made again"
    expected = {f for f in whole if f[0] == capture or capture in f[3]}
    assert {(f.filename, f.location.row, f.code, tuple(sorted({chain[0].filename for chain in f.chains}))) for f in found.findings} == expected
