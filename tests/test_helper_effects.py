"""What a callee does to what it is handed (RULES.md "Summaries"), through the real CLI: frees
through helpers, helpers that launch no device program, warm-ups frames down, the
re-allocation idiom wherever the free happens, per-iteration frees, stale inputs judged on
the flow, and the trace region of the devices that reach a capture. Exact (file, line, code)
sets, both directions: the false findings gone, the hazards reported with their chains."""

from __future__ import annotations

import json
from pathlib import Path

from .cli_helpers import FIXTURES, finding_set, run_cli

PROJECTS = FIXTURES / "helper_effects"


def findings_json(path):
    result = run_cli("check", str(path), "--output-format", "json")
    assert result.returncode in (0, 1), result.stderr.decode()
    return json.loads(result.stdout)


def test_reallocation_idiom_with_the_free_frames_down():
    # The model frees its input two frames down (model.py:7); the region then allocates the
    # next input and keeps it (realloc_runner.py:22 on `self`, :35 a local read after the end): no
    # TRC301, no TRC302. Without the re-allocation (`freed_and_not_replaced`) the model's free
    # of the trace input is TRC302 on the call that holds it, line 48.
    assert finding_set(PROJECTS / "reallocation") == {("realloc_runner.py", 48, "TRC302")}


def test_per_iteration_frees_are_intermediates():
    # `y = op(x); y.deallocate()` in a loop frees the value made in that iteration, guarded
    # (`if i != n - 1:`) or not, though `y` is returned after the second region (lines 9,
    # 18). A value carried from before the region into the loop is a trace input (line 30).
    assert finding_set(PROJECTS / "iteration_frees") == {
        ("loops.py", 17, "TRC201"),
        ("loops.py", 30, "TRC302"),
    }


def test_warm_ups_frames_down():
    # `self._decode_step(x)` runs `self.model.decode` two frames down (line 20 warmed), and
    # `self._layer_step(x, 0)` runs `self.model[layer].decode` (line 28); a different method
    # is not warmed (38, 47). The executor's `compile()` runs the model before `capture()`
    # runs it through `self._run` (pipeline.py, siblings in `Pipeline.setup`). A class
    # helper's instance whose `compile()` runs the stored callable before `capture()` is
    # warm (executor_pipeline.py:28); without the compile step it is not (line 36).
    assert finding_set(PROJECTS / "warm_up_below") == {
        ("generator.py", 38, "TRC404"),
        ("generator.py", 47, "TRC404"),
        ("executor_pipeline.py", 36, "TRC404"),
    }


def test_helpers_that_launch_no_device_program_need_no_warm_up():
    # Copying into a preallocated buffer, allocating, comparing addresses and aliasing
    # launch no program: no TRC404 on lines 9 and 23 (the copy and the allocation are still
    # TRC101 and TRC301 in captured code). A helper running an op does (line 29). The eager
    # path of a conditional capture is its warm-up (line 47).
    assert finding_set(PROJECTS / "no_program_helpers") == {
        ("captures.py", 29, "TRC404"),
        ("program_helpers.py", 6, "TRC301"),
        ("program_helpers.py", 10, "TRC101"),
    }


def test_a_call_after_the_region_is_no_warm_up():
    # Line 11: the only other run comes after the capture; lines 61 and 67: after the call
    # of a capture helper (a lambda's work, a function). A run later in a loop (the next
    # turn), the eager branch of an `if` and a run before the helper call are warm-ups.
    assert finding_set(PROJECTS / "warm_up_after") == {
        ("capture.py", 11, "TRC404"),
        ("capture.py", 61, "TRC404"),
        ("capture.py", 67, "TRC404"),
    }


def test_stale_input_judged_on_the_flow():
    # The rebinding on the other branch from the replay (line 12) is never followed by it;
    # in a loop (line 28) the next turn replays the old buffer.
    assert finding_set(PROJECTS / "stale_branches") == {("serve.py", 28, "TRC403")}


def test_trace_outputs_freed_by_a_helper_then_replayed():
    # `deallocate_outputs(outs)` right after the end, then replays (line 13); two frames down
    # (line 39); after `release_trace` it is fine (line 29).
    found = findings_json(PROJECTS / "outputs_freed")
    assert {(item["filename"].rsplit("/", 1)[-1], item["location"]["row"], item["code"]) for item in found} == {
        ("test_model.py", 13, "TRC302"),
        ("test_model.py", 39, "TRC302"),
    }
    chains = {item["location"]["row"]: [(r["filename"].rsplit("/", 1)[-1], r["location"]["row"]) for r in item["related"]] for item in found}
    # The chain goes from the capture down to the free: the helper's `ttnn.deallocate(t)`.
    assert chains[13] == [("test_model.py", 8), ("output_cleanup.py", 6)]
    assert chains[39] == [("test_model.py", 34), ("output_cleanup.py", 10), ("output_cleanup.py", 6)]


