"""flake8 plugin (entry point `TRC`): trace-lint's findings as flake8 errors, from the same engine.

flake8 hands over one file at a time. A finding in one file can come from a capture in
another (the callee is flagged), so each process checks the file's whole project once and
answers from that; a file whose text differs from the disk (stdin) is checked on its own,
with the project's other files around it."""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Iterator, Optional, Sequence

from . import __version__
from .frontend.discovery import discover
from .core.findings import Finding
from .driver.checker import check
from .core.config import Settings, load_settings

# Per process: (project root, settings) -> (files checked, findings by file).
_projects: dict[tuple, tuple[set[Path], dict[Path, list[Finding]]]] = {}


def _resolved(filename: str) -> Path:
    return Path(os.path.abspath(filename)).resolve()


def _by_file(findings: Sequence[Finding]) -> dict[Path, list[Finding]]:
    grouped: dict[Path, list[Finding]] = {}
    for finding in findings:
        grouped.setdefault(_resolved(finding.filename), []).append(finding)
    return grouped


def _project_root(path: Path, settings: Settings) -> Optional[Path]:
    if settings.config_file is not None:
        return settings.root
    cwd = Path.cwd().resolve()
    return cwd if cwd in path.parents else None


def findings_for(filename: str, text: str) -> list[Finding]:
    path = _resolved(filename)
    settings = load_settings(path.parent if path.parent.exists() else Path.cwd())
    root = _project_root(path, settings)
    try:
        same_as_disk = path.is_file() and path.read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        same_as_disk = False
    if root is not None and same_as_disk:
        key = (root, settings)
        if key not in _projects:
            files = {f.resolve() for f in discover([root], settings).files}
            _projects[key] = (files, _by_file(check([root], settings).findings))
        files, findings = _projects[key]
        if path in files:
            return findings.get(path, [])
    targets = [path, *([root] if root is not None else [])]
    return _by_file(check(targets, settings, sources={path: text}).findings).get(path, [])


class TraceLintChecker:
    name = "trace-lint"
    version = __version__

    def __init__(self, tree: ast.AST, filename: str, lines: Sequence[str]):
        # `tree` makes this a once-per-file plugin; the engine parses with libcst itself.
        self.filename = filename
        self.lines = lines

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        for finding in findings_for(self.filename, "".join(self.lines)):
            # flake8 columns are 0-based.
            yield finding.location.row, finding.location.column - 1, f"{finding.code} {finding.message}", type(self)
