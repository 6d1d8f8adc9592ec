"""Op parameters read from nanobind's signatures (the shape ttnn 0.81.1 gives them, copied from
`type(ttnn.add.function).__call__.__nb_signature__`) and from Python functions; the bound key
is the same however the arguments were passed."""

from __future__ import annotations

from trace_lint.runtime_guard.signatures import bound_items, parameters_of

ADD = (
    ("def __call__(self, input_tensor_a: ttnn._ttnn.tensor.Tensor, input_tensor_b: int | int | float, *, "
     "fast_and_approximate_mode: bool = \\0, dtype: ttnn._ttnn.tensor.DataType | None = \\1, "
     "memory_config: ttnn._ttnn.tensor.MemoryConfig | None = \\2, "
     "activations: collections.abc.Sequence[ttnn._ttnn.activation.EltwiseUnaryWithParam] = \\3) "
     "-> ttnn._ttnn.tensor.Tensor", None, (True, None, None, [])),
    ("def __call__(self, input_tensor_a: ttnn._ttnn.tensor.Tensor, input_tensor_b: ttnn._ttnn.tensor.Tensor, *, "
     "fast_and_approximate_mode: bool = \\0, dtype: ttnn._ttnn.tensor.DataType | None = \\1, "
     "memory_config: ttnn._ttnn.tensor.MemoryConfig | None = \\2, "
     "activations: collections.abc.Sequence[ttnn._ttnn.activation.EltwiseUnaryWithParam] = \\3) "
     "-> ttnn._ttnn.tensor.Tensor", None, (True, None, None, [])),
)


class AddT:
    """Like ttnn's C++ op objects: the signatures sit on the class's __call__."""

    def __call__(self, *args, **kwargs):
        return None


AddT.__call__.__nb_signature__ = ADD  # type: ignore[attr-defined]


def key(function, *args, **kwargs):
    return bound_items(parameters_of(function), args, kwargs, frozenset({"queue_id"}))


def test_nanobind_overloads_give_the_positional_names_and_defaults():
    found = parameters_of(AddT())
    assert found.positional == ("input_tensor_a", "input_tensor_b")
    assert found.defaults == {"fast_and_approximate_mode": True, "dtype": None, "memory_config": None,
                              "activations": []}


def test_positional_keyword_and_explicit_defaults_are_one_key():
    op = AddT()
    plain = key(op, "b", "c")
    assert key(op, "b", input_tensor_b="c") == plain
    assert key(op, input_tensor_b="c", input_tensor_a="b") == plain
    assert key(op, "b", "c", memory_config=None, fast_and_approximate_mode=True, queue_id=1) == plain
    # A value that differs from the default is part of the key, and so is the order of operands.
    assert key(op, "b", "c", fast_and_approximate_mode=False) != plain
    assert key(op, "c", "b") != plain


def test_overloads_that_disagree_on_a_name_keep_that_position():
    def overloads():
        return None

    overloads.__nb_signature__ = (
        ("def f(a: int, b: int) -> int", None, ()),
        ("def f(x: int, b: int) -> int", None, ()),
    )
    assert parameters_of(overloads).positional == (None, "b")
    assert key(overloads, 1, 2) == [("b", 2), ("#0", 1)]


def test_python_functions_and_wrappers():
    def from_torch(tensor, dtype=None, *, device=None, layout=None):
        return None

    assert key(from_torch, "t", device=None) == key(from_torch, tensor="t") == [("tensor", "t")]

    def wrapper(*args, **kwargs):
        return None

    assert parameters_of(wrapper) is None  # says nothing: the documented fallback applies
    assert key(wrapper, "b", "c") == [("#0", "b"), ("#1", "c")]
