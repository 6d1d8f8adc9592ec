"""Shapes met in real TT-NN model repositories (runners, infra objects, generators), each
reproduced in a minimal project of our own and checked through the real CLI with exact
(file, line, code) sets: what was reported falsely is gone, what was missed is reported."""

from __future__ import annotations

import json
from pathlib import Path

from .cli_helpers import FIXTURES, finding_set, run_cli

PROJECTS = FIXTURES / "model_shapes"


def test_next_input_kept_under_another_name_than_the_freed_one():
    # The runner's capture calls `self.infra.run()`, whose model frees the input the infra
    # object holds (detector.py:7, two frames down); the region then allocates the next
    # input as the runner's own `self.input_tensor` (runner.py:24): the re-allocation idiom,
    # so no TRC301 there and no TRC302 on the run. Without the allocation (`LeakyRunner`)
    # the free of `self.infra.input_tensor`, a trace input, is TRC302 on the call holding
    # it (runner.py:48), though the region never names the attribute itself. `BranchRunner`
    # allocates it only `if refresh:` and reads `self.input_tensor` after the `if` (71-73):
    # on the path that skips the allocation the region reads the attribute before it is
    # bound (a graph question, whatever the lines say), so it replaces nothing: TRC302 on the
    # run (70), TRC301 on the allocation (72).
    assert finding_set(PROJECTS / "infra_reallocation") == {
        ("runner.py", 22, "TRC401"),
        ("runner.py", 47, "TRC401"),
        ("runner.py", 48, "TRC302"),
        ("runner.py", 70, "TRC302"),
        ("runner.py", 71, "TRC201"),
        ("runner.py", 72, "TRC301"),
    }


def test_a_parameter_rebound_before_the_free_is_not_freed():
    # `layer(hidden)` rebinds `hidden = ttnn.layer_norm(hidden)` before `attention` frees it
    # (decoder.py:12-13): the call frees a value `layer` made, not its argument, so the
    # region's `run(l1_input)` frees nothing of the caller's, and the region's own free of
    # `l1_input` pairs with the next input allocated into `self.next_input` (generator.py:
    # 19-21, the re-allocation idiom: no TRC302, no TRC301). `scaled_layer` frees its
    # argument on the path where `scale` is false (decoder.py:18-20): TRC302 at line 32.
    assert finding_set(PROJECTS / "rebound_parameter") == {("generator.py", 32, "TRC302")}


def test_executor_checks_the_new_input_address_inside_the_region():
    # `PipelinedExecutor` frees the trace input under `if l1.is_allocated():` and allocates
    # the next input as `self.l1_input` (executors.py:26-28), then reads that new buffer's
    # address and compares it before the end (29-31): the re-allocation idiom still holds
    # (reading the new input after its allocation is no read of the freed one), so no TRC302
    # or TRC301. `CheckedExecutor` calls a helper that only reads `self.l1_input`'s address
    # and compares it (executors.py:53-56): it launches no device program, so TRC404 does not
    # judge the call on line 49. Both regions stay open on an exception (TRC401).
    assert finding_set(PROJECTS / "executors") == {
        ("executors.py", 24, "TRC401"),
        ("executors.py", 47, "TRC401"),
    }


def test_model_from_an_unannotated_factory_and_an_element_of_its_result():
    # `FactoryInfra` gets its model from `load_detector`, a factory without a return
    # annotation (infra.py:9): the model's class is unknown, so the call's effects are too;
    # it may free the trace input, so the next input allocated after it in the region
    # (runner.py:21) may be the re-allocation idiom's: no TRC301 (RULES: the rules stay
    # silent on what depends on an unresolved call). `self.model(x)[0]` stores an element of
    # what the model returned, an output handle as much as the whole result (infra.py:13,
    # 23): no TRC203; the host value `self.input_tensor.shape[0]` still is (infra.py:24).
    # `DetectorRunner`'s model frees its input (the idiom: no TRC301 on line 41);
    # `ScalerRunner`'s frees nothing, so its allocation in the region is TRC301 (line 61).
    # The infra object itself from a factory without a return annotation (infra.py:37):
    # `self.infra.run()` (runner.py:81) and a local's `infra.run()` (95) do not resolve, user
    # code with unknown effects, so the next input allocated after them and kept (82, 96)
    # may be the idiom's: no TRC301. A framework object's method is no user code: the
    # allocation after `sharded.is_sharded()` stays TRC301 (110).
    assert finding_set(PROJECTS / "factory_model") == {
        ("infra.py", 24, "TRC203"),
        ("runner.py", 61, "TRC301"),
        ("runner.py", 110, "TRC301"),
    }


