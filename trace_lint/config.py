"""Settings from `[tool.trace-lint]` in pyproject.toml and from the command line.

Every key is checked: an unknown key or a bad value raises ConfigError naming the key,
never a silent default.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Optional, Sequence

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

CODE_SELECTOR = re.compile(r"^(ALL|TRC\d{0,3})$")
DOTTED_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")

DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".hg", ".mypy_cache", ".nox", ".pants.d",
    ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", "__pypackages__", "_build",
    "buck-out", "build", "dist", "node_modules", "site-packages", "venv",
    ".trace-lint-cache",
)


def real_path(path: Path) -> Path:
    """The canonical path; unlike Path.resolve it never raises on a symlink loop."""
    return Path(os.path.realpath(path))


class ConfigError(Exception):
    """A configuration problem; the message names the file and the key."""


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = ()  # empty: the default set of rules
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    captured_functions: tuple[str, ...] = ()
    captured_decorators: tuple[str, ...] = ()
    capture_helpers: tuple[str, ...] = ()
    # Context managers that capture like `torch.cuda.graph`, as dotted tails (`device_module.graph`).
    capture_contexts: tuple[str, ...] = ()
    cache_dir: Optional[str] = None
    # Where the configuration came from; globs and cache-dir are relative to it.
    root: Path = field(default_factory=Path.cwd)
    config_file: Optional[Path] = None

    def cache_key(self) -> str:
        """Everything that can change a finding, for the result cache."""
        return repr(
            (self.select, self.extend_select, self.ignore, self.per_file_ignores,
             self.captured_functions, self.captured_decorators, self.capture_helpers, self.capture_contexts)
        )


def _string_list(key: str, value: object, where: str, pattern: Optional[re.Pattern] = None) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings, got {value!r}")
    if pattern is not None:
        for item in value:
            if not pattern.match(item):
                raise ConfigError(f"{where}: `{key}` has an invalid entry {item!r}")
    return tuple(value)


def _parse_table(table: dict, where: str) -> dict:
    values: dict = {}
    for key, value in table.items():
        if key in ("select", "extend-select", "ignore"):
            values[key.replace("-", "_")] = _string_list(key, value, where, CODE_SELECTOR)
        elif key == "exclude":
            values["exclude"] = _string_list(key, value, where)
        elif key in ("captured-functions", "captured-decorators", "capture-helpers", "capture-contexts"):
            values[key.replace("-", "_")] = _string_list(key, value, where, DOTTED_NAME)
        elif key == "per-file-ignores":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: `per-file-ignores` must be a table of glob = [codes], got {value!r}")
            values["per_file_ignores"] = tuple(
                (glob, _string_list(f"per-file-ignores.{glob}", codes, where, CODE_SELECTOR))
                for glob, codes in value.items()
            )
        elif key == "cache-dir":
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{where}: `cache-dir` must be a non-empty string, got {value!r}")
            values["cache_dir"] = value
        else:
            raise ConfigError(f"{where}: unknown key `{key}` in [tool.trace-lint]")
    return values


def read_config_file(path: Path) -> Settings:
    """Settings from a pyproject.toml ([tool.trace-lint]) or a trace-lint.toml (top level)."""
    where = str(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"{where}: cannot read: {error.strerror or error}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{where}: invalid TOML: {error}") from None
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        table = tool.get("trace-lint", {}) if isinstance(tool, dict) else {}
        if not isinstance(table, dict):
            raise ConfigError(f"{where}: [tool.trace-lint] must be a table")
    else:
        table = data
    return Settings(root=real_path(path.parent), config_file=real_path(path), **_parse_table(table, where))


def find_config_file(start: Path) -> Optional[Path]:
    """The nearest pyproject.toml with a [tool.trace-lint] table, searching upwards."""
    directory = real_path(start)
    if directory.is_file():
        directory = directory.parent
    for candidate_dir in (directory, *directory.parents):
        candidate = candidate_dir / "pyproject.toml"
        if candidate.is_file():
            try:
                text = candidate.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if "[tool.trace-lint" in text:
                return candidate
    return None


def load_settings(start: Path, config_file: Optional[Path] = None) -> Settings:
    path = config_file if config_file is not None else find_config_file(start)
    if path is None:
        return Settings(root=real_path(start) if start.is_dir() else real_path(start).parent)
    if config_file is not None and not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    return read_config_file(path)


def with_cli_overrides(
    settings: Settings,
    select: Optional[Sequence[str]] = None,
    extend_select: Optional[Sequence[str]] = None,
    ignore: Optional[Sequence[str]] = None,
) -> Settings:
    for option, values in (("--select", select), ("--extend-select", extend_select), ("--ignore", ignore)):
        for value in values or ():
            if not CODE_SELECTOR.match(value):
                raise ConfigError(f"{option}: invalid rule selector {value!r} (expected ALL or a TRC code prefix)")
    changes: dict = {}
    if select:
        changes["select"] = tuple(select)
        changes["extend_select"] = ()
    if extend_select:
        changes["extend_select"] = settings.extend_select + tuple(extend_select)
    if ignore:
        changes["ignore"] = settings.ignore + tuple(ignore)
    return replace(settings, **changes)


def split_codes(values: Iterable[str]) -> list[str]:
    """Accept `--select TRC1,TRC2` as well as repeated options."""
    out: list[str] = []
    for value in values:
        out.extend(part.strip() for part in value.split(",") if part.strip())
    return out
