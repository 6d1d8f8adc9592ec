"""Which expressions are torch tensors on the host or on the device, and which are torch.nn
modules."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from ...core.api_tables import tables
from ...semantic.attribute_kinds import attribute_kind
from ...semantic.nodes import call_arguments, is_none, iter_body_nodes
from ...semantic.project import FunctionInfo, Project

if TYPE_CHECKING:
    from ...semantic.calls import CallResolver as ValueClasses


def _names_module_class(name: Optional[str]) -> bool:
    """A module class of a torch.nn namespace (`torch.nn.Linear`); not its functions
    (`torch.nn.functional.relu`) or `torch.nn.Parameter` (a tensor)."""
    if name is None:
        return False
    api = tables().torch
    namespace, _, last = name.rpartition(".")
    return namespace in api.module_namespaces and last[:1].isupper() and name not in api.not_module_classes


class TorchFacts:
    """Which expressions are torch tensors on the host, and which on the device.

    Host: made by a creation function without a device (or with device="cpu"), `.cpu()`,
    `.to("cpu")`. Device: made with a CUDA device, `.cuda()`, `.to("cuda")`, or computed by a
    torch op (table `value_functions` / `value_methods`) from anything not known host: in
    code recorded into a CUDA graph, tensor work is device work. As in TensorFacts, a local
    name is known only when every binding of it agrees; unknown stays unknown.
    """

    def __init__(self, project: Project, function: Optional[FunctionInfo], module, classes: Optional[ValueClasses] = None):
        self.project = project
        self.function = function
        self.module = module
        self.classes = classes
        self._binding_kinds: dict[int, Optional[str]] = {}
        self._judging: set[int] = set()
        self._assumed = 0
        self._default_device_changed: Optional[bool] = None

    def qualified(self, expr: cst.BaseExpression) -> Optional[str]:
        return self.project.qualified_name(expr, self.module, self.function)

    # -- device arguments -------------------------------------------------------------------
    def device_kind(self, expr: Optional[cst.BaseExpression], _depth: int = 0) -> Optional[str]:
        """"cpu", "cuda" or None (unknown) for a device argument: "cuda:0", 0, torch.device("cpu")."""
        api = tables().torch
        if expr is None or _depth > 4:
            return None
        if isinstance(expr, cst.SimpleString):
            try:
                text = expr.evaluated_value
            except Exception:
                return None
            if isinstance(text, bytes):
                return None
            if any(text == p or text.startswith(p + ":") for p in api.host_device_prefixes):
                return "cpu"
            if any(text == p or text.startswith(p + ":") for p in api.cuda_device_prefixes):
                return "cuda"
            return None
        if isinstance(expr, cst.Integer):
            return "cuda"  # torch reads a bare index as a CUDA device
        if isinstance(expr, cst.Call) and self.qualified(expr.func) in api.device_constructor:
            positional, keywords = call_arguments(expr)
            return self.device_kind(keywords.get("type", positional[0] if positional else None), _depth + 1)
        if isinstance(expr, cst.Name) and self.function is not None and self.function.bindings.binds(expr.value):
            reaching = self.function.bindings.reaching(expr.value, expr)
            if reaching and all(b.kind in ("assign", "annassign", "walrus") and b.value is not None for b in reaching):
                kinds = {self.device_kind(b.value, _depth + 1) for b in reaching}
                return kinds.pop() if len(kinds) == 1 else None
        return None

    def default_device_changed(self) -> bool:
        """`torch.set_default_device(...)` in the module or `with torch.device(...)` in the function."""
        if self._default_device_changed is None:
            api = tables().torch
            # The text only says which chunks to parse; a call that resolves to a setter decides.
            tokens = self.module.tokens_for(api.default_device_setters)
            changed = any(
                self.project.qualified_name(call.func, self.module, scope) in api.default_device_setters
                for call, scope in self.module.iter_calls(tokens)
            ) if tokens else False
            if not changed and self.function is not None:
                for node in iter_body_nodes(self.function):
                    if isinstance(node, cst.WithItem) and isinstance(node.item, cst.Call) and self.qualified(node.item.func) in api.device_constructor:
                        changed = True
                        break
            self._default_device_changed = changed
        return self._default_device_changed

    # -- creation ---------------------------------------------------------------------------
    def creation_device(self, call: cst.Call) -> Optional[str]:
        """For a torch creation call: "cpu", "cuda" or None; None also for other calls."""
        api = tables().torch
        name = self.qualified(call.func)
        if name is None:
            return None
        if name in api.host_creators:
            return "cpu"
        if name not in api.creators and name not in api.like_creators:
            return None
        if any(arg.star == "**" for arg in call.args):
            return None
        positional, keywords = call_arguments(call)
        if "device" in keywords and not is_none(keywords["device"]):
            return self.device_kind(keywords["device"])
        if name in api.like_creators:
            return self._kind_of(positional[0]) if positional else None
        if name in api.data_to_device and positional and self.is_device(positional[0]):
            return "cuda"  # torch.tensor(t) keeps t's device
        return None if self.default_device_changed() else "cpu"

    # -- values -----------------------------------------------------------------------------
    def is_host(self, expr: cst.BaseExpression) -> bool:
        return self._kind_of(expr) == "cpu"

    def is_device(self, expr: cst.BaseExpression) -> bool:
        return self._kind_of(expr) == "cuda"

    def _kind_of(self, expr: cst.BaseExpression) -> Optional[str]:
        api = tables().torch
        if isinstance(expr, cst.Name):
            return self._name_kind(expr)
        if isinstance(expr, cst.Attribute):
            return attribute_kind(self.function, expr, self._stored_kind, "torch", self.classes, self._declared_kind)
        if isinstance(expr, (cst.Subscript,)):
            return self._kind_of(expr.value)
        if isinstance(expr, cst.BinaryOperation):
            kinds = {self._kind_of(expr.left), self._kind_of(expr.right)} - {None}
            return kinds.pop() if len(kinds) == 1 else None
        if isinstance(expr, cst.UnaryOperation) and not isinstance(expr.operator, cst.Not):
            return self._kind_of(expr.expression)
        if not isinstance(expr, cst.Call):
            return None
        expr = self._through_partial(expr)
        created = self.creation_device(expr)
        if created is not None:
            return created
        if self._made_with_device(expr):
            return "cuda"  # `torch.zeros(n, device=x.device)`: buffers are made for the device
        func = expr.func
        if self.is_nn_module(func):
            return "cuda"  # `self.lin(x)`: a torch.nn module's output
        name = self.qualified(func)
        if name is not None:
            if name in api.value_functions:
                positional = [a.value for a in expr.args if a.keyword is None and not a.star]
                if positional and self._kind_of(positional[0]) == "cpu":
                    return "cpu"
                return "cuda"
            return None
        if not isinstance(func, cst.Attribute):
            return None
        method, receiver = func.attr.value, func.value
        if method in api.to_cuda_methods:
            return "cuda"
        if method in api.to_host_methods:
            return "cpu"
        if method in api.to_methods:
            positional, keywords = call_arguments(expr)
            target = keywords.get("device", positional[0] if positional else None)
            kind = self.device_kind(target)
            return kind if kind is not None else (self._kind_of(receiver) if "device" not in keywords and not positional else None)
        if method in api.value_methods or method in api.boolean_methods:
            return self._kind_of(receiver)
        return None

    def _through_partial(self, call: cst.Call) -> cst.Call:
        """`zeros(n)` where every binding of the local `zeros` reaching the call is
        `functools.partial(torch.zeros, device=d, ...)`: the creation call the partial makes,
        its positional arguments first and the call's after, the call's keywords winning over
        the partial's, as in Python. Any other call is itself."""
        func = call.func
        function = self.function
        if not isinstance(func, cst.Name) or function is None or not function.bindings.binds(func.value):
            return call
        api = tables().torch
        made: set[str] = set()
        merged: Optional[cst.Call] = None
        for binding in function.bindings.reaching(func.value, call):
            value = binding.value
            if (
                binding.kind != "assign"
                or not isinstance(value, cst.Call)
                or self.qualified(value.func) not in tables().python.partial
                or not value.args
                or value.args[0].keyword is not None
                or value.args[0].star
                or any(arg.star for arg in value.args[1:])
            ):
                return call
            wrapped = value.args[0].value
            name = self.qualified(wrapped)
            if name not in api.creators and name not in api.like_creators and name not in api.host_creators:
                return call
            if any(arg.star for arg in call.args):
                return call
            given = [*value.args[1:], *call.args]
            positional = [arg for arg in given if arg.keyword is None]
            merged = cst.Call(func=wrapped, args=[*positional, *(arg for arg in given if arg.keyword is not None)])
            made.add(self.module.normalized(value))
        return merged if merged is not None and len(made) == 1 else call

    def _made_with_device(self, call: cst.Call) -> bool:
        """A creation given a device that is not known to be the host."""
        api = tables().torch
        name = self.qualified(call.func)
        if name not in api.creators and name not in api.like_creators:
            return False
        _, keywords = call_arguments(call)
        device = keywords.get("device")
        return device is not None and not is_none(device) and self.device_kind(device) != "cpu"

    def _stored_kind(self, method: FunctionInfo, value: cst.BaseExpression) -> Optional[str]:
        """The kind of a value a method stores on `self`."""
        return TorchFacts(self.project, method, method.module, self.classes)._kind_of(value)

    # -- torch.nn modules ---------------------------------------------------------------------
    def is_nn_module(self, expr: cst.BaseExpression, _depth: int = 0) -> bool:
        """An instance of a torch.nn module class (`torch.nn.Linear(...)`, `nn.Sequential(...)`,
        through `.cuda()` / `.to()` / `.eval()`), or a local name or attribute bound only to
        one: calling it computes a tensor."""
        if _depth > 4:
            return False
        api = tables().torch
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in api.module_passthrough_methods:
                return self.is_nn_module(func.value, _depth + 1)
            return _names_module_class(self.qualified(func))
        if isinstance(expr, cst.Name):
            function = self.function
            if function is None or not function.bindings.binds(expr.value):
                return False
            reaching = function.bindings.reaching(expr.value, expr)
            return bool(reaching) and all(
                b.kind in ("assign", "annassign") and b.value is not None and self.is_nn_module(b.value, _depth + 1) for b in reaching
            )
        if isinstance(expr, cst.Attribute):
            return attribute_kind(self.function, expr, self._stored_module, "torch.nn", self.classes) == "module"
        return False

    def _stored_module(self, method: FunctionInfo, value: cst.BaseExpression) -> Optional[str]:
        return "module" if TorchFacts(self.project, method, method.module, self.classes).is_nn_module(value) else None

    def _annotated_tensor(self, param: cst.CSTNode) -> bool:
        annotation = getattr(param, "annotation", None)
        if annotation is None:
            return False
        return self._names_tensor_type(annotation.annotation, self.module, self.function)

    def _names_tensor_type(self, expr: cst.BaseExpression, module, scope: Optional[FunctionInfo]) -> bool:
        if isinstance(expr, cst.SimpleString):
            try:
                expr = cst.parse_expression(expr.evaluated_value)
            except Exception:
                return False
        return self.project.qualified_name(expr, module, scope) in tables().torch.tensor_types

    def _declared_kind(self, cls, annotation: cst.BaseExpression) -> Optional[str]:
        """A class-body field annotated as a tensor (`ids: torch.Tensor` of a dataclass): as
        a parameter annotated so, device work's input in captured code."""
        return "cuda" if self._names_tensor_type(annotation, cls.module, None) else None

    def _name_kind(self, name: cst.Name) -> Optional[str]:
        """The kind every binding of a local name that can reach this read agrees on (from
        the binder's reaching definitions)."""
        function = self.function
        if function is None or not function.bindings.binds(name.value):
            return None
        kinds: set[Optional[str]] = set()
        for binding in function.bindings.reaching(name.value, name):
            if id(binding) in self._judging:
                # A cycle (`y = y * 0.5` in a loop): this binding is taken to agree with the
                # others while its own value is judged; answers that assumed so are not kept.
                self._assumed += 1
                continue
            kinds.add(self._binding_kind(binding))
        return kinds.pop() if len(kinds) == 1 else None

    def _binding_kind(self, binding) -> Optional[str]:
        if id(binding) in self._binding_kinds:
            return self._binding_kinds[id(binding)]
        if binding.kind == "param":
            # A parameter annotated as a tensor: in captured code, device work's input.
            return "cuda" if self._annotated_tensor(binding.node) else None
        augmented = binding.kind == "augassign" and isinstance(binding.node, cst.AugAssign)
        if not augmented and (binding.kind not in ("assign", "annassign", "walrus") or binding.value is None):
            return None  # a loop target, a with target...: not known from here
        self._judging.add(id(binding))
        assumed_before = self._assumed
        try:
            if augmented:
                # `p &= q` keeps what `p & q` would be.
                statement = binding.node
                kinds = {self._kind_of(statement.target), self._kind_of(statement.value)} - {None}
                kind = kinds.pop() if len(kinds) == 1 else None
            else:
                kind = self._kind_of(binding.value)
        finally:
            self._judging.discard(id(binding))
        if self._assumed == assumed_before:
            self._binding_kinds[id(binding)] = kind
        return kind