def test_multi_device_capture_ended_by_a_loop_over_its_trace_ids():
    # One begin per device collected into `trace_ids` (a generator or a list comprehension)
    # and a `finally` looping over those ids (`zip(devices, trace_ids)`, `enumerate(trace_ids)`)
    # to end each capture (tracer.py:14-20, 30-35): the loop runs once per open capture, so
    # every exceptional path ends them; no TRC401. Without the `finally` (line 40), where
    # the `finally` loops over other devices and may end nothing (line 49), or where the loop
    # ends only the captures that pass a test (line 60), TRC401 stays.
    assert finding_set(PROJECTS / "multi_device_tracer") == {
        ("tracer.py", 40, "TRC401"),
        ("tracer.py", 49, "TRC401"),
        ("tracer.py", 60, "TRC401"),
    }


def test_launch_caches_filled_on_first_use_in_their_mirror_forms():
    # A fused kernel's launch policy and configs (gptqmodel's paroquant), reached from a
    # CUDA graph two frames down: `cached = _POLICY; if cached is not None: return cached`
    # then `_POLICY = ...` (a local alias of the global), `if k in _LOADED: return` then
    # `_LOADED.add(k)` and what follows it, `cached = _CONFIGS.get(key)` then
    # `_CONFIGS.setdefault(key, ...)`, and RULES' own warn-once set `if k not in _WARNED:
    # _WARNED.add(k)`: caches filled at warm-up, not captured work. A guard whose block
    # never fills what it tests (`count_call`, line 55) is no cache: TRC203.
    assert finding_set(PROJECTS / "launch_caches") == {("launch.py", 55, "TRC203")}


def test_buffers_swapped_in_from_a_dataclass_field_annotated_as_a_tensor():
    # `self.input_ids` holds `torch.zeros(..., device=...)` or `state.input_ids`, a field
    # that `BucketState`'s body annotates `torch.Tensor` and no method assigns (xinference's
    # breeze_tts depth decoder graph): a device tensor either way, so `self.input_ids[:, 0]
    # = 0` in the captured loop is device work that each replay repeats (lines 33-34). The
    # host step count (an `int` field, line 36) still changes at capture only: TRC203.
    assert finding_set(PROJECTS / "bucket_buffers") == {("depth_graph.py", 36, "TRC203")}


def test_a_class_helper_that_runs_its_callable_eagerly_until_warm():
    # `DepthGraphCache(self._depth_decode)` (vllm-omni's minimax talker): `run` returns
    # `self._run_eager(*inputs)` until a pair count has run `warmup_steps` times, and only
    # then calls `_capture`, whose region runs it: the eager branch of "first calls eager,
    # later captured" is the warm-up, though it sits in the caller of the capturing method.
    # `EagerOrGraph` has an `eager` method too, but its `run` records on the first call
    # without it: TRC404 at that construction site (talker.py:11).
    assert finding_set(PROJECTS / "warm_until_ready") == {("talker.py", 11, "TRC404")}


def test_a_none_default_forwarded_down_keeps_its_branches_untaken():
    # vllm-omni's ming aggregator: `Aggregator.forward(x)` leaves `mask=None`, rebinds
    # `mask` only under `if mask is not None:`, and hands it down to the attention's own
    # `if mask is not None:` with its `.item()`. On the unmasked capture that rebinding never
    # runs, so `mask` is None two frames down and the host read is not captured work there:
    # the TRC102 carries only the masked capture's chain.
    assert _findings_with_chain_starts(PROJECTS / "forwarded_default") == {("blocks.py", 9, "TRC102", ("graphs.py:17",))}


