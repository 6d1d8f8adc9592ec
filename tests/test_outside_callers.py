"""TRC408 through a helper that returns the trace id: a call written in a function some run
searches for captures (a candidate chunk of a file the prefilter admits) is judged by the run
whose share holds it; only calls elsewhere are found by searching for the helper's callers,
and that search reads no candidate chunk (`CallResolver.spelled_calls` with `skipped`). So a
group never depends on another group's candidate files, and an edit of one reruns only its
own group. Every cached run is compared with a `--no-cache` run of the same tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from trace_lint.driver import parallel
from trace_lint.driver.cache import ResultCache

from .cache_entries import payload
from .test_read_parts import EngineRoots, _run

# Two models of one shape (as tt-metal's generators are): each captures in a method that
# returns the trace id, called through `self` by the method that replays it.
GENERATOR = '''\
import ttnn


class Generator:
    def __init__(self, model, device):
        self.model = model
        self.device = device
        self.trace_id = None

    def _capture_trace(self, x):
        self.model(x)
        trace_id = ttnn.begin_trace_capture(self.device, cq_id=0)
        out = self.model(x)
        ttnn.end_trace_capture(self.device, trace_id, cq_id=0)
        return trace_id, out

    def decode(self, x, host):
        self.trace_id, self.out = self._capture_trace(x)
        {between}
        ttnn.execute_trace(self.device, self.trace_id, cq_id=0)
        return self.out
'''

CAPTURE = '''\
import ttnn


def capture(device, model, x):
    model(x)
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    out = model(x)
    ttnn.end_trace_capture(device, tid, cq_id=0)
    return tid, out
'''

# No capture API: the prefilter does not admit it, so only the search finds its calls.
RUNNER = '''\
import ttnn

from pkg.capture import capture


def run(device, model, x, host):
    {body}
'''

CALLER = '''tid, out = capture(device, model, x)
    extra = ttnn.from_torch(host, device=device)
    ttnn.execute_trace(device, tid, cq_id=0)
    return out, extra'''

ALLOCATION = "scratch = ttnn.from_torch(host, device=self.device)"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "GROUP_BYTES", 1)  # a group per candidate file
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.trace-lint]\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "gen_a.py").write_text(GENERATOR.format(between=ALLOCATION))
    (root / "pkg" / "gen_b.py").write_text(GENERATOR.format(between="pass"))
    (root / "pkg" / "capture.py").write_text(CAPTURE)
    (root / "pkg" / "runner.py").write_text(RUNNER.format(body=CALLER))
    monkeypatch.chdir(root)
    return root


def _codes(findings) -> list[tuple[str, int, str]]:
    return sorted((f[0], f[1], f[2]) for f in findings if f[2] == "TRC408")


def _after_edit(project: Path, tmp_path: Path, monkeypatch, path: str, text: str):
    cache = ResultCache(tmp_path / "cache")
    _run(project, cache)
    roots = EngineRoots(monkeypatch)
    (project / path).write_text(text)
    cached = _run(project, cache)
    runs = list(roots.runs)
    assert cached == _run(project)
    return cached[0], runs


def test_calls_in_candidates_and_elsewhere_are_both_judged(project, tmp_path):
    expected = [("pkg/gen_a.py", 19, "TRC408"), ("pkg/runner.py", 8, "TRC408")]
    assert _codes(_run(project)[0]) == expected
    assert _codes(_run(project, ResultCache(tmp_path / "cache"))[0]) == expected


def test_the_prefilter_off_judges_the_same(project, monkeypatch):
    expected = _run(project)
    monkeypatch.setenv("TRACE_LINT_PREFILTER", "off")
    assert _run(project) == expected


def test_no_group_reads_another_groups_candidate_chunks(project, tmp_path):
    _run(project, ResultCache(tmp_path / "cache"))
    (entry,) = (tmp_path / "cache").glob("analysis-*")
    groups = {tuple(g["members"]): g for g in payload(entry.read_text())["groups"]}
    for own, other in (("pkg/gen_a.py", "pkg/gen_b.py"), ("pkg/gen_b.py", "pkg/gen_a.py")):
        group = groups[(own,)]
        assert "_capture_trace" in group["outside"] and "_capture_trace" not in group["calls"]
        assert other not in group["dependent"]
    # The capture helper's group searched for its callers and read the runner's.
    assert "capture" in groups[("pkg/capture.py",)]["outside"]
    assert "pkg/runner.py" in groups[("pkg/capture.py",)]["dependent"]


def test_an_edit_of_a_candidate_chunk_reruns_only_its_group(project, tmp_path, monkeypatch):
    text = GENERATOR.format(between=ALLOCATION).replace("        self.trace_id = None\n", "        self.trace_id = None\n        self.steps = 0\n")
    found, runs = _after_edit(project, tmp_path, monkeypatch, "pkg/gen_b.py", text)
    assert runs == [["pkg/gen_b.py"]]
    assert _codes(found) == [("pkg/gen_a.py", 19, "TRC408"), ("pkg/gen_b.py", 20, "TRC408"), ("pkg/runner.py", 8, "TRC408")]


# A caller of gen_a's capturing method: no other search (TRC404's callers of a region
# function, say) looks for that name, so only the search outside candidates can find it.
METHOD_CALLER = """

