"""Frameworks are plug-ins: the prefilter and the engine ask each one in `FRAMEWORKS` where its
captures are; none of them names ttnn or torch itself."""

from __future__ import annotations

from trace_lint import frameworks
from trace_lint.frameworks import prefilter_for
from trace_lint.core.api_tables import tables
from trace_lint.core.config import Settings
from trace_lint.frameworks import FRAMEWORKS, Framework

from tests.conftest import findings_for


def test_each_framework_reads_its_own_table_section():
    for framework in FRAMEWORKS:
        assert framework.table is getattr(tables(), framework.section)
        names = {name for value in vars(framework.table).values() if isinstance(value, frozenset) for name in value}
        assert set(framework.prefilter_targets()) <= names, framework.section


class RecorderFramework(Framework):
    """A library whose captures are `with recorder.capture():` blocks."""

    section = "torch"  # any table section: this plug-in names its APIs itself
    kinds = frozenset({"cuda-graph"})

    def prefilter_targets(self):
        return ["recorder.capture"]

    def regions(self, project, function, settings):
        from trace_lint.frameworks.torch.regions import find_cuda_graph_regions

        return find_cuda_graph_regions(project, function, ("recorder.capture",))


SOURCE = """\
import recorder


def step(x):
    with recorder.capture():
        y = x.relu()
        return y.item()
"""


def test_a_plugged_in_framework_is_found_by_prefilter_and_engine(tmp_path, monkeypatch):
    def admitted() -> bool:
        return prefilter_for(Settings()).admits(SOURCE.encode(), "app.step", False)

    assert not admitted()
    assert findings_for(SOURCE, tmp_path, select=("TRC102",)) == []
    monkeypatch.setattr(frameworks, "FRAMEWORKS", (*FRAMEWORKS, RecorderFramework()))
    assert admitted()
    found = findings_for(SOURCE, tmp_path, select=("TRC102",))
    assert [(f.location.row, f.code) for f in found] == [(7, "TRC102")]


class NamingRecorderFramework(RecorderFramework):
    """The same library, saying what its calls mean: rules ask it, they do not name it."""

    def capture_begins(self):
        return frozenset({"recorder.capture"})


NESTED = """\
import recorder


def step(x):
    with recorder.capture():
        y = x.relu()
        with recorder.capture():
            z = y.relu()
    return z
"""


def test_rules_ask_a_plugged_in_framework_what_its_calls_mean(tmp_path, monkeypatch):
    monkeypatch.setattr(frameworks, "FRAMEWORKS", (*FRAMEWORKS, RecorderFramework()))
    assert findings_for(NESTED, tmp_path, select=("TRC406",)) == []
    monkeypatch.setattr(frameworks, "FRAMEWORKS", (*FRAMEWORKS, NamingRecorderFramework()))
    found = findings_for(NESTED, tmp_path, select=("TRC406",))
    assert [(f.location.row, f.code) for f in found] == [(7, "TRC406")]
