"""The engine: parse -> capture regions -> call resolution -> rules -> findings.

It knows no rule by name: it finds captured code, hands each unit of it to the enabled
rules through their visit methods and hooks, and collects what they report.
"""

from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Sequence

import libcst as cst

from ..core.config import Settings
from ..semantic.calls import CallResolver
from ..semantic.bindings import assignment_targets, target_leaves
from ..semantic.effects import Effects
from .facts import CheckingRule, ProgramFacts, RuleContext
from .observed import observed_calls, step_message as observed_step
from .origins import CaptureTimeObjects
from .constants import ConstantParameters
from .precedence import Claim, decide as decide_precedence
from .capture_helpers import CaptureHelpers, contextmanager_regions
from ..core.findings import Finding, Location, Related
from ..semantic.nodes import always_leaves, statements_after
from ..semantic.project import FunctionInfo, ModuleInfo, Project
from ..frameworks.region import Region
from .. import frameworks
from ..frontend import syntax_limits
from ..frontend.source import decode
from ..frontend.syntax_limits import recursion_room
from ..frontend.syntax_walk import children

@dataclass(eq=False)
class Root:
    """Where captured code starts: a region, a declared function, a helper's callable."""

    related: Related
    # "ttnn", "cuda-graph", "cuda-graph-begin" (a region's kind), "cuda-graph-callable", "declared".
    kind: str = "declared"


@dataclass
class Reach:
    """How a captured function is reached: for each root, the shortest call chain."""

    chains: dict[int, list[Related]] = field(default_factory=dict)


def is_first_use_cache(node: cst.If, module: ModuleInfo, function: Optional[FunctionInfo] = None) -> bool:
    """`if X is None` / `if not X` / `if K not in C` (also as the first operand of an `or`:
    `if X is None or X.shape != s`) whose body assigns X or C[K] (or fills it: `C.add(K)`,
    `C.setdefault(K, v)`), where X is state that
    outlives the call: an attribute (`self.w`, `getattr(self, "w", None)`), a global, or an
    element of a container that is not a local (a local is made anew on every call, so its
    test runs at capture too)."""
    test = node.test
    while isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        test = test.left
    key: Optional[cst.BaseExpression] = None
    container: Optional[cst.BaseExpression] = None
    wanted: Optional[str] = None
    if _compared_to_none(test, cst.Is) is not None:
        key = test.left
    elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        key = test.expression
    elif isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.comparisons[0].operator, cst.NotIn):
        container = test.comparisons[0].comparator
        wanted = _entry_key(container, test.left, module)
    aliased: set[str] = set()
    if key is not None:
        wanted = _state_key(key, module)
        if not _outlives_the_call(key, function):
            # `w = getattr(self, "w", None)` (or `w = self.cache.get(k)`) then
            # `if w is None: w = self.w = ...`: the local is an alias of the state it was read from.
            aliased = _aliased_state(key, node, module, function)
            if not aliased:
                return False
    elif container is not None and not _outlives_the_call(container, function):
        # `cache = self.__dict__.setdefault("c", {})` then `if k not in cache: cache[k] = ...`:
        # a local alias of a container that outlives the call; its entry is filled.
        if not _aliased_state(container, node, module, function):
            return False
    if wanted is None:
        return False
    for statement in _small_statements(node.body):
        for found in _filled_state(statement, module):
            if (found == wanted and not aliased) or found in aliased:
                return True
    return False


def _entry_key(container: cst.BaseExpression, key: cst.BaseExpression, module: ModuleInfo) -> str:
    """The state key of the entry `container[key]`; `(a, b)` names the entry `c[a, b]`."""
    entry = module.normalized(key)
    if isinstance(key, cst.Tuple) and entry.startswith("(") and entry.endswith(")"):
        entry = entry[1:-1]
    return f"{_state_key(container, module)}[{entry}]"


def _filled_state(statement: cst.BaseSmallStatement, module: ModuleInfo) -> list[str]:
    """The state keys one statement fills: its assignment targets, and the entry `C[K]` of
    `C.setdefault(K, v)` or `C.add(K)` (a warn-once set), called alone or assigned."""
    assigns = isinstance(statement, (cst.Assign, cst.AnnAssign, cst.AugAssign))
    value = statement.value if assigns or isinstance(statement, cst.Expr) else None
    # `self.a, self.b = a, b` assigns each: the leaves of an unpacking target.
    found = [_state_key(leaf, module) for target in assignment_targets(statement) for leaf in target_leaves(target)] if assigns else []
    if (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in ("setdefault", "add")
        and value.args
        and value.args[0].keyword is None
        and not value.args[0].star
        and _getattr_target(value) is None
    ):
        found.append(_entry_key(value.func.value, value.args[0].value, module))
    return found


