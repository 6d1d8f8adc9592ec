"""Per-function summaries: what a call does to what it is handed (RULES.md "Summaries").

Each summary is computed from the function's resolved body and its callees' summaries (the
calls the resolver can pin), a fixed point over the call graph with recursion included
(`FixedPoint`), never from names or text:

- `frees(function)`: the parameters it frees, or elements or attributes of them
  (`def deallocate_outputs(outs): for t in outs: ttnn.deallocate(t)` frees `outs[]`), each
  with the steps down to the free;
- `stores(function)`: the attributes of its parameters it assigns (`self.out = ...`);
- `runs(function)`: the calls it makes, as paths from its parameters (`self.model[].decode`)
  and as the project functions reached (`fn:module.qualname`), any number of frames down;
- `returns_capture_state(function, queries)`: every value it returns is a capture query's
  answer (`torch.cuda.is_current_stream_capturing()`), so a test on its result is a
  capture-state guard (RULES.md "Capture-state guards");
- `returned_traces(function)`: where its return value holds a trace id that a capture it
  records made, itself or any frames down (`def capture(d, x): tid = begin(d); ...; return
  tid, y` holds one at position 0); `trace_parameters(function)`: the parameters it executes
  or releases as a trace id, or hands to code that does not resolve (unknown), any frames
  down; `returns_allocation(function)`: every value it returns is a new device buffer (an
  allocation, or what such a helper returns);
- `call_reads(call, caller, path)`: whether a call reads one path's value (not only its host
  metadata), any number of frames down (`self._work()` whose `ttnn.matmul(self.inp, ...)`
  reads `self.inp`). Not a summary of every path a function reads (that set, moved up every
  call edge, grows with the whole program): a question asked for one path at a time, where a
  rule has one, answered down the calls that can reach the path and memoized per function
  and path; at most `_READS_DEPTH` frames down, and past that the answer is "not known to
  read", so nothing is reported on it.

A path is a parameter name followed by attributes and `[]` for an element
(`runner.out`, `outs[]`). At a call site, a callee's paths are moved into the caller's frame
through the arguments that fill the parameters; a path whose parameter the call does not
fill (`*args`, a new instance) is dropped: unknown, so nothing depends on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional

import libcst as cst

from .bindings import assignment_targets, single_assignment, target_leaves, target_path
from .nodes import always_leaves, is_sliced, statements_after
from .project import FunctionInfo, ModuleInfo

if TYPE_CHECKING:
    from .calls import CallResolver, Target

# How many bindings and wrappers (`bool(...)`) a capture-state answer is followed through
# within one function.
_BINDINGS_FOLLOWED = 8
# The longest path a summary follows (attributes and elements after the parameter): a
# recursion that walks `x.next` would otherwise grow paths without end.
_LONGEST_PATH = 16
# How many frames down `call_reads` looks for a read of a path (the call's target is the
# first): past it a read is not known, and the rules stay silent on it.
_READS_DEPTH = 6


@dataclass(frozen=True)
class Step:
    """One step down to an effect: a call made, or the effect's own statement."""

    module: ModuleInfo
    node: cst.CSTNode
    message: str


@dataclass(frozen=True)
class Freed:
    """A free a call makes: the path freed (in the frame asked about), and the steps down to
    the `deallocate`, the free itself last."""

    path: str
    steps: tuple[Step, ...]


def path_of(expr: cst.BaseExpression, function: Optional[FunctionInfo] = None, depth: int = 0) -> Optional[str]:
    """`outs`, `self.model[].decode`: a name followed by attributes and subscripts (any index
    is `[]`); with the function, a local bound only by a loop over a path is an element of
    it (`for t in outs: ... t` is `outs[]`), and one bound only to a path is that path."""
    if isinstance(expr, cst.Name):
        if function is not None and depth < 4:
            bound = _bound_path(expr, function, depth)
            if bound is not None:
                return bound
        return expr.value
    if isinstance(expr, cst.Attribute):
        base = path_of(expr.value, function, depth)
        return f"{base}.{expr.attr.value}" if base is not None else None
    if isinstance(expr, cst.Subscript):
        base = path_of(expr.value, function, depth)
        if base is None:
            return None
        # A slice holds the container's own elements (`outs[1:]`); an index names one.
        return base if all(isinstance(element.slice, cst.Slice) for element in expr.slice) else f"{base}[]"
    return None


def _bound_path(name: cst.Name, function: FunctionInfo, depth: int) -> Optional[str]:
    bindings = function.bindings
    if not bindings.binds(name.value):
        return None
    reaching = bindings.reaching(name.value, name)
    found: set[Optional[str]] = set()
    for binding in reaching:
        if binding.kind == "param":
            found.add(name.value)
        elif binding.kind == "loop" and binding.value is not None:
            base = path_of(binding.value, function, depth + 1)
            found.add(f"{base}[]" if base is not None else None)
        elif binding.kind in ("assign", "annassign") and binding.value is not None and isinstance(binding.value, (cst.Name, cst.Attribute, cst.Subscript)):
            found.add(path_of(binding.value, function, depth + 1))
        else:
            found.add(None)
    if len(found) == 1:
        (only,) = found
        return only
    return None


