"""Frameworks are plug-ins: the prefilter and the engine ask each one in `FRAMEWORKS` where its
captures are, and the rules ask each one what a call does (its effects); none of them names
ttnn or torch itself."""

from __future__ import annotations

from dataclasses import replace

from trace_lint import frameworks
from trace_lint.frameworks import prefilter_for
from trace_lint.core.api_tables import tables
from trace_lint.core.config import Settings
from trace_lint.frameworks import FRAMEWORKS, CallEffect, Effect, Framework

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


class RecorderRegions(Framework):
    """A third library, `recorder`: its captures are `with recorder.record(dev):` blocks. It
    says where its captures are, and nothing about what its calls do."""

    section = "recorder"  # no section of data/api.toml: the plug-in names its own APIs
    kinds = frozenset({"recorder"})

    def prefilter_targets(self):
        return ["recorder.record"]

    def regions(self, project, function, settings):
        from trace_lint.frameworks.torch.regions import find_cuda_graph_regions

        # The context-manager shape of a region, found for its own API and kind.
        return [replace(region, kind="recorder") for region in find_cuda_graph_regions(project, function, ("recorder.record",))]


class Recorder(RecorderRegions):
    """The same library, declaring what its calls do."""

    EFFECTS = {
        "recorder.upload": (Effect.TRANSFER, "upload before `recorder.record`"),
        "recorder.download": (Effect.READ, "download after `recorder.replay`"),
        "recorder.wait": (Effect.SYNC, "the recording cannot hold it"),
        "recorder.buffer": (Effect.CREATION, "make it before `recorder.record`"),
    }

    def call_effects(self, call, name, unit):
        if name not in self.EFFECTS or not self.in_own_capture(unit):
            return ()
        effect, advice = self.EFFECTS[name]
        return (CallEffect(effect, f"`{name}`", advice),)


RECORDED = """\
import recorder


def finish(y):
    return recorder.download(y)


def step(dev, host):
    with recorder.record(dev):
        x = recorder.upload(host)
        scratch = recorder.buffer(8)
        y = recorder.add(x, scratch)
        recorder.wait(dev)
        out = finish(y)
    recorder.wait(dev)
    return out, recorder.download(out)
"""
FAMILY_CODES = ("TRC101", "TRC102", "TRC103", "TRC301")


def test_a_third_framework_declares_its_own_transfers_reads_syncs_and_creations(tmp_path, monkeypatch):
    def found() -> set[tuple[int, str]]:
        return {(f.location.row, f.code) for f in findings_for(RECORDED, tmp_path, select=FAMILY_CODES)}

    assert found() == set()  # not a capture of any framework in FRAMEWORKS
    monkeypatch.setattr(frameworks, "FRAMEWORKS", (*FRAMEWORKS, RecorderRegions()))
    assert found() == set()  # a capture now, but no framework says what its calls do
    monkeypatch.setattr(frameworks, "FRAMEWORKS", (*FRAMEWORKS, Recorder()))
    # The calls in the region and in the work it reaches (`finish`); not those after it.
    assert found() == {(5, "TRC102"), (10, "TRC101"), (11, "TRC301"), (13, "TRC103")}
    messages = {f.code: f.message for f in findings_for(RECORDED, tmp_path, select=FAMILY_CODES)}
    assert messages["TRC102"].startswith("`recorder.download` reads a device tensor back") and "download after `recorder.replay`" in messages["TRC102"]


class FreeingRecorder(Recorder):
    """The same library, declaring its free too (`recorder.free(t)`)."""

    def freed(self, call, name):
        return call.args[0].value if name == "recorder.free" and call.args else None


FREED = """\
import recorder


def release(t):
    recorder.free(t)


def step(dev, host):
    x = recorder.upload(host)
    with recorder.record(dev):
        y = recorder.add(x, x)
        recorder.free(x)
        tmp = recorder.add(y, y)
        out = recorder.add(tmp, y)
        recorder.free(tmp)
        release(out)
    return out
"""


def test_a_third_framework_declares_its_own_frees(tmp_path, monkeypatch):
    # A free of the trace input (line 12) and of its output through a project helper (16) are
    # TRC302; the free of an intermediate made and last used in the region (15) is not.
    def found() -> set[tuple[int, str]]:
        return {(f.location.row, f.code) for f in findings_for(FREED, tmp_path, select=("TRC302",))}

    monkeypatch.setattr(frameworks, "FRAMEWORKS", (*FRAMEWORKS, Recorder()))
    assert found() == set()  # a capture, but no framework says what frees
    monkeypatch.setattr(frameworks, "FRAMEWORKS", (*FRAMEWORKS, FreeingRecorder()))
    assert found() == {(12, "TRC302"), (16, "TRC302")}