def test_a_helper_calling_its_callable_with_arguments_leaves_the_rest_to_their_defaults():
    # vllm-omni's ming talker: a pool hands the head to a class helper whose capture calls it
    # as `self.step(self.static_x)`, so `Head.forward`'s `mask` is its None default there,
    # forwarded two frames down to the attention's `if self.masked and mask is not None:`
    # and its `.item()`. That read is captured work for the runner whose capture passes a
    # mask (head_server.py:9) and for `record_with_residual`, whose capture also hands the
    # callable to `masked_residual`, which passes one (15); not for the pool's runner (8)
    # nor for the function helper `record`, whose capture calls `step(x)` (12). The same in
    # a one-file run of the model's file.
    project = PROJECTS / "helper_call_default"
    for path in (project, project / "dit_head.py"):
        assert _findings_with_chain_starts(path) == {("dit_head.py", 13, "TRC102", ("head_server.py:15", "head_server.py:9"))}, path


def test_model_built_outside_the_project_may_free_its_input():
    # tt-metal's yolov7 runner: the infra object's class is known, but its model is built by
    # a constructor the project does not hold (infra.py:11, here a compiled package; there a
    # module the checkout lacks). What its call (infra.py:15) frees is unknown, so the next
    # input allocated after `self.infra.run()` and kept (runner.py:21) may be the
    # re-allocation idiom's: no TRC301 (RULES: the rules stay silent on what depends on an
    # unresolved call). A project model that keeps its input alive leaves the allocation a
    # creation in the capture: TRC301 (runner.py:41).
    assert finding_set(PROJECTS / "external_model") == {("runner.py", 41, "TRC301")}


def _findings_with_chain_starts(path: Path) -> set:
    """(file, line, code, where each chain starts) of a `--no-cache` run on `path`."""
    result = run_cli("check", str(path), "--no-cache", "--output-format", "json")
    assert result.returncode in (0, 1), result.stderr.decode()
    return {
        (Path(item["filename"]).name, item["location"]["row"], item["code"], tuple(sorted(f"{Path(c[0]['filename']).name}:{c[0]['location']['row']}" for c in item["chains"])))
        for item in json.loads(result.stdout)
    }


def test_a_mode_literal_passed_through_the_base_call_decides_the_branches_below():
    # The galaxy Llama demo's decode capture: `tt_model(x, mode="decode")` runs the base
    # class's `__call__(self, *args, **kwargs)`, which hands everything to `self.forward`;
    # the layers pass `mode` on down (positionally, through `layer(...)` and the same base
    # call) to the attention's `if mode == "prefill": return self.forward_prefill(...)`,
    # where a `ttnn.from_torch(..., device=...)` makes the user id. On the decode capture
    # (demo.py:10), and on the one that leaves `mode` to its "decode" default (26), the
    # prefill path never runs: the TRC101/TRC301 carry only the prefill capture's chain (15).
    # `Block`'s `if mode != "decode":` is decided the same way (layers.py:27).
    assert _findings_with_chain_starts(PROJECTS / "forwarded_mode") == {
        ("layers.py", 18, "TRC101", ("demo.py:15",)),
        ("layers.py", 18, "TRC301", ("demo.py:15",)),
    }


def test_a_layer_loop_that_starts_from_an_alias_of_the_input_frees_it():
    # molmo2's prefill trace: `x = hidden; for layer in self.layers: x = layer.forward(x)`,
    # each block freeing the `x` it is handed. On the first turn `x` is still `hidden`, so
    # the loop frees its argument, as `hidden = layer(hidden)` in the loop already did: the
    # region's `decode(buffers["hidden"])` frees an element of a trace input (blocks.py:28).
    # With the next input allocated in the region after that free and kept on `self`, the
    # same loop is the re-allocation idiom: no TRC302, no TRC301 (blocks.py:43-44).
    assert finding_set(PROJECTS / "layer_loop_free") == {("blocks.py", 28, "TRC302")}


