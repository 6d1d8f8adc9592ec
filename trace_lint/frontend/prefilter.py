"""The textual prefilter: which files can hold the start of captured code, read from raw
bytes without parsing (and without importing libcst).

A file is a candidate when it can contain a capture region or a capture root: a call that
resolves to a capture API (`ttnn.begin_trace_capture`, `torch.cuda.graph`, ...), a
configured capture helper or decorator, `# trace-lint: captured`, or a function named in
`captured-functions`. Everything else is parsed only if captured code reaches it.

Soundness rests on how `Project.qualified_name` builds names: every dotted name it returns
is an import binding (`import a.b as x`, `from a import b`, relative imports resolved from
the module's own name), a module-level name (`<module>.<name>`), a stand-in (`ttnn`,
`torch`), or a local or `self` attribute assigned a framework one of those (`nn = ttnn`,
`self.ttnn = ttnn`: `_aliases` reads them from the text), followed by attributes written
after it. So a file can resolve a call to
`torch.cuda.graph` only if it binds some prefix of that name and spells the rest of it as
attributes after the bound local name. Import bindings are over-approximated (every
`import` word counts, in code, strings or comments alike); attribute chains may span
whitespace and line breaks, but not a comment between `.` and the attribute.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Sequence

def enabled() -> bool:
    """Whether the prefilter narrows the run. `TRACE_LINT_PREFILTER=off` (for tests and
    debugging) searches every file and every definition for captured code instead; the
    findings must be the same (tests/test_fuzz_input.py checks it). Either way TRC001 covers
    the files the run needs: those `Prefilter.admits`, those named on the command line and
    those captured code reaches. A file that cannot be parsed holds no capture to find, so
    searching it is pointless, and reporting every broken file of a tree would mean parsing
    every file of it."""
    return os.environ.get("TRACE_LINT_PREFILTER", "on").lower() != "off"


# Words that make a file a candidate on their own: the `# trace-lint: captured` comment
# and graph methods matched by attribute name alone (`g.capture_begin()`).
DEFAULT_WORDS = (b"trace-lint", b"capture_begin")

_NAMES_LINE = re.compile(rb"\s*(\([^)]*\)|(?:[^\n\\;#]|\\\r?\n)*)")
_FROM_TAIL = re.compile(rb"\bfrom(?:\s+|(?=\.))(\.*[\w.\s]*?)\s*$")
_ALIAS = re.compile(rb"^([\w.\s]+?)(?:\s+as\s+(\w+))?$")
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


@dataclass
class Prefilter:
    """Decides from raw bytes whether a module can hold captured code's start."""

    # Fully qualified names whose use (a call, a decorator, a `with`) starts captured code.
    targets: Sequence[str]
    # Raw tokens that make a file a candidate on their own.
    words: Sequence[bytes] = DEFAULT_WORDS
    # Module names that resolve to themselves even as locals (the frameworks' modules, as
    # `Project.module_stand_ins`).
    stand_ins: Sequence[str] = ()
    _last: list[bytes] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self.targets = tuple(dict.fromkeys(self.targets))
        self.words = tuple(dict.fromkeys(self.words))
        # Parts most targets share first (`ttnn`: one scan of a file rules out every ttnn
        # target), then the last part (the most specific), then the longest: an absent long
        # needle is the cheapest to rule out. Scans for absent needles through whole files
        # are most of the prefilter's time.
        split = [[p.encode() for p in target.split(".")] for target in self.targets]
        shared: dict[bytes, int] = {}
        for parts in split:
            for part in set(parts):
                shared[part] = shared.get(part, 0) + 1
        self._parts = []
        for target, parts in zip(self.targets, split):
            order = sorted(set(parts), key=lambda p: (-shared[p], p != parts[-1], -len(p), p))
            self._parts.append((target, parts[-1], order))
        self._all_parts = frozenset(p for _, _, parts in self._parts for p in parts)

    def identity(self) -> list:
        """What this prefilter's answers depend on besides the file (sorted: the order names
        are tried in changes how fast an answer comes, not the answer)."""
        return [sorted(set(self.targets)), sorted({word.decode("latin-1") for word in self.words}), sorted(set(self.stand_ins))]

    @property
    def key(self) -> tuple:
        """What its answers depend on besides the file: its names and words."""
        return (tuple(self.targets), tuple(self.words), tuple(self.stand_ins))

    def admits(self, data: bytes, module_name: str, is_package: bool) -> bool:
        name = module_name.encode("utf-8", "surrogateescape")  # a file name need not be UTF-8
        seen: dict[bytes, bool] = {}
        absent: list[bytes] = []

        def present(last: bytes, parts: list[bytes]) -> bool:
            # Every part of a resolved name is spelt in the file or comes from its own name.
            for part in parts:
                hit = seen.get(part)
                if hit is None:
                    # A part containing an absent needle is absent too; no need to scan.
                    hit = not any(a in part for a in absent) and (part in data or part in name)
                    seen[part] = hit
                    if not hit:
                        absent.append(part)
                if not hit:
                    return False
            return True

        return self._spells(data, module_name, is_package, present)

    def chunk_test(self, module) -> Callable[[str], bool]:
        """A test of one top-level def's or class's text: can it hold captured code's start?
        The same reasoning as `admits`, with the module's own import bindings (exact, from
        its outline) added to those the chunk's text spells."""
        module.load()
        module_bindings = [*module.imports.items()]
        # A framework module imported through another package (`from vendor import ttnn as
        # tk`) may be the framework's (`Project.framework_reexport`): read it as both.
        module_bindings += [
            (local, full.rpartition(".")[2]) for local, full in module.imports.items() if "." in full and full.rpartition(".")[2] in self.stand_ins
        ]
        targets = set(self.targets)
        # Names imported as a target itself: a call through them need not spell the target.
        aliases = [local for local, full in module_bindings if full in targets]

        def test(text: str) -> bool:
            data = text.encode("utf-8", "surrogatepass")
            # The last part is spelt in the chunk, or the call goes through an alias.
            if self._spells(data, module.name, module.is_package, lambda last, parts: last in data, module_bindings):
                return True
            return any(_spelled(data, _chain(local, [])) for local in aliases if local.encode() in data)

        return test

    def _spells(self, data: bytes, module_name: str, is_package: bool, present, extra_bindings=()) -> bool:
        """A word of ours, or a target whose parts pass `present` and that some binding
        spells (the bindings the text's imports make, plus `extra_bindings`)."""
        if any(word in data for word in self.words):
            return True
        bindings: Optional[list[tuple[str, str]]] = None
        for target, last, parts in self._parts:
            if not present(last, parts):
                continue
            if bindings is None:
                bindings = [*_bindings(data, module_name, is_package, self.stand_ins, self._all_parts), *extra_bindings]
                bindings += _aliases(data, bindings, self.stand_ins)
            if _may_spell(data, target, bindings, module_name):
                return True
        return False


