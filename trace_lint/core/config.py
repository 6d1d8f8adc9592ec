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

from . import registry

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

CODE_SELECTOR = re.compile(r"^(ALL|TRC\d{0,3})$")
# Every rule code and the opt-in ones (only their full code or `ALL` enables them), from the
# one registry: selectors are checked without importing the rules (and libcst).
RULE_CODES = tuple(spec.code for spec in registry.RULES)
OPT_IN_CODES = tuple(spec.code for spec in registry.RULES if not spec.default_enabled)


def selected_rule_codes(select: Optional[Iterable[str]], extend_select: Iterable[str], ignore: Iterable[str]) -> set[str]:
    """ruff's semantics: `select` replaces the default set (None: not given; empty: no
    rules), `extend-select` adds, `ignore` removes. The more specific selector wins
    (`select TRC102` with `ignore TRC1` keeps TRC102; `ALL` is the least specific); between
    equally specific ones, `ignore` does. Opt-in rules are enabled only by their full code
    or `ALL`. Needs neither the rules nor libcst."""
    return codes_of_layers([(None if select is None else tuple(select), tuple(extend_select), tuple(ignore))])


Layer = tuple[Optional[tuple[str, ...]], tuple[str, ...], tuple[str, ...]]


def codes_of_layers(layers: Iterable[Layer]) -> set[str]:
    """The enabled codes after each (select, extend-select, ignore) layer in turn, as ruff
    applies a config, the configs it extends and the command line: a layer with `select`
    starts afresh; one without changes the set before it, its more specific selectors
    winning. A layer of only `ignore` with `select = []` carries its ignores to the next."""
    codes = {c for c in RULE_CODES if c not in OPT_IN_CODES}
    carried: tuple[str, ...] = ()
    for select, extend_select, ignore in layers:
        chosen = (*(select or ()), *extend_select)
        ignored = (*ignore, *carried)
        carried = ()
        updates: dict[str, bool] = {}
        for level in sorted({_specificity(s) for s in (*chosen, *ignored)}):
            for code in RULE_CODES:
                if any(_specificity(s) == level and _selects(code, s, True) for s in chosen):
                    updates[code] = True
                if any(_specificity(s) == level and _selects(code, s, False) for s in ignored):
                    updates[code] = False
        if select is not None:
            codes = {code for code, on in updates.items() if on}
            if not select and not extend_select and ignore:
                carried = ignore
        else:
            codes = {code for code in codes if updates.get(code, True)} | {code for code, on in updates.items() if on}
    return codes


def _specificity(selector: str) -> int:
    return -1 if selector == "ALL" else len(selector)


def _selects(code: str, selector: str, exact_for_opt_in: bool) -> bool:
    if selector == "ALL":
        return True
    if exact_for_opt_in and code in OPT_IN_CODES:
        return code == selector
    return code.startswith(selector)


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


def unknown_selector(selector: str) -> bool:
    """A well-formed selector that names no rule (`TRC999`, `TRC7`)."""
    return selector != "ALL" and not any(code.startswith(selector) for code in RULE_CODES)


def glob_problem(pattern: str) -> Optional[str]:
    """Why `pattern` is not a usable glob, or None. fnmatch would take anything (an unclosed
    `[` becomes a literal); these are the mistakes that silently match nothing."""
    if not pattern.strip():
        return "an empty pattern"
    index = 0
    while index < len(pattern):
        if pattern[index] == "[":
            end = index + 1
            if end < len(pattern) and pattern[end] in "!^":
                end += 1
            if end < len(pattern) and pattern[end] == "]":
                end += 1  # `[]...]`: a leading `]` is a member
            close = pattern.find("]", end)
            if close < 0:
                return "an unclosed `[`"
            index = close
        index += 1
    for part in pattern.replace("\\", "/").split("/"):
        if "**" in part and part != "**":
            return "`**` must be a whole path component (`a/**/b`)"
    return None