def test_another_librarys_capture_functions_begin_no_graph():
    # warp's torch interop tests: inside `with torch.cuda.graph(g):` the simulation library
    # is told the capture is external (`sk.capture_begin(external=True)`, capture.py:14), a
    # module function of an outside package, no CUDAGraph: no capture begins there, so no
    # TRC406. A real graph's `inner.capture_begin()` inside the region still is (28).
    # liteinfer's decoder copies its forward into a slice of a lazily allocated buffer
    # (`self._logits[:n].copy_(self._forward(n))`, decoder.py:22): the copy is a tensor
    # method, no user work to warm up; the forward ran twice before (17), so no TRC404 in
    # `capture`; `capture_cold` never ran it: TRC404 on its `with` (27).
    assert finding_set(PROJECTS / "foreign_recorder") == {
        ("capture.py", 28, "TRC406"),
        ("decoder.py", 27, "TRC404"),
    }


def test_unpacking_the_entry_just_stored_rebinds_nothing():
    # trifusion's and eagle-harness's graph caches store `(graph, x, out)` right after the
    # capture and unpack the entry on every call before `x.copy_(batch)` and the replay
    # (runner.py:20-21, 42-43): on the capturing path each name gets back the object it
    # held, no new tensor, so no TRC403 (nor for `graph`, which the region reads at 40).
    # `SwappedRunner` stores another tensor in the input's place (57): the unpacking
    # rebinds `x` to it, TRC403 (58). The region's ternary is TRC201 (40).
    assert finding_set(PROJECTS / "cached_graph_entry") == {
        ("runner.py", 40, "TRC201"),
        ("runner.py", 58, "TRC403"),
    }


def test_code_below_a_return_never_runs_in_a_capture():
    # A block helper kept its old host round trip below its `return` (blocks.py:7-11, as a
    # real UNet helper does): those statements never run, so they are no captured work: no
    # TRC102/TRC301/TRC101 there. `scaled` frees its argument only below its `return`
    # (blocks.py:17): it frees nothing, so the region's `self.step(x)` frees no trace input
    # (no TRC302 at runner.py:21), and the region's own `from_torch` below its `return`
    # (runner.py:23) is not reported either. Nor is the host path below an `if` whose
    # branches both return (`either_layout`, blocks.py:32-33). A statement after a
    # conditional return still runs: `maybe_on_host`'s host path (blocks.py:23-24) stays
    # reported.
    assert finding_set(PROJECTS / "dead_after_return") == {
        ("blocks.py", 23, "TRC102"),
        ("blocks.py", 24, "TRC101"),
        ("blocks.py", 24, "TRC301"),
    }


def test_a_capture_handed_to_a_bench_harness_is_warmed_by_the_eager_run_handed_before():
    # A micro-benchmark: `compare` hands `eager` to `timed`, which calls it, and then
    # `record` (whose region calls the same kernel) to `timed_replay`, which calls it:
    # the kernel ran before the capture (no TRC404 at bench.py:16), though `record` is
    # never called by name. The region passes a preallocated `out=`, so the kernel's
    # `if out is None:` allocation never runs in that capture. `cold` hands only `record`:
    # its kernel is cold (TRC404 at 28), and it leaves `out` to its None default, so the
    # allocation runs inside that capture (TRC301 at kernels.py:6, chain from bench.py:28).
    assert _findings_with_chain_starts(PROJECTS / "handed_capture") == {
        ("bench.py", 28, "TRC404", ()),
        ("kernels.py", 6, "TRC301", ("bench.py:28",)),
    }


def test_a_device_captured_on_by_a_nested_def_of_the_function_it_is_passed_to():
    # A benchmark's `run_all(device, x)` captures in a nested `record()` that reads `device`
    # from the enclosing function (bench.py:8): a device opened without `trace_region_size`
    # and passed to `run_all` reaches that capture (TRC405 at bench.py:39). Opened with a
    # size (44), or passed to functions whose nested defs only print it or capture on a
    # parameter of their own that shadows it (49), it is not reported (that capture, with
    # no `finally:`, is TRC401 at 30). A script's `if __name__ == "__main__":` opening one
    # and handing it to `run_all` is the same (55); the one handed only to `report_only`
    # (61) is not, nor a script's first device that it closes and rebinds to one opened with
    # a size before handing it on (rebound.py:6).
    assert finding_set(PROJECTS / "closure_device") == {
        ("bench.py", 30, "TRC401"),
        ("bench.py", 39, "TRC405"),
        ("bench.py", 55, "TRC405"),
    }