def _clean(raw: bytes) -> str:
    return re.sub(rb"\s+", b"", raw).decode("ascii", "replace")


def _imports(data: bytes):
    """(base or None, names) for every `import` word: `from <base> import <names>`."""
    position = data.find(b"import")
    while position >= 0:
        end = position + 6
        before = data[position - 1] if position else 32
        after = data[end] if end < len(data) else 32
        if before not in _WORD and after not in _WORD:
            names = _NAMES_LINE.match(data, end)
            line_start = data.rfind(b"\n", 0, position) + 1
            # A `from` clause continued with a backslash starts on an earlier line.
            while line_start > 1 and data[line_start - 2 : line_start - 1] == b"\\":
                line_start = data.rfind(b"\n", 0, line_start - 2) + 1
            head = _FROM_TAIL.search(data, line_start, position)
            yield (head.group(1) if head else None), names.group(1)
        position = data.find(b"import", end)


def _bindings(data: bytes, module_name: str, is_package: bool, stand_ins: Sequence[str], parts: frozenset = frozenset()) -> list[tuple[str, str]]:
    """(local name, full dotted name) for every import the text may hold, over-approximated.
    With `parts`, imports whose names mention none of them are left out: a binding that is
    a prefix of a target ends in one of the target's parts."""
    out: list[tuple[str, str]] = [(name, name) for name in stand_ins]
    package = module_name if is_package else module_name.rpartition(".")[0]
    for base_raw, names_raw in _imports(data):
        if parts and not any(part in names_raw for part in parts):
            continue
        names = re.sub(rb"#[^\n]*", b"", names_raw).strip().strip(b"()")
        names = re.sub(rb"\\\r?\n", b" ", names)
        base: Optional[str] = None
        if base_raw is not None:
            base = _clean(base_raw)
            dots = len(base) - len(base.lstrip("."))
            if dots:
                anchor = package.split(".") if package else []
                if dots - 1 > len(anchor):
                    base = None  # resolves to nothing, as in the collector
                else:
                    anchor = anchor[: len(anchor) - (dots - 1)]
                    rest = base[dots:]
                    base = ".".join([*anchor, rest] if rest else anchor)
        for part in names.split(b","):
            alias = _ALIAS.match(part.strip())
            if alias is None:
                continue
            full = _clean(alias.group(1))
            if not full:
                continue
            local = alias.group(2).decode("ascii", "replace") if alias.group(2) else None
            if base:
                out.append((local or full, f"{base}.{full}"))
            if local is not None:
                out.append((local, full))
            else:
                # Also read as a plain import, in case `from` was not what it seemed.
                head = full.split(".")[0]
                out.append((head, head))
                out.append((full, full))
    return out