def _compared_to_none(test: cst.BaseExpression, operator: type) -> Optional[cst.BaseExpression]:
    """`X is None` (operator `cst.Is`) or `X is not None` (`cst.IsNot`) -> X."""
    if (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and type(test.comparisons[0].operator) is operator
        and isinstance(test.comparisons[0].comparator, cst.Name)
        and test.comparisons[0].comparator.value == "None"
    ):
        return test.left
    return None


def filled_after_guard(node: cst.If, module: ModuleInfo, function: Optional[FunctionInfo] = None) -> list[cst.CSTNode]:
    """The statements after `if X is not None: return X` / `if X: return` (X state that
    outlives the call, or a local read from it) or `if K in C: return` in the same block, when
    one of them assigns X or fills C[K]: the rest of the block fills the cache on first use,
    the mirror of `if X is None: X = ...` (empty otherwise)."""
    if node.orelse is not None or not always_leaves(node.body):
        return []
    test = _compared_to_none(node.test, cst.IsNot) or node.test
    wanted: set[str] = set()
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.comparisons[0].operator, cst.In):
        # `if k in loaded: return` then `loaded.add(k)`: the mirror of `if k not in loaded:`.
        container = test.comparisons[0].comparator
        if _outlives_the_call(container, function) or _aliased_state(container, node, module, function):
            wanted = {_entry_key(container, test.left, module)}
    elif not isinstance(test, (cst.Name, cst.Attribute, cst.Call)) or (isinstance(test, cst.Call) and _getattr_target(test) is None):
        return []
    elif _outlives_the_call(test, function):
        wanted = {_state_key(test, module)}
    else:
        # `cached = _POLICY` (or `cached = _CONFIGS.get(k)`) then `if cached is not None:
        # return cached`: the local is an alias of the state it was read from.
        wanted = _aliased_state(test, node, module, function)
    if not wanted:
        return []
    rest = statements_after(module, node)
    if not rest:
        return []
    for statement in rest:
        for small in _small_statements(statement):
            if isinstance(small, cst.AugAssign):
                continue
            if any(found in wanted for found in _filled_state(small, module)):
                return rest
    return []


def _aliased_state(name: cst.BaseExpression, at: cst.CSTNode, module: ModuleInfo, function: Optional[FunctionInfo], depth: int = 0) -> set[str]:
    """The state a local was read from, when every binding of it reaching `at` reads an
    attribute, `getattr(...)` or global, or an entry of such state (empty otherwise)."""
    if not isinstance(name, cst.Name) or function is None or depth > 3:
        return set()
    found: set[str] = set()
    for binding in function.bindings.reaching(name.value, at):
        value = binding.value
        if binding.kind != "assign" or value is None:
            return set()
        entry = _get_entry(value, function, depth)
        if entry is not None:
            # `z = self._zeros.get(k)`: the local names the entry `self._zeros[k]`.
            found.add(f"{_state_key(entry[0], module)}[{module.normalized(entry[1])}]")
            continue
        if isinstance(value, cst.Subscript) or not _outlives_the_call(value, function):
            return set()
        found.add(_state_key(value, module))
    return found