def test_the_ttnn_module_handed_on_by_another_package_is_ttnn():
    # A vendor runner imports `ttnn` from its own toolkit (`from acme_accel import ttnn`, a
    # package outside the project): the name is ttnn's (RULES: a variable named `ttnn`
    # counts), so its capture is a region, subscript trace id and all (pipeline.py:16, no
    # `finally:`), the read in it is TRC102 (18), and the slot bookkeeping the region's
    # argument runs is captured work (TRC203 at slots.py:6). A project package that
    # re-exports the module (`toolkit/__init__.py: import ttnn`), imported under an alias,
    # is ttnn too (TRC102 at bench.py:9). A project module of that name (`shim/ttnn.py`)
    # stays the project's: its `begin_trace_capture` is no capture (bench.py:15-19).
    assert finding_set(PROJECTS / "vendor_module") == {
        ("bench.py", 9, "TRC102"),
        ("pipeline.py", 16, "TRC401"),
        ("pipeline.py", 18, "TRC102"),
        ("slots.py", 6, "TRC203"),
    }


def test_a_trace_kept_on_self_and_replayed_by_another_method_frees_nothing_it_reads():
    # A generator captures in `capture()` and keeps the trace id on `self`; `step()` replays
    # it. `step()` frees the rotary matrices the trace reads (elements of `self.rot`, made
    # before the region) and replaces the attribute before `execute_trace`: replay reads the
    # freed buffers (TRC302 at generator.py:23, 24). Freeing the output the capture stored
    # (`self.out`) before replaying is the same (36). Copying into the persistent inputs
    # (28-32), freeing a value the method bound itself (`retoken`, 39-41), freeing an input
    # and capturing again before the replay (`recapture`, 44-46, the trace id stored anew),
    # and freeing after `release_trace` (`close`, 51) are not reported.
    assert finding_set(PROJECTS / "method_replay") == {
        ("generator.py", 23, "TRC302"),
        ("generator.py", 24, "TRC302"),
        ("generator.py", 36, "TRC302"),
    }


def test_an_infra_object_handed_in_from_an_unannotated_factory_has_unknown_effects():
    # A benchmark's `capture(device, infra, spec)` runs `infra.run()` in the region and then
    # allocates the next input (bench.py:11): `infra` is a parameter that its one caller
    # fills with what `create_infra` returned, a factory without a return annotation, so
    # its class and what `run()` frees are unknown; the allocation may be the re-allocation
    # idiom's: no TRC301 (the rules stay silent on what depends on an unresolved call).
    # The same for an infra object that a factory outside the project made (tt-metal's vit
    # 2CQ perf test, `create_test_infra` from a module the checkout lacks; bench.py:63),
    # handed in directly or through a local.
    # Annotated with a class whose `run()` frees nothing (22), handed a construction of
    # that class at one of its call sites (33), or called from nowhere in the project (44),
    # the allocation is a creation in the capture: TRC301.
    assert finding_set(PROJECTS / "handed_infra") == {
        ("bench.py", 22, "TRC301"),
        ("bench.py", 33, "TRC301"),
        ("bench.py", 44, "TRC301"),
    }


def test_a_model_first_resolved_deep_in_another_question_is_still_captured_work():
    # The runner checks a field of the output its harness stored (`assert
    # self.harness.output.logits.is_allocated()`, runner.py:13) inside the region. Asking
    # what that chain holds first resolves the harness's `self.model(...)` call (harness.py:
    # 11) so deep in that question that the depth limit cuts the search short; the cut
    # answer (no target) was kept and served to the reach from `self.harness.run()`, so the
    # model's host read inside the capture went unreported. It is TRC102 (segmenter.py:18),
    # whichever question asks first. The model frees its input and
    # the region allocates the next one (runner.py:14): the re-allocation idiom, no TRC301
    # or TRC302.
    assert finding_set(PROJECTS / "checked_output_field") == {
        ("runner.py", 11, "TRC401"),
        ("segmenter.py", 18, "TRC102"),
    }


