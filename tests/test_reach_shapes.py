"""What captured code reaches, and which values are device values (RULES.md "Reached through
calls", "Capture-state guards", "Host metadata is not a device value", TRC202): exact (file,
line, code) sets from the CLI on fixture projects, one per shape of real code the analysis
used to miss or misjudge."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .cli_helpers import FIXTURES, finding_set, run_cli

REACH = FIXTURES / "reach"


def test_layers_reached_through_enumerate_zip_reversed_and_dict_items():
    # `for i, layer in enumerate(...)`, `for norm, expert in zip(...)` (each name its own
    # list: Norm's methods stay silent), `reversed(...)`, `.items()` of a dict attribute, a
    # comprehension's target, a slice (`self.blocks[1:]`), and a module kept as
    # `Decoder().cuda().eval()`.
    assert finding_set(REACH / "layer_containers") == {
        ("layers.py", 6, "TRC102"),
        ("layers.py", 20, "TRC102"),
        ("layers.py", 25, "TRC102"),
        ("layers.py", 30, "TRC102"),
        ("layers.py", 35, "TRC103"),
        ("layers.py", 41, "TRC102"),
        ("graphed.py", 6, "TRC102"),
    }


def test_class_method_called_on_the_class_writes_class_attributes():
    # `Buffers.set_len(n)` defined on a base class runs with `cls` bound to Buffers, and
    # `cls._grow(n)` follows; an instance a class method makes (`record.n = n`) and a static
    # method are not state that outlives the capture.
    assert finding_set(REACH / "class_methods") == {
        ("buffers.py", 7, "TRC203"),
        ("buffers.py", 13, "TRC203"),
    }


def test_branches_on_tensor_methods():
    # An annotated tensor parameter, a tensor made with `device=`, one updated in place
    # (`done |= ...`), and the outputs of torch.nn modules; not an unannotated parameter, a
    # host buffer, or host metadata.
    assert finding_set(REACH / "tensor_methods") == {
        ("sampler.py", line, "TRC202") for line in (14, 17, 21, 24, 27)
    }


def test_host_metadata_in_function_form_and_through_locals():
    # `ttnn.get_memory_config(y)`, `ttnn.is_tensor_storage_on_device(y)` and
    # `ttnn.is_sharded(y)` are metadata (no TRC202); `addr = x.buffer_address()` and a width
    # from `x.shape` are metadata where they are read (no TRC201). Still reported: a device
    # value (`ttnn.max`) and a parameter's value, directly or through a local.
    assert finding_set(REACH / "metadata_values") == {
        ("block.py", 11, "TRC202"),
        ("block.py", 30, "TRC201"),
        ("block.py", 33, "TRC201"),
        ("block.py", 33, "TRC202"),
    }


def test_capture_state_guard_before_a_region_does_not_silence_it():
    # `if capturing(): return` / `raise` ahead of a capture concerns an outer capture: the
    # region after it, and what it reaches, are judged. Guarded code in the captured work
    # (`log_stats`, `if not capturing():`) stays silent.
    assert finding_set(REACH / "capture_state_guards") == {
        ("runner.py", 15, "TRC102"),
        ("runner.py", 29, "TRC103"),
        ("runner.py", 40, "TRC102"),
    }


def test_capture_state_guard_through_a_helper():
    # A project helper whose every answer is a capture query's (looked up with `getattr`,
    # through `bool(...)`, a local, another helper; `None` where it cannot tell) guards like
    # the query itself: the sync after `if state: return` (steps.py:13), the read under
    # `if not recording_again():` (18) and under `if trace_active(device): return` (53) are
    # not captured work. A helper that answers something else (`torch.cuda.is_available()`,
    # or a shape test on one path) guards nothing: lines 25 and 31 are reported.
    assert finding_set(REACH / "capture_state_helpers") == {
        ("steps.py", 25, "TRC103"),
        ("steps.py", 31, "TRC103"),
    }


def test_graph_begin_and_end_inside_nested_try_and_with():
    # `capture_begin(pool=...)` in a `try` in a `with`, a graph taken from a dict attribute,
    # a name rebound from a `None` placeholder, and a graph made unless running eagerly
    # (`None if eager else CUDAGraph()`), begun in one method; not a class of the project
    # whose methods happen to be named `capture_begin` / `capture_end`.
    assert finding_set(REACH / "graph_begin_end") == {
        ("capture.py", 18, "TRC102"),
        ("capture.py", 34, "TRC102"),
        ("capture.py", 49, "TRC102"),
        ("capture.py", 86, "TRC102"),
    }


def test_every_binding_is_followed():
    # A class defined on both branches of a module-level `if` (each one's `__call__`, not
    # its uncalled `describe`), an attribute bound by `None if disabled else Profiler()` and
    # by `cache or Cache()`.
    assert finding_set(REACH / "every_binding") == {
        ("kernels.py", 10, "TRC102"),
        ("kernels.py", 17, "TRC103"),
        ("runner.py", 8, "TRC102"),
        ("runner.py", 13, "TRC102"),
    }


def _located(result, cwd: Path) -> set[tuple[str, int, str]]:
    """(file relative to `cwd`, line, code) of a JSON run."""
    assert result.returncode in (0, 1), result.stderr.decode()
    out = set()
    for item in json.loads(result.stdout):
        filename = Path(item["filename"])
        absolute = filename if filename.is_absolute() else cwd / filename
        out.add((absolute.resolve().relative_to(cwd.resolve()).as_posix(), item["location"]["row"], item["code"]))
    return out


def _outside_any_repository(tmp_path: Path) -> tuple[Path, Path]:
    """The roots fixture copied where no repository or configuration is around it, and an
    unrelated folder beside it."""
    project = tmp_path / "project"
    shutil.copytree(REACH / "roots", project)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return project, elsewhere


def test_the_parent_of_a_named_package_is_a_source_root(tmp_path):
    # `pkg/` holds an `__init__.py`, its subfolders do not; `from pkg.sub.kernels import
    # gather` resolves by the package's own name, from the current directory above it or
    # from anywhere else.
    project, elsewhere = _outside_any_repository(tmp_path)
    expected = {("pkg/sub/kernels.py", 5, "TRC102")}
    assert _located(run_cli("check", "pkg", "--output-format", "json", "--no-cache", cwd=project), project) == expected
    named = str(project / "pkg")
    assert _located(run_cli("check", named, "--output-format", "json", "--no-cache", cwd=elsewhere), project) == expected


def test_without_configuration_or_repository_the_current_directory_is_the_project_root(tmp_path):
    # `check app` from the folder holding `app/` and `lib/`: `from lib.helpers import step`
    # resolves, and the sync in lib (reached from app's capture) is reported. Run from a
    # folder that does not hold `app/`, the named folder is the project: lib is not seen.
    project, elsewhere = _outside_any_repository(tmp_path)
    result = run_cli("check", "app", "--output-format", "json", "--no-cache", cwd=project)
    assert _located(result, project) == {("lib/helpers.py", 5, "TRC103")}
    result = run_cli("check", str(project / "app"), "--output-format", "json", "--no-cache", cwd=elsewhere)
    assert _located(result, project) == set()


def test_a_named_folder_names_its_files_before_a_stem_elsewhere():
    # `from helpers import step` in app/ is app/helpers.py, which the named folder names
    # `helpers`; tools/helpers.py (in a folder without `__init__.py`, elsewhere in the
    # repository) is `helpers` only to a script beside it, and does not make it ambiguous.
    assert finding_set(REACH / "same_stem" / "app") == {("helpers.py", 5, "TRC102")}
