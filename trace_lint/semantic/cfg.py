"""A control-flow graph of a function body, and the flow queries rules ask of it.

One graph node per statement: a small statement, or a compound statement's header (an
`if`/`while` test, a `for`'s iterable, and its target as the loop head that binds each turn, a
`with`'s items, a `match` subject and each `case`, an `except` clause, the `try:` line), plus
synthetic nodes (entry, normal exit, exceptional exit, branch starts, joins). Comprehensions
and lambdas are parts of their statement's expression. Edges:
- normal successors; an `if` (and `while`) test has a true and a false branch;
- loops: the body's ends and `continue` go back to the head (back edges), `break` to the join
  after the loop, the `else` runs from the head when the iterator is spent (never for
  `while True:`);
- exceptional successors: each statement that can raise has an edge to the dispatch node of
  the innermost `try` around it, which goes on to each handler (and past them, unless one
  catches `Exception` or broader), or to its `finally`, or to the exceptional exit; a `with`
  body raises out of the `with`. A statement's exceptional edge carries the state it was
  entered with (it raised before binding); the edges after it carry the exception on;
- `finally` bodies are built twice, as CPython compiles them: once on the normal path, once
  for abrupt exits (an exception, `return`, `break`, `continue` passing through), whose end
  goes on to where each of those was going; a statement in a `finally` has two nodes.

Queries take libcst nodes (any node stands for the statement holding it): whether one runs
before another on some path, whether a node can be reached without passing given statements,
whether every exceptional path from a statement passes given statements, mutually exclusive
statements, loop membership and paths within one turn of a loop. Reaching definitions are a
forward data-flow over the graph (`reaching_definitions`; the binder asks it per name).
"""

from __future__ import annotations

from typing import Callable, Iterable, Optional, Sequence

import libcst as cst

ENTRY, EXIT, RAISE = 0, 1, 2

BROAD_EXCEPTIONS = frozenset({"Exception", "BaseException"})

# Small statements that cannot raise.
_NO_RAISE = (cst.Pass, cst.Break, cst.Continue, cst.Global, cst.Nonlocal)


def catches_everything(handler: cst.ExceptHandler) -> bool:
    """A bare `except:`, or one naming `Exception` or `BaseException` (also `builtins.`)."""
    if handler.type is None:
        return True
    kinds = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
    for kind in kinds:
        expr = kind.value if isinstance(kind, cst.Element) else kind
        if isinstance(expr, cst.Name) and expr.value in BROAD_EXCEPTIONS:
            return True
        if isinstance(expr, cst.Attribute) and expr.attr.value in BROAD_EXCEPTIONS and isinstance(expr.value, cst.Name) and expr.value.value == "builtins":
            return True
    return False


def _always_true(test: cst.BaseExpression) -> bool:
    if isinstance(test, cst.Name):
        return test.value == "True"
    if isinstance(test, cst.Integer):
        return test.value not in ("0", "0x0", "0o0", "0b0")
    return False


def _irrefutable(case: cst.MatchCase) -> bool:
    pattern = case.pattern
    return case.guard is None and isinstance(pattern, cst.MatchAs) and pattern.pattern is None


class _Context:
    """Where each kind of exit goes from the statements being built."""

    __slots__ = ("raises", "returns", "breaks", "continues")

    def __init__(self, raises: tuple, returns: int, breaks: Optional[int], continues: Optional[int]):
        self.raises = raises
        self.returns = returns
        self.breaks = breaks
        self.continues = continues

    def replace(self, **changes) -> "_Context":
        values = {slot: getattr(self, slot) for slot in self.__slots__}
        values.update(changes)
        return _Context(**values)


