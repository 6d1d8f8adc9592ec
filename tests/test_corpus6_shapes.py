"""Shapes of real code from PyPI corpus 6 (scripts/corpora.txt) the analysis misjudged: exact
(file, line, code) sets from the CLI on fixture projects."""

from __future__ import annotations

from .cli_helpers import FIXTURES, finding_set

CORPUS6 = FIXTURES / "corpus6"


def test_class_helper_warmed_in_a_sibling_method_frames_down():
    # sglang-omni's WhisperEncoderCudaGraphRunner: `capture_bucket` calls `self.warmup(x)`,
    # whose loop runs the stored `self.encoder(x)` (here one more frame down, `self._run`)
    # before the capture: warm (RULES.md TRC404, "inside any of those, any number of frames
    # down"). A sibling run only after the region is no warm-up: LateRunner's site is reported.
    assert finding_set(CORPUS6 / "class_helper_warmup") == {("model.py", 24, "TRC404")}


def test_tensor_made_through_a_partial_of_a_creation_function():
    # sglang-omni's dots_tts tail: `zeros = partial(torch.zeros, device=self.device, ...)`,
    # `self.window = zeros(...)`: a device tensor, so `self.window[i] = window` in captured
    # work is a copy the graph records, not a host side effect. A partial made for the host
    # (`device="cpu"` given at the call) keeps a host tensor: its `+=` is TRC203.
    assert finding_set(CORPUS6 / "partial_creators") == {("tail.py", 17, "TRC203")}
