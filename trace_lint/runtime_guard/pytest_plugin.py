"""pytest plugin for the trace-lint runtime guard (entry point `pytest11: trace_lint`).

It guards ttnn trace captures and torch CUDA graphs alike:

- `--trace-guard` guards the whole session (`--trace-guard-mode=warn` to only warn);
- the fixture `trace_guard` gives a guard active for one test, with its captures and violations;
- the marker `@pytest.mark.trace_guard(mode="raise")` guards one test's call;
- a short summary of guarded captures at the end.

Nothing here imports ttnn until a guard is actually started, nor torch ever (the guard patches
torch when the tests import it). A run where neither is installed is not disturbed: session
guarding is skipped with a note, the fixture skips.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any, Optional

import pytest

# Tests of the plugin itself may point it at a stand-in module instead of ttnn.
MODULE_ENV = "TRACE_LINT_GUARD_TTNN_MODULE"


class _PluginState:
    def __init__(self) -> None:
        self.session_guard: Any = None
        self.guards: list[Any] = []
        self.notes: list[str] = []
        self.recording = False


_STATE_KEY = pytest.StashKey[_PluginState]()


def _ttnn_module() -> Optional[Any]:
    """The module to guard, imported now; None when it is not installed."""
    name = os.environ.get(MODULE_ENV) or "ttnn"
    if importlib.util.find_spec(name.split(".")[0]) is None:
        return None
    return importlib.import_module(name)


def _torch_available() -> bool:
    from trace_lint.runtime_guard import api

    if os.environ.get(api.TORCH_ENV, "1") == "0":
        return False
    return "torch" in sys.modules or importlib.util.find_spec("torch") is not None


def _nothing_to_guard() -> str:
    from trace_lint.runtime_guard import api

    torch = "turned off" if os.environ.get(api.TORCH_ENV, "1") == "0" else "not importable"
    return f"ttnn is not importable and torch is {torch} here"


def _mode(config: pytest.Config, marker: Optional[pytest.Mark] = None) -> str:
    if marker is not None:
        if marker.args:
            return marker.args[0]
        if "mode" in marker.kwargs:
            return marker.kwargs["mode"]
    return config.getoption("trace_guard_mode")


def _start(config: pytest.Config, mode: str) -> Optional[Any]:
    module = _ttnn_module()
    torch = _torch_available()
    if module is None and not torch:
        return None
    from trace_lint.runtime_guard.lifecycle import Guard

    started = Guard(mode, ttnn_module=False if module is None else module, torch=None if torch else False).install()
    config.stash[_STATE_KEY].guards.append(started)
    return started


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("trace-lint", "trace-lint runtime guard for ttnn trace captures and CUDA graphs")
    group.addoption("--trace-guard", action="store_true", default=False,
                    help="guard every ttnn trace capture and CUDA graph capture of the session (trace-lint)")
    group.addoption("--trace-guard-mode", choices=("raise", "warn"), default="raise",
                    help="raise: stop at the offending call or the capture's end; warn: warn at the "
                         "capture's end (default: raise)")
    group.addoption("--no-trace-guard-record", action="store_true", default=False,
                    help="do not record which project functions ran in each capture (by default --trace-guard "
                         "writes them to the project's trace-lint cache for `trace-lint check`)")
    parser.addini("trace_guard_record", type="bool", default=True,
                  help="trace-lint: record the project functions that ran in guarded captures (default: true)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "trace_guard(mode='raise'): guard ttnn trace captures and CUDA graphs while this test runs (trace-lint)"
    )
    state = _PluginState()
    config.stash[_STATE_KEY] = state
    if config.getoption("trace_guard"):
        state.session_guard = _start(config, config.getoption("trace_guard_mode"))
        if state.session_guard is None:
            state.notes.append(f"--trace-guard: {_nothing_to_guard()}; nothing was guarded")
        elif not config.getoption("no_trace_guard_record") and config.getini("trace_guard_record"):
            _start_recording(config, state)


def _start_recording(config: pytest.Config, state: _PluginState) -> None:
    """Record the calls made in captures into the project's records (config `observed`)."""
    from trace_lint.core.observed import in_cache_folder, records_folder
    from trace_lint.core.config import ConfigError, load_settings
    from trace_lint.runtime_guard import observed

    try:
        settings = load_settings(Path(config.rootpath))
    except ConfigError as error:
        state.notes.append(f"--trace-guard: calls in captures not recorded: {error}")
        return
    folder = records_folder(settings)
    if folder is not None:
        observed.start(folder, Path(settings.root), in_cache_folder(settings))
        state.recording = True


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session.config.stash.get(_STATE_KEY, None)
    if state is None or state.session_guard is None:
        return
    from trace_lint.runtime_guard.report import TraceSafetyError

    try:
        state.session_guard.uninstall()
    except TraceSafetyError as error:
        state.notes.append(str(error))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    finally:
        if state.recording:
            from trace_lint.runtime_guard import observed

            state.recording = False
            written = observed.stop()
            if written is not None:
                state.notes.append(f"calls observed in captures written to {written}")


