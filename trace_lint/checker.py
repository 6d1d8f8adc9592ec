"""One check run: discover files -> project -> engine -> suppressions and ignores -> findings."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from .analyzer.discovery import discover, display_path, matches_per_file_glob, module_name
from .analyzer.engine import Engine
from .analyzer.findings import Finding
from .analyzer.project import ModuleInfo, Project
from .analyzer.suppressions import apply_suppressions
from .config import Settings, real_path
from .rules import ALL_RULES, BY_CODE, selected_codes
from .rules.analysis import UnusedSuppression


@dataclass
class CheckResult:
    findings: list[Finding] = field(default_factory=list)
    # Problems that are not findings: missing paths, unreadable files (exit status 2).
    errors: list[str] = field(default_factory=list)
    files_checked: int = 0


def _unused_message(unknown: list[str], unused: list[str]) -> str:
    parts = []
    if unknown:
        parts.append("unknown code" + ("s " if len(unknown) > 1 else " ") + ", ".join(f"`{c}`" for c in unknown))
    if unused:
        parts.append("unused suppression of " + ", ".join(f"`{c}`" for c in unused))
    return "; ".join(parts)


def check(
    paths: Sequence[Path],
    settings: Settings,
    *,
    force_exclude: bool = False,
    sources: Optional[dict[Path, str]] = None,
) -> CheckResult:
    """Check files and folders. `sources` gives text for paths that are not on disk as-is
    (stdin, unsaved editor buffers); such a path is checked even if it does not exist."""
    result = CheckResult()
    sources = {real_path(p): text for p, text in (sources or {}).items()}
    on_disk = [p for p in paths if real_path(p) not in sources]
    found = discover(on_disk, settings, force_exclude=force_exclude)
    result.errors.extend(found.errors)
    files = list(found.files)
    explicit = {real_path(p) for p in paths if p.exists() and not p.is_dir()} | set(sources)
    modules: list[ModuleInfo] = []
    seen: set[Path] = set()
    for path in [*files, *(Path(p) for p in sources)]:
        key = real_path(path)
        if key in seen:
            continue
        seen.add(key)
        modules.append(ModuleInfo(path, module_name(path), display_path(path), text=sources.get(key)))
    result.files_checked = len(modules)
    project = Project(modules)

    enabled = selected_codes(settings.select, settings.extend_select, settings.ignore)
    engine = Engine(project, settings, [rule for rule in ALL_RULES if rule.code in enabled])
    engine.always_parse = {id(m) for m in modules if real_path(m.path) in explicit}
    raw = engine.run()
    result.errors.extend(engine.internal_errors)
    for module in modules:
        if module.read_error:
            result.errors.append(module.read_error)

    by_file: dict[str, list[Finding]] = {}
    for finding in raw:
        by_file.setdefault(finding.filename, []).append(finding)
    findings: list[Finding] = []
    for module in modules:
        file_findings = by_file.pop(module.display_path, [])
        if module.read_error:
            continue
        if file_findings or _may_hold_suppressions(project, module):
            module.load()
            file_findings = apply_suppressions(module, file_findings, BY_CODE, enabled, UnusedSuppression.code, _unused_message)
        ignored = [codes for glob, codes in settings.per_file_ignores if matches_per_file_glob(module.display_path, module.path, glob, settings.root)]
        for finding in file_findings:
            if any(finding.code.startswith(code) or code == "ALL" for codes in ignored for code in codes):
                continue
            findings.append(finding)
    for finding in findings:
        _attach_related(finding)
    findings.sort(key=Finding.sort_key)
    return result if not findings else CheckResult(findings, result.errors, result.files_checked)


def _may_hold_suppressions(project: Project, module: ModuleInfo) -> bool:
    data = project.raw_bytes(module)
    return b"TRC" in data or b"trace-lint:" in data


def _attach_related(finding: Finding) -> None:
    """The JSON `related` list: every chain back to its capture site, outermost first."""
    related = []
    for chain in finding.chains:
        for step in chain:
            if step not in related:
                related.append(step)
    finding.related = related
