"""TRC2xx: host logic in captured code: frozen branches, host side effects, host arithmetic."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from ._common import device_value_in, enclosing_statement, fixed_for_the_program
from ..semantic.receivers import receiver_parameter
from ..semantic.bindings import assignment_targets, single_assignment
from ..frontend.syntax_walk import preorder
from ..semantic.nodes import is_sliced
from ..semantic.project import FunctionInfo
from ..core.api_tables import tables
from ..frameworks.effects import Effect
from .base import Invalid, Rule, Valid


class _HostLogicRule(Rule):
    silent_in_first_use_cache = True


class ConditionalInRegion(_HostLogicRule):
    """
    ## What it does
    Flags a Python conditional written lexically between `begin_trace_capture` and
    `end_trace_capture` (or `capture_begin()` and `capture_end()`, or in the body of
    `with torch.cuda.graph(g):`): `if`/`elif`, `while`, a ternary and `match`.

    Not reported: `assert` (it checks, it chooses no device work), and tests that cannot
    differ between capture and replay: host metadata of tensors (`x.shape[-1] > 32`,
    `t.is_allocated()`, `x.dtype == ttnn.bfloat16`), types (`isinstance`), literals and
    module-level constants. The guards of a conditional capture
    (`if capture: tid = ttnn.begin_trace_capture(...)`) are outside the region.

    ## Why is this bad?
    The condition is evaluated once, at capture. Replay runs the device commands of the
    branch taken then, whatever the condition would say later: the branch is frozen into
    the trace. Decide outside the capture (capture one trace per branch), or move the choice
    onto the device.
    """

    code = "TRC201"
    sees_work = False

    INVALID = [
        Invalid(
            """
            import ttnn

            def capture(device, x, use_gelu):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    if use_gelu:
                        y = ttnn.gelu(x)
                    else:
                        y = ttnn.relu(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                return y
            """,
            lines=(6,),
        ),
        Invalid(
            """
            import ttnn

            def capture(device, x, scale):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                y = ttnn.multiply(x, scale) if scale else x
                ttnn.end_trace_capture(device, tid, cq_id=0)
                return y
            """,
            lines=(5,),
        ),
        Invalid(
            """
            import torch

            def capture(model, static_in, use_cache):
                model(static_in)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    if use_cache:
                        out = model(static_in)
                    else:
                        out = model(static_in * 2)
                return graph, out
            """,
            lines=(7,),
        ),
    ]
    VALID = [
        Valid(
            """
            import ttnn

            def capture(device, x, use_gelu):
                activation = ttnn.gelu if use_gelu else ttnn.relu
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    y = activation(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                return y
            """
        ),
        Valid(
            """
            import torch

            class Block(torch.nn.Module):
                def forward(self, x):
                    if x.dim() == 3:  # captured work, not the framing code of a region
                        x = x.flatten(1)
                    return torch.relu(x)

            def build(sample):
                return torch.cuda.make_graphed_callables(Block().cuda().eval(), (sample,))
            """
        ),
    ]

    def _flag(self, node: cst.CSTNode, test: cst.BaseExpression, what: str) -> None:
        if fixed_for_the_program(self.context, test):
            return  # the same answer at capture and at every replay: nothing is frozen
        self.report(node, f"{what} inside a capture region is evaluated once; the branch taken at capture is frozen into the trace")

    def visit_If(self, node: cst.If) -> None:
        parent = self.context.ancestors[-1] if self.context.ancestors else None
        self._flag(node, node.test, "`elif`" if isinstance(parent, cst.If) and parent.orelse is node else "`if`")

    def visit_While(self, node: cst.While) -> None:
        self._flag(node, node.test, "`while`")

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._flag(node, node.test, "a conditional expression")

    def visit_Match(self, node: cst.Match) -> None:
        self._flag(node, node.subject, "`match`")


class BranchOnDeviceValue(_HostLogicRule):
    """
    ## What it does
    Flags control flow on a device tensor's value anywhere in captured code:
    `if ttnn.max(y) > t:`, `while t.sum() > 0:`, `assert ttnn.to_torch(x).all()`.
    Shapes, dtypes and layouts are host metadata and are fine to branch on. In CUDA graphs,
    the result of a torch op (`torch.any(torch.isnan(y))`, `torch.relu(x).sum()`) counts as a
    device value, as do a `torch.nn` module's output (`self.lin(x)`), a parameter annotated
    `torch.Tensor`, a tensor made with a device (`torch.zeros(n, device=x.device)`) and one
    updated in place (`done |= ...`); their methods count as the functions do (`p.any()` as
    `torch.any(p)`). A tensor of unknown origin (an unannotated parameter) does not.

    ## Why is this bad?
    Testing a device value reads it back to the host (not supported during a capture), and
    whatever branch is taken at capture is the only one replay will ever run. Compute both
    outcomes on the device and select with `ttnn.where`, or decide before capturing.
    """

    code = "TRC202"

    INVALID = [
        Invalid(
            """
            import ttnn

            def capture(device, x, threshold):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    y = ttnn.relu(x)
                    if ttnn.max(y) > threshold:
                        y = ttnn.multiply(y, 0.5)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                return y
            """,
            lines=(7,),
        ),
        Invalid(
            """
            import ttnn

            class Decoder:
                def step(self, x):
                    y = ttnn.softmax(x)
                    while y.sum() > 0:
                        y = ttnn.subtract(y, 1.0)
                    return y

            def capture(device, decoder: Decoder, x):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                out = decoder.step(x)
                ttnn.end_trace_capture(device, tid, cq_id=0)
                return out
            """,
            lines=(6,),
        ),
        Invalid(
            """
            import torch

            class Gate(torch.nn.Module):
                def forward(self, x):
                    y = torch.relu(x)
                    if y.sum() > 0:
                        return y
                    return x

            def build(sample):
                gate = Gate().cuda()
                return torch.cuda.make_graphed_callables(gate, (sample,))
            """,
            lines=(6,),
        ),
    ]
    VALID = [
        Valid(
            """
            import ttnn

            def capture(device, x, threshold):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    y = ttnn.relu(x)
                    mask = ttnn.gt(y, threshold)
                    y = ttnn.where(mask, ttnn.multiply(y, 0.5), y)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                return y
            """
        ),
        Valid(
            """
            import ttnn

            class Block:
                def forward(self, x):
                    y = ttnn.relu(x)
                    if y.shape[-1] > 32:  # metadata: known at capture, fixed at replay
                        y = ttnn.softmax(y)
                    return y

            def capture(device, block, x):
                y = block.forward(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                y = block.forward(x)
                ttnn.end_trace_capture(device, tid, cq_id=0)
                return y
            """
        ),
        Valid(
            """
            import torch

            class Gate(torch.nn.Module):
                def forward(self, x):
                    y = torch.relu(x)
                    if y.size(-1) > 32 and not torch.cuda.is_current_stream_capturing():
                        y = y[..., :32]
                    return torch.where(y.sum(-1, keepdim=True) > 0, y, x)

            def build(sample):
                return torch.cuda.make_graphed_callables(Gate().cuda(), (sample,))
            """
        ),
    ]

    def _check(self, node: cst.CSTNode, test: cst.BaseExpression) -> None:
        found = device_value_in(self.context, test)
        if found is not None:
            code = self.context.module.code(found) if found in self.context.module.positions else "a device value"
            code = code if len(code) <= 40 else code[:37] + "..."
            self.report(node, f"control flow on the device value `{code}` reads it to the host at capture and freezes the branch", covers=test)

    def visit_If(self, node: cst.If) -> None:
        self._check(node, node.test)

    def visit_While(self, node: cst.While) -> None:
        self._check(node, node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._check(node, node.test)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._check(node, node.test)


_CONSTRUCTION = frozenset({"__init__", "__post_init__", "__new__"})


class HostSideEffect(_HostLogicRule):
    """
    ## What it does
    Flags host side effects in the captured work (code reached through calls, declared
    captured, or passed as the captured callable; not the framing code written between
    begin and end) on state that outlives the capture: augmented assignment, or assignment
    of a host value, to an attribute of `self`/`cls` or of an object reachable from them, a
    global, a class attribute, an element of a module-level container, of an attribute's
    container (`self.stats[k] += 1`) or of a container from an enclosing function
    (`state["i"] += 1` in a closure); the mutators `append`, `extend`, `insert`, `update`,
    `setdefault`, `pop`, `clear`, `add`, `remove` and `discard` on those; random numbers
    (`random`, `numpy.random`, torch CPU generators) and wall-clock reads (`time.time`,
    `time.perf_counter`).

    An augmented assignment to an attribute of an object handed in by the caller
    (`state.steps += 1` on a parameter) accumulates across calls and is reported too.

    Not reported: attributes of objects made at capture time (`p = Params(); p.handle = h`,
    a parameter's `batch.x = x`), including the `self` of their methods on every call that
    reaches them (`ch = Chains(); ch.add(x)`, or an object the framing code made before
    the region and handed down); storing what device work produced
    (`self.output = self.model(self.input)`: an output handle, refilled by each replay); and
    storing a value the caller handed in whose type says nothing of the host
    (`self._src = x`: not known to be a host value). Nor a flag switched for one call and
    switched back: a write that a `finally:` of the same function writes again (`self.active
    = True` then `try: ... finally: self.active = False`), or the `finally:` putting back a
    value read before (`saved = X.flag; try: X.flag = v ... finally: X.flag = saved`); the
    `finally:` that writes another value than it read is still reported.

    Blocks that fill a cache on first use (`if self.w is None: self.w = ...`) run during the
    warm-up and are not reported.

    ## Why is this bad?
    Replay repeats the recorded device commands, not the Python that ran at capture. A
    counter stays at its captured value, a position index is frozen, a random draw is the
    same forever. Keep such state on the device (a tensor updated by an op, copied into
    before each replay) or update it on the host outside the trace.
    """

    code = "TRC203"
    sees_lexical = False

    INVALID = [
        Invalid(
            """
            import ttnn

            class Attention:
                def forward(self, x):
                    self.calls += 1
                    return ttnn.softmax(x)

            def capture(device, attention: Attention, x):
                attention.forward(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                out = attention.forward(x)
                ttnn.end_trace_capture(device, tid, cq_id=0)
                return out
            """,
            lines=(5,),
        ),
        Invalid(
            """
            import time
            import ttnn

            TIMINGS = []

            def layer(x):
                TIMINGS.append(time.perf_counter())
                return ttnn.relu(x)

            def capture(device, x):
                layer(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                out = layer(x)
                ttnn.end_trace_capture(device, tid, cq_id=0)
                return out
            """,
            lines=(7,),
        ),
        Invalid(
            """
            import torch

            class Decoder(torch.nn.Module):
                def forward(self, x):
                    self.steps += 1
                    noise = torch.randn(x.shape)
                    return x + noise.cuda()

            def build(sample):
                decoder = Decoder().cuda().eval()
                return torch.cuda.make_graphed_callables(decoder, (sample,))
            """,
            lines=(5, 6),
        ),
    ]
    VALID = [
        Valid(
            """
            import ttnn

            class Attention:
                def __init__(self):
                    self.mask = None

                def forward(self, x):
                    if self.mask is None:
                        self.mask = ttnn.ones_like(x)  # first use: runs at warm-up
                    return ttnn.multiply(ttnn.softmax(x), self.mask)

            def capture(device, attention, x):
                attention.forward(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    out = attention.forward(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                return out
            """
        ),
        Valid(
            """
            import torch

            class Decoder(torch.nn.Module):
                def forward(self, x):
                    noise = torch.randn(x.shape, device=x.device)  # CUDA RNG is recorded
                    return x + noise

            def capture(decoder, static_in):
                decoder(static_in)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    out = decoder.forward(static_in)
                return graph, out
            """
        ),
        Valid(
            """
            import ttnn

            class Plan:
                def __init__(self):
                    self.steps = []

                def add(self, name):
                    self.steps.append(name)  # a plan made during this capture

            def layer(x):
                plan = Plan()
                plan.add("relu")
                return ttnn.relu(x)

            def capture(device, x):
                layer(x)
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    out = layer(x)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                return out
            """
        ),
    ]

    def _globals_declared(self) -> frozenset[str]:
        """Names the function declares `global` or `nonlocal` (from the binder)."""
        function = self.context.function
        if function is None:
            return frozenset()
        bindings = function.bindings
        return frozenset(bindings.declared_global | bindings.declared_nonlocal)

    def _root_kind(self, name: str) -> Optional[str]:
        """What a name designates, for state that outlives the capture: "self" (the receiver of
        this method or of an enclosing one), "global", "module" (a module-level name),
        "class" (an imported or module-level class or module), "closure" (a local of an
        enclosing function); None for this function's own locals and parameters."""
        from ..semantic.bindings import local_names

        function = self.context.function
        if function is None:
            return None
        if name in self._globals_declared():
            return "global"
        scope: Optional[FunctionInfo] = function
        while scope is not None:
            if name in local_names(scope):
                if receiver_parameter(scope) == name:
                    # The object an `__init__` (or `__post_init__`, `__new__`) initialises, or
                    # one every captured call of this method gets from the capture itself
                    # (`ch = Chains(); ch.add(...)`), is a capture-time object.
                    if scope.name in _CONSTRUCTION or name in self.context.capture_time_parameters(scope):
                        return None
                    return "self"
                if scope is function:
                    return None
                return None if self._fresh_in_captured_caller(name, scope, function) else "closure"
            scope = scope.parent
        module = self.context.module
        if name in module.imports or name in module.top_level:
            return "class"
        if name in module.globals:
            return "module"
        return None

    def _fresh_in_captured_caller(self, name: str, scope: FunctionInfo, function: FunctionInfo) -> bool:
        """A container of an enclosing function that each run of it makes anew (`pending =
        []`), where that function is itself captured work holding no region and the closure
        runs only inside its runs (its name is only ever called there, never handed on): made
        during the capture, so nothing of it outlives the capture."""
        facts = self.context.facts
        if function.parent is not scope or facts.regions_in(scope) or not facts.capture_kinds(scope, None):
            return False
        bindings = scope.bindings.by_name.get(name, [])
        if not bindings or not all(b.kind in ("assign", "annassign") and _fresh_container(b.value) for b in bindings):
            return False
        module = scope.module
        for node in preorder(scope.node.body):
            if isinstance(node, cst.Name) and node.value == function.name:
                parent = module.parent(node)
                called = isinstance(parent, cst.Call) and parent.func is node
                if not called and not (isinstance(parent, cst.FunctionDef) and parent is function.node):
                    return False
        return True

    def _rooted(self, expr: cst.BaseExpression) -> Optional[str]:
        """The root kind of `a.b.c` / `a[k].b`: the kind of `a`."""
        while isinstance(expr, (cst.Attribute, cst.Subscript)):
            expr = expr.value
        return self._root_kind(expr.value) if isinstance(expr, cst.Name) else None

    def _rooted_in_parameter(self, expr: cst.BaseExpression) -> bool:
        while isinstance(expr, (cst.Attribute, cst.Subscript)):
            expr = expr.value
        function = self.context.function
        return (
            isinstance(expr, cst.Name)
            and function is not None
            and expr.value in function.params
            and expr.value not in self.context.capture_time_parameters(function)
        )

    def _outliving_container(self, container: cst.BaseExpression) -> bool:
        """A container that outlives the capture: an attribute of self/cls, of a global or of
        a class (`self.stats`), a module-level container, or one from an enclosing function."""
        if isinstance(container, cst.Name):
            return self._root_kind(container.value) in ("global", "module", "closure")
        if isinstance(container, (cst.Attribute, cst.Subscript)):
            return self._rooted(container) in ("self", "global", "module", "class")
        return False

    def _shared_target(self, target: cst.BaseExpression, augmented: bool = False) -> Optional[str]:
        if isinstance(target, cst.Attribute):
            if self._rooted(target) in ("self", "global", "module", "class"):
                return f"assignment to the attribute `{self.context.module.code(target)}`"
            if augmented and self._rooted_in_parameter(target):
                # `state.steps += 1` accumulates on an object the caller handed in.
                return f"augmented assignment to the attribute `{self.context.module.code(target)}`"
            return None  # an attribute of a capture-time object (a local, a parameter)
        if isinstance(target, cst.Name) and target.value in self._globals_declared():
            return f"assignment to the {'global' if target.value in self._global_only() else 'enclosing variable'} `{target.value}`"
        if isinstance(target, cst.Subscript):
            container = target.value
            if self._outliving_container(container):
                return f"assignment into `{self.context.module.code(container)}`"
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                found = self._shared_target(element.value)
                if found:
                    return found
        return None

    def _global_only(self) -> frozenset[str]:
        function = self.context.function
        return frozenset(function.bindings.declared_global) if function is not None else frozenset()

    def _device_work_output(self, value: cst.BaseExpression, _seen: Optional[set[int]] = None) -> bool:
        """A value that device work produced, or may have: the result of a call other than
        Python's own host builtins, or a known device tensor. Storing it keeps an output
        handle; each replay refills the same buffer."""
        context = self.context
        if context.is_device_value(value):
            return True
        if isinstance(value, cst.Await):
            return True
        if isinstance(value, cst.Call):
            name = context.qualified_name(value.func)
            return not (name in HOST_BUILTINS or _is_host_library(context, value))
        if is_sliced(value):
            return True  # `buf[:bs]`: a view of a buffer, what tensor code stores and copies
        if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Call) and not _host_metadata_call(context, value.value):
            return self._device_work_output(value.value, _seen)  # `model(x)[0]`: an element of what it returned
        seen = _seen if _seen is not None else set()
        if id(value) in seen:
            return False  # `x = (x, y)`: a binding cycle proves nothing
        seen.add(id(value))
        if isinstance(value, (cst.Tuple, cst.List)) and value.elements:
            return all(self._device_work_output(e.value, seen) for e in value.elements)
        if isinstance(value, cst.Name) and context.function is not None:
            scope = context.function.bindings
            if not scope.binds(value.value):
                return False
            reaching = scope.reaching(value.value, value)
            return bool(reaching) and all(self._bound_value(b) is not None and self._device_work_output(self._bound_value(b), seen) for b in reaching)
        return False

    @staticmethod
    def _bound_value(binding) -> Optional[cst.BaseExpression]:
        """The expression a binding takes its value from: the assigned value, or for
        `a, b = ttnn.chunk(t, 2)` the call whose result is unpacked."""
        if binding.kind in ("assign", "annassign", "walrus"):
            if binding.value is not None:
                return binding.value
            statement = binding.node
            if isinstance(statement, cst.Assign) and isinstance(statement.value, cst.Call):
                return statement.value
        return None

    def _report_statement(self, node: cst.CSTNode, what: str) -> None:
        self.report(enclosing_statement(self.context, node), f"{what} runs at capture only; replay will not repeat it")

    def _passed_in(self, value: cst.BaseExpression) -> bool:
        """A parameter's value whose type says nothing of the host (`self._src = x`): what
        the caller handed in, commonly a tensor; not known to be a host value."""
        function = self.context.function
        if not isinstance(value, cst.Name) or function is None:
            return False
        bindings = function.bindings
        if not bindings.binds(value.value):
            return False
        reaching = bindings.reaching(value.value, value)
        return bool(reaching) and all(
            b.kind == "param" and not _host_annotation(b.node) for b in reaching
        )

    def _leaves_no_trace(self, node: cst.BaseSmallStatement, target: cst.BaseExpression) -> bool:
        """The write does not change the state once the call returns: a `finally:` of the same
        function assigns the target again (`self.active = True` then `try: ... finally:
        self.active = False`, or the write inside that `try`), or the write is that `finally:`
        putting back what was read from the target before (`saved = X.flag; try: X.flag = v
        ... finally: X.flag = saved`)."""
        module = self.context.module
        text = module.normalized(target)
        statement = module.parent(node)
        if not isinstance(statement, cst.SimpleStatementLine):
            return False
        child: cst.CSTNode = statement
        parent = module.parent(child)
        while parent is not None and not isinstance(parent, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            if isinstance(parent, (cst.IndentedBlock, cst.Module)):
                siblings = list(parent.body)
                following = siblings[siblings.index(child) + 1] if child in siblings and siblings.index(child) + 1 < len(siblings) else None
                if child is statement and isinstance(following, cst.Try) and _final_assigns(following, text, module):
                    return True  # `self.active = True` then `try: ... finally: self.active = False`
            if isinstance(parent, cst.Try):
                if child is parent.body and _final_assigns(parent, text, module):
                    return True  # written in the `try`, written again by its `finally:`
                if parent.finalbody is not None and child is parent.finalbody:
                    return self._restores(node, text)
            child, parent = parent, module.parent(parent)
        return False

    def _restores(self, node: cst.BaseSmallStatement, text: str) -> bool:
        """`X = saved` where every binding of `saved` reaching it reads `X`."""
        function = self.context.function
        value = node.value if isinstance(node, (cst.Assign, cst.AnnAssign)) else None
        if function is None or not isinstance(value, cst.Name) or not function.bindings.binds(value.value):
            return False
        reaching = function.bindings.reaching(value.value, value)
        module = self.context.module
        return bool(reaching) and all(
            b.kind == "assign" and b.value is not None and module.normalized(b.value) == text for b in reaching
        )

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._device_work_output(node.value) or self._passed_in(node.value):
            return
        for target in assignment_targets(node):
            if isinstance(target, cst.Subscript) and self.context.is_device_value(target.value):
                continue  # writing into a device tensor (`buf[i] = v`) is device work
            what = self._shared_target(target)
            if what and not self._leaves_no_trace(node, target):
                self._report_statement(node, what)
                return

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        (target,) = assignment_targets(node)
        if self.context.is_device_value(target):
            return  # an in-place device op on a tensor
        what = self._shared_target(target, augmented=True)
        if what:
            self._report_statement(node, what)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None and not self._device_work_output(node.value):
            what = self._shared_target(single_assignment(node))
            if what:
                self._report_statement(node, what)

    def visit_Call(self, node: cst.Call) -> None:
        context = self.context
        python = context.tables.python
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in python.mutating_methods:
            receiver = func.value
            if context.function is not None and self.facts.sole_target(node, context.function) is not None:
                pass  # a project method: its own body is analysed where it is reached
            elif context.is_device_value(receiver):
                pass  # `t.add(u)`: a tensor op, not a container mutation
            elif func.attr.value in _SET_ONLY and not isinstance(context.ancestors[-1] if context.ancestors else None, cst.Expr):
                pass  # `y = w.add(x)` uses a result: a tensor op; `set.add` returns None
            elif self._outliving_container(receiver):
                self._report_statement(node, f"`.{func.attr.value}()` on `{context.module.code(receiver)}`")
                return
        drawn = context.effect(node, Effect.HOST_RANDOM) or context.effect(node, Effect.CLOCK)
        if drawn is not None:
            self._report_statement(node, drawn.what)


# Mutators that only sets have: on a tensor they are ops whose result is used.
_SET_ONLY = frozenset({"add", "remove", "discard"})

# Builtins whose result is a host value.
HOST_BUILTINS = frozenset({
    "int", "float", "bool", "str", "bytes", "len", "list", "dict", "tuple", "set", "frozenset",
    "min", "max", "sum", "abs", "round", "range", "sorted", "reversed", "enumerate", "zip",
    "repr", "format", "hash", "id", "divmod", "pow", "any", "all", "isinstance", "getattr",
})


def _final_assigns(node: cst.Try, text: str, module) -> bool:
    """The `finally:` of the `try` assigns the target (a statement of its own block)."""
    if node.finalbody is None:
        return False
    for line in node.finalbody.body.body:
        if isinstance(line, cst.SimpleStatementLine):
            for small in line.body:
                if isinstance(small, (cst.Assign, cst.AnnAssign)) and any(
                    module.normalized(t) == text for t in assignment_targets(small)
                ):
                    return True
    return False


def _host_annotation(param: cst.CSTNode) -> bool:
    """Annotated with a host type (`n: int`, `Optional[List[int]]`, `int | None`)."""
    annotation = getattr(param, "annotation", None)
    return annotation is not None and _host_type(annotation.annotation)


def _host_type(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitOr):
        return _host_type(expr.left) or _host_type(expr.right)
    if isinstance(expr, cst.Subscript):
        name = expr.value.attr.value if isinstance(expr.value, cst.Attribute) else getattr(expr.value, "value", None)
        if name in ("Optional", "Union"):
            return any(isinstance(e.slice, cst.Index) and _host_type(e.slice.value) for e in expr.slice)
        expr = expr.value
    host_types = tables().python.host_types
    if isinstance(expr, cst.Attribute):
        return expr.attr.value in host_types
    return isinstance(expr, cst.Name) and expr.value in host_types


def _host_metadata_call(context, call: cst.Call) -> bool:
    """`t.size()`, `t.memory_config()`: a read of host metadata, whose elements are host values."""
    func = call.func
    return isinstance(func, cst.Attribute) and func.attr.value in context.tables.host_metadata.methods


def _is_host_library(context, call: cst.Call) -> bool:
    """A host library's call: a random draw on the host, a clock read."""
    return any(e.effect in (Effect.HOST_RANDOM, Effect.CLOCK) for e in context.call_effects(call))





class ShapeArithmetic(_HostLogicRule):
    """
    ## What it does
    Flags shape or index arithmetic written lexically inside a capture region:
    `x.shape[0] * 2`, `len(cache) - 1`, `pos + 1`. Opt-in.

    ## Why is this bad?
    Host arithmetic runs once, at capture; its result is baked into the recorded op
    arguments. An index that should advance each step (a decode position) stays at its
    captured value. Keep such values in device tensors updated before each replay.
    """

    code = "TRC204"
    sees_work = False

    INVALID = [
        Invalid(
            """
            import ttnn

            def capture(device, x, pos):
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    y = ttnn.slice(x, [0, pos + 1], [1, x.shape[1] * 2])
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                return y
            """,
            lines=(6, 6),  # two expressions, two findings
        )
    ]
    VALID = [
        Valid(
            """
            import ttnn

            def capture(device, x, pos):
                start, stop = [0, pos + 1], [1, x.shape[1] * 2]
                tid = ttnn.begin_trace_capture(device, cq_id=0)
                try:
                    y = ttnn.slice(x, start, stop)
                finally:
                    ttnn.end_trace_capture(device, tid, cq_id=0)
                return y
            """
        )
    ]

    ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo, cst.Divide)

    def _shapeish(self, expr: cst.BaseExpression) -> bool:
        metadata = self.context.tables.tensor.metadata_attributes
        node = expr
        while isinstance(node, cst.Subscript):
            node = node.value
        if isinstance(node, cst.Attribute) and node.attr.value in metadata:
            return True
        if isinstance(node, cst.Call) and self.context.qualified_name(node.func) == "len":
            return True
        return False

    def _index_like(self, left: cst.BaseExpression, right: cst.BaseExpression) -> bool:
        for a, b in ((left, right), (right, left)):
            if isinstance(a, cst.Integer) and isinstance(b, (cst.Name, cst.Attribute, cst.Subscript)) and not self.context.is_device_value(b):
                return True
        return False

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, self.ARITHMETIC):
            return
        parent = self.context.ancestors[-1] if self.context.ancestors else None
        if isinstance(parent, cst.BinaryOperation):
            return  # report the whole expression once
        parts = _operands(node)
        if any(self._shapeish(p) for p in parts) or self._index_like(node.left, node.right):
            self.report(node, f"`{self.context.module.code(node)}` is computed on the host once, at capture")


def _operands(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(node, cst.BinaryOperation):
        return [*_operands(node.left), *_operands(node.right)]
    return [node]


RULES = [ConditionalInRegion, BranchOnDeviceValue, HostSideEffect, ShapeArithmetic]


def _fresh_container(value: Optional[cst.BaseExpression]) -> bool:
    """`[]`, `{}`, a comprehension, or `list()` / `dict()` / `set()` with no argument: a new
    container each time the statement runs."""
    if isinstance(value, (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)):
        return True
    return isinstance(value, cst.Call) and not value.args and isinstance(value.func, cst.Name) and value.func.value in ("list", "dict", "set")

