"""What the engine produces: findings and the related locations that explain them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

DOCS_URL = "https://trace-lint.readthedocs.io/en/latest/rules/#{code}"


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


@dataclass(frozen=True)
class Fix:
    applicability: str  # "safe" | "unsafe" | "display-only"
    message: str
    edits: tuple[Edit, ...]


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

    @property
    def url(self) -> str:
        return DOCS_URL.format(code=self.code.lower())

    def sort_key(self) -> tuple:
        return (self.filename, self.location.row, self.location.column, self.code)

    def to_json(self) -> dict:
        def loc(location: Location) -> dict:
            return {"row": location.row, "column": location.column}

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
            "related": [
                {"filename": r.filename, "location": loc(r.location), "message": r.message}
                for r in self.related
            ],
        }
