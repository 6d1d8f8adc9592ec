"""Shapes met in real TT-NN model repositories (runners, infra objects, generators), each
reproduced in a minimal project of our own and checked through the real CLI with exact
(file, line, code) sets: what was reported falsely is gone, what was missed is reported."""

from __future__ import annotations

from .cli_helpers import FIXTURES, finding_set

PROJECTS = FIXTURES / "model_shapes"


def test_next_input_kept_under_another_name_than_the_freed_one():
    # The runner's capture calls `self.infra.run()`, whose model frees the input the infra
    # object holds (detector.py:7, two frames down); the region then allocates the next
    # input as the runner's own `self.input_tensor` (runner.py:24): the re-allocation idiom,
    # so no TRC301 there and no TRC302 on the run. Without the allocation (`LeakyRunner`)
    # the free of `self.infra.input_tensor`, a trace input, is TRC302 on the call holding
    # it (runner.py:48), though the region never names the attribute itself.
    assert finding_set(PROJECTS / "infra_reallocation") == {
        ("runner.py", 22, "TRC401"),
        ("runner.py", 47, "TRC401"),
        ("runner.py", 48, "TRC302"),
    }


def test_a_model_handed_to_a_constructor_is_reached_through_every_construction():
    # Each generator stores an unannotated `model` parameter (generator.py); what it holds is
    # what every construction in the project passes (demo.py). `Generator(Transformer())`:
    # its captured decode reaches `Transformer.ttnn_decode_forward`'s host read (models.py:7).
    # `DataParallelGenerator` gets a list of `ShardTransformer`s and indexes it in the
    # capture: `.item()` (models.py:14). `PerformantRunner(Encoder())` hands the model on
    # through `super().__init__` and `RunnerInfra(model, device)` to the infra object whose
    # `run` calls it: `ttnn.from_device` (models.py:26). One construction of
    # `OpenGenerator` passes `load_decoder(path)` (no return annotation): its model's class
    # is unknown, though the other passes a `Decoder`, so `Decoder.forward`'s read
    # (models.py:20) is not reported.
    assert finding_set(PROJECTS / "constructor_model") == {
        ("models.py", 7, "TRC102"),
        ("models.py", 14, "TRC102"),
        ("models.py", 26, "TRC102"),
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
    assert finding_set(PROJECTS / "factory_model") == {
        ("infra.py", 24, "TRC203"),
        ("runner.py", 61, "TRC301"),
    }