_SPACE = frozenset(b" \t\r\n\\")


def _assigned_before(data: bytes, start: int) -> Optional[str]:
    """The dotted name (`nn`, `self.ttnn`) written as `<name> =` right before `start`, if
    any (read backwards by hand: most spellings of a module follow no `=` at all)."""
    i = start - 1
    while i >= 0 and data[i] in _SPACE:
        i -= 1
    if i < 0 or data[i] != 61:  # "="
        return None
    i -= 1
    while i >= 0 and data[i] in _SPACE:
        i -= 1
    parts = []
    while True:
        end = i + 1
        while i >= 0 and data[i] in _WORD:
            i -= 1
        word = data[i + 1 : end]
        if not word or word[0] in b"0123456789":
            return None
        parts.append(word.decode("ascii"))
        j = i
        while j >= 0 and data[j] in b" \t":
            j -= 1
        if j < 0 or data[j] != 46:  # no "." before: the name is whole
            break
        j -= 1
        while j >= 0 and data[j] in b" \t":
            j -= 1
        i = j
    return ".".join(reversed(parts))


def _aliases(data: bytes, bindings: list[tuple[str, str]], stand_ins: Sequence[str]) -> list[tuple[str, str]]:
    """(alias, full dotted name) for every `x = <name>` and `self.x = <name>` the text may
    hold where `<name>` spells a framework binding, with attributes after it (`nn = ttnn`,
    `self.ttnn = ttnn`, `nn = self.ttnn`): `Project.qualified_name` follows such an alias
    to the framework (a name or attribute chain only, never a call's result). Over-
    approximated (keyword arguments count too), and followed through aliases of aliases."""
    heads = set(stand_ins)
    frontier = {(local, full) for local, full in bindings if full.split(".")[0] in heads}
    known = set(frontier)
    found: list[tuple[str, str]] = []
    for _ in range(4):  # aliases of aliases, a few deep
        if not frontier:
            break
        fulls: dict[str, set[str]] = {}
        for local, full in frontier:
            fulls.setdefault(local, set()).add(full)
        fresh = set()
        for match in _alias_pattern(tuple(sorted(fulls))).finditer(data):
            target = _assigned_before(data, match.start() + 1)
            if target is None:
                continue
            spelled = _clean(match.group(1))
            local = next(l for l in sorted(fulls, key=len, reverse=True) if spelled == l or spelled.startswith(l + "."))
            for full in fulls[local]:
                alias = (target, full + spelled[len(local) :])
                if alias not in known:
                    known.add(alias)
                    fresh.add(alias)
        found += sorted(fresh)
        frontier = fresh
    return found