def test_a_tensor_method_on_an_element_of_a_dict_of_buffers_is_no_user_work():
    # dfastllm's diffusion runner keeps one output buffer per length in a dict attribute
    # (`self.outputs[n] = torch.zeros_like(y)`) and copies the captured forward into it
    # (runner.py:20): a tensor's own method on what a torch op made, no user work to warm up
    # (the forward ran twice before). Likewise a list filled with `torch.empty` by `append`
    # (55-56). The element is unknown where a parameter (`add_sink`, 37) or an `update` (64)
    # fills the container: those calls may be user work, and stay TRC404.
    assert finding_set(PROJECTS / "keyed_buffers") == {
        ("runner.py", 37, "TRC404"),
        ("runner.py", 64, "TRC404"),
    }


def test_a_cache_filled_into_a_dict_the_caller_handed_in():
    # flash-rt's decode step packs a layer's weight once into the layer's own dict, handed in
    # as a parameter (`if packed_key not in weights: ... weights[packed_key] = packed`,
    # layers.py:8-13): the caller's object outlives the call as `self` does, so the block is a
    # first-use cache, run at warm-up and skipped at capture: no TRC103/TRC102 there. A
    # parameter rebound to a copy first (`weights = dict(weights)`, 18-20) or a local dict
    # (25-27) is made anew on every call: those blocks run at capture too.
    assert finding_set(PROJECTS / "parameter_cache") == {
        ("layers.py", 20, "TRC102"),
        ("layers.py", 27, "TRC103"),
    }


def test_a_first_use_block_that_unpacks_onto_the_state_it_tests():
    # flash-rt's ViT loads its kernel modules once: `if self._ops is None:` whose body
    # unpacks them onto itself (`self._ops, self._aux = ...`, vision.py:16-18): the unpacking
    # assigns the tested attribute, so the block is a first-use cache (no TRC203 at 17-18).
    # `_others` tests `self._loaded`, which its body never assigns: not a cache (23).
    assert finding_set(PROJECTS / "unpacked_cache") == {("vision.py", 23, "TRC203")}


def test_a_nested_def_whose_steps_ran_before_is_warm():
    # A denoise loop captured through a nested def (`with graph: denoise()`, head.py:25) and
    # an action head handing a nested `_all` to a nested capture helper (65): the nested
    # defs never ran, but each call in their bodies did, just before, on the names the
    # enclosing function holds (`step(model, x)`; `self._cross(0)`, `_state(0)`): warm, no
    # TRC404. So is a remover's loop whose nested def reads the enclosing function's aliases
    # of its attributes (`tr = self.transformer`, head.py:80-93), as the warm-up does, and
    # one whose step picks its layer by a flag (`forward_any`, 99-116): each call of the
    # nested body is matched in the enclosing function, as a lambda's body is.
    # `denoise_cold` also runs `mix`, and `_with_fresh` `self._fresh`, which never ran:
    # TRC404 at 28 and 66. A nested def of framework ops only (`encode`, 126) has no step
    # that ran before: its call is its first run (TRC404), as RULES reads for any target.
    assert finding_set(PROJECTS / "nested_warm_up") == {
        ("head.py", 28, "TRC404"),
        ("head.py", 66, "TRC404"),
        ("head.py", 126, "TRC404"),
    }


def test_a_flag_switched_back_by_a_finally_leaves_no_state_behind():
    # fairchem's tf32 context and flash-rt's verify modes switch a host flag for one call:
    # `saved = settings.fast_math; try: settings.fast_math = fast; yield; finally:
    # settings.fast_math = saved` (model.py:12-17) and `self.verifying = True` then `try:
    # ... finally: self.verifying = False` (28-32). The write before (or inside) the `try`
    # is undone by the `finally:` on every path, and putting back the saved value changes
    # nothing: no TRC203 at 17 or 28. The `finally:` that writes a literal (32, 39) may leave
    # another value than the call found, and the counter (35) outlives the call: reported.
    assert finding_set(PROJECTS / "restored_flags") == {
        ("model.py", 32, "TRC203"),
        ("model.py", 35, "TRC203"),
        ("model.py", 39, "TRC203"),
    }