@dataclass(frozen=True)
class Settings:
    select: Optional[tuple[str, ...]] = None  # None: the default set; (): no rules at all
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    captured_functions: tuple[str, ...] = ()
    captured_decorators: tuple[str, ...] = ()
    capture_helpers: tuple[str, ...] = ()
    capture_contexts: tuple[str, ...] = ()
    # Source roots for resolving imports, absolute (config `src` is relative to its file).
    src: tuple[Path, ...] = ()
    cache_dir: Optional[str] = None
    # Call edges the runtime guard recorded: True reads `<cache-dir>/observed`, a string
    # names the folder, False ignores them (core/observed.py).
    observed: bool | str = True
    # Where the configuration came from; globs and cache-dir are relative to it.
    root: Path = field(default_factory=Path.cwd)
    config_file: Optional[Path] = None
    # Hierarchical configuration: configs further down the project (folder, settings) that
    # decide what is reported for the files under them, deepest first; the analysis runs
    # with this object's settings, the union of every selection (`checker.check`).
    nested: tuple[tuple[Path, "Settings"], ...] = ()
    # What this run reports where no nested config applies (None: these settings).
    reporting: Optional["Settings"] = None
    # Selection layers applied after select/extend-select/ignore: the command line's (and
    # an extending config's) where they give no `select` of their own (`enabled_codes`).
    selection_layers: tuple[Layer, ...] = ()

    def enabled_codes(self) -> set[str]:
        """The codes in force: this config's selection, then each later layer, as ruff."""
        return codes_of_layers([(self.select, self.extend_select, self.ignore), *self.selection_layers])

    def cache_key(self) -> str:
        """Everything that can change a finding, for the result cache."""
        return repr(
            (self.select, self.extend_select, self.ignore, self.selection_layers, self.per_file_ignores,
             self.captured_functions, self.captured_decorators, self.capture_helpers,
             self.capture_contexts, tuple(str(p) for p in self.src),
             tuple((str(folder), nested.report_key()) for folder, nested in self.nested),
             self.reporting.report_key() if self.reporting is not None else None)
        )

    def report_key(self) -> tuple:
        """What decides the findings a config reports (its selection, ignores, excludes)."""
        return (self.select, self.extend_select, self.ignore, self.selection_layers, self.per_file_ignores, self.exclude, self.extend_exclude, str(self.root))

    def for_file(self, path: Path) -> "Settings":
        """The settings that decide what is reported for `path` (a real path): the nearest
        nested config's, else this run's."""
        for folder, settings in self.nested:
            if folder in path.parents:
                return settings
        return self.reporting if self.reporting is not None else self


def _string_list(key: str, value: object, where: str, pattern: Optional[re.Pattern] = None) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings, got {value!r}")
    if pattern is not None:
        for item in value:
            if not pattern.match(item):
                raise ConfigError(f"{where}: `{key}` has an invalid entry {item!r}")
    return tuple(value)


def _codes(key: str, value: object, where: str) -> tuple[str, ...]:
    codes = _string_list(key, value, where, CODE_SELECTOR)
    for code in codes:
        if unknown_selector(code):
            raise ConfigError(f"{where}: `{key}` names an unknown rule code or prefix {code!r} (`trace-lint rule --all` lists them)")
    return codes


def _globs(key: str, value: object, where: str) -> tuple[str, ...]:
    globs = _string_list(key, value, where)
    for glob in globs:
        check_glob(key, glob, where)
    return globs


def check_glob(key: str, glob: str, where: str) -> None:
    problem = glob_problem(glob)
    if problem is not None:
        raise ConfigError(f"{where}: `{key}` has an invalid glob {glob!r}: {problem}")


def _parse_table(table: dict, where: str, base: Path) -> dict:
    values: dict = {}
    for key, value in table.items():
        if key in ("select", "extend-select", "ignore"):
            values[key.replace("-", "_")] = _codes(key, value, where)
        elif key in ("exclude", "extend-exclude"):
            values[key.replace("-", "_")] = _globs(key, value, where)
        elif key in ("captured-functions", "captured-decorators", "capture-helpers", "capture-contexts"):
            values[key.replace("-", "_")] = _string_list(key, value, where, DOTTED_NAME)
        elif key == "src":
            values["src"] = tuple(real_path(base / folder) for folder in _string_list(key, value, where))
        elif key == "per-file-ignores":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: `per-file-ignores` must be a table of glob = [codes], got {value!r}")
            for glob in value:
                check_glob("per-file-ignores", glob, where)
            values["per_file_ignores"] = tuple(
                (glob, _codes(f"per-file-ignores.{glob}", codes, where)) for glob, codes in value.items()
            )
        elif key == "extend":
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{where}: `extend` must be the path of another config file, got {value!r}")
            values["extend"] = value
        elif key == "observed":
            if not isinstance(value, (bool, str)) or value == "":
                raise ConfigError(f"{where}: `observed` must be true, false or a folder name, got {value!r}")
            values["observed"] = value
        elif key == "cache-dir":
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{where}: `cache-dir` must be a non-empty string, got {value!r}")
            values["cache_dir"] = value
        else:
            if Path(where).name == "pyproject.toml":
                table_name = " in [tool.trace-lint]"
            elif key == "tool":
                # `--config my-pyproject.toml`: only a file named pyproject.toml is read through
                # its [tool.trace-lint] table; any other holds its keys at the top level.
                table_name = " (only a file named pyproject.toml is read through [tool.trace-lint]; this one holds its keys at the top level)"
            else:
                table_name = ""
            raise ConfigError(f"{where}: unknown key `{key}`{table_name}")
    return values