from pkg.gen_a import Generator


def replay(generator: Generator, device, x, host):
    tid, out = generator._capture_trace(x)
    extra = ttnn.from_torch(host, device=device)
    ttnn.execute_trace(device, tid, cq_id=0)
    return out, extra
"""


def test_a_new_caller_in_a_file_the_prefilter_does_not_admit_is_found(project, tmp_path, monkeypatch):
    found, runs = _after_edit(project, tmp_path, monkeypatch, "pkg/runner.py", RUNNER.format(body=CALLER) + METHOD_CALLER)
    assert ["pkg/gen_a.py"] in runs
    assert ("pkg/runner.py", 18, "TRC408") in _codes(found)


def test_a_new_caller_outside_the_candidate_chunks_of_an_admitted_file_is_found(project, tmp_path, monkeypatch):
    # A top-level def of gen_b that names no capture API: not a candidate chunk.
    found, runs = _after_edit(project, tmp_path, monkeypatch, "pkg/gen_b.py", GENERATOR.format(between="pass") + METHOD_CALLER)
    assert ["pkg/gen_a.py"] in runs
    assert ("pkg/gen_b.py", 29, "TRC408") in _codes(found)


def test_a_changed_text_is_outlined_once_for_every_ask(monkeypatch):
    """`ChangedText.keeps` and `calls_outside_candidates` read one outline of the text (and
    a text that does not decode is decoded once)."""
    from trace_lint.driver.cache import ChangedText
    from trace_lint.frontend import source
    from trace_lint.semantic.project import ModuleInfo

    decodes = []
    real = source.decode
    monkeypatch.setattr(source, "decode", lambda data: decodes.append(data) or real(data))
    data = b"def used(x):\n    return x\n\n\ndef other(y):\n    return used(y)\n"
    text = ChangedText(data, "pkg/helpers.py", ("pkg/helpers.py", ("pkg.helpers",)), lambda data, probe: None)
    before = ModuleInfo.parsed_count
    assert not text.keeps((("pkg.helpers",), False, "an outline digest of other text", ()))
    assert text.calls_outside_candidates({"used"})
    assert not text.calls_outside_candidates({"missing"})
    assert (ModuleInfo.parsed_count - before, len(decodes)) == (1, 1)

    broken = ChangedText(b'x = "\xff"\n', "pkg/broken.py", ("pkg/broken.py", ("pkg.broken",)), lambda data, probe: None)
    for _ in range(2):
        assert broken.calls_outside_candidates({"used"})
        assert not broken.keeps((("pkg.broken",), False, "", ()))
    assert len(decodes) == 2
