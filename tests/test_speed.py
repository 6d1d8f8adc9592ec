"""Prefilter, result cache and parallel checking: same findings as the plain serial run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trace_lint.driver import parallel
from trace_lint.frameworks import prefilter_for
from trace_lint.semantic.project import ModuleInfo
from trace_lint.driver.cache import ResultCache
from trace_lint.driver.checker import check
from trace_lint.core.config import Settings, load_settings

FIXTURES = Path(__file__).parent / "fixtures"
sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
from gen_tree import generate  # noqa: E402

from .cache_entries import header  # noqa: E402


def _dump(findings) -> list[dict]:
    return [f.to_json() for f in findings]


def _admits(text: str, name: str = "app.mod", settings: Settings = Settings()) -> bool:
    return prefilter_for(settings).admits(text.encode(), name, False)


@pytest.mark.parametrize(
    "text",
    [
        "import ttnn\ntid = ttnn.begin_trace_capture(d)\n",
        "import ttnn as tt\ntt . begin_trace_capture(d)\n",
        "from ttnn import (\n    relu,  # why\n    begin_trace_capture as btc,\n)\nbtc(d)\n",
        "import torch\nwith torch.cuda.graph(g):\n    pass\n",
        "import torch.cuda as tc\nwith tc.graph(g):\n    pass\n",
        "from torch import cuda\nwith cuda.graph(g):\n    pass\n",
        "from torch.cuda import graph\nwith graph(g):\n    pass\n",
        "def f(torch):\n    return torch.cuda.make_graphed_callables(m, (x,))\n",
        "g.capture_begin()\n",
        "def f():  # trace-lint: captured\n    pass\n",
        "from trace_lint import captured\n@captured\ndef f():\n    pass\n",
        # Without the import the engine still takes the decorator as written (found by the
        # large fuzz run: a mutant that deleted `import trace_lint`).
        "@trace_lint.captured\ndef f():\n    pass\n",
    ],
)
def test_prefilter_admits_every_spelling_of_a_capture(text):
    assert _admits(text)


@pytest.mark.parametrize(
    "text",
    [
        "import torch\nx = torch.cuda.is_available()\n",
        "# the fx graph of a model\nimport torch\ngraph = build()\n",
        "from mylib import graph\nwith graph(g):\n    pass\n",
        "import torch\ny = torch.relu(x)  # captured later\n",
    ],
)
def test_prefilter_leaves_out_files_without_a_capture(text):
    assert not _admits(text)


def test_prefilter_relative_import_inside_the_package_resolves():
    # torch/cuda/__init__.py: `from .graphs import graph` binds torch.cuda.graphs.graph
    text = b"from .graphs import graph\nwith graph(g):\n    pass\n"
    assert prefilter_for(Settings()).admits(text, "torch.cuda", True)
    assert not prefilter_for(Settings()).admits(text, "other.pkg", True)


def test_prefilter_configured_names_are_candidates():
    settings = Settings(capture_helpers=("tools.trace.capture_trace",), captured_functions=("app.model.step",))
    assert _admits("from tools.trace import capture_trace\ncapture_trace(dev, run)\n", settings=settings)
    assert _admits("def step(x):\n    return x\n", settings=settings)
    assert not _admits("def other(x):\n    return x\n", settings=settings)


_UNRELATED = "\n\ndef unrelated(x):\n    return x + 1\n"


@pytest.mark.parametrize(
    "text,expected",
    [
        ("import ttnn\ndef f(d):\n    return ttnn.begin_trace_capture(d)\n", True),
        ("import ttnn as tt\ndef f(d):\n    return tt . begin_trace_capture(d)\n", True),
        ("from ttnn import begin_trace_capture as btc\ndef f(d):\n    return btc(d)\n", True),
        ("from torch.cuda import graph\ndef f(g):\n    with graph(g):\n        pass\n", True),
        ("import torch.cuda as tc\nclass M:\n    def f(self, g):\n        with tc.graph(g):\n            pass\n", True),
        ("def f(d):\n    from ttnn import begin_trace_capture as b\n    return b(d)\n", True),
        ("def f(g):\n    g.capture_begin()\n", True),
        ("from mylib import graph\ndef f(g):\n    with graph(g):\n        pass\n", False),
        ("import torch\ndef f(x):\n    return torch.relu(x)\n", False),
    ],
)
def test_only_definitions_that_can_start_captured_code_are_parsed(text, expected):
    module = ModuleInfo(Path("app/mod.py"), "app.mod", "app/mod.py", text=text + _UNRELATED)
    test = prefilter_for(Settings()).chunk_test(module)
    names = [f.name for f in module.iter_functions(test)]
    assert ("unrelated" in names) is False
    assert bool(names) is expected, names


def test_prefilter_misses_no_root_in_the_fixtures(monkeypatch):
    """Every module in which an unfiltered engine finds a capture region or root is admitted."""
    from trace_lint.capture.engine import Engine
    from trace_lint.frontend.discovery import discover, display_path, module_name
    from trace_lint.semantic.project import ModuleInfo, Project
    from trace_lint.rules import ALL_RULES

    checked = 0
    for config in sorted(FIXTURES.glob("*/pyproject.toml")):
        settings = load_settings(config.parent)
        files = discover([config.parent], settings).files
        modules = [ModuleInfo(p, module_name(p), display_path(p)) for p in files]
        project = Project(modules)
        engine = Engine(project, settings, ALL_RULES, roots_in=modules)
        engine.run()
        holding = {r.module.display_path for r in engine.regions}
        holding |= {root.related.filename for root in engine.roots}
        prefilter = prefilter_for(settings)
        for module in modules:
            if module.display_path in holding:
                checked += 1
                assert prefilter.admits(project.raw_bytes(module), module.name, module.is_package), module.display_path
    assert checked >= 5


def test_cached_run_gives_the_same_findings(tmp_path):
    tree = generate(tmp_path / "tree", 6)
    settings = load_settings(tree)
    cache = ResultCache(tmp_path / "cache")
    plain = check([tree], settings)
    first = check([tree], settings, cache=cache)
    assert list((tmp_path / "cache").glob("results-*.json"))
    second = check([tree], settings, cache=cache)
    assert plain.findings and _dump(plain.findings) == _dump(first.findings) == _dump(second.findings)
    assert plain.files_checked == second.files_checked


def test_cache_is_invalidated_by_an_edit_in_another_file(tmp_path):
    tree = generate(tmp_path / "tree", 2)
    settings = load_settings(tree)
    cache = ResultCache(tmp_path / "cache")
    before = check([tree], settings, cache=cache)
    layers = tree / "dense" / "layers_1.py"
    # The finding is in a callee: the file holding the capture did not change.
    layers.write_text(layers.read_text().replace("host = ttnn.to_torch(y)", "host = y"))
    after = check([tree], settings, cache=cache)
    assert _dump(after.findings) == _dump(check([tree], settings).findings)
    assert _dump(after.findings) != _dump(before.findings)


@pytest.mark.parametrize("damage", ["{not json", '{"format": 1, "version": "0.0.0-other", "key": "%s", "files_checked": 1, "findings": []}', '{"format": 1, "version": "%v", "key": "%s", "files_checked": 1, "findings": [{"code": 3}]}'])
def test_damaged_or_foreign_cache_is_rebuilt(tmp_path, damage):
    from trace_lint import __version__

    tree = generate(tmp_path / "tree", 2)
    settings = load_settings(tree)
    cache = ResultCache(tmp_path / "cache")
    good = check([tree], settings, cache=cache)
    (entry,) = (tmp_path / "cache").glob("results-*.json")
    key = entry.stem[len("results-"):]
    entry.write_text(damage.replace("%s", key).replace("%v", __version__))
    again = check([tree], settings, cache=cache)
    assert _dump(again.findings) == _dump(good.findings)
    assert header(entry.read_text())["version"] == __version__  # rewritten


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_parallel_run_matches_serial(tmp_path, monkeypatch, start):
    import multiprocessing

    if start not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {start} here")
    # fork: workers start from the parent's project; spawn: they rebuild it from the file list.
    monkeypatch.setattr(parallel, "_worker_context", lambda: (multiprocessing.get_context(start), start == "fork"))
    monkeypatch.setattr(parallel, "MIN_CANDIDATES", 2)
    monkeypatch.setattr(parallel, "MIN_CANDIDATE_BYTES", 0)
    calls = []
    real = parallel.run_parallel

    def spy(*args, **kwargs):
        result = real(*args, **kwargs)
        calls.append(result is not None)
        return result

    monkeypatch.setattr(parallel, "run_parallel", spy)
    for root in [generate(tmp_path / "tree", 8), FIXTURES / "interprocedural", FIXTURES / "lexical_rules"]:
        settings = load_settings(root)
        serial = check([root], settings, jobs=1)
        sharded = check([root], settings, jobs=2)
        assert _dump(sharded.findings) == _dump(serial.findings), root
        assert sharded.errors == serial.errors
    assert calls and calls[0], "the generated tree must really run in workers"


def test_shards_balance_by_size():
    shares = parallel.shard([10, 1, 1, 8, 2], 2)
    assert sorted(i for s in shares for i in s) == [0, 1, 2, 3, 4]
    totals = sorted(sum([10, 1, 1, 8, 2][i] for i in s) for s in shares)
    assert totals == [11, 11]


def test_warm_run_does_not_import_libcst(tmp_path):
    tree = generate(tmp_path / "tree", 2)
    script = (
        "import sys\nfrom pathlib import Path\n"
        "from trace_lint.driver.cache import ResultCache\nfrom trace_lint.driver.checker import check\nfrom trace_lint.core.config import load_settings\n"
        f"tree = Path({str(tree)!r})\n"
        "result = check([tree], load_settings(tree), cache=ResultCache(Path(sys.argv[1])))\n"
        "print(len(result.findings), 'libcst' in sys.modules)\n"
    )
    cold = subprocess.run([sys.executable, "-c", script, str(tmp_path / "c")], capture_output=True, text=True, check=True)
    warm = subprocess.run([sys.executable, "-c", script, str(tmp_path / "c")], capture_output=True, text=True, check=True)
    count, imported = cold.stdout.split()
    assert imported == "True" and int(count) > 0
    assert warm.stdout.split() == [count, "False"]


@pytest.mark.parametrize("output_format", ["full", "github", "junit"])
def test_a_warm_run_renders_the_rules_advice_without_libcst(output_format, tmp_path):
    tree = generate(tmp_path / "tree", 2)
    script = (
        "import sys\nfrom trace_lint.cli import app\n"
        "try:\n    app(sys.argv[1:], standalone_mode=False)\nexcept SystemExit:\n    pass\n"
        "print('libcst' in sys.modules, file=sys.stderr)\n"
    )
    command = [sys.executable, "-c", script, "check", str(tree), "--output-format", output_format, "--exit-zero"]
    cold = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    warm = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert "help: " in cold.stdout and cold.stderr.split()[-1] == "True"
    assert warm.stdout == cold.stdout and warm.stderr.split()[-1] == "False"


def test_a_tree_without_capture_code_is_checked_without_libcst(tmp_path):
    tree = tmp_path / "plain"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "__init__.py").write_text("")
    (tree / "pkg" / "model.py").write_text("import torch\n\n\ndef forward(x):\n    return torch.relu(x).item()\n")
    script = (
        "import sys\nfrom pathlib import Path\n"
        "from trace_lint.driver.checker import check\nfrom trace_lint.core.config import load_settings\n"
        "tree = Path(sys.argv[1])\n"
        "result = check([tree], load_settings(tree))\n"
        "print(len(result.findings), result.files_checked, 'libcst' in sys.modules, 'trace_lint.rules' in sys.modules)\n"
    )
    run = lambda: subprocess.run([sys.executable, "-c", script, str(tree)], capture_output=True, text=True, check=True).stdout.split()
    assert run() == ["0", "2", "False", "False"]
    # A suppression comment may be unused (a finding): then the rules run.
    (tree / "pkg" / "model.py").write_text("x = 1  # noqa: TRC101\n")
    assert run() == ["1", "2", "True", "True"]
    # So does a file that can hold a capture.
    (tree / "pkg" / "model.py").write_text("import ttnn\n\n\ndef run(device):\n    ttnn.begin_trace_capture(device, cq_id=0)\n")
    assert run()[2:] == ["True", "True"]


def test_cli_no_cache_writes_nothing_and_cache_dir_is_honoured(tmp_path):
    tree = generate(tmp_path / "tree", 2)
    (tree / "pyproject.toml").write_text('[tool.trace-lint]\ncache-dir = "elsewhere"\n')
    command = [sys.executable, "-m", "trace_lint", "check", str(tree), "--output-format", "json"]
    first = subprocess.run([*command, "--no-cache"], capture_output=True, text=True, cwd=tmp_path)
    assert not (tree / "elsewhere").exists() and not (tree / ".trace-lint-cache").exists()
    second = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    third = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert list((tree / "elsewhere").glob("results-*.json"))
    assert first.returncode == second.returncode == third.returncode == 1
    assert json.loads(first.stdout) == json.loads(second.stdout) == json.loads(third.stdout)
    assert first.stderr == third.stderr == ""  # no progress in pipes


def test_tool_fingerprint_changes_when_trace_lint_itself_is_edited():
    import os
    from pathlib import Path

    import trace_lint.driver.cache as cache_module

    source = Path(cache_module.__file__).resolve().parent.parent / "rules" / "base.py"
    before = os.stat(source)
    cache_module._TOOL_FINGERPRINT.clear()
    first = cache_module.tool_fingerprint()
    try:
        os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
        cache_module._TOOL_FINGERPRINT.clear()
        assert cache_module.tool_fingerprint() != first
    finally:
        os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))
        cache_module._TOOL_FINGERPRINT.clear()
    assert cache_module.tool_fingerprint() == first


def test_the_floors_replay_what_a_cold_run_parsed(tmp_path):
    """bench/floors.py's lower bounds redo the run's own parses: the chunks it records are
    the capture file's, and every stage runs on them."""
    root = tmp_path / "examples"
    shutil.copytree(Path(__file__).parent.parent / "examples", root)
    script = Path(__file__).parent.parent / "bench" / "floors.py"
    recorded = tmp_path / "floors.json"
    subprocess.run([sys.executable, str(script), "record", str(recorded), str(root)], cwd=root, check=True, capture_output=True)
    data = json.loads(recorded.read_text())
    parsed = {chunk[0] for chunk in data["chunks"]}
    assert any(path.endswith("generator.py") or "tinydecoder" in path for path in parsed), parsed
    assert "libcst" in data["modules"] and any(name.startswith("trace_lint.rules") for name in data["modules"])
    assert any(chunk[3] for chunk in data["chunks"])  # the region's function was positioned
    for stage in ("start", "imports", "inputs", "cold"):
        subprocess.run([sys.executable, str(script), stage, str(recorded)], cwd=root, check=True, capture_output=True)
    edited = root / sorted(parsed)[0]
    subprocess.run([sys.executable, str(script), "edit", str(recorded), str(edited)], cwd=root, check=True, capture_output=True)


def test_the_cache_dir_variable_wins_over_the_config(tmp_path):
    tree = generate(tmp_path / "tree", 2)
    (tree / "pyproject.toml").write_text('[tool.trace-lint]\ncache-dir = "elsewhere"\n')
    command = [sys.executable, "-m", "trace_lint", "check", str(tree), "--output-format", "json"]
    environment = {**os.environ, "TRACE_LINT_CACHE_DIR": "ci-cache"}  # relative to the current folder
    first = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=environment)
    second = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=environment)
    assert list((tmp_path / "ci-cache").glob("results-*.json"))
    assert not (tree / "elsewhere").exists() and not (tree / ".trace-lint-cache").exists()
    assert first.returncode == second.returncode == 1 and json.loads(first.stdout) == json.loads(second.stdout)
