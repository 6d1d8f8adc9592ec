"""First-use caches (RULES): a block that fills state that outlives the call on first use runs
at warm-up, not at capture; a local's `is None` test runs on every call."""

from __future__ import annotations

import textwrap

CAPTURE = """
def capture(device, layer, x):
    layer.forward(x)
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    try:
        out = layer.forward(x)
    finally:
        ttnn.end_trace_capture(device, tid, cq_id=0)
    return out
"""


def codes(findings):
    return sorted((f.location.row, f.code) for f in findings if f.code.startswith(("TRC1", "TRC3")))


def layer(body: str) -> str:
    return "import ttnn\n\nclass Layer:\n    def forward(self, x):\n" + textwrap.indent(textwrap.dedent(body), "        ") + "\n" + CAPTURE.replace("layer, x", "layer: Layer, x")


def test_getattr_form_of_an_attribute_cache(lint):
    source = layer(
        """\
        if getattr(self, "_w", None) is None:
            self._w = ttnn.from_torch(x, device=x.device())
        return ttnn.matmul(x, self._w)
        """
    )
    assert codes(lint(source)) == []


def test_an_or_test_whose_first_operand_is_the_cache_test(lint):
    source = layer(
        """\
        ones = getattr(self, "_ones", None)
        if self._ones is None or self._ones.shape[-1] != x.shape[-1]:
            self._ones = ttnn.ones(x.shape, device=x.device())
        return ttnn.add(x, self._ones)
        """
    )
    assert codes(lint(source)) == []


def test_a_local_alias_of_the_cached_attribute(lint):
    # The local is read from the attribute, and the block fills the attribute (tt-bio's shape).
    source = layer(
        """\
        ones = getattr(self, "_ones", None)
        if ones is None or int(ones.shape[-1]) != x.shape[-1]:
            ones = self._ones = ttnn.from_torch(x, device=x.device())
        return ttnn.add(x, ones)
        """
    )
    assert codes(lint(source)) == []


def test_a_local_read_from_a_cache_entry(lint):
    # `z = self._zeros.get(k); if z is None: z = self._zeros[k] = ...` (tt-bio's other shape).
    source = layer(
        """\
        z = self._zeros.get((x.shape[0], x.dtype))
        if z is None:
            z = self._zeros[(x.shape[0], x.dtype)] = ttnn.zeros(x.shape, device=x.device())
        return ttnn.add(x, z)
        """
    )
    assert codes(lint(source)) == []
    other_key = source.replace("self._zeros[(x.shape[0], x.dtype)] =", "self._zeros[x.dtype] =")
    assert codes(lint(other_key)) == [(7, "TRC301")]


def test_a_local_alias_whose_block_fills_only_the_local_is_no_cache(lint):
    source = layer(
        """\
        ones = getattr(self, "_ones", None)
        if ones is None:
            ones = ttnn.from_torch(x, device=x.device())
        return ttnn.add(x, ones)
        """
    )
    assert codes(lint(source)) == [(7, "TRC101"), (7, "TRC301")]


def test_a_local_is_none_test_is_no_cache(lint):
    source = layer(
        """\
        host = None
        if host is None:
            host = ttnn.to_torch(x)
        return host
        """
    )
    assert codes(lint(source)) == [(7, "TRC102")]


def test_code_that_never_runs_while_capturing_is_not_captured(lint):
    source = textwrap.dedent(
        """\
        import torch

        def compiled_kernel(key, cache):
            found = cache.get(key)
            if found is not None:
                return found
            if torch.cuda.is_current_stream_capturing():
                raise RuntimeError("warm up before capture")
            started = torch.tensor([1.0]).item()
            cache[key] = started
            return started

        def step(x, cache):
            if not torch.cuda.is_current_stream_capturing():
                print(x.sum().item())
            else:
                x.sum().item()
            compiled_kernel(0, cache)
            return x * 2

        def capture(static_x, cache):
            step(static_x, cache)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                out = step(static_x, cache)
            return g, out
        """
    )
    # Only the `else` of `if not capturing()` runs in the capture.
    assert codes(lint(source)) == [(17, "TRC102")]


def test_a_cache_kept_in_the_instance_dict_through_a_local(lint):
    # tt-bio's shape: the memo dict lives on the instance, read through `__dict__.setdefault`.
    source = layer(
        """\
        cache = self.__dict__.setdefault("_zero_cache", {})
        if (x.shape, x.dtype) not in cache:
            cache[x.shape, x.dtype] = ttnn.zeros(x.shape, device=x.device())
        return ttnn.add(x, cache[x.shape, x.dtype])
        """
    )
    assert codes(lint(source)) == []


def test_an_entry_read_from_a_local_alias_of_a_cache(lint):
    # `cache = self.tables` aliases state; `t = cache.get(k)` names its entry, and the block
    # fills it (flashinfer's plan uploads). A dict made in the call is no cache (line 13).
    source = layer(
        """\
        cache = self.tables
        t = cache.get(x.shape)
        if t is None:
            t = ttnn.from_torch(x, device=x.device())
            cache[x.shape] = t
        fresh = {}
        u = fresh.get(x.shape)
        if u is None:
            u = ttnn.from_torch(x, device=x.device())
            fresh[x.shape] = u
        return ttnn.add(t, u)
        """
    )
    assert codes(lint(source)) == [(13, "TRC101"), (13, "TRC301")]


def test_the_rest_of_a_block_after_a_filled_guard(lint):
    # `if self._w is not None: return self._w` then building and assigning `self._w`, and
    # `if getattr(self, "_loaded", False): return` then `self._loaded = True`: the rest of
    # the block fills state on first use (tt-bio's `_cond_weights`, `_load_kq_norm`). A guard
    # whose block never assigns its state is no cache (line 19).
    source = "import ttnn\n\nclass Layer:\n" + textwrap.indent(
        textwrap.dedent(
            """\
            def weights(self, x):
                if self._w is not None:
                    return self._w
                self._w = ttnn.from_torch(x, device=x.device())
                return self._w

            def load(self, x):
                if getattr(self, "_loaded", False):
                    return
                self._loaded = True
                self.b = ttnn.from_torch(x, device=x.device())

            def unmarked(self, x):
                if self.ready:
                    return
                self.c = ttnn.from_torch(x, device=x.device())

            def forward(self, x):
                self.load(x)
                self.unmarked(x)
                return ttnn.add(x, self.weights(x))
            """
        ),
        "    ",
    ) + CAPTURE.replace("layer, x", "layer: Layer, x")
    assert codes(lint(source)) == [(19, "TRC101"), (19, "TRC301")]