def _read_table(path: Path) -> dict:
    """The `[tool.trace-lint]` table of a pyproject.toml (however it is spelled: a header,
    dotted keys) or a trace-lint.toml's top level."""
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
        return table
    return data


def read_config_file(path: Path, _extending: tuple[Path, ...] = ()) -> Settings:
    """Settings from a pyproject.toml ([tool.trace-lint]) or a trace-lint.toml (top level).
    `extend = "path"` reads that config first, as ruff does: this file's keys replace its
    keys, its `extend-select`, `extend-exclude` and (without a `select` here) `ignore` add up."""
    where = str(path)
    values = _parse_table(_read_table(path), where, path.parent)
    settings = Settings(root=real_path(path.parent), config_file=real_path(path))
    base_name = values.pop("extend", None)
    if base_name is not None:
        base_path = real_path(path.parent / os.path.expanduser(base_name))
        if base_path in (*_extending, real_path(path)):
            raise ConfigError(f"{where}: `extend` makes a cycle: {' -> '.join(str(p) for p in (*_extending, real_path(path), base_path))}")
        if not base_path.is_file():
            raise ConfigError(f"{where}: `extend` names {base_name!r}, which is not a file")
        base = read_config_file(base_path, (*_extending, real_path(path)))
        settings = _extended(base, values, settings)
        return settings
    return replace(settings, **values)


def _extended(base: Settings, values: dict, own: Settings) -> Settings:
    """This config over the one it extends: its keys replace the base's; its selection is a
    later layer (a `select` here starts afresh), its `extend-exclude` adds to the base's."""
    merged = {key: getattr(base, key) for key in (
        "select", "extend_select", "ignore", "selection_layers", "exclude", "extend_exclude", "per_file_ignores",
        "captured_functions", "captured_decorators", "capture_helpers", "capture_contexts", "src", "cache_dir", "observed")}
    selection = {key: values.pop(key) for key in ("select", "extend_select", "ignore") if key in values}
    if "select" in selection:
        merged.update(select=selection["select"], extend_select=selection.get("extend_select", ()),
                      ignore=selection.get("ignore", ()), selection_layers=())
    elif selection:
        merged["selection_layers"] = (*base.selection_layers, (None, selection.get("extend_select", ()), selection.get("ignore", ())))
    for key, value in values.items():
        merged[key] = merged[key] + value if key == "extend_exclude" else value
    return replace(own, **merged)