def test_trace_outputs_kept_on_an_attribute_freed_before_another_capture():
    # Capture A keeps its output in `self.out` (captured work, `_decode`); a helper frees it
    # before capture B while trace A is still executed on alternate turns (line 29). After
    # `release_trace` the same free is fine (line 51).
    assert finding_set(PROJECTS / "outputs_on_attribute") == {("attribute_runner.py", 29, "TRC302")}


def test_trace_region_only_for_the_fixture_whose_tests_capture():
    # Three `device` fixtures of one name: the one of traced/ (its test captures) needs a
    # trace region; not the one of other/ (its tests never capture), nor the top one, whose
    # tests (eager/) never capture: traced/ has its own, and `trace_runner.capture(device,
    # ...)` is no test requesting a fixture.
    assert finding_set(PROJECTS / "device_folders") == {("traced/conftest.py", 7, "TRC405")}


def test_recursive_helpers_are_summarised_whatever_is_asked_first():
    # `free_all` and `free_rest` call each other; the region in `scratch` asks about
    # `free_rest` first, which used to leave `free_all` summarised as freeing nothing, so the
    # free of the trace outputs after the end (line 23) was missed. A recursion whose paths
    # grow (`free_chain(node.next)`) ends; what it frees is an attribute of the output, which
    # the analysis cannot tie to a trace buffer (line 35: silent).
    assert finding_set(PROJECTS / "recursive_frees") == {("recursive_runner.py", 23, "TRC302")}
    alone = findings_json(PROJECTS / "recursive_frees" / "recursive_runner.py")
    assert [(item["location"]["row"], item["code"]) for item in alone] == [(23, "TRC302")]


def test_device_work_through_recursion_and_deep_chains():
    # `prepare` and `settle` call each other and only `prepare` runs an op: both reach device
    # work, whichever is asked about first (captures.py:7 and :16; asking about `prepare`
    # first used to leave `settle` summarised as reaching none). `describe` goes eleven
    # frames down to a helper that reads host metadata only: no device work, so no warm-up
    # is needed (:25; a depth cutoff used to assume it reached some).
    assert finding_set(PROJECTS / "recursive_device_work") == {
        ("captures.py", 7, "TRC404"),
        ("captures.py", 16, "TRC404"),
    }
    alone = findings_json(PROJECTS / "recursive_device_work" / "captures.py")
    assert [(item["location"]["row"], item["code"]) for item in alone] == [(7, "TRC404"), (16, "TRC404")]


def test_a_handle_made_outside_the_project_has_unknown_effects():
    # `Tap.__call__` reaches device work only through `self._handle.enqueue`, a handle the
    # compiled extension made (`native.make_tap(...)` or None): unknown effects, so the tap
    # is not judged as needing a warm-up (captures.py:9). A model handed in (17), a torch
    # module the class makes (25), or a handle that may be the caller's callable (33) is
    # work: reported.
    assert finding_set(PROJECTS / "opaque_handles") == {
        ("captures.py", 17, "TRC404"),
        ("captures.py", 25, "TRC404"),
        ("captures.py", 33, "TRC404"),
    }


def test_work_a_capture_state_guard_keeps_out_needs_no_warm_up():
    # The device work of `note` (under `if not recording():`, a helper's answer) and of
    # `flush` (after `if capturing(): raise`) never runs while a capture records, and
    # `stage` only allocates (`torch.empty`, still TRC301 on a host tensor) and copies into
    # it: none needs a warm-up (graphs.py:8, 15, 22). `scale` runs `torch.relu` whatever the
    # capture state: reported (33).
    assert finding_set(PROJECTS / "guarded_work") == {
        ("graphs.py", 33, "TRC404"),
        ("recorder.py", 24, "TRC301"),
    }


def test_a_static_methods_first_parameter_is_no_receiver():
    # `copy_out(source)` is a static method: `source.detach()` is a tensor's method, not
    # a call on `self` the analysis cannot see into, and the rest allocates and copies: no
    # warm-up needed (graphs.py:8). A static method running an op is work (15).
    assert finding_set(PROJECTS / "static_receivers") == {("graphs.py", 15, "TRC404")}


def test_a_begin_on_the_other_branch_is_no_nested_capture():
    # `if pool: g.capture_begin(pool=pool) else: g.capture_begin()` begins one capture
    # (segments.py:14 not reported). A second begin after the first (22), or on the other
    # branch in a loop whose next turn takes it while the first records (32), is TRC406.
    assert finding_set(PROJECTS / "branch_begins") == {
        ("segments.py", 21, "TRC201"),
        ("segments.py", 22, "TRC406"),
        ("segments.py", 32, "TRC406"),
    }


def test_a_warm_up_over_the_same_layers_through_a_loop_variable():
    # `for block in self.encoder.layers: block(y)` in a sibling run before the capture
    # runs the layers `for layer in self.encoder.layers: layer(y)` calls (runner.py:19 not
    # reported); the decoder's layers never ran (28).
    assert finding_set(PROJECTS / "loop_warm_ups") == {("runner.py", 28, "TRC404")}


