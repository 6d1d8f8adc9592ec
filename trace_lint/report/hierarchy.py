"""Hierarchical configuration (SPEC "Command line"): a config file further down the project
decides what is reported for the files under it (`select`, `ignore`, `per-file-ignores`,
`exclude`), as ruff's nearest-config rule does. The analysis still sees the whole project:
it runs every rule that any of the configs selects, and reporting then keeps, per file, what
its own config selects (`checker._reported`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterable, Optional

from ..core.config import ConfigError, Settings, config_in, read_config_file, real_path


class NearestConfigs:
    """The nearest config file of each folder, looked up once per folder."""

    def __init__(self) -> None:
        self._of: dict[Path, Optional[Path]] = {}

    def of(self, folder: Path) -> Optional[Path]:
        walked = []
        found = None
        current = folder
        while True:
            if current in self._of:
                found = self._of[current]
                break
            walked.append(current)
            own = config_in(current)
            if own is not None:
                found = real_path(own)
                break
            if (current / ".git").exists() or current.parent == current:
                break  # a configuration outside the repository does not reach into it
            current = current.parent
        for folder_walked in walked:
            self._of[folder_walked] = found
        return found


def with_nested_configs(
    settings: Settings,
    files: Iterable[Path],
    configure: Callable[[Settings], Settings],
    errors: list[str],
) -> Settings:
    """`settings` for an analysis of `files` (real paths) whose reporting follows each file's
    nearest config: `configure` turns a config file's settings into the run's (the command
    line's options over it). Unchanged when every file's nearest config is the run's own."""
    nearest = NearestConfigs()
    configs: set[Path] = set()
    for path in files:
        config = nearest.of(path.parent)
        if config is not None and config != settings.config_file:
            configs.add(config)
    if not configs:
        return settings
    nested: list[tuple[Path, Settings]] = []
    for config in sorted(configs):
        try:
            nested.append((config.parent, configure(read_config_file(config))))
        except ConfigError as error:
            errors.append(str(error))
    if not nested:
        return settings
    enabled: set[str] = set()
    for each in (settings, *(s for _, s in nested)):
        enabled |= each.enabled_codes()
    # Deepest first, so that `Settings.for_file` finds the nearest; by name within a depth, so
    # that the result cache's key is the same from run to run.
    nested.sort(key=lambda item: (-len(item[0].parts), str(item[0])))
    return replace(
        settings,
        select=tuple(sorted(enabled)),
        extend_select=(),
        ignore=(),
        selection_layers=(),
        nested=tuple(nested),
        reporting=settings,
    )


def excluded_by_own_config(path: Path, settings: Settings) -> bool:
    """Whether a nested config's `exclude` / `extend-exclude` (globs relative to its folder,
    or a name) matches `path` (real) or a folder between them."""
    from ..frontend.discovery import matches_exclude

    patterns = (*settings.exclude, *settings.extend_exclude)
    if not patterns:
        return False
    try:
        relative = path.relative_to(settings.root)
    except ValueError:
        return False
    parts = relative.parts
    return any(matches_exclude(patterns, "/".join(parts[: index + 1]), parts[index]) for index in range(len(parts)))
