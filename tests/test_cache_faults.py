"""A damaged result cache is never served: every corruption gives the `--no-cache` findings,
and the entry is rebuilt so that the next run is a real hit again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trace_lint import __version__
from trace_lint.driver import cache as cache_module
from trace_lint.driver.cache import ResultCache
from trace_lint.driver.checker import check
from trace_lint.core.config import load_settings

sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
from gen_tree import generate  # noqa: E402

from .cache_entries import payload, resealed, resealed_text  # noqa: E402


def _dump(result):
    return [f.to_json() for f in result.findings], result.errors, result.files_checked


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return generate(tmp_path_factory.mktemp("cache") / "tree", 3)


@pytest.fixture(scope="module")
def plain(tree):
    return _dump(check([tree], load_settings(tree)))


class Loads:
    """Counts what the cache served, to tell a hit from a recomputed run."""

    def __init__(self, cache: ResultCache):
        self.cache = cache
        self.hits = 0
        self.rejections: list[str] = []
        real = cache.load

        def load(*args, **kwargs):
            found = real(*args, **kwargs)
            self.hits += found is not None
            if cache.last_rejection:
                self.rejections.append(cache.last_rejection)
            return found

        cache.load = load


def _filled(tmp_path, tree):
    cache = ResultCache(tmp_path / "cache")
    check([tree], load_settings(tree), cache=cache)
    (entry,) = (tmp_path / "cache").glob("results-*.json")
    return cache, entry


def test_a_valid_entry_is_served(tmp_path, tree, plain):
    cache, _ = _filled(tmp_path, tree)
    loads = Loads(cache)
    assert _dump(check([tree], load_settings(tree), cache=cache)) == plain
    assert loads.hits == 1 and not loads.rejections
    assert plain[0], "the tree must have findings for the faults below to mean anything"


def _rewrite(entry: Path, change) -> None:
    """Change the entry's payload and seal it with a correct digest: only the field checks
    can catch it."""
    entry.write_text(resealed(entry.read_text(), change))


def _first(data):
    return data["findings"][0]


SEALED = {
    "location as strings": lambda d: _first(d).update(location=["3", "1"]),
    "location as floats": lambda d: _first(d).update(location=[3.0, 1]),
    "location as booleans": lambda d: _first(d).update(location=[True, 1]),
    "location too short": lambda d: _first(d).update(location=[3]),
    "location as an object": lambda d: _first(d).update(location={"row": 3, "column": 1}),
    "negative row": lambda d: _first(d).update(location=[-4, 1]),
    "huge row": lambda d: _first(d).update(location=[10**30, 1]),
    "end before start": lambda d: _first(d).update(end_location=[1, 0], location=[9, 1]),
    "fix is a string": lambda d: _first(d).update(fix="yes"),
    "fix with unknown applicability": lambda d: _first(d).update(fix={"applicability": "maybe", "message": "m", "edits": []}),
    "fix with a broken edit": lambda d: _first(d).update(fix={"applicability": "safe", "message": "m", "edits": [["x", [1, 1]]]}),
    "fix with extra keys": lambda d: _first(d).update(fix={"applicability": "safe", "message": "m", "edits": [], "run": "rm"}),
    "unknown code": lambda d: _first(d).update(code="XYZ123"),
    "unknown severity": lambda d: _first(d).update(severity="fatal"),
    "message not text": lambda d: _first(d).update(message=["a"]),
    "noqa row as text": lambda d: _first(d).update(noqa_row="1"),
    "file not in the run": lambda d: _first(d).update(filename="elsewhere.py"),
    "missing key": lambda d: _first(d).pop("chains"),
    "extra key": lambda d: _first(d).update(extra=1),
    "chain step garbage": lambda d: _first(d).update(chains=[[1, 2, 3]]),
    "finding not an object": lambda d: d["findings"].insert(0, 7),
    "findings reordered": lambda d: d["findings"].reverse(),
    "files checked wrong": lambda d: d.update(files_checked=d["files_checked"] + 1),
    "files checked boolean": lambda d: d.update(files_checked=True),
    "findings not a list": lambda d: d.update(findings={"a": 1}),
    "a header field in the payload": lambda d: d.update(version=__version__),
    "deep nesting inside a finding": lambda d: _first(d).update(chains=json.loads("[" * 500 + "]" * 500)),
}


def _text_faults(entry: Path) -> dict:
    good = entry.read_text()
    key = entry.stem[len("results-"):]
    return {
        "truncated": good[: len(good) // 2],
        "empty": "",
        "not json": "{not json",
        "a list": "[]",
        "null": "null",
        "deeply nested": "[" * 200_000 + "]" * 200_000,
        "deeply nested object": '{"format": 2, "findings": ' + '{"a":' * 100_000 + "1" + "}" * 100_000 + "}",
        "huge numbers": resealed_text(good, good.partition("\n")[2].replace('"files_checked":', '"files_checked":' + "9" * 5000 + ",\"x\":")),
        "digest flipped": good.replace('"digest":"', '"digest":"0'),
        "a finding dropped by hand": _dropped(good),
        "old format 1": json.dumps({"format": 1, "version": __version__, "key": key, "files_checked": 6, "findings": []}),
        "format 4 (one object, the digest inside)": json.dumps({"format": 4, "version": __version__, "key": key, **payload(good), "digest": "0" * 32}),
        "no header line": good.partition("\n")[2],
        "wrong version": resealed(good, version="0.0.0-other"),
        "wrong format": resealed(good, format=1),
        "another key": resealed(good, key="0" * 40),
        "a header with an extra field": resealed(good, extra=1),
    }


def _dropped(good: str) -> str:
    """The payload without its first finding, the header (and its digest) as it was."""
    head, _, body = good.partition("\n")
    data = json.loads(body)
    data["findings"] = data["findings"][1:]
    return head + "\n" + json.dumps(data, separators=(",", ":"))


def _check_recovers(tmp_path, tree, plain, cache: ResultCache):
    loads = Loads(cache)
    assert _dump(check([tree], load_settings(tree), cache=cache)) == plain
    assert loads.hits == 0
    # Rebuilt: the next run is served from the cache again.
    assert _dump(check([tree], load_settings(tree), cache=cache)) == plain
    assert loads.hits == 1


@pytest.mark.parametrize("fault", sorted(SEALED))
def test_entries_with_wrong_fields_are_rebuilt(tmp_path, tree, plain, fault):
    cache, entry = _filled(tmp_path, tree)
    _rewrite(entry, SEALED[fault])
    _check_recovers(tmp_path, tree, plain, cache)


TEXT_FAULTS = [
    "truncated", "empty", "not json", "a list", "null", "deeply nested", "deeply nested object", "huge numbers", "digest flipped",
    "a finding dropped by hand", "old format 1", "format 4 (one object, the digest inside)", "no header line", "wrong version",
    "wrong format", "another key", "a header with an extra field",
]


def test_a_resealed_entry_with_nothing_changed_is_served(tmp_path, tree, plain):
    """The control for the faults below: resealing alone makes no entry bad."""
    cache, entry = _filled(tmp_path, tree)
    entry.write_text(resealed(entry.read_text()))
    loads = Loads(cache)
    assert _dump(check([tree], load_settings(tree), cache=cache)) == plain
    assert loads.hits == 1 and not loads.rejections


@pytest.mark.parametrize("fault", TEXT_FAULTS)
def test_damaged_entries_are_rebuilt(tmp_path, tree, plain, fault):
    cache, entry = _filled(tmp_path, tree)
    entry.write_text(_text_faults(entry)[fault])
    _check_recovers(tmp_path, tree, plain, cache)


def test_an_entry_over_the_size_limit_is_never_read(tmp_path, tree, plain, monkeypatch):
    cache, entry = _filled(tmp_path, tree)
    monkeypatch.setattr(cache_module, "MAX_ENTRY_BYTES", entry.stat().st_size - 1)
    loads = Loads(cache)
    assert _dump(check([tree], load_settings(tree), cache=cache)) == plain
    assert loads.hits == 0


def test_non_utf8_entry(tmp_path, tree, plain):
    cache, entry = _filled(tmp_path, tree)
    entry.write_bytes(b"\xff\xfe" + entry.read_bytes())
    _check_recovers(tmp_path, tree, plain, cache)


@pytest.mark.parametrize("kind", ["folder", "fifo", "symlink to a device", "unreadable"])
def test_special_files_in_place_of_an_entry(tmp_path, tree, plain, kind):
    cache, entry = _filled(tmp_path, tree)
    entry.unlink()
    if kind == "folder":
        entry.mkdir()
        (entry / "inside").write_text("x")
    elif kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        os.mkfifo(entry)
    elif kind == "symlink to a device":
        if not Path("/dev/zero").exists():
            pytest.skip("no /dev/zero")
        entry.symlink_to("/dev/zero")
    else:
        entry.write_text("{}")
        entry.chmod(0)
    loads = Loads(cache)
    # Bounded: a FIFO or a device must not make the run wait or read forever.
    done = subprocess.run(
        [sys.executable, "-c", "import sys, json; from pathlib import Path; from trace_lint.driver.cache import ResultCache; from trace_lint.driver.checker import check; from trace_lint.core.config import load_settings;"
         "t = Path(sys.argv[1]); r = check([t], load_settings(t), cache=ResultCache(Path(sys.argv[2]))); print(json.dumps([f.to_json() for f in r.findings]))",
         str(tree), str(cache.folder)],
        capture_output=True, text=True, timeout=120, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == plain[0]
    assert _dump(check([tree], load_settings(tree), cache=cache)) == plain
    if kind != "folder":  # a folder is left alone; every other kind is replaced by a good entry
        assert entry.is_file() and not entry.is_symlink()
        assert _dump(check([tree], load_settings(tree), cache=cache)) == plain
        assert loads.hits >= 1


def test_cache_folder_that_is_a_file(tmp_path, tree, plain):
    (tmp_path / "cache").write_text("not a folder")
    cache = ResultCache(tmp_path / "cache")
    assert _dump(check([tree], load_settings(tree), cache=cache)) == plain
    assert _dump(check([tree], load_settings(tree), cache=cache)) == plain
    assert (tmp_path / "cache").read_text() == "not a folder"


def test_a_deeply_nested_entry_does_not_break_later_runs_of_the_cli(tmp_path, tree, plain):
    """The reported failure: RecursionError, exit 2, in this run and every later one."""
    config = tmp_path / "pyproject.toml"
    config.write_text(f'[tool.trace-lint]\ncache-dir = "{(tmp_path / "c").as_posix()}"\n')
    command = [sys.executable, "-m", "trace_lint", "check", str(tree), "--config", str(config), "--output-format", "json"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    first = subprocess.run(command, capture_output=True, timeout=120, env=env)
    (entry,) = (tmp_path / "c").glob("results-*.json")
    entry.write_text("[" * 100_000 + "]" * 100_000)
    runs = [subprocess.run(command, capture_output=True, timeout=120, env=env) for _ in range(2)]
    for run in runs:
        assert (run.returncode, run.stdout) == (first.returncode, first.stdout), run.stderr.decode()[-2000:]
        assert b"RecursionError" not in run.stderr