def _get_entry(value: cst.BaseExpression, function: FunctionInfo, depth: int = 0) -> Optional[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """`C.get(k)` / `C.get(k, default)` on a container that outlives the call, or on a local
    alias of one (`cache = self.tables`) -> (C, k)."""
    if (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == "get"
        and 1 <= len(value.args) <= 2
        and value.args[0].keyword is None
        and not value.args[0].star
        and (
            _outlives_the_call(value.func.value, function)
            or _aliased_state(value.func.value, value, function.module, function, depth + 1)
        )
    ):
        return value.func.value, value.args[0].value
    return None


def _getattr_target(expr: cst.BaseExpression) -> Optional[tuple[cst.BaseExpression, str]]:
    """`getattr(obj, "name", default)`, `obj.__dict__.setdefault("name", default)` or
    `obj.__dict__.get("name")` -> (obj, "name")."""
    if (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in ("setdefault", "get")
        and isinstance(expr.func.value, cst.Attribute)
        and expr.func.value.attr.value == "__dict__"
        and expr.args
        and isinstance(expr.args[0].value, cst.SimpleString)
    ):
        name = expr.args[0].value.evaluated_value
        if isinstance(name, str) and name.isidentifier():
            return expr.func.value.value, name
    if (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Name)
        and expr.func.value == "getattr"
        and len(expr.args) >= 2
        and isinstance(expr.args[1].value, cst.SimpleString)
    ):
        name = expr.args[1].value.evaluated_value
        if isinstance(name, str) and name.isidentifier():
            return expr.args[0].value, name
    return None


def _state_key(expr: cst.BaseExpression, module: ModuleInfo) -> str:
    found = _getattr_target(expr)
    if found is not None:
        return f"{module.normalized(found[0])}.{found[1]}"
    return module.normalized(expr)


def _outlives_the_call(expr: cst.BaseExpression, function: Optional[FunctionInfo]) -> bool:
    """An attribute, a subscript of one, or a name that is not the function's local: a global,
    a name of an enclosing function, or a parameter the function never rebinds (the caller's
    object, made before the call, as `self` is; a local is made anew on every call)."""
    if _getattr_target(expr) is not None:
        return True
    if isinstance(expr, cst.Attribute):
        return True
    if isinstance(expr, cst.Subscript):
        return _outlives_the_call(expr.value, function)
    if isinstance(expr, cst.Name):
        if function is None or not function.bindings.binds(expr.value):
            return True
        return all(binding.kind == "param" for binding in function.bindings.by_name.get(expr.value, ()))
    return False


def _small_statements(body: cst.BaseSuite):
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.BaseSmallStatement):
            yield node
        elif not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.BaseExpression)):
            stack.extend(children(node))


def first_use_flags(
    module: ModuleInfo,
    nodes: Sequence[cst.CSTNode],
    capture_anchors: Sequence[cst.CSTNode] = (),
    function: Optional[FunctionInfo] = None,
    region: Optional[Region] = None,
    guarded_by: Optional[Callable[[cst.If], set[int]]] = None,
) -> dict[int, bool]:
    """For each node (in pre-order): is it in a first-use cache block? The `if` itself, its
    test and body are; its `else`/`elif` runs at capture. An `if` holding one of the
    capture anchors (a begin call, a graph `with` item, a capture-helper call) is the
    capture itself, not a cache fill. Walking a region, only the capture-state guards
    inside it count: one before it concerns an outer capture, not the one it begins."""
    spans: list[tuple] = []

    def holds_capture(node: cst.If) -> bool:
        # Asked only of cache-shaped blocks: the anchors' spans are sorted once, then searched.
        if not capture_anchors:
            return False
        if not spans:
            spans.extend(sorted((module.start(a), module.end(a)) for a in capture_anchors if a in module.positions))
        start, end = module.start(node), module.end(node)
        index = bisect.bisect_left(spans, (start,))
        while index < len(spans) and spans[index][0] <= end:
            if spans[index][1] <= end:
                return True
            index += 1
        return False

    flags: dict[int, bool] = {}
    parents = module.parents
    cache_ifs: dict[int, bool] = {}
    # Code that never runs while a capture records: under `if not capturing():`, in the
    # `else` of `if capturing():`, and after `if capturing(): raise` in the same block.
    uncaptured: set[int] = set()
    # Filled on first use: what follows `if self._w is not None: return self._w` when it
    # assigns `self._w` (unless it holds a capture).
    filled: set[int] = set()
    for node in nodes:
        if type(node) is cst.If and guarded_by is not None and (region is None or region.contains(node)):
            uncaptured |= guarded_by(node)
        if type(node) is cst.If and region is None:
            rest = filled_after_guard(node, module, function)
            if rest and not any(holds_capture(statement) for statement in rest):
                filled.update(id(statement) for statement in rest)
    for node in nodes:
        parent = parents.get(id(node))
        inherited = flags.get(id(parent), False) if parent is not None else False
        if type(parent) is cst.If and cache_ifs.get(id(parent)) and node is parent.orelse:
            grand = parents.get(id(parent))
            inherited = flags.get(id(grand), False) if grand is not None else False
        if id(node) in uncaptured or id(node) in filled:
            inherited = True
        if type(node) is cst.If:
            cache_ifs[id(node)] = is_first_use_cache(node, module, function) and not holds_capture(node)
            flags[id(node)] = inherited or cache_ifs[id(node)]
        else:
            flags[id(node)] = inherited
    return flags


