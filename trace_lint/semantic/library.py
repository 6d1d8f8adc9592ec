"""What the semantic model asks of the frameworks, which come after it in the flow.

The framework plug-ins (`frameworks/ttnn/`, `frameworks/torch/`, any other) know what their
calls do; semantic/ never names them. Whoever builds the model (`capture/engine.py`) hands it
an object answering `Library`, made from every plug-in (`frameworks.library()`). `NO_LIBRARY`
knows no framework: every call is then the project's or unknown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Protocol

if TYPE_CHECKING:
    import libcst as cst


class Library(Protocol):
    def owns(self, name: str) -> bool:
        """The dotted name is a framework's (`ttnn.add`, `torch.cuda.Event`): its call is a
        library call, whose effects the framework says."""
        ...

    def launches_program(self, name: str) -> bool:
        """A framework call that launches a device program: not an allocation, a copy into a
        preallocated buffer, a free, an alias or a query."""
        ...

    def freed(self, call: "cst.Call", name: Optional[str]) -> Optional["cst.BaseExpression"]:
        """What the call frees (a free's argument, or the receiver of a free method), or None.
        `name`: the call's dotted name through imports (None for a method of a value)."""
        ...

    def returns_receiver(self, method: str) -> bool:
        """A method a framework's base classes give project classes that returns the instance
        itself (`model.cuda()`, `.eval()`): the value keeps the project class."""
        ...

    def trace_call(self, call: "cst.Call", name: Optional[str]) -> Optional[tuple[str, Optional["cst.BaseExpression"]]]:
        """What the call does to a trace kept by an id: `("begin", None)` (it returns a new
        id), `("execute", id)`, `("release", id)` with the id argument (None where absent),
        or None."""
        ...

    def allocates(self, call: "cst.Call", name: Optional[str]) -> bool:
        """The framework call makes a new device buffer."""
        ...


class _NoLibrary:
    def owns(self, name: str) -> bool:
        return False

    def launches_program(self, name: str) -> bool:
        return False

    def freed(self, call, name):
        return None

    def returns_receiver(self, method: str) -> bool:
        return False

    def trace_call(self, call, name):
        return None

    def allocates(self, call, name) -> bool:
        return False


NO_LIBRARY: Library = _NoLibrary()