def has_config_table(path: Path) -> bool:
    """Whether a pyproject.toml configures trace-lint: a `tool.trace-lint` table in any TOML
    spelling. One that does not parse but names trace-lint counts, so that its error is
    reported rather than the file passed over."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    if "trace-lint" not in text:
        return False
    try:
        tool = tomllib.loads(text).get("tool")
    except tomllib.TOMLDecodeError:
        return True
    return isinstance(tool, dict) and "trace-lint" in tool


def config_in(folder: Path) -> Optional[Path]:
    """The config file of one folder: trace-lint.toml, else a configuring pyproject.toml."""
    own = folder / "trace-lint.toml"
    if own.is_file():
        return own
    candidate = folder / "pyproject.toml"
    if candidate.is_file() and has_config_table(candidate):
        return candidate
    return None


def find_config_file(start: Path) -> Optional[Path]:
    """The nearest trace-lint.toml, or pyproject.toml with a [tool.trace-lint] table,
    searching upwards (in one folder, trace-lint.toml wins, as ruff.toml does for ruff)."""
    directory = real_path(start)
    if directory.is_file():
        directory = directory.parent
    for candidate_dir in (directory, *directory.parents):
        found = config_in(candidate_dir)
        if found is not None:
            return found
    return None


def load_settings(start: Path, config_file: Optional[Path] = None, isolated: bool = False) -> Settings:
    """The settings for a run from `start`: `config_file`, else the nearest config; none at
    all with `isolated` (ruff's `--isolated`)."""
    path = None if isolated else config_file if config_file is not None else find_config_file(start)
    if path is None:
        return Settings(root=real_path(start) if start.is_dir() else real_path(start).parent)
    if config_file is not None and not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    return read_config_file(path)


def inline_config(value: str) -> dict:
    """`--config 'select = ["TRC102"]'`: a TOML `KEY = VALUE` pair, checked as a key of
    `[tool.trace-lint]` is."""
    where = f"--config {value!r}"
    try:
        table = tomllib.loads(value)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{where}: not a config file and not a TOML `KEY = VALUE` pair ({error})") from None
    if not table:
        raise ConfigError(f"{where}: not a config file and not a TOML `KEY = VALUE` pair")
    values = _parse_table(table, where, Path.cwd())
    if "extend" in values:
        raise ConfigError(f"{where}: `extend` names a file; give it in a config file")
    return values


def with_cli_overrides(
    settings: Settings,
    select: Optional[Sequence[str]] = None,
    extend_select: Optional[Sequence[str]] = None,
    ignore: Optional[Sequence[str]] = None,
    exclude: Optional[Sequence[str]] = None,
    extend_exclude: Optional[Sequence[str]] = None,
    per_file_ignores: Optional[Sequence[str]] = None,
) -> Settings:
    """Command-line options over the configuration, as ruff does: `--select`, `--exclude`
    and `--per-file-ignores` replace the configured value; `--extend-exclude` adds to it;
    `--extend-select` and `--ignore` without `--select` are a selection layer over the
    configured one (`Settings.enabled_codes`)."""
    for option, values in (("--select", select), ("--extend-select", extend_select), ("--ignore", ignore)):
        for value in values or ():
            if not CODE_SELECTOR.match(value):
                raise ConfigError(f"{option}: invalid rule selector {value!r} (expected ALL or a TRC code prefix)")
            if unknown_selector(value):
                raise ConfigError(f"{option}: unknown rule code or prefix {value!r} (`trace-lint rule --all` lists them)")
    for option, values in (("--exclude", exclude), ("--extend-exclude", extend_exclude)):
        for value in values or ():
            problem = glob_problem(value)
            if problem is not None:
                raise ConfigError(f"{option}: invalid glob {value!r}: {problem}")
    changes: dict = {}
    if select:
        # A selection of its own starts afresh (ruff): the config's layers no longer count.
        changes.update(select=tuple(select), extend_select=tuple(extend_select or ()), ignore=tuple(ignore or ()), selection_layers=())
    elif extend_select or ignore:
        # A later layer: its more specific selectors win over the config's.
        changes["selection_layers"] = (*settings.selection_layers, (None, tuple(extend_select or ()), tuple(ignore or ())))
    if exclude:
        changes["exclude"] = tuple(exclude)
    if extend_exclude:
        changes["extend_exclude"] = settings.extend_exclude + tuple(extend_exclude)
    if per_file_ignores:
        changes["per_file_ignores"] = tuple(parse_per_file_ignore(value) for value in per_file_ignores)
    return replace(settings, **changes)


def parse_per_file_ignore(value: str) -> tuple[str, tuple[str, ...]]:
    """`--per-file-ignores 'tests/*.py:TRC101,TRC2'` -> ('tests/*.py', ('TRC101', 'TRC2'))."""
    glob, colon, codes_text = value.rpartition(":")
    if not colon or not glob:
        raise ConfigError(f"--per-file-ignores: expected GLOB:CODES (such as 'tests/*.py:TRC101'), got {value!r}")
    problem = glob_problem(glob)
    if problem is not None:
        raise ConfigError(f"--per-file-ignores: invalid glob {glob!r}: {problem}")
    codes = tuple(part.strip() for part in codes_text.split(",") if part.strip())
    if not codes:
        raise ConfigError(f"--per-file-ignores: no rule codes after the glob in {value!r}")
    for code in codes:
        if not CODE_SELECTOR.match(code) or unknown_selector(code):
            raise ConfigError(f"--per-file-ignores: unknown rule code or prefix {code!r} in {value!r}")
    return glob, codes


def split_codes(values: Iterable[str]) -> list[str]:
    """Accept `--select TRC1,TRC2` as well as repeated options."""
    out: list[str] = []
    for value in values:
        out.extend(part.strip() for part in value.split(",") if part.strip())
    return out