def test_a_warm_up_through_a_local_list_of_bound_methods():
    # sglang-kt's benchmark warms each layer through `apply_fns[i](...)`, a local list of
    # bound methods, then captures `apply_fn(...)` (benchmark_kt_ep.py:955). A call through
    # a local list or tuple whose elements are known exactly is a run of each element's
    # target: by index (stages.py:19), by loop (29), by `enumerate` (38), by a comprehension
    # over `reversed(fns[1:])` (46), by `zip` (110; the region's own loop over the list, 114,
    # is matched by target, not text): no TRC404 at 21, 31, 40, 48, 113. A method the list
    # does not hold never ran: TRC404 at 57 (`stage_c`) and 103; a run after the region is
    # no warm-up (64). A loop in the region runs every element, each judged: `stage_b` never
    # ran (123). A list appended with an unknown value (`fns.append(extra)`, 78) or handed to
    # another function (`register(fns)`, 89), or rebound on a path to a value the analysis
    # cannot see into (`fns = stages.hooks()`, 132), may hold the captured target: it cannot
    # know, so no TRC404 at 82, 93 or 136. A binding that no longer reaches the loop is not
    # its list (`fns = [stages.stage_c]` rebound before it, 141-142): TRC404 at 147; nor does
    # a truth test of the list change what it holds (`if not fns:`, 154): TRC404 at 159.
    assert finding_set(PROJECTS / "method_list_warm_up") == {
        ("stages.py", 57, "TRC404"),
        ("stages.py", 64, "TRC404"),
        ("stages.py", 103, "TRC404"),
        ("stages.py", 123, "TRC404"),
        ("stages.py", 147, "TRC404"),
        ("stages.py", 159, "TRC404"),
    }


def test_captured_work_reads_a_trace_input_the_region_never_names():
    # The region calls `self._work()`, whose `ttnn.matmul(self.inp, self.w)` reads the input
    # through `self`, not through an argument; the trace id is a local kept on `self` after
    # the end (`self.tid = tid`, pipeline.py:19), replayed by `run()`: freeing `self.inp`
    # before the replay is TRC302 (pipeline.py:23), and so is freeing the output the capture
    # stored (28). Freeing what the work never reads (`self.scratch`, 32) or after
    # `release_trace` (38) is not. Two frames down through a local alias (`x = self.inp`,
    # stages.py:10) in the function holding the region, replayed after the free: TRC302
    # (stages.py:23); `self.scratch` (24) is not read. A read five calls below the call in the
    # region is found (deep.py:47); one six calls below is past the depth the analysis looks
    # (6 frames): not known, silent (48). `RecordProbe` reads only the input's host metadata
    # (`self.inp.shape`, probe.py:11), which is no read of its buffer, and hands it to a model
    # that does not resolve (`self.model(self.inp)`, 18): unknown, so no TRC302 on line 32.
    assert finding_set(PROJECTS / "work_read_input") == {
        ("deep.py", 47, "TRC302"),
        ("pipeline.py", 23, "TRC302"),
        ("pipeline.py", 28, "TRC302"),
        ("stages.py", 23, "TRC302"),
    }


def test_the_ttnn_module_kept_on_self_or_aliased_by_a_local_is_ttnn(monkeypatch):
    # A backend imports ttnn lazily and keeps it on the instance (`self.ttnn = ttnn =
    # _import_ttnn()`, `self._tt = ttnn`), then calls it through locals (`nn = self.ttnn`)
    # or directly (`self._tt.to_torch`): the value is the module, so the capture is a region
    # (lazy_backend.py:32, no `finally:`), the random tensor its captured work makes is
    # TRC301 (23), and the read is TRC102 (53), a library call, not user work for TRC404.
    # A local alias (`tt = ttnn`, `read = ttnn.to_torch`) is the module or its function
    # (local_alias.py:11), in parentheses too (parenthesized.py:12: the prefilter reads the
    # alias from the text, so it must see it there). An attribute filled from a call and a
    # local that may hold something else stay unknown (not_modules.py).
    expected = {
        ("lazy_backend.py", 23, "TRC301"),
        ("lazy_backend.py", 32, "TRC401"),
        ("lazy_backend.py", 53, "TRC102"),
        ("local_alias.py", 11, "TRC102"),
        ("parenthesized.py", 12, "TRC102"),
    }
    assert finding_set(PROJECTS / "module_aliases") == expected
    # The prefilter only skips work: every file searched, the same findings.
    monkeypatch.setenv("TRACE_LINT_PREFILTER", "off")
    assert finding_set(PROJECTS / "module_aliases") == expected