def sliced_anew(expr: cst.BaseExpression, function: FunctionInfo, depth: int = 0) -> bool:
    """The value is a new one sliced out of another: a subscript with a slice in it
    (`t[:, :, :32]`, `t[1:]`), or a local every binding of which that reaches it is one. Freed
    itself, or handed whole to a helper that frees its parameter, it is that new value that is
    freed: a list's slice is a new list (which no free takes), a tensor's a new tensor made by
    a slice op, never the tensor it was cut from. (Iterated, a list's slice still holds the
    list's own elements: `for t in outs[1:]` frees `outs[]`, which this does not change.)"""
    if isinstance(expr, cst.Subscript):
        return is_sliced(expr)
    if not isinstance(expr, cst.Name) or depth >= 4 or not function.bindings.binds(expr.value):
        return False
    reaching = function.bindings.reaching(expr.value, expr)
    return bool(reaching) and all(
        binding.kind in ("assign", "annassign")
        and binding.value is not None
        and sliced_anew(binding.value, function, depth + 1)
        for binding in reaching
    )


def _holds_parameter(path: str, node: cst.CSTNode, function: FunctionInfo, parameters: set[str]) -> bool:
    """The path starts at a parameter that still holds what the caller passed where the node
    runs: after `x = ttnn.layer_norm(x)` a free of `x` frees the new value, not the argument."""
    root = root_of(path)
    return root in parameters and any(b.kind == "param" for b in function.bindings.reaching(root, node))


def _held_paths(path: Optional[str], node: cst.CSTNode, function: FunctionInfo) -> list[str]:
    """The path, and where its root is a local that some binding reaching the node made an
    alias of a path (`x = hidden` before `for layer in layers: x = layer(x)`), that path too:
    on the turn where the alias still holds, a free of the local frees what it names, as a
    free of a parameter rebound in the loop (`hidden = layer(hidden)`) frees the argument."""
    if path is None:
        return []
    out = [path]
    root = root_of(path)
    if root in function.params or not function.bindings.binds(root):
        return out
    for binding in function.bindings.reaching(root, node):
        if binding.kind in ("assign", "annassign") and isinstance(binding.value, (cst.Name, cst.Attribute, cst.Subscript)):
            alias = path_of(binding.value, function)
            if alias is not None and alias != path:
                out.append(alias + path[len(root):])
    return out


def root_of(path: str) -> str:
    end = len(path)
    for mark in (".", "["):
        index = path.find(mark)
        if index != -1:
            end = min(end, index)
    return path[:end]


def container_of(path: str) -> str:
    """The value a free of this path frees a buffer of: `outs[]` -> `outs`."""
    while path.endswith("[]"):
        path = path[:-2]
    return path


class FixedPoint:
    """Values of a monotone equation per key (a function's summary from its own body and
    its callees' summaries), solved over the call graph as it is discovered: strongly
    connected components (recursion) are iterated until nothing changes, so a value never
    depends on which function was asked about first (Tarjan's order, on demand)."""

    def __init__(self, compute: Callable[[object], object], bottom):
        self._compute = compute  # key -> value, asking `get` for what it depends on
        self._bottom = bottom
        self.values: dict = {}
        self._done: set = set()
        self._index: dict = {}
        self._low: dict = {}
        self._stack: list = []
        self._frames: list = []
        self._looped: set = set()
        self._subjects: dict = {}

    @property
    def busy(self) -> bool:
        """Inside a solve: values read now may still grow."""
        return bool(self._frames)

    def get(self, key, subject):
        """The value of `key` (`subject`: what `compute` is handed for it)."""
        if key in self._done:
            return self.values[key]
        if key in self._index:
            # On the stack: recursion. Its value so far; the component is iterated.
            if self._frames:
                caller = self._frames[-1]
                self._low[caller] = min(self._low[caller], self._index[key])
            self._looped.add(key)
            return self.values[key]
        self._index[key] = self._low[key] = len(self._index)
        self._stack.append(key)
        self._subjects[key] = subject
        self.values[key] = self._bottom
        self._frames.append(key)
        try:
            self.values[key] = self._compute(subject)
        except BaseException:
            # Too deep to analyse (the engine reports it): nothing of this solve is kept.
            while self._stack:
                member = self._stack.pop()
                for table in (self._index, self._low, self._subjects, self.values):
                    table.pop(member, None)
                if member == key:
                    break
            raise
        finally:
            self._frames.pop()
        if self._frames:
            caller = self._frames[-1]
            self._low[caller] = min(self._low[caller], self._low[key])
        if self._low[key] == self._index[key]:
            members = []
            while True:
                member = self._stack.pop()
                members.append((member, self._subjects.pop(member)))
                if member == key:
                    break
            if any(member in self._looped for member, _ in members):
                self._frames.append(key)  # reads of members return their current values
                try:
                    changed = True
                    while changed:
                        changed = False
                        for member, member_subject in members:
                            value = self._compute(member_subject)
                            if value != self.values[member]:
                                self.values[member] = value
                                changed = True
                finally:
                    self._frames.pop()
            for member, _ in members:
                self._done.add(member)
                del self._index[member]
                self._low.pop(member, None)
        return self.values[key]