def test_a_container_each_captured_call_makes_anew_is_no_outliving_state():
    # `backward_body` is captured work (called in `framing`'s region) and makes `pending`
    # and `grads` on each call; its closure `grad` only runs inside it: appending to
    # `pending` changes nothing that outlives the capture (line 10 silent). `framing` holds
    # the region and made `seen` before it, so `note`'s append is lost on replay (line 23).
    assert finding_set(PROJECTS / "closure_state") == {("closures.py", 23, "TRC203")}


def test_a_branch_every_captured_call_fixes_is_not_captured_work():
    # `scale(..., sync=sync)` from a helper's callable `launch(*, sync=False)` that the helper
    # calls as `launch()`: `sync` is False in the capture, `if sync: synchronize()` never runs
    # there (kernels.py:7 and tuning.py:18 silent; the eager `launch(sync=True)` runs outside
    # it). `shift`'s
    # synchronize after `if not sync: return` is silent for `record_shift`, which leaves `sync`
    # to its default, and reported for `record_synced_shift`, which passes True (kernels.py:15,
    # chain from synced.py only). `tables if tables is not None else upload_tables(...)` never
    # uploads where the capture passes what a function returning a tuple made (trace.py);
    # where it passes a parameter of unknown value it does (model.py:5 and 6, from serve.py).
    # A `functools.partial(scale, ..., sync=True)` handed to the same helper synchronizes
    # (kernels.py:7, from partials.py only).
    project = PROJECTS / "fixed_parameters"
    assert finding_set(project) == {
        ("kernels.py", 7, "TRC103"),
        ("kernels.py", 15, "TRC103"),
        ("model.py", 5, "TRC101"),
        ("model.py", 5, "TRC301"),
        ("model.py", 6, "TRC101"),
        ("model.py", 6, "TRC301"),
    }
    starts = {
        (Path(f["filename"]).name, f["location"]["row"], f["code"]): {Path(c[0]["filename"]).name for c in f["chains"]}
        for f in findings_json(project)
    }
    assert starts[("kernels.py", 7, "TRC103")] == {"partials.py"}
    assert starts[("kernels.py", 15, "TRC103")] == {"synced.py"}
    assert all(starts[("model.py", row, code)] == {"serve.py"} for row in (5, 6) for code in ("TRC101", "TRC301"))


def test_a_value_never_none_any_number_of_frames_down():
    # `load_tables` returns what four helpers down `upload_tables` returns, a tuple: never
    # None, so `rotate`'s `tables if tables is not None else upload_tables(...)` never uploads
    # in `trace_loaded`'s capture (a cutoff four frames down used to leave it unknown, and
    # the upload was reported with a chain from loaded.py). Without tables (missing.py) it
    # uploads: rotary.py:5 and 6.
    project = PROJECTS / "never_none_frames_down"
    assert finding_set(project) == {
        ("rotary.py", 5, "TRC101"),
        ("rotary.py", 5, "TRC301"),
        ("rotary.py", 6, "TRC101"),
        ("rotary.py", 6, "TRC301"),
    }
    for findings in (findings_json(project), findings_json(project / "rotary.py")):
        assert [{Path(c[0]["filename"]).name for c in f["chains"]} for f in findings] == [{"missing.py"}] * 4


def test_a_wrapper_of_a_library_function_imported_on_each_branch_has_unknown_effects():
    # `weak_ref_tensors` calls `weak_ref_tensor`, imported from outside the project on each
    # branch of a module-level `if` (another branch raises): a library call of unknown
    # effects, not user code, so no warm-up is asked for (line 17, silent). A helper that runs
    # a torch op and runs only inside the region and after it has no warm-up: a run after
    # the region is none (line 34, the capture's begin).
    assert finding_set(PROJECTS / "library_wrappers") == {("lib_backend.py", 34, "TRC404")}


def test_helper_callables_land_where_python_binds_them():
    # The callable reaches the helper's parameter as Python binds the call: after `device`
    # for a static method called on its class (steps.py:15), third when the instance is
    # passed explicitly to the method on its class (20), by keyword into a keyword-only
    # parameter (24). Each is captured, unwarmed work; the warmed one is not (29).
    assert finding_set(PROJECTS / "helper_arguments") == {
        ("steps.py", 7, "TRC102"),
        ("steps.py", 15, "TRC404"),
        ("steps.py", 20, "TRC404"),
        ("steps.py", 24, "TRC404"),
    }
    (read,) = [f for f in findings_json(PROJECTS / "helper_arguments") if f["code"] == "TRC102"]
    assert len(read["chains"]) == 3


def test_the_device_lands_in_the_parameter_python_binds():
    # A trace-region-less device reaches the capture through `Runner.run(runner, device, x)`
    # (the instance passed explicitly), a bound method held in a name, and an instance call.
    assert finding_set(PROJECTS / "device_arguments") == {
        ("runner.py", 17, "TRC405"),
        ("runner.py", 23, "TRC405"),
        ("runner.py", 29, "TRC405"),
    }