def test_an_attribute_that_only_ever_holds_host_metadata_is_host_metadata():
    # `KeptAddressExecutor` keeps the trace input's address as `self.input_trace_addr` before
    # the capture and compares the next input's address with it inside the region
    # (executors.py:28, 36): every value its class stores in the attribute is host metadata
    # (`buffer_address()`, a `None` placeholder aside), so the test reads host metadata only:
    # no TRC201. `self.fast` holds only literals, but two of them, switched by `slow_down()`
    # (14, 18): it can differ at replay (TRC201, 38); `self.width` holds a shape in one
    # method and a parameter's value in another (15, 22): TRC201 (40). `BatchedExecutor`
    # keeps only `x.shape[0]` as `self.batch` (53, 57): host metadata, no TRC201 (64).
    assert finding_set(PROJECTS / "kept_address") == {
        ("executors.py", 38, "TRC201"),
        ("executors.py", 40, "TRC201"),
    }


def test_a_tensor_sliced_out_of_a_trace_input_is_a_new_tensor_to_free():
    # `body` cuts `trace_in[:, :, :, :32]` and friends out of its parameter and frees them
    # once used (a slice op makes each a new tensor); `run` captures `body(x, ...)`, frees a
    # slice of `x` in the region itself and hands another slice whole to `consume`, which
    # frees its parameter: all intermediates, none of them `x` (packed.py:27, 30 were TRC302
    # before). `consume(y)` in `run_consumed` frees the trace input itself (43).
    assert finding_set(PROJECTS / "sliced_inputs") == {("packed.py", 43, "TRC302")}


def test_allocation_after_a_capture_made_by_a_helper_that_returns_the_trace_id():
    # `capture` records the trace and returns its id with the output (capture.py:4-11), as
    # real runners' `setup_layer`/`_capture_trace` do; the caller binds the id and executes
    # it later (RULES TRC408, "Values, not names"): an allocation between the helper call
    # and the `execute_trace` of that id is alive across the replay (runner.py:8). The id
    # goes through another helper that returns it (`make_and_capture`), is executed by a
    # helper that executes its parameter (`replay`), and the allocation is a helper that
    # returns a new device buffer (`upload`): runner.py:49. An id unpacked into attributes
    # and executed through them in the same function: runner.py:71. Not reported: an
    # allocation before the helper call (13), one freed before every replay (22-23), one
    # after the trace's release (32), one after the last replay of a trace captured anew
    # each turn (41), an id handed to code that does not resolve (53: unknown), an id
    # passed through `**options` (63: unknown), and a rebinding of a trace input of a
    # region written in the same function, which is TRC403's (84).
    assert finding_set(PROJECTS / "captured_by_helper") == {
        ("runner.py", 8, "TRC408"),
        ("runner.py", 49, "TRC408"),
        ("runner.py", 71, "TRC408"),
        ("runner.py", 84, "TRC403"),
    }


def test_a_return_guard_written_as_an_elif_is_no_first_use_block():
    # nvidia-cudnn-frontend (corpus 7) crashed the run: the first-use test looked for the
    # statements after a return guard among its parent's, and an `elif` has an `if` for its
    # parent. `self.mode` true skips that guard, so the fill below it runs at capture (RULES
    # "First-use caches"): the host tensor made there is TRC301 (run.py:14). The same shape
    # in the branches a capture site's fixed arguments decide (capture/constants.py): with
    # `mode=0` and `sync=False` the `elif not sync: return x` is taken, so the sync below it
    # never runs at capture (launch.py:9, not reported). A test that is a conditional
    # expression on a fixed argument (`if check if check is not None else default():` with
    # `check=False`, nvidia-cudnn-frontend's debug check) is decided too: checked.py:5's
    # device read never runs at capture.
    assert finding_set(PROJECTS / "elif_guard") == {("run.py", 14, "TRC301")}