@pytest.fixture
def trace_guard(request: pytest.FixtureRequest):
    """A runtime guard active for this test; `.captures`, `.violations`, `.report()`."""
    marker = request.node.get_closest_marker("trace_guard")
    started = _start(request.config, _mode(request.config, marker))
    if started is None:
        pytest.skip(f"trace_guard: {_nothing_to_guard()}, so there is nothing to guard")
    try:
        yield started
    finally:
        started.uninstall()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    marker = item.get_closest_marker("trace_guard")
    started = None
    if marker is not None and "trace_guard" not in getattr(item, "fixturenames", ()):
        started = _start(item.config, _mode(item.config, marker))
        if started is None:
            item.config.stash[_STATE_KEY].notes.append(
                f"{item.nodeid}: marked trace_guard but {_nothing_to_guard()}; ran unguarded"
            )
    before = _recording()
    from trace_lint.runtime_guard import observed

    observed.set_test(item.nodeid)
    try:
        try:
            result = yield
        except BaseException as error:
            _close_left_open(item, before, error)
            raise
        # Here, before any fixture tears down: the device is still open to end the capture on.
        _close_left_open(item, before, None)
    except BaseException as error:
        observed.set_test(None)
        if started is not None:
            started.uninstall(error)
        raise
    observed.set_test(None)
    if started is not None:
        started.uninstall()
    return result


def _recording() -> set[int]:
    from trace_lint.runtime_guard import lifecycle

    if not lifecycle.is_installed():
        return set()
    return {id(record) for record in lifecycle.open_capture_records()}


def _close_left_open(item: pytest.Item, before: set[int], error: Optional[BaseException]) -> None:
    """Fail the test that leaves a capture recording, after ending and releasing it."""
    from trace_lint.runtime_guard import lifecycle
    from trace_lint.runtime_guard.report import TraceSafetyError, TraceSafetyWarning, format_report

    if not lifecycle.is_installed():
        return
    left = [record for record in lifecycle.open_capture_records() if id(record) not in before]
    if not left:
        return
    mode = lifecycle.current_mode()
    violations = lifecycle.close_captures(left, f"still recording when {item.nodeid} returned; the guard ended and released it")
    message = format_report(None, violations, f"{item.nodeid} left a capture open")
    if error is not None:
        if hasattr(error, "add_note"):
            error.add_note(message)
        return
    if mode == "raise":
        raise TraceSafetyError(message, violations)
    import warnings

    warnings.warn(message, TraceSafetyWarning, stacklevel=2)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    state = terminalreporter.config.stash.get(_STATE_KEY, None)
    if state is None or (not state.guards and not state.notes):
        return
    captures: list = []
    seen: set[int] = set()
    for started in state.guards:
        for capture in started.captures:
            if id(capture) not in seen:
                seen.add(id(capture))
                captures.append(capture)
    terminalreporter.section("trace-lint runtime guard")
    bad = [c for c in captures if c.violations]
    executed = sum(c.executions for c in captures)
    terminalreporter.write_line(
        f"{len(captures)} capture{'s' if len(captures) != 1 else ''} guarded, "
        f"{len(captures) - len(bad)} clean, {len(bad)} with violations, {executed} replay{'s' if executed != 1 else ''}"
    )
    for capture in captures:
        terminalreporter.write_line("  " + capture.summary_line())
        for violation in capture.violations:
            terminalreporter.write_line(f"    {violation.headline()} at {violation.frame}")
    for note in state.notes:
        terminalreporter.write_line(note)