class ControlFlowGraph:
    def __init__(self, root: cst.CSTNode, module):
        self.module = module  # positions and parents of the nodes
        self.items: list[Optional[cst.CSTNode]] = []
        self.succ: list[list[int]] = []
        self.raises_to: list[tuple] = []
        self._indegree: list[int] = []
        self._index: dict[int, list[int]] = {}
        # id(loop statement) -> (head, end, statement): the loop's nodes are head <= i < end.
        self.loops: dict[int, tuple[int, int, cst.CSTNode]] = {}
        # if/while test node -> (start of the true branch, start of the false branch or None)
        self.branches: dict[int, tuple[int, Optional[int]]] = {}
        # synthetic finally entry -> the kinds of exit routed through it
        self._finally_kinds: dict[int, set[str]] = {}
        self._statement_cache: dict[int, Optional[cst.CSTNode]] = {}
        self._raised: set[int] = set()  # nodes some statement raises to
        self._new(None, ())  # ENTRY
        self._new(None, ())  # EXIT
        self._new(None, ())  # RAISE
        context = _Context((RAISE,), EXIT, None, None)
        if isinstance(root, cst.FunctionDef):
            ends = self._suite(root.body, [ENTRY], context)
        elif isinstance(root, cst.Module):
            ends = self._block(root.body, [ENTRY], context)
        else:  # a lambda: no statements
            ends = [ENTRY]
        for end in ends:
            self._edge(end, EXIT)

    # -- building ----------------------------------------------------------------------------
    def _new(self, item: Optional[cst.CSTNode], preds: Iterable[int]) -> int:
        index = len(self.items)
        self.items.append(item)
        self.succ.append([])
        self.raises_to.append(())
        self._indegree.append(0)
        if item is not None:
            self._index.setdefault(id(item), []).append(index)
        for pred in preds:
            self._edge(pred, index)
        return index

    def _edge(self, source: int, target: int) -> None:
        self.succ[source].append(target)
        self._indegree[target] += 1

    def _jump(self, source: int, target: Optional[int], kind: str) -> None:
        if target is None:
            return
        self._edge(source, target)
        kinds = self._finally_kinds.get(target)
        if kinds is not None:
            kinds.add(kind)

    def _can_raise(self, node: int, context: _Context) -> None:
        self.raises_to[node] = context.raises
        self._raised.update(context.raises)
        for target in context.raises:
            kinds = self._finally_kinds.get(target)
            if kinds is not None:
                kinds.add("raise")

    def _suite(self, suite: cst.BaseSuite, preds: list[int], context: _Context) -> list[int]:
        if isinstance(suite, cst.SimpleStatementSuite):
            return self._smalls(suite.body, preds, context)
        return self._block(suite.body, preds, context)

    def _block(self, statements: Sequence[cst.BaseStatement], preds: list[int], context: _Context) -> list[int]:
        for statement in statements:
            preds = self._statement(statement, preds, context)
        return preds

    def _smalls(self, smalls: Sequence[cst.BaseSmallStatement], preds: list[int], context: _Context) -> list[int]:
        for small in smalls:
            node = self._new(small, preds)
            kind = type(small)
            if kind is cst.Raise:
                self._can_raise(node, context)
                preds = []
            elif kind is cst.Return:
                self._can_raise(node, context)
                self._jump(node, context.returns, "return")
                preds = []
            elif kind is cst.Break:
                self._jump(node, context.breaks, "break")
                preds = []
            elif kind is cst.Continue:
                self._jump(node, context.continues, "continue")
                preds = []
            else:
                if kind not in _NO_RAISE:
                    self._can_raise(node, context)
                preds = [node]
        return preds

    def _statement(self, statement: cst.BaseStatement, preds: list[int], context: _Context) -> list[int]:
        kind = type(statement)
        if kind is cst.SimpleStatementLine:
            return self._smalls(statement.body, preds, context)
        if kind is cst.If:
            return self._if(statement, preds, context)
        if kind is cst.While:
            return self._while(statement, preds, context)
        if kind is cst.For:
            return self._for(statement, preds, context)
        if kind is cst.With:
            head = self._new(statement, preds)
            self._can_raise(head, context)
            return self._suite(statement.body, [head], context)
        if kind is cst.Try or kind is getattr(cst, "TryStar", None):
            return self._try(statement, preds, context)
        if kind is cst.Match:
            return self._match(statement, preds, context)
        # def, class (decorators and defaults run here), anything else: one statement
        node = self._new(statement, preds)
        self._can_raise(node, context)
        return [node]

    def _if(self, statement: cst.If, preds: list[int], context: _Context) -> list[int]:
        head = self._new(statement, preds)
        self._can_raise(head, context)
        true = self._new(None, [head])
        ends = self._suite(statement.body, [true], context)
        false = self._new(None, [head])
        self.branches[head] = (true, false)
        orelse = statement.orelse
        if orelse is None:
            return ends + [false]
        if isinstance(orelse, cst.If):
            return ends + self._if(orelse, [false], context)
        return ends + self._suite(orelse.body, [false], context)

    def _while(self, statement: cst.While, preds: list[int], context: _Context) -> list[int]:
        after = self._new(None, ())
        head = self._new(statement, preds)
        self._can_raise(head, context)
        true = self._new(None, [head])
        for end in self._suite(statement.body, [true], context.replace(breaks=after, continues=head)):
            self._edge(end, head)
        self.loops[id(statement)] = (head, len(self.items), statement)
        exits: list[int] = []
        false = None
        if not _always_true(statement.test):
            false = self._new(None, [head])
            exits = self._suite(statement.orelse.body, [false], context) if statement.orelse is not None else [false]
        self.branches[head] = (true, false)
        return exits + [after] if self._indegree[after] else exits

    def _for(self, statement: cst.For, preds: list[int], context: _Context) -> list[int]:
        iterable = self._new(statement, preds)
        self._can_raise(iterable, context)
        after = self._new(None, ())
        head = self._new(statement.target, [iterable])
        self._can_raise(head, context)
        for end in self._suite(statement.body, [head], context.replace(breaks=after, continues=head)):
            self._edge(end, head)
        self.loops[id(statement)] = (head, len(self.items), statement)
        exits = self._suite(statement.orelse.body, [head], context) if statement.orelse is not None else [head]
        return exits + [after] if self._indegree[after] else exits

    def _match(self, statement: cst.Match, preds: list[int], context: _Context) -> list[int]:
        head = self._new(statement, preds)
        self._can_raise(head, context)
        previous = [head]
        ends: list[int] = []
        for case in statement.cases:
            node = self._new(case, previous)
            self._can_raise(node, context)
            ends += self._suite(case.body, [node], context)
            previous = [] if _irrefutable(case) else [node]
        return ends + previous

    def _try(self, statement, preds: list[int], context: _Context) -> list[int]:
        head = self._new(statement, preds)
        inner = context
        entry = None
        if statement.finalbody is not None:
            entry = self._new(None, ())
            self._finally_kinds[entry] = set()
            inner = context.replace(
                raises=(entry,),
                returns=entry,
                breaks=entry if context.breaks is not None else None,
                continues=entry if context.continues is not None else None,
            )
        # The body raises to a dispatch node, whose successors are the handlers (made after
        # the body: graph order stays source order) and, unless one catches everything, where
        # the exception goes past them.
        dispatch = self._new(None, ()) if statement.handlers else None
        ends = self._suite(statement.body, [head], inner.replace(raises=(dispatch,)) if dispatch is not None else inner)
        if statement.orelse is not None:
            ends = self._suite(statement.orelse.body, ends, inner)
        for handler in statement.handlers:
            node = self._new(handler, [dispatch])
            self._can_raise(node, inner)
            ends = ends + self._suite(handler.body, [node], inner)
        if dispatch is not None and dispatch in self._raised and not any(catches_everything(h) for h in statement.handlers):
            for target in inner.raises:
                self._jump(dispatch, target, "raise")
        if statement.finalbody is None:
            return ends
        normal = self._suite(statement.finalbody.body, ends, context)
        kinds = self._finally_kinds.pop(entry)
        if kinds:
            abrupt = self._suite(statement.finalbody.body, [entry], context)
            for end in abrupt:
                if "raise" in kinds:
                    for target in context.raises:
                        self._jump(end, target, "raise")
                if "return" in kinds:
                    self._jump(end, context.returns, "return")
                if "break" in kinds:
                    self._jump(end, context.breaks, "break")
                if "continue" in kinds:
                    self._jump(end, context.continues, "continue")
        return normal

    # -- nodes -------------------------------------------------------------------------------
    def statement_of(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The statement (graph item) holding the node; None outside the graph."""
        key = id(node)
        cache = self._statement_cache
        if key in cache:
            return cache[key]
        parents = self.module.parents
        current: Optional[cst.CSTNode] = node
        while current is not None and id(current) not in self._index:
            current = parents.get(id(current))
        cache[key] = current
        return current

    def nodes_of(self, node: cst.CSTNode) -> list[int]:
        """The graph nodes of the statement holding `node` (two for one in a `finally`)."""
        statement = self.statement_of(node)
        return self._index[id(statement)] if statement is not None else []

    def _ids(self, nodes: Iterable[cst.CSTNode]) -> set[int]:
        found: set[int] = set()
        for node in nodes:
            found.update(self.nodes_of(node))
        return found

    def _search(self, starts: Iterable[int], blocked: set[int] = frozenset(), keep: Optional[Callable[[int, int], bool]] = None) -> set[int]:
        """Nodes reached from the successors (normal and exceptional) of `starts`, not entering
        blocked nodes; `keep(source, target)` can refuse an edge."""
        seen: set[int] = set()
        stack = list(starts)
        while stack:
            source = stack.pop()
            for target in (*self.succ[source], *self.raises_to[source]):
                if target in seen or target in blocked or (keep is not None and not keep(source, target)):
                    continue
                seen.add(target)
                stack.append(target)
        return seen

    def _before_in_statement(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        """Inside one statement, expressions run in source order (loops aside)."""
        positions = self.module.positions
        if a not in positions or b not in positions:
            return False
        return self.module.end(a) <= self.module.start(b)

    # -- queries -----------------------------------------------------------------------------
    def runs_before(self, a: cst.CSTNode, b: cst.CSTNode, avoiding: Iterable[cst.CSTNode] = ()) -> bool:
        """On some path, `b` runs after `a` (later in one run: a later statement, or the same
        one again in a loop's next turn), not passing through the statements `avoiding`."""
        starts, targets = self.nodes_of(a), set(self.nodes_of(b))
        if not starts or not targets:
            return False
        if self.statement_of(a) is self.statement_of(b) and self._before_in_statement(a, b):
            return True
        blocked = self._ids(avoiding) - targets
        return not targets.isdisjoint(self._search(starts, blocked))

    def unreachable(self) -> frozenset[int]:
        """Ids of the statements (graph items) no path from the entry reaches: what follows a
        `return`, `raise`, `break` or `continue` in its block, or a loop that never ends.
        They never run."""
        live = self._search([ENTRY])
        return frozenset(key for key, indices in self._index.items() if live.isdisjoint(indices))

    def reached_without(self, node: cst.CSTNode, avoiding: Iterable[cst.CSTNode]) -> bool:
        """Some path from the function's entry reaches the node without passing the
        statements `avoiding` (a run that skips them)."""
        targets = set(self.nodes_of(node))
        if not targets:
            return False
        blocked = self._ids(avoiding)
        if targets <= blocked:
            return False
        return not targets.isdisjoint(self._search([ENTRY], blocked))

    def runs_only_after(self, site: cst.CSTNode, node: cst.CSTNode) -> bool:
        """Every run that reaches the node passed the site first, and the node never runs
        before the site (no path from it back to the site: no loop holds both)."""
        return not self.reached_without(node, [site]) and not self.runs_before(node, site)

    def exclusive(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        """No run passes through both (different branches, or one after the other's exit)."""
        return not self.runs_before(a, b) and not self.runs_before(b, a)

    def exceptions_pass(self, node: cst.CSTNode, through: Iterable[cst.CSTNode], assume: Iterable[cst.If] = ()) -> bool:
        """Every path an exception raised by the statement takes, through the handlers and
        `finally` bodies it passes, until the function exits (normally, or raising on),
        passes one of the statements `through`. The `if` statements `assume` take their true
        branch (a condition known to hold on the paths asked about)."""
        blocked = self._ids(through)
        for test in self._ids(assume):
            false = self.branches.get(test, (None, None))[1]
            if false is not None:
                blocked.add(false)
        stack = [t for n in self.nodes_of(node) for t in self.raises_to[n] if t not in blocked]
        seen = set(stack)
        while stack:
            source = stack.pop()
            if source == EXIT or source == RAISE:
                return False
            # The exception goes on along normal edges, and along a `raise` (a re-raise);
            # another statement raising there is another exception, judged on its own.
            onward = self.succ[source]
            if type(self.items[source]) is cst.Raise:
                onward = (*onward, *self.raises_to[source])
            for target in onward:
                if target not in seen and target not in blocked:
                    seen.add(target)
                    stack.append(target)
        return True

    def only_through_branch(self, test: cst.CSTNode, branch: bool) -> list[cst.CSTNode]:
        """The statements every run reaches only through that branch of the `if` (or
        `while`) and never from its other branch: `if capturing(): return` leaves the rest of
        the function to the false branch."""
        head = next((n for n in self.nodes_of(test) if n in self.branches), None)
        if head is None:
            return []
        true, false = self.branches[head]
        taken, other = (true, false) if branch else (false, true)
        if taken is None:
            return []
        around = self._search([ENTRY], {taken})
        if other is not None:
            around |= {other} | self._search([other])
        seen: set[int] = set()
        out = []
        for index in self._search([taken]) | {taken}:
            item = self.items[index]
            if item is not None and index not in around and id(item) not in seen and not any(n in around for n in self._index[id(item)]):
                seen.add(id(item))
                out.append(item)
        return out

    def in_loop(self, node: cst.CSTNode, loop: cst.CSTNode) -> bool:
        """The node's statement is in the loop (its head or body, not its `else`)."""
        span = self.loops.get(id(loop))
        if span is None:
            return False
        return any(span[0] <= n < span[1] for n in self.nodes_of(node))

    def loops_holding(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """The `for`/`while` statements whose body (or head) holds the node, innermost first."""
        ids = self.nodes_of(node)
        return [loop for head, end, loop in self.loops.values() if any(head <= n < end for n in ids)]

    def same_iteration(self, a: cst.CSTNode, b: cst.CSTNode, loop: cst.CSTNode) -> bool:
        """`b` runs after `a` in the same turn of the loop: a path inside the loop from one to
        the other that does not go round it (no back edge to its head)."""
        span = self.loops.get(id(loop))
        if span is None:
            return False
        head, end, _ = span
        starts = [n for n in self.nodes_of(a) if head <= n < end]
        targets = {n for n in self.nodes_of(b) if head <= n < end}
        if not starts or not targets:
            return False
        if self.statement_of(a) is self.statement_of(b) and self._before_in_statement(a, b):
            return True
        inside = self._search(starts, keep=lambda source, target: head < target < end)
        return not targets.isdisjoint(inside)

    def loop_head_of(self, loop: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The node that stands for a loop's head: a `for`'s target (it binds each turn), a
        `while`'s statement (its test)."""
        span = self.loops.get(id(loop))
        return self.items[span[0]] if span is not None else None

    # -- reaching definitions ----------------------------------------------------------------
    def reaching_definitions(self, entry: frozenset, gen: dict[int, object]) -> list[Optional[frozenset]]:
        """For one variable: the definitions that can reach the start of each graph node
        (None where no path does). `entry` holds at the entry; `gen[node]` is the definition
        the node leaves (it kills the others). An exception leaves a statement with the state
        it entered with."""
        count = len(self.items)
        state: list[Optional[frozenset]] = [None] * count
        state[ENTRY] = entry
        pending = [ENTRY]
        queued = [False] * count
        queued[ENTRY] = True
        succ, raises_to = self.succ, self.raises_to
        while pending:
            node = pending.pop()
            queued[node] = False
            before = state[node]
            made = gen.get(node)
            after = before if made is None else frozenset((made,))
            for targets, value in ((succ[node], after), (raises_to[node], before)):
                for target in targets:
                    old = state[target]
                    if old is None:
                        new = value
                    elif value <= old:
                        continue
                    else:
                        new = old | value
                    state[target] = new
                    if not queued[target]:
                        queued[target] = True
                        pending.append(target)
        return state
