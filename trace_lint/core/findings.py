"""What the engine produces: findings and the related locations that explain them."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Optional

# Where a rule's docs are: the package's metadata or the page it ships.
from .rule_links import rule_url


@dataclass(frozen=True, order=True)
class Location:
    row: int  # 1-based
    column: int  # 1-based


@dataclass(frozen=True)
class Related:
    """One step of a call chain, or the capture site, attached to a finding."""

    filename: str
    location: Location
    message: str


@dataclass(frozen=True)
class Edit:
    content: str
    location: Location
    end_location: Location


class Fix:
    """A finding's fix: whether it is safe, what it does, and its edits. A rule may give the
    edits as a function that builds them (`build`): whether a fix exists, its applicability
    and its message are known at once, while rendering the edits (libcst code generation) runs
    only when something reads `edits` (an output that shows them, `--fix`, `--diff`, the
    cache, a worker sending its findings), and then once. Equal, hashed, copied and pickled by
    its values, as a plain record."""

    __slots__ = ("applicability", "message", "_edits", "_build")

    def __init__(self, applicability: str, message: str, edits: tuple[Edit, ...] = (), build: Optional[Callable[[], tuple[Edit, ...]]] = None):
        self.applicability = applicability  # "safe" | "unsafe" | "display-only"
        self.message = message
        self._edits = tuple(edits)
        self._build = build

    @property
    def edits(self) -> tuple[Edit, ...]:
        build = self._build
        if build is not None:
            self._edits = tuple(build())
            self._build = None  # what it held (syntax nodes) is released
        return self._edits

    def _values(self) -> tuple:
        return (self.applicability, self.message, self.edits)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Fix):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"Fix(applicability={self.applicability!r}, message={self.message!r}, edits={self.edits!r})"

    def __reduce__(self):
        return (Fix, (self.applicability, self.message, self.edits))


@dataclass
class Finding:
    code: str
    message: str
    filename: str
    location: Location
    end_location: Location
    severity: str = "error"
    noqa_row: Optional[int] = None
    related: list[Related] = field(default_factory=list)
    # Chains back to each capture site, innermost last: each chain is a list of Related.
    chains: list[list[Related]] = field(default_factory=list)
    fix: Optional[Fix] = None
    # The rule's one-line advice, set when a run reports the finding (and kept in the cache):
    # rendering it then needs neither the rules nor libcst.
    help: Optional[str] = field(default=None, compare=False)

    @property
    def url(self) -> str:
        return rule_url(self.code)

    def sort_key(self) -> tuple:
        return (self.filename, self.location.row, self.location.column, self.code)

    def to_json(self) -> dict:
        def loc(location: Location) -> dict:
            return {"row": location.row, "column": location.column}

        def step(related: Related) -> dict:
            return {"filename": related.filename, "location": loc(related.location), "message": related.message}

        return {
            "code": self.code,
            "message": self.message,
            "severity": self.severity,
            "filename": self.filename,
            "location": loc(self.location),
            "end_location": loc(self.end_location),
            "noqa_row": self.noqa_row if self.noqa_row is not None else self.location.row,
            "url": self.url,
            "fix": None
            if self.fix is None
            else {
                "applicability": self.fix.applicability,
                "message": self.fix.message,
                "edits": [
                    {
                        "content": e.content,
                        "location": loc(e.location),
                        "end_location": loc(e.end_location),
                    }
                    for e in self.fix.edits
                ],
            },
            # One list per capture site that reaches the finding, from the capture down to
            # the call that reaches it; none for a finding lexically inside its region.
            "chains": [[step(s) for s in chain] for chain in self.chains],
            "related": [step(r) for r in self.related],
        }


def union(parts: Iterable[Iterable[Finding]]) -> list[Finding]:
    """The findings of several engine runs as one: a finding several report (the same file,
    place and code) once, with the union of their call chains. The parts' findings are left
    as they were (a cached record keeps each part's own)."""
    merged: dict[tuple[str, int, int, str], Finding] = {}
    copied: set[tuple[str, int, int, str]] = set()
    for findings in parts:
        for finding in findings:
            key = (finding.filename, finding.location.row, finding.location.column, finding.code)
            existing = merged.get(key)
            if existing is None:
                merged[key] = finding
                continue
            if key not in copied:
                existing = merged[key] = replace(existing, chains=list(existing.chains))
                copied.add(key)
            for chain in finding.chains:
                if chain not in existing.chains:
                    existing.chains.append(chain)
    return list(merged.values())


def attach_related(finding: Finding) -> None:
    """The JSON `related` list: every chain back to its capture site, outermost first."""
    # Shortest chain first, then by place: the same order however the chains were found
    # (a parallel run merges them from several workers).
    finding.chains.sort(key=lambda chain: (len(chain), [(s.filename, s.location.row, s.location.column, s.message) for s in chain]))
    related = []
    for chain in finding.chains:
        for step in chain:
            if step not in related:
                related.append(step)
    finding.related = related