_ALIAS_PATTERNS: dict[tuple[str, ...], re.Pattern] = {}


def _alias_pattern(locals_: tuple[str, ...]) -> re.Pattern:
    """`= <local>` and attributes after it, ending the value (not called, not indexed), in
    any parentheses (`tt = (ttnn)`: the parser reads the name inside)."""
    pattern = _ALIAS_PATTERNS.get(locals_)
    if pattern is None:
        dotted = rb"[ \t]*\.[ \t]*"
        names = b"|".join(dotted.join(re.escape(p.encode()) for p in local.split(".")) for local in sorted(locals_, key=len, reverse=True))
        pattern = re.compile(rb"=[\s(]*((?:" + names + rb")(?:" + dotted + rb"\w+)*)(?![\w.(\[])(?![ \t]*[.(\[])")
        if len(_ALIAS_PATTERNS) < 256:
            _ALIAS_PATTERNS[locals_] = pattern
    return pattern


def _chain(local: str, rest: list[str]) -> re.Pattern:
    parts = [re.escape(p.encode()) for p in local.split(".")] + [re.escape(p.encode()) for p in rest]
    # Starts with a literal so that the search is fast; the boundary before it is checked by hand.
    return re.compile(rb"\s*\.\s*".join(parts) + rb"(?![\w])")


def _spelled(data: bytes, pattern: re.Pattern) -> bool:
    for match in pattern.finditer(data):
        start = match.start()
        if start == 0 or data[start - 1] not in _WORD:
            return True
    return False


def _may_spell(data: bytes, target: str, bindings: Iterable[tuple[str, str]], module_name: str) -> bool:
    """Whether some binding of a prefix of `target` is followed by the rest of it as attributes."""
    parts = target.split(".")
    tried: set[tuple[str, int]] = set()
    candidates = list(bindings)
    # Module-level names of this very module resolve to `<module>.<name>`.
    if module_name and target.startswith(module_name + "."):
        rest = target[len(module_name) + 1 :].split(".")
        candidates.append((rest[0], f"{module_name}.{rest[0]}"))
    for local, full in candidates:
        if target != full and not target.startswith(full + "."):
            continue
        rest = parts[len(full.split(".")) :]
        key = (local, len(rest))
        if key in tried:
            continue
        tried.add(key)
        if _spelled(data, _chain(local, rest)):
            return True
    return False


def candidate_chunks(prefilter: Prefilter, data: bytes, module) -> Optional[Callable[[str], bool]]:
    """The test of a module's chunks (by their text) whose functions a run searches for
    captured code's start: every chunk with the prefilter off, the chunks `chunk_test`
    accepts in a file it admits, none in another file (None). `data`: the file's bytes."""
    if not enabled():
        return _every_chunk
    return prefilter.chunk_test(module) if prefilter.admits(data, module.name, module.is_package) else None


def _every_chunk(text: str) -> bool:
    return True


def candidate_modules(project, prefilter: Prefilter, always: Iterable[int] = ()) -> list:
    """The project's modules the prefilter admits, plus the modules (by id) in `always`."""
    always = set(always)
    return [
        m for m in project.modules
        if id(m) in always or prefilter.admits(project.raw_bytes(m), m.name, m.is_package)
    ]
