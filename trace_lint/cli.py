"""The `trace-lint` command line (typer)."""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path
from typing import List, Optional

import typer

from . import __version__
from .core.config import ConfigError, inline_config, load_settings, split_codes, with_cli_overrides

app = typer.Typer(
    name="trace-lint",
    help="Find code that is unsafe inside TT-NN trace captures and CUDA graphs.",
    no_args_is_help=True,
    # Shell completion: `trace-lint --install-completion` / `--show-completion SHELL`.
    add_completion=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    # Plain click help and errors: no boxes, no `<bool>` placeholders.
    rich_markup_mode=None,
)

COLOR_CHOICES = ("auto", "always", "never")

EXIT_FINDINGS = 1
EXIT_ERROR = 2


def _version(value: bool) -> None:
    if value:
        typer.echo(f"trace-lint {__version__}")
        raise typer.Exit(0)


@app.callback()
def main_options(
    version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True, help="Show the version and exit."),
) -> None:
    """Find code that is unsafe inside TT-NN trace captures and CUDA graphs."""


def _fail(message: str) -> "typer.Exit":
    typer.echo(f"trace-lint: error: {message}", err=True)
    return typer.Exit(EXIT_ERROR)


@app.command()
def check(
    ctx: typer.Context,
    # Described in the docstring: typer would print a `<list[str]>` type beside its help.
    paths: List[str] = typer.Argument(None, metavar="[PATH]...", hidden=True, show_default=False),
    select: List[str] = typer.Option([], "--select", metavar="CODES", help="Rule codes or prefixes to enable (replaces the default set); ALL for every rule.", show_default=False),
    extend_select: List[str] = typer.Option([], "--extend-select", metavar="CODES", help="Rule codes or prefixes to enable on top of the selection.", show_default=False),
    ignore: List[str] = typer.Option([], "--ignore", metavar="CODES", help="Rule codes or prefixes to disable.", show_default=False),
    exclude: List[str] = typer.Option([], "--exclude", metavar="GLOB", help="Files and folders to skip (replaces the configured `exclude`).", show_default=False),
    extend_exclude: List[str] = typer.Option([], "--extend-exclude", metavar="GLOB", help="Files and folders to skip on top of `exclude`.", show_default=False),
    per_file_ignores: List[str] = typer.Option([], "--per-file-ignores", metavar="GLOB:CODES", help="Rules to ignore in matching files, such as 'tests/*.py:TRC101' (replaces the configured table).", show_default=False),
    output_format: str = typer.Option("full", "--output-format", metavar="FORMAT", help="full, concise, grouped, json, json-lines, sarif, github, gitlab, junit, pylint or rdjson."),
    output_file: Optional[Path] = typer.Option(None, "--output-file", "-o", metavar="FILE", help="Write the output to this file instead of stdout.", show_default=False),
    color: str = typer.Option("auto", "--color", metavar="WHEN", help="Color the text formats: auto (on a terminal), always or never."),
    statistics: bool = typer.Option(False, "--statistics", help="Print a count of findings per rule instead of the findings (as JSON with --output-format json or json-lines)."),
    exit_zero: bool = typer.Option(False, "--exit-zero", help="Exit 0 even when there are findings."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the result cache."),
    no_observed: bool = typer.Option(False, "--no-observed", help="Ignore the call edges the runtime guard recorded in tests (config `observed`)."),
    config: List[str] = typer.Option([], "--config", metavar="FILE|KEY=VALUE", help="Use this pyproject.toml or trace-lint.toml (no per-folder configs), or override one setting: --config 'select = [\"TRC1\"]' (repeatable).", show_default=False),
    isolated: bool = typer.Option(False, "--isolated", help="Ignore every config file."),
    force_exclude: bool = typer.Option(False, "--force-exclude", help="Apply excludes to paths named on the command line too."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print findings only, no summary line."),
    show_settings: bool = typer.Option(False, "--show-settings", help="Print the settings in force and exit."),
    show_files: bool = typer.Option(False, "--show-files", help="Print the files that would be checked and exit."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, metavar="N", help="Processes for the check (default: as many idle CPUs as the work can use; 1: serial).", show_default=False),
    stdin_filename: Optional[str] = typer.Option(None, "--stdin-filename", metavar="NAME", help="The file name to report for source read from stdin.", show_default=False),
    # Fixes (trace_lint.report.fixes).
    fix: bool = typer.Option(False, "--fix", help="Apply safe fixes, then report what remains."),
    unsafe_fixes: bool = typer.Option(False, "--unsafe-fixes", help="Count unsafe fixes as available: --fix applies them, output marks them [*]."),
    diff: bool = typer.Option(False, "--diff", help="Print the fixes as a unified diff and write nothing (exit 1 if there is any)."),
    add_noqa: bool = typer.Option(False, "--add-noqa", help="Add a `# noqa: CODE` comment at every finding and report how many."),
    exit_non_zero_on_fix: bool = typer.Option(False, "--exit-non-zero-on-fix", help="With --fix: exit 1 if any file was fixed, even when no finding remains."),
    watch: bool = typer.Option(False, "--watch", "-w", help="Check again whenever a Python file or config changes (Ctrl-C stops)."),
) -> None:
    """Check files and folders for code that is unsafe inside captures.

    PATH: files or folders to check (default: .); `-` reads source from stdin."""
    from .driver.checker import check as run_check
    from .output import OutputContext, formatter, formatters

    conflict = _conflicting_flags(
        {
            "--add-noqa": add_noqa, "--diff": diff, "--fix": fix, "--statistics": statistics,
            "--show-files": show_files, "--show-settings": show_settings, "--watch": watch,
            "--stdin-filename": stdin_filename is not None or "-" in (paths or ()),
            "--exit-zero": exit_zero, "--exit-non-zero-on-fix": exit_non_zero_on_fix,
            "--isolated": isolated, "--config FILE": any(not _is_inline(value) for value in config),
        }
    )
    if conflict is not None:
        raise _fail(conflict)
    if watch:
        _watch(ctx, [p for p in paths or ["."] if p != "-"])
        raise typer.Exit(0)
    if stdin_filename is not None and any(p != "-" for p in paths or ()):
        # As ruff: --stdin-filename means the source comes from stdin.
        for ignored in (p for p in paths if p != "-"):
            typer.echo(f"trace-lint: warning: ignoring {ignored} in favour of standard input (--stdin-filename)", err=True)
    if stdin_filename is not None:
        paths = ["-"]
    raw_paths = paths or ["."]
    chosen_formatter = formatter(output_format)
    if chosen_formatter is None:
        known = ", ".join(formatters())
        raise _fail(f"--output-format: unknown format {output_format!r} (expected one of: {known})")
    if statistics and output_format not in STATISTICS_FORMATS:
        raise _fail(f"--statistics: prints text, json or json-lines; it has no {output_format!r} form (use --output-format full, json or json-lines)")
    if color not in COLOR_CHOICES:
        raise _fail(f"--color: expected one of {', '.join(COLOR_CHOICES)}, got {color!r}")
    if raw_paths.count("-") > 1:
        raise _fail("`-` (standard input) can be named only once")
    sources: dict[Path, str] = {}
    targets: list[Path] = []
    for raw in raw_paths:
        if raw == "-":
            name = Path(stdin_filename or "stdin.py")
            data = sys.stdin.buffer.read() if sys.stdin is not None else b""
            from .frontend.source import decode

            decoded = decode(data)
            sources[name] = decoded.text if decoded.error is None else data.decode("utf-8", "replace")
            targets.append(name)
        else:
            targets.append(Path(raw))
    try:
        inline = [inline_config(value) for value in config if _is_inline(value)]
        config_files = [Path(value) for value in config if not _is_inline(value)]
        if len(config_files) > 1:
            raise ConfigError(f"--config: one config file at most, got {', '.join(map(str, config_files))}")
        config_file = config_files[0] if config_files else None

        def configure(file_settings):
            """The command line over a config file's settings: inline `--config` pairs, then flags."""
            from dataclasses import replace as with_values

            for values in inline:
                file_settings = with_values(file_settings, **values)
            file_settings = with_cli_overrides(
                file_settings,
                split_codes(select),
                split_codes(extend_select),
                split_codes(ignore),
                exclude=exclude,
                extend_exclude=extend_exclude,
                per_file_ignores=per_file_ignores,
            )
            return with_values(file_settings, observed=False) if no_observed else file_settings

        settings = configure(load_settings(_settings_start(targets), config_file, isolated))
    except ConfigError as error:
        raise _fail(str(error))
    # Per-folder configs unless one config (or none) was asked for, as ruff's --config and --isolated.
    hierarchical = config_file is None and not isolated
    if show_settings:
        from .core.observed import summary as observed_summary

        shown = _settings_of_first(targets, settings, hierarchical, configure)
        _write_output(_settings_text(shown) + f"# {observed_summary(shown)}\n", output_file)
        raise typer.Exit(0)
    if force_exclude and sources and _stdin_excluded(next(iter(sources)), settings, hierarchical and stdin_filename is not None, configure):
        # An excluded --stdin-filename: nothing is reported; --fix gives the source back.
        if fix:
            sys.stdout.write(next(iter(sources.values())))
        raise typer.Exit(0)
    if show_files:
        from .frontend.discovery import discover, display_path

        found = discover([t for t in targets if t not in sources], settings, force_exclude=force_exclude)
        files = found.files
        if hierarchical:
            from .core.config import real_path
            from .report.hierarchy import excluded_by_own_config, with_nested_configs

            named = {real_path(t) for t in targets if t.is_file()}
            real = {p: found.real.get(p) or real_path(p) for p in files}
            nested = with_nested_configs(settings, list(real.values()), configure, found.errors)
            # A folder's own config's excludes, as a check applies them.
            files = [p for p in files if (real[p] in named and not force_exclude) or not excluded_by_own_config(real[p], nested.for_file(real[p]))]
        for message in found.errors:
            typer.echo(f"trace-lint: {message}", err=True)
        from .output import printable_name

        listed = [printable_name(display_path(p)) for p in files] + [printable_name(str(p)) for p in sources]
        _write_output("".join(f"{name}\n" for name in sorted(listed)), output_file)
        raise typer.Exit(EXIT_ERROR if found.errors else 0)
    try:
        from .core.files import cache_folder
        from .driver.cache import ResultCache
        from .driver.parallel import AUTO
        from .driver.progress import Progress

        cache = None if no_cache else ResultCache(cache_folder(settings))
        inputs = None
        if cache is not None:
            from .driver.stat_index import StatIndex

            inputs = StatIndex(cache, settings)

        def run(fixed_texts: dict[Path, str]):
            checked = run_check(
                targets,
                settings,
                force_exclude=force_exclude,
                sources={**sources, **fixed_texts},
                jobs=jobs if jobs is not None else AUTO,
                cache=cache,
                progress=Progress.for_terminal(quiet or output_format not in ("full", "concise")),
                # Stdin without a file name belongs to no project: it is checked on its own.
                whole_program=not (sources and stdin_filename is None),
                configure=configure if hierarchical else None,
                inputs=inputs,
            )
            if inputs is not None:
                inputs.save()  # what this run read, for the next
            return checked

        fixed = 0
        done_status: Optional[int] = None  # set when a fixing mode has answered already
        if add_noqa:
            done_status = _add_noqa(run({}), sources)
        elif fix or diff:
            from .report.fixes import fix_until_stable, read_exact

            def read_stored(filename: str) -> Optional[str]:
                stdin_text = next((text for path, text in sources.items() if _same_file(path, filename)), None)
                return stdin_text if stdin_text is not None else read_exact(filename)

            outcome = fix_until_stable(run, read_stored, unsafe_fixes)
            result, fixed = outcome.result, outcome.fixed
            if diff or (fix and sources):
                done_status = _show_fixes(outcome, diff, sources)
                if fix and sources and not diff:
                    _report_left_on_stdin(outcome, unsafe_fixes)
                    if exit_non_zero_on_fix and outcome.fixed and done_status == 0:
                        done_status = EXIT_FINDINGS
            else:
                from .report.fixes import write_exact

                for filename, (_before, after) in outcome.changed.items():
                    write_exact(filename, after)
        else:
            result = run({})
    except Exception as error:  # an internal error must still exit 2 with a message
        import traceback

        traceback.print_exc(file=sys.stderr)
        raise _fail(f"internal error: {type(error).__name__}: {error}")
    if done_status is not None:
        raise typer.Exit(done_status)
    for message in result.errors:
        typer.echo(f"trace-lint: {message}", err=True)
    if result.files_checked == 0 and not result.errors:
        typer.echo("trace-lint: warning: No Python files found under the given path(s)", err=True)

    def read_source(filename: str) -> Optional[str]:
        for path, text in sources.items():
            if str(path) == filename:
                return text
        try:
            return Path(filename).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    if statistics:
        from .output.text import statistics as render_statistics, statistics_rows

        if output_format == "json":
            rendered = json.dumps(statistics_rows(result.findings), indent=2) + "\n"
        elif output_format == "json-lines":
            rendered = "".join(json.dumps(row) + "\n" for row in statistics_rows(result.findings))
        else:
            rendered = render_statistics(result.findings)
    else:
        context = OutputContext(
            read_source=read_source,
            files_checked=result.files_checked,
            color=_use_color(color, output_file),
            errors=len(result.errors),
            summary=not quiet,
            unsafe_fixes=unsafe_fixes,
        )
        rendered = chosen_formatter(result.findings, context)
        if fixed and output_format in ("full", "concise"):
            from .output.text import summary

            # As ruff: the count covers what was fixed.
            closing = summary(result.findings, context)
            total = len(result.findings) + fixed
            closing_fixed = f"Found {total} error{'s' if total != 1 else ''} ({fixed} fixed, {len(result.findings)} remaining)."
            if closing and rendered.endswith(closing + "\n"):
                rendered = rendered[: len(rendered) - len(closing) - 1] + "\n".join([closing_fixed, *closing.split("\n")[1:]]) + "\n"
    _write_output(rendered, output_file)
    if result.errors:
        raise typer.Exit(EXIT_ERROR)
    if result.findings and not exit_zero:
        raise typer.Exit(EXIT_FINDINGS)
    if exit_non_zero_on_fix and fixed:
        raise typer.Exit(EXIT_FINDINGS)
    raise typer.Exit(0)


STATISTICS_FORMATS = ("full", "concise", "json", "json-lines")

# Flag pairs that ruff refuses (one of them would be silently dropped, or --diff would write).
CONFLICTS = (
    ("--add-noqa", ("--diff", "--fix", "--statistics", "--show-files", "--show-settings", "--watch", "--stdin-filename")),
    ("--diff", ("--statistics",)),
    ("--statistics", ("--watch",)),
    ("--watch", ("--stdin-filename",)),
    ("--show-files", ("--show-settings", "--statistics", "--stdin-filename", "--watch")),
    ("--show-settings", ("--statistics", "--stdin-filename", "--watch")),
    ("--exit-zero", ("--exit-non-zero-on-fix",)),
    ("--isolated", ("--config FILE",)),
)


def _conflicting_flags(given: dict[str, bool]) -> Optional[str]:
    for flag, others in CONFLICTS:
        if given.get(flag):
            for other in others:
                if given.get(other):
                    return f"the argument '{flag}' cannot be used with '{other}'"
    return None


def _is_inline(value: str) -> bool:
    """`--config` is a file unless it names none and reads as `KEY = VALUE` (as ruff decides)."""
    return "=" in value and not Path(value).is_file()


def _settings_start(targets: list[Path]) -> Path:
    """Where the run's own config is looked up, whatever the order of the named paths: the
    project that holds them all (its root's config), else the working folder."""
    from .driver.checker import project_root
    from .core.config import config_in

    # One lookup per folder: pre-commit can name thousands of files.
    anchors = list(dict.fromkeys(t if t.is_dir() else t.parent for t in targets))
    anchors = [a for a in anchors if a.exists()]
    roots = {project_root(a) for a in anchors}
    if len(roots) == 1:
        root = roots.pop()
        return root if config_in(root) is not None else anchors[0]
    return Path.cwd()


def _settings_of_first(targets: list[Path], settings, hierarchical: bool, configure):
    """`--show-settings`: the settings that decide what is reported for the first path named
    (its own folder's config where there is one, as ruff shows a file's)."""
    from .core.config import read_config_file, real_path
    from .report.hierarchy import NearestConfigs

    if not hierarchical or not targets or not targets[0].exists():
        return settings
    real = real_path(targets[0])
    config = NearestConfigs().of(real if real.is_dir() else real.parent)
    if config is None or config == settings.config_file:
        return settings
    try:
        return configure(read_config_file(config))
    except ConfigError as error:
        raise _fail(str(error))


def _stdin_excluded(name: Path, settings, hierarchical: bool, configure) -> bool:
    """Whether `--force-exclude` drops the stdin file `name`: its config's excludes (the
    defaults included) match it, as for a file on disk."""
    from .core.config import DEFAULT_EXCLUDE, read_config_file, real_path
    from .report.hierarchy import NearestConfigs, excluded_by_own_config

    real = real_path(name)
    own = settings
    if hierarchical:
        config = NearestConfigs().of(real.parent)
        if config is not None and config != settings.config_file:
            try:
                own = configure(read_config_file(config))
            except ConfigError as error:
                raise _fail(str(error))
    from dataclasses import replace

    return excluded_by_own_config(real, replace(own, exclude=(*DEFAULT_EXCLUDE, *own.exclude)))


def _report_left_on_stdin(outcome, unsafe_fixes: bool) -> None:
    """`--fix` on stdin: stdout carries the fixed source, so what is left is told on stderr."""
    left = outcome.result.findings
    if not left and not outcome.fixed:
        return
    for f in left:
        typer.echo(f"{f.filename}:{f.location.row}:{f.location.column}: {f.code} {f.message}", err=True)
    total = len(left) + outcome.fixed
    typer.echo(f"Found {total} error{'s' if total != 1 else ''} ({outcome.fixed} fixed, {len(left)} remaining).", err=True)


def _watch(ctx, paths: list[str]) -> None:
    """`--watch`: a check now, and again after every change to a Python file or a config
    (watchfiles), until Ctrl-C."""
    import watchfiles

    def check_once() -> None:
        try:
            check(**{**ctx.params, "watch": False}, ctx=ctx)
        except (typer.Exit, SystemExit):
            pass  # each run's status; the watch goes on

    def relevant(_change, path: str) -> bool:
        name = os.path.basename(path)
        if ".trace-lint-cache" in Path(path).parts:
            return False
        return name.endswith((".py", ".pyi")) or name in ("pyproject.toml", "trace-lint.toml")

    typer.echo("Starting trace-lint in watch mode...", err=True)
    # The watcher starts before the first check, so a change made while that check runs is
    # seen (it keeps what it saw until asked); it wakes every WATCH_WAKE_MS with no change.
    first = True
    for changes in watchfiles.watch(*paths, watch_filter=relevant, raise_interrupt=False, yield_on_timeout=True, rust_timeout=WATCH_WAKE_MS):
        if first:
            first = False
            check_once()
        elif changes:
            typer.echo("File change detected...", err=True)
            check_once()


WATCH_WAKE_MS = 200


def _use_color(when: str, output_file: Optional[Path]) -> bool:
    if when != "auto":
        return when == "always"
    if output_file is not None or os.environ.get("NO_COLOR") or sys.stdout is None:
        return False
    try:
        return sys.stdout.isatty()
    except (OSError, ValueError):
        return False


def _settings_text(settings) -> str:
    """`--show-settings`: every setting in force, by its configuration key."""
    from dataclasses import fields

    from .core.registry import BY_CODE

    enabled = sorted(settings.enabled_codes())
    lines = ["# the rules in force (select, extend-select and ignore resolved)"]
    lines.append("rules = [" + "".join(f"\n    {code!r},  # {BY_CODE[code].name}" for code in enabled) + ("\n]" if enabled else "]"))
    for item in fields(settings):
        if item.name in ("nested", "reporting"):
            continue
        value = getattr(settings, item.name)
        if isinstance(value, tuple):
            value = [str(v) if isinstance(v, Path) else v for v in value]
        elif isinstance(value, Path):
            value = str(value)
        lines.append(f"{item.name.replace('_', '-')} = {value!r}")
    return "\n".join(lines) + "\n"


def _write_output(text: str, output_file: Optional[Path]) -> None:
    """Write the report; a file or stream that cannot take it is an error (exit 2), except
    a reader that went away (`| head`), which ends the output quietly as other tools do."""
    if output_file is not None:
        try:
            output_file.parent.mkdir(parents=True, exist_ok=True)
            output_file.write_text(text, encoding="utf-8")
        except OSError as error:
            raise _fail(f"--output-file: cannot write {output_file}: {error.strerror or error}")
        return
    if sys.stdout is None:
        raise _fail("cannot write the output: standard output is closed")
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
    except (OSError, ValueError) as error:
        _silence_stdout()
        reason = getattr(error, "strerror", None) or str(error)
        raise _fail(f"cannot write the output to standard output: {reason}")


def _silence_stdout() -> None:
    # What is still buffered can never be written; the exit must not try again.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _same_file(path: Path, filename: str) -> bool:
    """Whether a finding's file name (relative to the working folder) names `path`."""
    return os.path.realpath(path) == os.path.realpath(filename)


def _add_noqa(result, sources) -> int:
    """`check --add-noqa`: a suppression comment at every finding; the exit status."""
    from .report.fixes import add_noqa, read_exact, write_exact

    for message in result.errors:
        typer.echo(f"trace-lint: {message}", err=True)
    if sources:
        typer.echo("trace-lint: error: --add-noqa edits files and cannot be used with stdin", err=True)
        return EXIT_ERROR
    by_file: dict[str, list] = {}
    for finding in result.findings:
        by_file.setdefault(finding.filename, []).append(finding)
    added = 0
    for filename, findings in by_file.items():
        before = read_exact(filename)
        if before is None:
            typer.echo(f"trace-lint: {filename}: not UTF-8, no suppressions added", err=True)
            continue
        after, count = add_noqa(before, findings)
        if count:
            write_exact(filename, after)
            added += count
    typer.echo(f"Added {added} noqa directive{'s' if added != 1 else ''}.", err=True)
    return EXIT_ERROR if result.errors else 0


def _show_fixes(outcome, as_diff: bool, stdin_sources: dict) -> int:
    """`--diff` (a unified diff of every change, nothing written) and `--fix` on stdin (the
    fixed source on stdout, as ruff does); the exit status."""
    from .report.fixes import unified_diff

    for message in outcome.result.errors:
        typer.echo(f"trace-lint: {message}", err=True)
    if as_diff:
        for filename, (before, after) in sorted(outcome.changed.items()):
            sys.stdout.write(unified_diff(filename, before, after))
        noun = "error" if outcome.fixed == 1 else "errors"
        typer.echo(f"Would fix {outcome.fixed} {noun}." if outcome.fixed else "No errors would be fixed.", err=True)
        sys.stdout.flush()
        return EXIT_ERROR if outcome.result.errors else (EXIT_FINDINGS if outcome.changed else 0)
    for path, text in stdin_sources.items():
        changed = next((after for name, (_before, after) in outcome.changed.items() if _same_file(path, name)), text)
        sys.stdout.write(changed)
    sys.stdout.flush()
    if outcome.result.errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if outcome.result.findings else 0


@app.command()
def rule(
    code: Optional[str] = typer.Argument(None, metavar="CODE", hidden=True),
    all_rules: bool = typer.Option(False, "--all", help="Print the docs of every rule."),
) -> None:
    """Print a rule's documentation.

    CODE: a rule code, such as TRC101, or a rule's name, such as capture-left-open."""
    from .rules import ALL_RULES, rule_for

    if all_rules:
        typer.echo("\n".join(r.docs() for r in ALL_RULES).rstrip("\n"))
        return
    if code is None:
        raise _fail("give a rule code (such as TRC101) or --all")
    from .core.registry import spec_for

    spec = spec_for(code)  # by code or by name
    found = rule_for(spec.code) if spec is not None else None
    if found is None:
        raise _fail(f"unknown rule code {code!r}; `trace-lint rule --all` lists them")
    typer.echo(found.docs().rstrip("\n"))


@app.command()
def version() -> None:
    """Print the version."""
    typer.echo(f"trace-lint {__version__}")


@app.command()
def lsp(
    stdio: bool = typer.Option(True, "--stdio", help="Talk over stdin/stdout (the only transport; accepted because editors pass it)."),
) -> None:
    """Run the language server on stdio (needs the optional lsp extra: pygls)."""
    try:
        from .lsp.server import start
    except ImportError as error:
        if (error.name or "").split(".")[0] not in ("pygls", "lsprotocol"):
            raise
        raise _fail(f"the language server needs pygls and lsprotocol ({error}); install them with: pip install 'trace-lint[lsp]'")
    gc.enable()  # a long-lived process: collect between checks (see main)
    start()


def main() -> None:
    # `check` runs once and exits: nothing is ever collected (a collection after the
    # analysis walks millions of tree objects for memory the exit frees anyway). The
    # language server turns collection back on and pauses it only during each check.
    gc.disable()
    _exit_now(run(sys.argv[1:]))


# The shells `--show-completion SHELL` and `--install-completion SHELL` name.
COMPLETION_SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")


def run(args: List[str]) -> int:
    """The command line with `args`; returns the exit status. Usage errors are one line
    on stderr (exit 2), not click's usage block."""
    click_exceptions = _click_exceptions()
    if len(args) >= 2 and args[0] in ("--show-completion", "--install-completion") and args[1] in COMPLETION_SHELLS:
        # The named shell, not the one detected from the parent processes (none is found
        # under a service manager or an editor): typer's completion options then take it.
        os.environ["_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION"] = "1"
    try:
        code = app(args=args, prog_name="trace-lint", standalone_mode=False)
    except click_exceptions.ClickException as error:
        if type(error).__name__ == "NoArgsIsHelpError":  # bare `trace-lint`: the help, exit 2
            typer.echo(error.format_message(), err=True)
            return error.exit_code
        hint = ""
        context = getattr(error, "ctx", None)
        if isinstance(error, click_exceptions.UsageError) and context is not None:
            hint = f" (see `{context.command_path} --help`)"
        message = " ".join(error.format_message().split())
        typer.echo(f"trace-lint: error: {message}{hint}", err=True)
        return error.exit_code
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except getattr(click_exceptions, "Abort", KeyboardInterrupt):  # typer's vendored click has none
        typer.echo("trace-lint: aborted", err=True)
        return 1
    return code if isinstance(code, int) else 0


def _click_exceptions():
    """click's exception module: typer's vendored copy (typer >= 0.16) or click itself."""
    try:
        from typer._click import exceptions
    except ImportError:
        from click import exceptions
    return exceptions


def _exit_now(code) -> None:
    """Exit without tearing the interpreter down: freeing every syntax tree object one by
    one takes longer than a big run's analysis (0.7 s of 3.5 s on the dense benchmark).
    Output is flushed first; nothing else is pending (worker pools are shut down)."""
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None: the descriptor was closed when the process started
                stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe: nothing more can be written anyway
    os._exit(code)


if __name__ == "__main__":
    main()
