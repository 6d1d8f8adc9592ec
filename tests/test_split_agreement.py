"""The same findings, with the same chains, however the work is split: no cache, a cold and a
warm cache, one process or several, the whole project or one file of it.

The three-file project of `fixtures/split_chains`: `Chains.add` appends to `self.items`;
`a.py`'s captured work makes a fresh `Chains()` and calls `add` (a capture-time object),
`b.py`'s captured work calls `self.chains.add(x)` on long-lived state. RULES' answer is one
TRC203 in `chains.py` whose only chain starts in `b.py`. Padding puts `a.py` and `b.py` in
different analysis groups and parallel shards.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .cli_helpers import FIXTURES, run_cli

EXPECTED = {("app/chains.py", 6, "TRC203", ("app/b.py",))}


def _padding(name: str) -> str:
    # About 70 kB of plain functions, more than one analysis group holds.
    return "".join(f"\n\ndef {name}_pad_{i}(value):\n    total = value + {i}\n    return total * 2\n" for i in range(1200))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "split_chains"
    shutil.copytree(FIXTURES / "split_chains", root)
    for name in ("a", "b"):
        path = root / "app" / f"{name}.py"
        path.write_text(path.read_text() + _padding(name))
    return root


def _findings(root: Path, *args: str) -> set[tuple]:
    result = run_cli("check", *args, "--output-format", "json", cwd=root)
    assert result.returncode in (0, 1), result.stderr.decode()
    found = set()
    for item in json.loads(result.stdout):
        starts = tuple(sorted({chain[0]["filename"] for chain in item["chains"]}))
        found.add((item["filename"], item["location"]["row"], item["code"], starts))
    return found


def test_a_capture_time_object_is_judged_per_chain(project):
    assert _findings(project, ".", "--no-cache") == EXPECTED


@pytest.mark.parametrize(
    "variant",
    [
        ("--no-cache", "-j1"),
        ("--no-cache", "-j2"),
        ("--no-cache", "-j8"),
        ("-j1",),
        ("-j2",),
    ],
    ids=lambda v: " ".join(v),
)
def test_every_split_of_the_whole_run_agrees(project, variant):
    assert _findings(project, ".", *variant) == EXPECTED


def test_a_cold_then_warm_cache_and_every_one_file_run_agree(project):
    assert _findings(project, ".") == EXPECTED  # cold cache
    assert _findings(project, ".") == EXPECTED  # warm
    for name in ("app/a.py", "app/b.py", "app/chains.py"):
        expected = {f for f in EXPECTED if f[0] == name or name in f[3]}
        assert _findings(project, name) == expected, name
        assert _findings(project, name, "--no-cache") == expected, name
