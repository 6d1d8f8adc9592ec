"""torch work while a ttnn capture is open, seen through a TorchFunctionMode.

torch is imported only when it is already loaded by the program (the guard never pulls
it in), and the classification below needs no torch at all.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Optional

from trace_lint.runtime_guard import api


# pytest leaves the guard's frames out of a failure's traceback.
__tracebackhide__ = True


def classify_torch_call(name: str, args: tuple = (), kwargs: Optional[dict] = None) -> Optional[str]:
    """The violation kind of a torch function called while a ttnn capture is open, or None."""
    kwargs = kwargs or {}
    if name in api.TORCH_METADATA_FUNCTIONS:
        return None
    if name in api.TORCH_READ_FUNCTIONS:
        return api.HOST_READ
    if name == "to":
        targets = list(args[1:]) + [kwargs.get("device")]
        if any(_is_cpu(t) for t in targets):
            return api.HOST_READ
        return api.HOST_WORK
    if name in api.TORCH_CREATION_FUNCTIONS:
        return api.TENSOR_CREATION
    if name.startswith("__") and name.endswith("__") and name not in _ARITHMETIC_DUNDERS:
        return None
    return api.HOST_WORK


_ARITHMETIC_DUNDERS = frozenset(
    f"__{op}__" for base in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow",
                             "and", "or", "xor", "lshift", "rshift")
    for op in (base, "r" + base, "i" + base)
) | frozenset({"__getitem__", "__setitem__", "__neg__", "__abs__", "__invert__",
               "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"})


def _is_cpu(target: Any) -> bool:
    if isinstance(target, str):
        return target == "cpu" or target.startswith("cpu:")
    return getattr(target, "type", None) == "cpu"


def torch_dirs() -> tuple[str, ...]:
    torch = sys.modules.get("torch")
    path = getattr(torch, "__file__", None)
    return (os.path.dirname(os.path.abspath(path)) + os.sep,) if path else ()


def push_mode(on_call: Callable[[str, tuple, dict], None]) -> Any:
    """Push a TorchFunctionMode on this thread's mode stack; None when torch is not loaded."""
    torch = sys.modules.get("torch")
    overrides = getattr(torch, "overrides", None)
    base = getattr(overrides, "TorchFunctionMode", None)
    if base is None:
        return None

    class _CaptureMode(base):  # type: ignore[misc, valid-type]
        capturing = False

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            callback = self.on_call
            if self.capturing and callback is not None:
                callback(getattr(func, "__name__", "") or "", args, kwargs)
            return func(*args, **kwargs)

    mode = _CaptureMode()
    mode.on_call = on_call
    mode.__enter__()
    return mode


def pop_mode(mode: Any) -> None:
    """Pop `mode` if it is on top of the stack; otherwise leave it, disarmed, for torch to pop."""
    mode.on_call = None
    mode.capturing = False
    torch = sys.modules.get("torch")
    try:
        # Mode stacks are per thread: on another thread's (possibly empty) stack, index -1 would
        # crash the interpreter.
        depth = torch._C._len_torch_function_stack()
        if depth <= 0:
            return
        current = torch._C._get_function_stack_at(depth - 1)
    except Exception:
        return
    if current is mode:
        mode.__exit__(None, None, None)