class Summaries:
    def __init__(
        self,
        resolver: "CallResolver",
        user_callable: Callable[[cst.Call, FunctionInfo], bool],
        launches: Callable[[cst.Call, FunctionInfo], bool],
        capture_queries: frozenset[str] = frozenset(),
        unknown_effects: Optional[Callable[[cst.Call, FunctionInfo], bool]] = None,
        metadata_use: Optional[Callable[[FunctionInfo, cst.BaseExpression], bool]] = None,
    ):
        self.resolver = resolver
        # The framework functions that answer whether a capture is being recorded.
        self.capture_queries = capture_queries
        self.project = resolver.project
        # A call of something unresolved that is user code (`self.model(x)`, `step()`), and a
        # framework call that launches a device program: the two kinds of work to warm up.
        self._user_callable = user_callable
        self._launches = launches
        self._frees = FixedPoint(lambda function: self._own_frees(function), ())
        self._stores = FixedPoint(lambda function: self._own_stores(function), frozenset())
        self._runs = FixedPoint(lambda subject: self._own_runs(*subject), frozenset())
        self._work = FixedPoint(lambda subject: self._own_work(*subject), frozenset())
        # An unresolved call whose effects are unknown (user code, or a handle made outside
        # the project), and whether a function reaches one any frames down.
        self._unknown_effects = unknown_effects or user_callable
        self._unknown = FixedPoint(lambda subject: self._own_unknown(*subject), False)
        # Per call site (the call nodes live as long as the run's parsed modules), once solved.
        self._call_runs: dict[tuple[int, int], frozenset[str]] = {}
        self._capture_state = FixedPoint(lambda function: self._own_capture_state(function), False)
        self._uncaptured: dict[int, frozenset[int]] = {}
        # Where an expression is used for its host metadata only (`t.shape`, `len(t)`).
        self._metadata_use = metadata_use or (lambda function, expr: False)
        # `call_reads`: per call and path, the answer; per function and path, the fewest
        # frames down to a read (0: its own body) and the depth the search was cut at.
        self._call_reads: dict[tuple[int, str], bool] = {}
        self._read_depths: dict[tuple[int, str], tuple[Optional[int], Optional[int]]] = {}
        # Trace ids: where returned values hold one, what is done to parameters holding one;
        # helpers returning a new device buffer.
        self._traces = FixedPoint(lambda function: self._own_returned_traces(function), frozenset())
        self._trace_parameters = FixedPoint(lambda function: self._own_trace_parameters(function), frozenset())
        self._allocation = FixedPoint(lambda function: self._own_returns_allocation(function), False)

    # -- moving paths between frames ---------------------------------------------------------
    def _sole_targets(self, call: cst.Call, function: FunctionInfo) -> list["Target"]:
        return self.resolver.resolve_all(call, function)

    def to_caller(self, path: str, call: cst.Call, caller: FunctionInfo, callee: FunctionInfo) -> Optional[str]:
        """The callee's path in the caller's frame, or None when the call does not fill its
        parameter (or the path grows past what a summary follows: recursion on `x.next`)."""
        root = root_of(path)
        if root not in callee.params:
            return None
        bound = self.resolver.bind_arguments(call, caller, callee)
        arguments = bound.by_parameter
        if root == bound.receiver:
            if bound.constructs:
                return None  # a construction: the receiver is the new instance
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == callee.name:
                base = path_of(func.value, caller)  # `obj.method(...)`
            else:
                base = path_of(func, caller)  # an instance called: `model(x)`, `self.block(x)`
        elif root in arguments:
            base = path_of(arguments[root], caller)
        else:
            return None
        if base is None:
            return None
        moved = base + path[len(root):]
        return moved if moved.count(".") + moved.count("[") <= _LONGEST_PATH else None

    # -- frees -------------------------------------------------------------------------------
    def frees(self, function: FunctionInfo) -> tuple[Freed, ...]:
        """What the function frees of its parameters, any number of frames down: one free
        per path, the first in source order."""
        return self._frees.get(id(function), function)

    def _own_frees(self, function: FunctionInfo) -> tuple[Freed, ...]:
        parameters = set(function.params)
        found: dict[str, Freed] = {}
        for node in function.live_nodes:
            if type(node) is not cst.Call:
                continue
            direct = self.freed_expression(node, function)
            if direct is not None:
                if sliced_anew(direct, function):
                    continue  # a new tensor cut from a parameter, not the parameter
                path = path_of(direct, function)
                for held in _held_paths(path, node, function):
                    if _holds_parameter(held, node, function, parameters):
                        found.setdefault(held, Freed(held, (Step(function.module, node, f"`{function.qualname}` frees `{function.module.code(direct)}` here"),)))
                continue
            for freed in self.call_frees(node, function):
                for held in _held_paths(freed.path, node, function):
                    if _holds_parameter(held, node, function, parameters):
                        found.setdefault(held, Freed(held, freed.steps))
        return tuple(found.values())

    def call_frees(self, call: cst.Call, function: FunctionInfo) -> tuple[Freed, ...]:
        """The frees a call of a project function makes, as paths of the caller's frame (a
        call that can run several functions frees only what each of them frees)."""
        targets = self._sole_targets(call, function)
        if len(targets) != 1:
            return ()
        callee = targets[0].function
        out = []
        frees = self.frees(callee)
        arguments = self.resolver.bind_arguments(call, function, callee).by_parameter if frees else {}
        for freed in frees:
            handed = arguments.get(freed.path)
            if handed is not None and sliced_anew(handed, function):
                continue  # the helper frees its parameter whole: the new slice it was handed
            path = self.to_caller(freed.path, call, function, callee)
            if path is not None:
                step = Step(function.module, call, f"`{function.qualname}` calls `{callee.qualname}`")
                out.append(Freed(path, (step, *freed.steps)))
        return tuple(out)

    def freed_expression(self, call: cst.Call, function: FunctionInfo) -> Optional[cst.BaseExpression]:
        """What a call frees, as its framework says (`ttnn.deallocate(t)`, `t.deallocate()`);
        a method of a project class is the project's, not a framework's free."""
        name = self.project.qualified_name(call.func, function.module, function)
        freed = self.resolver.library.freed(call, name)
        if freed is not None and name is None and self.resolver.resolve_all(call, function):
            return None
        return freed

    # -- stores ------------------------------------------------------------------------------
    def stores(self, function: FunctionInfo) -> frozenset[str]:
        """Attributes of its parameters the function assigns, any number of frames down."""
        return self._stores.get(id(function), function)

    def _own_stores(self, function: FunctionInfo) -> frozenset[str]:
        parameters = set(function.params)
        found: set[str] = set()
        for node in function.live_nodes:
            if isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
                for target in assignment_targets(node):
                    for element in target_leaves(target):
                        if isinstance(element, cst.Attribute):
                            path = path_of(element)
                            if path is not None and root_of(path) in parameters:
                                found.add(path)
            elif type(node) is cst.Call:
                found |= {p for p in self.call_stores(node, function) if root_of(p) in parameters}
        return frozenset(found)

    def call_stores(self, call: cst.Call, function: FunctionInfo) -> frozenset[str]:
        """The attributes a call assigns, as paths of the caller's frame."""
        out: set[str] = set()
        for target in self._sole_targets(call, function):
            for path in self.stores(target.function):
                moved = self.to_caller(path, call, function, target.function)
                if moved is not None:
                    out.add(moved)
        return frozenset(out)

    # -- runs --------------------------------------------------------------------------------
    def runs(self, function: FunctionInfo, self_class=None) -> frozenset[str]:
        """The calls the function makes, any number of frames down: paths from its
        parameters (`self.model[].decode`) and the project functions reached (`fn:...`);
        `self_class`: the class of `self` in it, where known."""
        return self._runs.get((id(function), id(self_class)), (function, self_class))

    def _own_runs(self, function: FunctionInfo, self_class) -> frozenset[str]:
        parameters = set(function.params)
        found: set[str] = set()
        for node in function.live_nodes:
            if type(node) is cst.Call:
                found |= {r for r in self.call_runs(node, function, self_class) if r.startswith("fn:") or root_of(r) in parameters}
        return frozenset(found)

    def call_runs(self, call: cst.Call, function: FunctionInfo, self_class=None) -> frozenset[str]:
        """What a call runs, in the caller's frame: its own callee's path, the functions it
        reaches and what they run."""
        key = (id(call), id(self_class))
        found = self._call_runs.get(key)
        if found is None:
            found = self._moved_runs(call, function, self_class)
            if not self._runs.busy:
                self._call_runs[key] = found
        return found

    def _moved_runs(self, call: cst.Call, function: FunctionInfo, self_class) -> frozenset[str]:
        out: set[str] = set()
        own = path_of(call.func, function)
        if own is not None:
            out.add(own)
        for target in self.resolver.resolve_all(call, function, self_class):
            callee = target.function
            out.add(function_key(callee))
            for run in self.runs(callee, target.self_class):
                if run.startswith("fn:"):
                    out.add(run)
                    continue
                moved = self.to_caller(run, call, function, callee)
                if moved is not None:
                    out.add(moved)
        return frozenset(out)

    def work(self, function: FunctionInfo, self_class=None) -> frozenset[str]:
        """The work a call of the function must have run before for its programs to be
        compiled: the function itself where it launches a framework program, and the user
        callables it calls that the analysis cannot see into (paths from its parameters),
        any number of frames down."""
        return self._work.get((id(function), id(self_class)), (function, self_class))

    def _own_work(self, function: FunctionInfo, self_class) -> frozenset[str]:
        found: set[str] = set()
        for node in function.live_nodes:
            if type(node) is not cst.Call or not self.runs_while_capturing(node, function):
                continue
            if self.resolver.resolve_all(node, function, self_class):
                found |= self.call_work(node, function, self_class)
            elif self._launches(node, function):
                found.add(function_key(function))
            elif self._user_callable(node, function):
                path = path_of(node.func, function)
                found.add(path if path is not None and root_of(path) in function.params else "\0")
        return frozenset(found)

    def call_work(self, call: cst.Call, function: FunctionInfo, self_class=None) -> frozenset[str]:
        """The work a call does, in the caller's frame (see `work`); an unresolved call is
        its own callee's path."""
        targets = self.resolver.resolve_all(call, function, self_class)
        if not targets:
            path = path_of(call.func, function)
            return frozenset({path}) if path is not None else frozenset({"\0"})
        out: set[str] = set()
        for target in targets:
            out |= self.move_up(self.work(target.function, target.self_class), call, function, target.function)
        return frozenset(out)

    def call_reaches_unknown(self, call: cst.Call, function: FunctionInfo, self_class=None) -> bool:
        """The call runs, itself or any frames down, a call whose effects are unknown (what
        it frees, for one): RULES.md "Summaries", the rules stay silent on what depends on it."""
        targets = self.resolver.resolve_all(call, function, self_class)
        if not targets:
            return self._unknown_effects(call, function)
        return any(self._unknown.get((id(t.function), id(t.self_class)), (t.function, t.self_class)) for t in targets)

    def _own_unknown(self, function: FunctionInfo, self_class) -> bool:
        return any(
            type(node) is cst.Call and self.runs_while_capturing(node, function) and self.call_reaches_unknown(node, function, self_class)
            for node in function.live_nodes
        )

    def move_up(self, paths: frozenset[str], call: cst.Call, caller: FunctionInfo, callee: FunctionInfo) -> frozenset[str]:
        """Paths of the callee's frame in the caller's (`fn:` keys stay); a path the call
        does not fill is dropped, so a set holding one cannot be matched."""
        out = set()
        for path in paths:
            if path.startswith("fn:"):
                out.add(path)
                continue
            moved = self.to_caller(path, call, caller, callee)
            out.add(moved if moved is not None else "\0")
        return frozenset(out)

    def frame_free(self, paths: frozenset[str]) -> frozenset[str]:
        """The paths with no frame (`fn:` keys); any other cannot be matched elsewhere."""
        return frozenset(path if path.startswith("fn:") else "\0" for path in paths)

    # -- reads -------------------------------------------------------------------------------
    def to_callee(self, path: str, call: cst.Call, caller: FunctionInfo, callee: FunctionInfo) -> list[str]:
        """The caller's path in the callee's frame, through each argument (or the receiver)
        whose path it starts with (`self.inp` through `self._work()` is the callee's
        `self.inp`; through `helper(self.inp)`, its parameter); none where the call does not
        hand it over."""
        bound = self.resolver.bind_arguments(call, caller, callee)
        pairs = [(parameter, path_of(argument, caller)) for parameter, argument in bound.by_parameter.items()]
        if bound.receiver is not None and not bound.constructs:
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == callee.name:
                pairs.append((bound.receiver, path_of(func.value, caller)))  # `obj.method(...)`
            else:
                pairs.append((bound.receiver, path_of(func, caller)))  # `model(x)`
        out = []
        for parameter, base in pairs:
            if base is not None and (path == base or path.startswith(f"{base}.") or path.startswith(f"{base}[")):
                out.append(parameter + path[len(base):])
        return out

    def call_reads(self, call: cst.Call, function: FunctionInfo, path: str) -> bool:
        """The call reads the value at the path of the caller's frame (`self.inp`), or an
        element of it, beyond its host metadata, any number of frames down (up to
        `_READS_DEPTH`): handed to a framework call (`ttnn.matmul(self.inp, w)`), a method
        called on it, an operand. A call that does not resolve reads nothing known."""
        key = (id(call), path)
        found = self._call_reads.get(key)
        if found is None:
            found = False
            for target in self.resolver.resolve_all(call, function):
                for inner in self.to_callee(path, call, function, target.function):
                    if self._read_depth(target.function, inner, _READS_DEPTH - 1, set())[0] is not None:
                        found = True
            self._call_reads[key] = found
        return found

    def _read_depth(self, function: FunctionInfo, path: str, budget: int, stack: set) -> tuple[Optional[int], frozenset, bool]:
        """The fewest frames below the function down to a read of the path (0: its own
        body), looking at most `budget` frames further down; with the keys on the stack the
        answer waited on (recursion), and whether the budget cut the search short. An answer
        is kept where it cannot change: found without waiting on the stack, or nothing
        found (then with the budget, where it was cut), so the order questions come in never
        changes one."""
        key = (id(function), path)
        kept = self._read_depths.get(key)
        if kept is not None:
            depth, cut_at = kept
            if cut_at is None or budget <= cut_at:
                if depth is not None and depth <= budget:
                    return depth, frozenset(), False
                return None, frozenset(), depth is not None or cut_at is not None
        if key in stack:
            return None, frozenset({key}), False
        if self._reads_itself(function, path):
            self._read_depths[key] = (0, None)
            return 0, frozenset(), False
        stack.add(key)
        best: Optional[int] = None
        waits: set = set()
        cut = False
        try:
            for node in function.live_nodes:
                if best == 1:
                    break  # no callee can do better
                if type(node) is not cst.Call or not self.runs_while_capturing(node, function):
                    continue
                for target in self.resolver.resolve_all(node, function):
                    for inner in self.to_callee(path, node, function, target.function):
                        if budget <= 0:
                            cut = True
                            continue
                        depth, waited, short = self._read_depth(target.function, inner, budget - 1, stack)
                        if depth is not None and (best is None or depth + 1 < best):
                            best = depth + 1
                        waits |= waited
                        cut = cut or short
        finally:
            stack.discard(key)
        waits.discard(key)
        if best == 1 or (best is not None and not waits):
            # A read this close is the closest (anything cut off lies further down).
            self._read_depths[key] = (best, None)
            return best, frozenset(), False
        if best is None and not waits:
            self._read_depths[key] = (None, budget if cut else None)
        return best, frozenset(waits), cut

    def _reads_itself(self, function: FunctionInfo, path: str) -> bool:
        """The function's own body reads the path's value or an element's (`ttnn.add(x,
        ...)` with `x = self.inp` bound before, `self.inp[0]`), not only its host metadata,
        where it can run while a capture records; what it hands to project functions is
        theirs to read, and what it hands to code that does not resolve is not known."""
        root = root_of(path)
        # An attribute can be the path itself only where the path ends in that attribute.
        last = path.rsplit(".", 1)[1] if "." in path and not path.endswith("]") else None
        for node in function.live_nodes:
            kind = type(node)
            if kind is cst.Name:
                if node.value != root and not function.bindings.binds(node.value):
                    continue
            elif kind is cst.Attribute:
                if node.attr.value != last:
                    continue
            elif kind is not cst.Subscript:
                continue
            found = path_of(node, function)
            if found is None or (found != path and not (found.startswith(path) and set(found[len(path):]) <= {"[", "]"})):
                continue
            if self._reads_there(node, function) and self.runs_while_capturing(node, function):
                return True
        return False

    def _reads_there(self, expr: cst.BaseExpression, function: FunctionInfo) -> bool:
        """Where it stands, the expression's value is read: handed to a framework call, a
        method called on it, an operand; not its host metadata, a free, a binding, nor an
        argument of a project function (the callee reads it or not) or of code that does not
        resolve (not known)."""
        parent = function.module.parent(expr)
        if isinstance(parent, cst.Subscript) and parent.value is expr:
            return False  # the element is the read (or not), as itself
        if self._metadata_use(function, expr):
            return False
        if isinstance(parent, cst.Attribute) and parent.value is expr:
            call = function.module.parent(parent)
            if isinstance(call, cst.Call) and call.func is parent:
                if self.freed_expression(call, function) is expr:
                    return False
                return not self.resolver.resolve_all(call, function)  # a project method's body says
            return True
        if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation)):
            return True
        if isinstance(parent, cst.Arg) and parent.value is expr:
            call = function.module.parent(parent)
            if not isinstance(call, cst.Call) or self.freed_expression(call, function) is expr:
                return False
            name = self.project.qualified_name(call.func, function.module, function)
            return name is not None and self.resolver.library.owns(name) and not self.resolver.resolve_all(call, function)
        return False

    # -- trace ids ---------------------------------------------------------------------------
    def returned_traces(self, function: FunctionInfo) -> frozenset[int]:
        """Where the function's return value holds a trace id made by a capture it records,
        itself or any frames down: -1 for the whole value, an index for an element of a
        returned tuple (`return tid, y` gives 0), on some path."""
        return self._traces.get(id(function), function)

    def _own_returned_traces(self, function: FunctionInfo) -> frozenset[int]:
        if getattr(function.node, "asynchronous", None) is not None or any(type(n) is cst.Yield for n in function.nodes):
            return frozenset()
        found: set[int] = set()
        for node in function.live_nodes:
            if type(node) is not cst.Return or node.value is None:
                continue
            value = node.value
            if self.holds_trace(value, function):
                found.add(-1)
            elif isinstance(value, cst.Tuple):
                for index, element in enumerate(value.elements):
                    if isinstance(element, cst.StarredElement):
                        break  # the positions after it are not fixed
                    if self.holds_trace(element.value, function):
                        found.add(index)
        return frozenset(found)

    def call_traces(self, call: cst.Call, function: FunctionInfo) -> frozenset[int]:
        """Where a call's value holds a new trace id (see `returned_traces`): a framework
        begin's whole value, or what every project function it can run returns one at."""
        name = self.project.qualified_name(call.func, function.module, function)
        role = self.resolver.library.trace_call(call, name)
        if role is not None:
            return frozenset({-1}) if role[0] == "begin" else frozenset()
        targets = self.resolver.resolve_all(call, function)
        if not targets:
            return frozenset()
        found = None
        for target in targets:
            positions = self.returned_traces(target.function)
            found = positions if found is None else found & positions
        return found or frozenset()

    def holds_trace(self, expr: cst.BaseExpression, function: FunctionInfo, depth: int = 0) -> bool:
        """The expression's value is a trace id a capture made (`call_traces`), on some path:
        such a call itself, either branch of a conditional expression, or a local some binding
        of which reaching the expression holds one (assigned it, or unpacked from a call at a
        position that holds one: `tid, out = capture(d, x)`)."""
        if depth > _BINDINGS_FOLLOWED:
            return False
        if isinstance(expr, cst.Call):
            return -1 in self.call_traces(expr, function)
        if isinstance(expr, cst.IfExp):
            return self.holds_trace(expr.body, function, depth + 1) or self.holds_trace(expr.orelse, function, depth + 1)
        if isinstance(expr, cst.Name) and function.bindings.binds(expr.value):
            return any(self.binding_holds_trace(b, function, depth + 1) for b in function.bindings.reaching(expr.value, expr))
        return False

    def binding_holds_trace(self, binding, function: FunctionInfo, depth: int = 0) -> bool:
        """One binding of a local holds a trace id a capture made (see `holds_trace`)."""
        if binding.kind not in ("assign", "annassign"):
            return False
        if binding.value is not None:
            return self.holds_trace(binding.value, function, depth)
        statement = binding.node
        target = single_assignment(statement)
        if target is None or not isinstance(statement.value, (cst.Call, cst.Tuple)):
            return False
        path = target_path(target, binding.name)
        if path is None or len(path) != 1:
            return False
        if isinstance(statement.value, cst.Tuple):
            elements = statement.value.elements
            if any(isinstance(e, cst.StarredElement) for e in elements[: path[0] + 1]) or path[0] >= len(elements):
                return False
            return self.holds_trace(elements[path[0]].value, function, depth)
        return path[0] in self.call_traces(statement.value, function)

    def trace_parameters(self, function: FunctionInfo) -> frozenset[tuple[str, str]]:
        """(role, parameter) for each parameter the function uses as a trace id, any frames
        down: "execute" and "release" where a framework call takes it as its trace id,
        "unknown" where it is handed to code that does not resolve or whose parameter
        cannot be told (`*args`, `**kwargs`)."""
        return self._trace_parameters.get(id(function), function)

    def _own_trace_parameters(self, function: FunctionInfo) -> frozenset[tuple[str, str]]:
        parameters = set(function.params)
        found: set[tuple[str, str]] = set()
        for node in function.live_nodes:
            if type(node) is not cst.Call:
                continue
            for role, argument in self.call_trace_uses(node, function):
                if isinstance(argument, cst.Name) and _holds_parameter(argument.value, node, function, parameters):
                    found.add((role, argument.value))
        return frozenset(found)

    def call_trace_uses(self, call: cst.Call, function: FunctionInfo) -> tuple[tuple[str, cst.BaseExpression], ...]:
        """(role, argument) for what a call does to the trace ids it is handed: a framework
        execute or release of its id argument, a project function's (`trace_parameters`)
        through the arguments filling those parameters, and "unknown" for a name handed to
        code that does not resolve or through `*args`/`**kwargs` of a project call."""
        name = self.project.qualified_name(call.func, function.module, function)
        library = self.resolver.library
        role = library.trace_call(call, name)
        if role is not None:
            return ((role[0], role[1]),) if role[0] != "begin" and role[1] is not None else ()
        targets = self.resolver.resolve_all(call, function)
        found: list[tuple[str, cst.BaseExpression]] = []
        if not targets:
            if name is not None and (library.owns(name) or "." not in name):
                return ()  # a framework's other calls and builtins keep no trace id
            return tuple(("unknown", a.value) for a in call.args)
        for target in targets:
            uses = self.trace_parameters(target.function)
            if any(a.star for a in call.args):
                found.extend(("unknown", a.value) for a in call.args if a.star)
            if not uses:
                continue
            by_parameter = self.resolver.bind_arguments(call, function, target.function).by_parameter
            for use, parameter in uses:
                argument = by_parameter.get(parameter)
                if argument is not None:
                    found.append((use, argument))
        return tuple(found)

    def returns_allocation(self, function: FunctionInfo) -> bool:
        """Every value the function returns is a new device buffer: a framework allocation
        (`ttnn.from_torch(t, device=d)`), what such a helper returns, or a local every
        binding of which reaching the return holds one; at least one return."""
        return self._allocation.get(id(function), function)

    def _own_returns_allocation(self, function: FunctionInfo) -> bool:
        if getattr(function.node, "asynchronous", None) is not None or any(type(n) is cst.Yield for n in function.nodes):
            return False
        returns = [n for n in function.live_nodes if type(n) is cst.Return]
        return bool(returns) and all(n.value is not None and self._new_allocation(n.value, function, 0) for n in returns)

    def _new_allocation(self, expr: cst.BaseExpression, function: FunctionInfo, depth: int) -> bool:
        if depth > _BINDINGS_FOLLOWED:
            return False
        if isinstance(expr, cst.Call):
            return self.call_allocates(expr, function)
        if isinstance(expr, cst.Name) and function.bindings.binds(expr.value):
            reaching = function.bindings.reaching(expr.value, expr)
            return bool(reaching) and all(
                b.kind in ("assign", "annassign") and b.value is not None and self._new_allocation(b.value, function, depth + 1) for b in reaching
            )
        return False

    def call_allocates(self, call: cst.Call, function: FunctionInfo) -> bool:
        """The call's value is a new device buffer: a framework allocation, or a call of
        project functions that each return one (`returns_allocation`)."""
        name = self.project.qualified_name(call.func, function.module, function)
        if name is not None and self.resolver.library.allocates(call, name):
            return True
        targets = self.resolver.resolve_all(call, function)
        return bool(targets) and all(self.returns_allocation(t.function) for t in targets)

    # -- capture state -----------------------------------------------------------------------
    def capture_test(self, test: cst.BaseExpression, module: ModuleInfo, function: Optional[FunctionInfo]) -> Optional[bool]:
        """True for a test that holds while a capture records (`capturing()`, a local or a
        project helper's call holding its answer), False for its negation, None otherwise."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = self.capture_test(test.expression, module, function)
            return None if inner is None else not inner
        if isinstance(test, cst.Call) and self.project.qualified_name(test.func, module, function) in self.capture_queries:
            return True
        if function is not None and isinstance(test, (cst.Call, cst.Name)) and self.answers_capture_state(test, function):
            return True
        return None

    def uncaptured(self, function: FunctionInfo) -> frozenset[int]:
        """The blocks and statements of the function that never run while a capture records:
        the body of `if not capturing():`, the `else` of `if capturing():`, and what follows
        `if capturing(): return`/`raise` in the same block (RULES.md "Capture-state guards")."""
        key = id(function)
        found = self._uncaptured.get(key)
        if found is not None:
            return found
        marks: set[int] = set()
        if self.capture_queries:
            for node in function.nodes:
                if type(node) is cst.If:
                    marks |= self.guarded_by(node, function.module, function)
        found = self._uncaptured[key] = frozenset(marks)
        return found

    def guarded_by(self, node: cst.If, module: ModuleInfo, function: Optional[FunctionInfo]) -> set[int]:
        """What one `if` keeps from running while a capture records (see `uncaptured`)."""
        sense = self.capture_test(node.test, module, function)
        if sense is False:
            return {id(node.body)}
        if sense is not True:
            return set()
        if node.orelse is not None:
            return {id(node.orelse)}
        if function is not None:
            # What runs only after the test was false (`if capturing(): return`, or branches
            # that all return or raise): a graph query.
            return {id(s) for s in function.cfg.only_through_branch(node, False)}
        if not always_leaves(node.body):
            return set()
        return {id(s) for s in statements_after(module, node)}

    def runs_while_capturing(self, node: cst.CSTNode, function: FunctionInfo) -> bool:
        """The node can run while a capture records: no capture-state guard keeps it out."""
        marks = self.uncaptured(function)
        if not marks:
            return True
        parents = function.module.parents
        current: Optional[cst.CSTNode] = node
        while current is not None and current is not function.node:
            if id(current) in marks:
                return False
            current = parents.get(id(current))
        return True

    def answers_capture_state(self, expr: cst.BaseExpression, function: FunctionInfo, depth: int = 0) -> bool:
        """Is the expression's value whether a capture is being recorded: a query's call (the
        query named, or a local bound to it, also through `getattr(torch.cuda, "name", None)`),
        `bool(...)` of one, a local every reaching binding of which holds one, or a call of
        project functions that each return one?"""
        if depth > _BINDINGS_FOLLOWED:
            return False
        queries = self.capture_queries
        if isinstance(expr, cst.Call):
            name = self.project.qualified_name(expr.func, function.module, function)
            if name in queries:
                return True
            if name == "bool" and len(expr.args) == 1 and not expr.args[0].star:
                return self.answers_capture_state(expr.args[0].value, function, depth + 1)
            if isinstance(expr.func, cst.Name) and function.bindings.binds(expr.func.value):
                reaching = function.bindings.reaching(expr.func.value, expr.func)
                return bool(reaching) and all(b.kind == "assign" and b.value is not None and self._names_query(b.value, function) for b in reaching)
            targets = self.resolver.resolve_all(expr, function)
            return bool(targets) and all(self.returns_capture_state(t.function) for t in targets)
        if isinstance(expr, cst.Name) and function.bindings.binds(expr.value):
            reaching = function.bindings.reaching(expr.value, expr)
            return bool(reaching) and all(
                b.kind in ("assign", "annassign", "walrus") and b.value is not None and self.answers_capture_state(b.value, function, depth + 1)
                for b in reaching
            )
        return False

    def _names_query(self, expr: cst.BaseExpression, function: FunctionInfo) -> bool:
        """`torch.cuda.is_current_stream_capturing`, or `getattr(torch.cuda, "is_current_stream_capturing"[, default])`."""
        qualify = lambda e: self.project.qualified_name(e, function.module, function)  # noqa: E731
        if qualify(expr) in self.capture_queries:
            return True
        if isinstance(expr, cst.Call) and qualify(expr.func) == "getattr" and len(expr.args) in (2, 3):
            owner, attribute = expr.args[0].value, expr.args[1].value
            if isinstance(attribute, cst.SimpleString) and not any(a.star for a in expr.args):
                base = qualify(owner)
                return base is not None and f"{base}.{attribute.evaluated_value}" in self.capture_queries
        return False

    def returns_capture_state(self, function: FunctionInfo) -> bool:
        """Every value the function returns answers whether a capture is recording, on at
        least one path; `None`, `True` or `False` returned where it does not ask (the query
        missing or failing) are its own answers. A recursion answers only through a path
        that asks (the fixed point starts from "no")."""
        return self._capture_state.get(id(function), function)

    def _own_capture_state(self, function: FunctionInfo) -> bool:
        asks = False
        answers = function.node.asynchronous is None and not any(type(n) is cst.Yield for n in function.nodes)
        for node in function.nodes if answers else ():
            if type(node) is not cst.Return or node.value is None:
                continue
            if isinstance(node.value, cst.Name) and node.value.value in ("None", "True", "False"):
                continue
            if not self.answers_capture_state(node.value, function):
                answers = False
                break
            asks = True
        return answers and asks


def function_key(function: FunctionInfo) -> str:
    return f"fn:{function.full_name}"