def walk_unit(context: RuleContext, rules: Sequence[tuple[CheckingRule, dict]], capture_anchors: Sequence[cst.CSTNode], on_call=None, untaken: frozenset[int] = frozenset()) -> None:
    """Dispatch every node of one unit of captured code to the rules, in source order;
    `untaken`: nodes that never run on the calls the capture makes (not captured work)."""
    function, region, module = context.function, context.region, context.module
    # Code that never runs (after a `return` in its block) is no captured work.
    nodes = function.live_nodes if function is not None else module.nodes
    flags = first_use_flags(module, nodes, capture_anchors, function, region, lambda node: context.facts.guarded_by(node, module, function))
    for node in nodes:
        if region is not None and not region.contains(node):
            continue
        if untaken and id(node) in untaken:
            continue
        context.node = node
        context.in_first_use_cache = flags[id(node)]
        for rule, visitors in rules:
            method = visitors.get(type(node))
            if method is not None:
                rule.context = context
                method(rule, node)
        if on_call is not None and type(node) is cst.Call and not context.in_first_use_cache:
            on_call(node)
    context.node = None


class Engine:
    def __init__(self, project: Project, settings: Settings, rules: Sequence[type[CheckingRule]], roots_in: Optional[Iterable[ModuleInfo]] = None):
        self.project = project
        self.settings = settings
        self.rule_classes = list(rules)
        self.reported_codes = {rule.code for rule in self.rule_classes}
        # A rule that wins over a requested one runs too: what it covers is never the loser's.
        for rule in list(self.rule_classes):
            for winner in getattr(rule, "overruled_by", ()):
                if winner not in self.rule_classes:
                    self.rule_classes.append(winner)
        self.claims: list[Claim] = []
        # What the semantic model asks the frameworks (it names none of them).
        project.module_stand_ins = frameworks.module_names()
        self.resolver = CallResolver(project, frameworks.library())
        self.findings: dict[tuple[str, int, int, str], Finding] = {}
        self.regions: list[Region] = []
        self.reach: dict[FunctionInfo, Reach] = {}
        # Which parameters of captured functions hold objects the capture made.
        self.origins = CaptureTimeObjects(self.resolver)
        # Which parameters every captured call fixes, and the branches they never take.
        self.constants = ConstantParameters(self.resolver)
        # What functions do, summarised once for every rule.
        self.effects = Effects(self.resolver, frameworks.capture_queries())
        self.roots: list[Root] = []
        self.internal_errors: list[str] = []
        self._chain_of_current: list[list[Related]] = []
        # Call edges from regions' lexical code (framing: what reach starts from).
        self._seed_edges: list[tuple] = []
        self.capture_time_now: Optional[dict] = None
        # All that rules read of the analysis.
        self.facts = ProgramFacts(self)
        self.rules = [cls(self._report, self.facts) for cls in self.rule_classes]
        self._visitors = [(rule, rule.visitors()) for rule in self.rules]
        # Modules parsed whatever the prefilter says (files named on the command line).
        self.always_parse: set[int] = set()
        # A parallel worker's share: only these modules are searched for captures and roots
        # (the prefilter already ran in the parent); None: the prefilter decides.
        self.roots_in: Optional[list[ModuleInfo]] = list(roots_in) if roots_in is not None else None
        self._prefilter = None
        self._candidate_functions: dict[int, list[FunctionInfo]] = {}
        self._chunk_tests: dict[int, Optional[Callable[[str], bool]]] = {}
        # Call edges the runtime guard recorded, for calls with no static target.
        self.observed = observed_calls(project, settings)

    # -- facts shared by rules ---------------------------------------------------------------
    def capture_anchors(self, module: ModuleInfo) -> list[cst.CSTNode]:
        """The nodes of a module that start a capture: region begins (a begin call, a graph
        `with` item) and capture-helper calls."""
        by_module = getattr(self, "_capture_anchors", None)
        if by_module is None:
            by_module = {}
            for region in self.regions:
                by_module.setdefault(id(region.module), []).append(region.begin)
            helpers = getattr(self, "capture_helpers", None)
            for site in helpers.sites if helpers is not None else ():
                by_module.setdefault(id(site.module), []).append(site.call)
            if helpers is not None:
                self._capture_anchors = by_module  # complete: regions and helper sites are known
        return by_module.get(id(module), [])

    def capture_kinds(self, function: Optional[FunctionInfo], region: Optional[Region]) -> frozenset[str]:
        """The kinds of capture a unit is recorded in: its region's, or those of every root reaching it."""
        if region is not None:
            return frozenset({region.kind})
        reach = self.reach.get(function) if function is not None else None
        if reach is None:
            return frozenset()
        return frozenset(self.roots[root_id].kind for root_id in reach.chains)

    def _report(self, rule: CheckingRule, node: cst.CSTNode, message: str, module: Optional[ModuleInfo], context: Optional[RuleContext], fix=None, chain=None, covers=None) -> None:
        assert module is not None
        try:
            code_range = module.range(node)
        except KeyError:
            return
        if covers is not None and covers in module.positions:
            span = module.range(covers)
            self.claims.append(Claim(rule.code, module.display_path, (span.start.line, span.start.column), (span.end.line, span.end.column)))
        location = Location(code_range.start.line, code_range.start.column + 1)
        end = Location(code_range.end.line, code_range.end.column + 1)
        key = (module.display_path, location.row, location.column, rule.code)
        chains = list(self._chain_of_current[-1]) if self._chain_of_current and context is not None and not context.lexical else []
        if chain:
            chains.append(list(chain))  # the rule's own steps down (a free through a helper)
        existing = self.findings.get(key)
        if existing is not None:
            for chain in chains:
                if chain not in existing.chains:
                    existing.chains.append(chain)
            return
        self.findings[key] = Finding(
            code=rule.code,
            message=message,
            filename=module.display_path,
            location=location,
            end_location=end,
            severity=rule.severity,
            chains=[list(c) for c in chains],
            fix=fix,
        )

    def report_position(self, rule: CheckingRule, module: ModuleInfo, line: int, column: int, message: str) -> None:
        location = Location(line, column)
        self.findings.setdefault(
            (module.display_path, line, column, rule.code),
            Finding(code=rule.code, message=message, filename=module.display_path, location=location, end_location=location, severity=rule.severity),
        )

    # -- the run ---------------------------------------------------------------------------
    def candidate_modules(self) -> list[ModuleInfo]:
        """Modules that can hold captured code or lifecycle calls; the rest parse only on demand."""
        from ..frontend.prefilter import candidate_modules, enabled

        if self.roots_in is not None:
            return self.roots_in
        if not enabled():
            return list(self.project.modules)
        return candidate_modules(self.project, self.prefilter, self.always_parse)

    def _searched(self, module: ModuleInfo) -> bool:
        """With the prefilter off, a file it would not admit is searched only if it
        parses: its parse error is not one the run needs (see `prefilter.enabled`)."""
        from ..frontend.prefilter import enabled

        if enabled() or id(module) in self.always_parse or module._loaded:
            return True
        data = self.project.raw_bytes(module)
        if self.prefilter.admits(data, module.name, module.is_package):
            return True
        source = decode(data)
        if source.error is not None:
            return False
        outline = syntax_limits.read(source.text)
        return outline.error is None and outline.tree is not None

    @property
    def prefilter(self):
        if self._prefilter is None:
            from ..frameworks import prefilter_for

            self._prefilter = prefilter_for(self.settings)
        return self._prefilter

    def _functions_of(self, module: ModuleInfo) -> list[FunctionInfo]:
        """The candidate module's functions that can hold captured code's start; the other
        top-level defs and classes stay unparsed."""
        found = self._candidate_functions.get(id(module))
        if found is None:
            from ..frontend.prefilter import enabled

            test = self.prefilter.chunk_test(module) if enabled() else None
            found = self._candidate_functions[id(module)] = list(module.iter_functions(test))
        return found

    def candidate_functions(self) -> list[FunctionInfo]:
        """The functions this run searches for captured code's start (`_functions_of` of
        each candidate module): every run of a split searches its own share, and the shares
        cover each admitted file once."""
        return [f for module in self.candidate_modules() if self._searched(module) and module.ok for f in self._functions_of(module)]

    @property
    def candidate_chunks_key(self) -> tuple:
        """What `candidate_chunks` depends on besides the file: the prefilter's settings."""
        from ..frontend.prefilter import enabled

        return (enabled(), self.prefilter.key)

    def candidate_chunks(self, module: ModuleInfo, probe: Optional[ModuleInfo] = None) -> Optional[Callable[[str], bool]]:
        """`prefilter.candidate_chunks` of a module: the chunks whose functions some run of
        any split searches as candidates (`candidate_functions`). `probe`: a copy of the
        module to read the test from (its reads are not the module's)."""
        from ..frontend.prefilter import candidate_chunks

        key = id(module)
        if key not in self._chunk_tests:
            self._chunk_tests[key] = candidate_chunks(self.prefilter, self.project.raw_bytes(module), probe or module)
        return self._chunk_tests[key]

    def run(self) -> list[Finding]:
        with recursion_room():
            return self._run()

    def _run(self) -> list[Finding]:
        candidates = [module for module in self.candidate_modules() if self._searched(module)]
        for module in candidates:
            module.load()
            if not module.ok:
                continue
            for function in self._functions_of(module):
                for framework in frameworks.FRAMEWORKS:
                    self.regions.extend(framework.regions(self.project, function, self.settings))
        self.regions.extend(contextmanager_regions(self.project, self.resolver, self.regions, self.settings.capture_helpers))
        self._collect_roots(candidates)
        for region in self.regions:
            self._guarded(region.module, lambda region=region: self._visit_region(region))
        seeds = list(self._pending)
        seeded = {function: dict(reach.chains) for function, reach in self.reach.items()}
        self._propagate()
        if self.constants.solve():
            # Some calls lie in branches a fixed parameter never takes: reach again without them.
            self._pending = deque(seeds)
            self.reach = {function: Reach(dict(chains)) for function, chains in seeded.items()}
            self.origins = self.origins.without_edges()
            for caller, call, target, root_id in self._seed_edges:
                self.origins.add_edge(caller, call, target, root_id)
            self._propagate(pruned=True)
        for function, reach in list(self.reach.items()):
            # Capture-time objects and fixed parameters are judged per capture site: the
            # function is visited once for each set of capture-time parameters and untaken
            # branches its sites give it, with their chains.
            untaken_by_root = {root_id: self.constants.dead(root_id, function) for root_id in reach.chains}
            for parameters, untaken, chains in self.origins.by_chain(function, reach.chains, untaken_by_root.get):
                self._chain_of_current.append(chains)
                self.capture_time_now = parameters
                self._guarded(function.module, lambda function=function, untaken=untaken: self._visit_function(function, untaken))
                self._chain_of_current.pop()
            self.capture_time_now = None
        for region in self.regions:
            for rule in self.rules:
                rule.context = None  # type: ignore[assignment]
                self._guarded(region.module, lambda rule=rule, region=region: rule.check_region(region))
        for rule in self.rules:
            self._guarded(None, lambda rule=rule: rule.check_project())
        return decide_precedence(self.findings.values(), self.claims, self.reported_codes)

    def _guarded(self, module: Optional[ModuleInfo], action) -> None:
        try:
            action()
        except (RecursionError, KeyError) as error:
            # Past what `syntax_limits` lets through; one unit is lost, not the run.
            where = module.display_path if module else "project"
            what = "code nested too deeply" if isinstance(error, RecursionError) else f"no position for a node ({error})"
            self.internal_errors.append(f"{where}: {what}: analysis skipped")

    # -- roots and reachability ---------------------------------------------------------------
    def _collect_roots(self, candidates: Iterable[ModuleInfo]) -> None:
        self._pending: deque[tuple[FunctionInfo, int, list[Related]]] = deque()
        for region in self.regions:
            module = region.module
            begin = module.range(region.begin).start
            root = Root(
                Related(module.display_path, Location(begin.line, begin.column + 1), f"capture begins here, in `{region.function.qualname}`"),
                kind=region.kind,
            )
            self.roots.append(root)
            region.root_id = len(self.roots) - 1  # type: ignore[attr-defined]
            self.origins.add_framing(region.function)
        self._collect_helper_sites()
        declared_names = set(self.settings.captured_functions)
        declared_decorators = set(self.settings.captured_decorators) | {"trace_lint.captured"}
        for module in candidates:
            if not module.ok:
                continue
            for function in self._functions_of(module):
                reason = None
                if function.declared_captured:
                    reason = "declared captured by `# trace-lint: captured`"
                elif function.qualname in declared_names or any(f"{n}.{function.qualname}" in declared_names for n in module.names):
                    reason = "declared captured in `captured-functions`"
                else:
                    for decorator in function.node.decorators:
                        name = self._decorator_name(decorator, module, function.parent)
                        if _declared(name, declared_decorators):
                            reason = f"declared captured by `@{name}`"
                            break
                if reason is None and function.cls is not None and function.name in ("forward", "__call__"):
                    for decorator in function.cls.node.decorators:
                        name = self._decorator_name(decorator, module, None)
                        if _declared(name, declared_decorators) and name != "trace_lint.captured":
                            reason = f"its class is declared captured by `@{name}`"
                            break
                if reason is None:
                    continue
                start = module.range(function.node.name).start
                root = Root(Related(module.display_path, Location(start.line, start.column + 1), f"`{function.qualname}` {reason}"))
                self.roots.append(root)
                self._pending.append((function, len(self.roots) - 1, [root.related], None))
                self.origins.add_root(function, len(self.roots) - 1)
                self.constants.add_start(len(self.roots) - 1, function)
        self._collect_captured_callables(candidates)

    def _decorator_name(self, decorator: cst.Decorator, module: ModuleInfo, scope: Optional[FunctionInfo]) -> Optional[str]:
        """The decorator's dotted name through imports, or as written when nothing resolves it."""
        callee = _decorator_callee(decorator.decorator)
        name = self.project.qualified_name(callee, module, scope)
        if name is None and isinstance(callee, (cst.Name, cst.Attribute)):
            name = module.normalized(callee)
        return name

    def _collect_helper_sites(self) -> None:
        """The callable passed to a capture helper is captured work, reached from the call site."""
        self.capture_helpers = CaptureHelpers(self.project, self.resolver, self.settings.capture_helpers)
        kinds_of: dict[int, str] = {id(r.function): r.kind for r in self.regions}
        for site in self.capture_helpers.find(self.regions):
            module = site.module
            start = module.range(site.call).start
            where = f", in `{site.caller.qualname}`" if site.caller is not None else ""
            related = Related(
                module.display_path,
                Location(start.line, start.column + 1),
                f"`{module.code(site.argument)}` is captured by the helper `{site.helper.name}` here{where}",
            )
            # A class helper captures in its methods, not in the `__init__` that stores the callable.
            helper_function = site.helper.capturing_methods[0] if site.helper.capturing_methods else site.helper.function
            kind = kinds_of.get(id(helper_function), "declared") if helper_function is not None else "declared"
            self.roots.append(Root(related, kind=kind))
            self._pending.append((site.target, len(self.roots) - 1, [related], None))
            self.origins.add_root(site.target, len(self.roots) - 1)
            self.constants.add_start(len(self.roots) - 1, site.target, self._callable_values(site))
            if site.caller is not None:
                self.origins.add_framing(site.caller)

    def _collect_captured_callables(self, candidates: Iterable[ModuleInfo]) -> None:
        """Functions a framework captures whole (`torch.cuda.make_graphed_callables`):
        captured work, not a region."""
        modules = [m for m in candidates if m.ok]
        for framework in frameworks.FRAMEWORKS:
            for module, call, target, message in framework.captured_callables(self.project, self.resolver, modules):
                start = module.range(call).start
                related = Related(module.display_path, Location(start.line, start.column + 1), message)
                self.roots.append(Root(related, kind=framework.callable_kind))
                self._pending.append((target, len(self.roots) - 1, [related], None))
                self.origins.add_root(target, len(self.roots) - 1)
                self.constants.add_start(len(self.roots) - 1, target)

    def _add_reach(self, function: FunctionInfo, root_id: int, chain: list[Related], self_class=None) -> None:
        reach = self.reach.setdefault(function, Reach())
        if root_id not in reach.chains:
            reach.chains[root_id] = chain
        self._pending.append((function, root_id, reach.chains[root_id], self_class))

    def _callable_values(self, site) -> dict:
        """What a helper's callable gets from the helper's own calls of it in its regions,
        through the helpers it hands it on to (`run()`: each parameter its default; `run(x)`:
        the rest theirs)."""
        if self.constants.names_partial(site.argument, site.caller):
            return {}  # the partial's own arguments fill some parameters
        if isinstance(site.argument, cst.Attribute) and self.resolver.class_of(site.argument.value, site.module, site.caller) is not None:
            return {}  # `Model.step` looked up on its class: the helper's calls pass the receiver
        calls = self.capture_helpers.captured_calls(site)
        return self.constants.start_values(site.target, calls) if calls else {}

    def _edge(self, caller: FunctionInfo, call: cst.Call, root_id: int, chain: list[Related], self_class=None, seed: bool = False) -> None:
        targets = self.resolver.resolve_all(call, caller, self_class)
        for target in targets:
            self.origins.add_edge(caller, call, target, root_id)
            self.constants.add_edge(caller, call, target.function, root_id, seed=seed)
            if seed:
                self._seed_edges.append((caller, call, target, root_id))
            start = caller.module.range(call).start
            step = Related(caller.module.display_path, Location(start.line, start.column + 1), f"calls `{target.function.qualname}`")
            self._add_reach(target.function, root_id, [*chain, step], target.self_class)
        if not targets and self.observed:
            # No static target: what the runtime guard saw this call run (capture/observed.py).
            start = caller.module.range(call).start
            for function, edge in self.observed.targets(caller.module, start.line, start.column):
                self.constants.add_edge(caller, call, function, root_id, seed=seed, opaque=True)
                step = Related(caller.module.display_path, Location(start.line, start.column + 1), observed_step(function.qualname, edge))
                self._add_reach(function, root_id, [*chain, step])

    def _visit_region(self, region: Region) -> None:
        context = RuleContext(self.facts, region.module, region.function, region)
        root_id = region.root_id  # type: ignore[attr-defined]
        chain = [self.roots[root_id].related]
        walk_unit(
            context,
            [(r, v) for r, v in self._visitors if r.sees_lexical],
            self.capture_anchors(region.module),
            on_call=lambda call: self._edge(region.function, call, root_id, chain, seed=True),
        )

    def _propagate(self, pruned: bool = False) -> None:
        """Breadth-first over calls from captured functions; each function is walked once
        per root and class of `self` (a base method reached from two subclasses calls each
        one's overrides). `pruned`: calls in branches the root's calls never take are no edges."""
        edges_done: set[tuple[int, int, int]] = set()
        while self._pending:
            function, root_id, chain, self_class = self._pending.popleft()
            reach = self.reach.setdefault(function, Reach())
            reach.chains.setdefault(root_id, chain)
            key = (id(function), root_id, id(self_class))
            if key in edges_done:
                continue
            edges_done.add(key)
            untaken = self.constants.dead(root_id, function) if pruned else frozenset()
            for call in self._calls_in(function):
                if id(call) not in untaken:
                    self._edge(function, call, root_id, reach.chains[root_id], self_class)

    def _calls_in(self, function: FunctionInfo) -> list[cst.Call]:
        cached = getattr(function, "_captured_calls", None)
        if cached is None:
            calls: list[cst.Call] = []
            context = RuleContext(self.facts, function.module, function, None)
            try:
                walk_unit(context, [], self.capture_anchors(function.module), on_call=calls.append)
            except RecursionError:
                self.internal_errors.append(f"{function.module.display_path}: code nested too deeply to analyse; skipped")
            cached = calls
            function._captured_calls = calls  # type: ignore[attr-defined]
        return cached

    def _visit_function(self, function: FunctionInfo, untaken: frozenset[int] = frozenset()) -> None:
        context = RuleContext(self.facts, function.module, function, None)
        walk_unit(context, [(r, v) for r, v in self._visitors if r.sees_work], self.capture_anchors(function.module), untaken=untaken)


def _declared(name: Optional[str], configured: set[str]) -> bool:
    """A decorator's dotted name is configured, in full or (a configured name without a dot,
    as frameworks' docs spell them: `trace_enabled`) by its last part."""
    if name is None:
        return False
    return name in configured or name.rsplit(".", 1)[-1] in configured


def _decorator_callee(expr: cst.BaseExpression) -> cst.BaseExpression:
    return expr.func if isinstance(expr, cst.Call) else expr
