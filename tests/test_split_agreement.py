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


def _padded_copy(tmp_path: Path, fixture: str, padded: tuple[str, ...]) -> Path:
    """A copy of the fixture project with the named modules of `app/` padded."""
    root = tmp_path / fixture
    shutil.copytree(FIXTURES / fixture, root)
    for name in padded:
        path = root / "app" / f"{name}.py"
        path.write_text(path.read_text() + _padding(name))
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return _padded_copy(tmp_path, "split_chains", ("a", "b"))


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


# `fixtures/split_constructor`: `Generator` stores the model it is handed (an unannotated
# parameter); its only construction, in demo.py, passes a `Transformer`, whose `decode`
# reads the device back (models.py:7). The construction is in a file that holds no capture,
# and generator.py and models.py (which do not import each other) are padded into different
# analysis groups and shards: what the model is comes from the whole project in every split.
CONSTRUCTED = {("app/models.py", 7, "TRC102", ("app/generator.py",))}


@pytest.fixture
def constructed(tmp_path: Path) -> Path:
    return _padded_copy(tmp_path, "split_constructor", ("generator", "models"))


@pytest.mark.parametrize("variant", [("--no-cache",), ("--no-cache", "-j2"), ("--no-cache", "-j8"), ("-j1",), ("-j2",)], ids=lambda v: " ".join(v))
def test_a_constructed_model_is_the_same_in_every_split(constructed, variant):
    assert _findings(constructed, ".", *variant) == CONSTRUCTED


def test_a_constructed_model_in_one_file_runs_and_after_an_edit_of_the_construction(constructed):
    assert _findings(constructed, ".") == CONSTRUCTED  # cold cache
    for name in ("app/generator.py", "app/models.py", "app/demo.py"):
        expected = {f for f in CONSTRUCTED if f[0] == name or name in f[3]}
        assert _findings(constructed, name) == expected, name
        assert _findings(constructed, name, "--no-cache") == expected, name
    # A second construction passing a model of unknown class (a factory without a return
    # annotation): the model is unknown, with the cache warm as without it.
    demo = constructed / "app" / "demo.py"
    before = demo.read_text()
    demo.write_text(before.replace("from app.models import Transformer", "from app.models import Transformer, load_transformer")
                    + "\n\ndef build_from(path, mesh_device):\n    return Generator(load_transformer(path), mesh_device)\n")
    assert _findings(constructed, ".") == set()
    assert _findings(constructed, "app/models.py") == set()
    assert _findings(constructed, ".", "--no-cache") == set()
    # The same construction added in a new file, the demo undone.
    demo.write_text(before)
    assert _findings(constructed, ".") == CONSTRUCTED
    (constructed / "app" / "serve.py").write_text(
        "from app.generator import Generator\nfrom app.models import load_transformer\n\n\n"
        "def serve(path, mesh_device):\n    return Generator(load_transformer(path), mesh_device)\n"
    )
    assert _findings(constructed, ".") == set()
    assert _findings(constructed, "app/generator.py") == set()