class OwningRecorder(Recorder):
    """The same library, saying which module is its own: its calls are library calls that
    launch device programs (`Framework.launches_program`), not unknown names."""

    modules = frozenset({"recorder"})


WARMED = """\
import recorder


def work(x):
    return recorder.add(x, x)


def step(dev, x):
    with recorder.record(dev):
        y = work(x)
    return y
"""


def test_a_third_framework_says_which_calls_launch_device_programs(tmp_path, monkeypatch):
    # `work` runs the framework's op and first runs inside the capture: TRC404 (line 9), as
    # soon as the plug-in says `recorder` is its module.
    def found() -> set[tuple[int, str]]:
        return {(f.location.row, f.code) for f in findings_for(WARMED, tmp_path, select=("TRC404",))}

    monkeypatch.setattr(frameworks, "FRAMEWORKS", (*FRAMEWORKS, Recorder()))
    assert found() == set()
    monkeypatch.setattr(frameworks, "FRAMEWORKS", (*FRAMEWORKS, OwningRecorder()))
    assert found() == {(9, "TRC404")}


PASSED_IN = """\
def step(recorder, dev, host):
    with recorder.record(dev):
        x = recorder.upload(host)
    return x
"""


def test_a_parameter_named_like_a_third_frameworks_module_stands_for_it(tmp_path, monkeypatch):
    # The module handed in as a parameter of its name (as tt-check passes `ttnn` in) stands
    # for it once the plug-in says the module is its own: the prefilter admits the file and
    # the region is found (TRC101, line 3).
    def admitted() -> bool:
        return prefilter_for(Settings()).admits(PASSED_IN.encode(), "app.step", False)

    def found() -> set[tuple[int, str]]:
        return {(f.location.row, f.code) for f in findings_for(PASSED_IN, tmp_path, select=FAMILY_CODES)}

    monkeypatch.setattr(frameworks, "FRAMEWORKS", (*FRAMEWORKS, Recorder()))
    assert not admitted()
    assert found() == set()
    monkeypatch.setattr(frameworks, "FRAMEWORKS", (*FRAMEWORKS, OwningRecorder()))
    assert admitted()
    assert found() == {(3, "TRC101")}


def test_no_rule_names_a_framework():
    """Rules subscribe to effects: none reads a framework's table section (`tables().ttnn`,
    `context.torch`) or tests a framework's capture kind (`region.kind == "ttnn"`)."""
    import ast
    from pathlib import Path

    import trace_lint.rules

    sections = {framework.section for framework in FRAMEWORKS}
    kinds = {kind for framework in FRAMEWORKS for kind in (*framework.kinds, framework.callable_kind)} - {"declared"}
    named = []
    for path in sorted(Path(trace_lint.rules.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in sections:
                named.append(f"{path.name}:{node.lineno}: .{node.attr}")
            elif isinstance(node, ast.Constant) and node.value in sections | kinds:
                named.append(f"{path.name}:{node.lineno}: {node.value!r}")
    assert named == []


def test_the_semantic_model_names_no_framework():
    """semantic/ comes before the plug-ins: it reads no framework's table section
    (`tables().ttnn`) and names no framework module (`"torch"`, `"ttnn."`). What a framework
    call does (a free, a device program), which values are its tensors and which names stand
    for its module are the plug-ins' answers, handed in (`semantic/library.py`)."""
    import ast
    from pathlib import Path

    import trace_lint.semantic

    names = {framework.section for framework in FRAMEWORKS} | {module for framework in FRAMEWORKS for module in framework.modules}
    prefixes = tuple(f"{name}." for name in names)
    named = []
    for path in sorted(Path(trace_lint.semantic.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in names:
                named.append(f"{path.name}:{node.lineno}: .{node.attr}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (node.value in names or node.value.startswith(prefixes)):
                named.append(f"{path.name}:{node.lineno}: {node.value!r}")
    assert named == []


CLASS_HELPER = """\
import ttnn


class Tracer:
    def __init__(self, fn):
        self._fn = fn

    def capture(self, device):
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        self._fn()
        ttnn.end_trace_capture(device, tid, cq_id=0)
        return tid


def model():
    return ttnn.relu(None)


def run(device):
    tracer = Tracer(model)
    return tracer.capture(device)
"""


def test_the_advice_is_the_framework_of_the_capture(tmp_path):
    # A class helper's capture is its method's: ttnn's words, not another framework's.
    found = findings_for(CLASS_HELPER, tmp_path, select=("TRC404",))
    assert [(f.location.row, f.code) for f in found] == [(20, "TRC404")]
    ttnn = next(f for f in FRAMEWORKS if "ttnn" in f.kinds)
    assert found[0].message.endswith(ttnn.warm_up_advice)
