"""The result cache: a run's findings, keyed by everything that can change them.

A finding in one file can depend on any other file (call chains cross modules), so the key
covers the content hash of every checked file with its path and module name, the files named
on the command line, the settings (`Settings.cache_key()`, the config root) and the tool
version. A warm run then only discovers, reads and hashes files. Entries are JSON written to a
temporary file and moved into place with `os.replace`, so concurrent runs never see half an
entry; an entry that does not parse, or was written by another version or for another key, is
ignored and rewritten. Nothing here imports libcst.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Iterable, Optional

from . import __version__
from .analyzer.findings import Edit, Finding, Fix, Location, Related

FORMAT = 1
DEFAULT_DIR = ".trace-lint-cache"
# Result entries kept per cache folder; older ones are removed (a key changes with every edit).
KEEP = 16


def cache_folder(settings) -> Path:
    """`cache-dir` from the config (relative to the config's folder), or `.trace-lint-cache` there."""
    folder = Path(settings.cache_dir) if settings.cache_dir else Path(DEFAULT_DIR)
    return folder if folder.is_absolute() else Path(settings.root) / folder


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


_TOOL_FINGERPRINT: list[str] = []


def tool_fingerprint() -> str:
    """The size and mtime of every source and data file of trace-lint itself: an edited
    checkout (same version number) must not reuse results of the code before the edit."""
    if not _TOOL_FINGERPRINT:
        package = Path(__file__).resolve().parent
        digest = hashlib.blake2b(digest_size=16)
        for path in sorted(package.rglob("*")):
            if path.suffix in (".py", ".toml"):
                stat = path.stat()
                digest.update(f"{path.relative_to(package)}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
        _TOOL_FINGERPRINT.append(digest.hexdigest())
    return _TOOL_FINGERPRINT[0]


def run_key(settings, files: Iterable[tuple[str, str, str, bool]]) -> str:
    """files: (display path, module name, content hash, named on the command line), in run order."""
    digest = hashlib.blake2b(digest_size=20)
    header = json.dumps([FORMAT, __version__, tool_fingerprint(), settings.cache_key(), str(settings.root), os.getcwd()])
    digest.update(header.encode())
    for display, name, content, explicit in files:
        digest.update(f"\0{display}\0{name}\0{content}\0{int(explicit)}".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _location(location: Location) -> list[int]:
    return [location.row, location.column]


def _related(step: Related) -> list:
    return [step.filename, _location(step.location), step.message]


def finding_to_data(finding: Finding) -> dict:
    return {
        "code": finding.code,
        "message": finding.message,
        "filename": finding.filename,
        "location": _location(finding.location),
        "end_location": _location(finding.end_location),
        "severity": finding.severity,
        "noqa_row": finding.noqa_row,
        "chains": [[_related(step) for step in chain] for chain in finding.chains],
        "related": [_related(step) for step in finding.related],
        "fix": None
        if finding.fix is None
        else {
            "applicability": finding.fix.applicability,
            "message": finding.fix.message,
            "edits": [[e.content, _location(e.location), _location(e.end_location)] for e in finding.fix.edits],
        },
    }


def _loc(value) -> Location:
    row, column = value
    if not isinstance(row, int) or not isinstance(column, int):
        raise ValueError("bad location")
    return Location(row, column)


def _step(value) -> Related:
    filename, location, message = value
    if not isinstance(filename, str) or not isinstance(message, str):
        raise ValueError("bad related step")
    return Related(filename, _loc(location), message)


def finding_from_data(data: dict) -> Finding:
    fix = data["fix"]
    noqa_row = data["noqa_row"]
    if noqa_row is not None and not isinstance(noqa_row, int):
        raise ValueError("bad noqa_row")
    for key in ("code", "message", "filename", "severity"):
        if not isinstance(data[key], str):
            raise ValueError(f"bad {key}")
    return Finding(
        code=data["code"],
        message=data["message"],
        filename=data["filename"],
        location=_loc(data["location"]),
        end_location=_loc(data["end_location"]),
        severity=data["severity"],
        noqa_row=noqa_row,
        chains=[[_step(step) for step in chain] for chain in data["chains"]],
        related=[_step(step) for step in data["related"]],
        fix=None
        if fix is None
        else Fix(fix["applicability"], fix["message"], tuple(Edit(c, _loc(a), _loc(b)) for c, a, b in fix["edits"])),
    )


class ResultCache:
    def __init__(self, folder: Path):
        self.folder = folder

    def _entry(self, key: str) -> Path:
        return self.folder / f"results-{key}.json"

    def load(self, key: str) -> Optional[tuple[list[Finding], int]]:
        """(findings, files checked), or None for a miss, a foreign or a damaged entry."""
        try:
            text = self._entry(key).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != __version__ or data.get("key") != key:
                return None
            files_checked = data["files_checked"]
            if not isinstance(files_checked, int):
                return None
            return [finding_from_data(item) for item in data["findings"]], files_checked
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    def store(self, key: str, findings: list[Finding], files_checked: int) -> None:
        """Write atomically; a cache that cannot be written is no error (the run stands)."""
        data = {
            "format": FORMAT,
            "version": __version__,
            "key": key,
            "files_checked": files_checked,
            "findings": [finding_to_data(f) for f in findings],
        }
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._mark_folder()
            handle, temporary = tempfile.mkstemp(prefix=".results-", suffix=".tmp", dir=self.folder)
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    json.dump(data, out, separators=(",", ":"))
                os.replace(temporary, self._entry(key))
            except BaseException:
                try:
                    os.unlink(temporary)
                except OSError:
                    pass
                raise
            self._prune()
        except OSError:
            pass

    def _mark_folder(self) -> None:
        # As ruff does: keep the folder out of git and out of backups.
        for name, content in ((".gitignore", "*\n"), ("CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n")):
            path = self.folder / name
            if not path.exists():
                try:
                    path.write_text(content, encoding="utf-8")
                except OSError:
                    pass

    def _prune(self) -> None:
        entries = []
        for path in self.folder.glob("results-*.json"):
            try:
                entries.append((path.stat().st_mtime, path))
            except OSError:
                continue
        entries.sort(reverse=True)
        for _, path in entries[KEEP:]:
            try:
                path.unlink()
            except OSError:
                pass
