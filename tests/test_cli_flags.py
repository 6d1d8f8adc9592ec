"""Flags as ruff users expect them, through the real CLI: refused pairs, stdin, fix exit
status, watch mode and the small conveniences."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from .cli_helpers import CAPTURE_READING_HOST, cli_path, run_cli

LEFT_OPEN = """\
import ttnn


def capture(device, model, x):
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    out = model(x)
    ttnn.end_trace_capture(device, tid, cq_id=0)
    return tid, out
"""


def project_with(tmp_path: Path, **files: str) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for name, text in files.items():
        (tmp_path / f"{name}.py").write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--add-noqa", "--diff"], "'--add-noqa' cannot be used with '--diff'"),
        (["--add-noqa", "--fix"], "'--add-noqa' cannot be used with '--fix'"),
        (["--add-noqa", "--statistics"], "'--add-noqa' cannot be used with '--statistics'"),
        (["--add-noqa", "--show-files"], "'--add-noqa' cannot be used with '--show-files'"),
        (["--add-noqa", "--show-settings"], "'--add-noqa' cannot be used with '--show-settings'"),
        (["--diff", "--statistics"], "'--diff' cannot be used with '--statistics'"),
        (["--show-files", "--show-settings"], "'--show-files' cannot be used with '--show-settings'"),
        (["--show-files", "--statistics"], "'--show-files' cannot be used with '--statistics'"),
        (["--statistics", "--watch"], "'--statistics' cannot be used with '--watch'"),
        (["--exit-zero", "--exit-non-zero-on-fix"], "'--exit-zero' cannot be used with '--exit-non-zero-on-fix'"),
        (["--add-noqa", "--stdin-filename", "a.py"], "'--add-noqa' cannot be used with '--stdin-filename'"),
        (["--watch", "--stdin-filename", "a.py"], "'--watch' cannot be used with '--stdin-filename'"),
    ],
)
def test_refused_flag_pairs_write_nothing(tmp_path, flags, message):
    project = project_with(tmp_path, model=LEFT_OPEN, host=CAPTURE_READING_HOST)
    before = {p.name: p.read_bytes() for p in project.glob("*.py")}
    result = run_cli("check", "--no-cache", "--select", "TRC401,TRC102", *flags, ".", cwd=project, stdin=b"")
    assert result.returncode == 2
    assert result.stderr.decode().splitlines() == [f"trace-lint: error: the argument {message}"]
    assert result.stdout == b""
    assert {p.name: p.read_bytes() for p in project.glob("*.py")} == before


def test_stdin_filename_alone_reads_stdin(tmp_path):
    project = project_with(tmp_path, clean="x = 1\n")
    result = run_cli("check", "--no-cache", "--output-format", "concise", "--stdin-filename", "piped.py", cwd=project, stdin=CAPTURE_READING_HOST.encode())
    assert result.returncode == 1, result.stderr.decode()
    assert result.stdout.decode().startswith("piped.py:7:13: TRC102")


def test_fix_on_stdin_tells_what_is_left_on_stderr(tmp_path):
    project = project_with(tmp_path)
    result = run_cli("check", "--no-cache", "--fix", "--stdin-filename", "piped.py", cwd=project, stdin=CAPTURE_READING_HOST.encode())
    assert result.returncode == 1
    assert result.stdout.decode() == CAPTURE_READING_HOST  # nothing to fix: the source as it came
    err = result.stderr.decode()
    assert "piped.py:7:13: TRC102" in err and "1 remaining" in err


def test_force_exclude_applies_to_stdin(tmp_path):
    project = project_with(tmp_path)
    (project / "pyproject.toml").write_text('[tool.trace-lint]\nexclude = ["generated"]\n', encoding="utf-8")
    source = CAPTURE_READING_HOST.encode()
    checked = run_cli("check", "--no-cache", "--force-exclude", "--stdin-filename", "generated/x.py", cwd=project, stdin=source)
    assert checked.returncode == 0 and checked.stdout == b"", checked.stderr.decode()
    fixed = run_cli("check", "--no-cache", "--fix", "--force-exclude", "--stdin-filename", "generated/x.py", cwd=project, stdin=source)
    assert fixed.returncode == 0 and fixed.stdout == source
    # Not excluded, or without --force-exclude: checked as usual.
    assert run_cli("check", "--no-cache", "--stdin-filename", "generated/x.py", cwd=project, stdin=source).returncode == 1
    assert run_cli("check", "--no-cache", "--force-exclude", "--stdin-filename", "src/x.py", cwd=project, stdin=source).returncode == 1


def test_exit_non_zero_on_fix(tmp_path):
    project = project_with(tmp_path, model=LEFT_OPEN)
    fixed = run_cli("check", "--no-cache", "--select", "TRC401", "--fix", "--exit-non-zero-on-fix", ".", cwd=project)
    assert fixed.returncode == 1, fixed.stdout.decode() + fixed.stderr.decode()
    assert "finally:" in (project / "model.py").read_text(encoding="utf-8")
    again = run_cli("check", "--no-cache", "--select", "TRC401", "--fix", "--exit-non-zero-on-fix", ".", cwd=project)
    assert again.returncode == 0  # nothing left to fix, nothing fixed


def test_version_help_completion_and_rule_names():
    from trace_lint import __version__

    assert run_cli("-V").stdout.decode().strip() == f"trace-lint {__version__}"
    assert run_cli("version").stdout.decode().strip() == f"trace-lint {__version__}"
    assert run_cli("-h").stdout.decode().startswith("Usage: trace-lint [OPTIONS] COMMAND [ARGS]...")
    check_help = run_cli("check", "-h").stdout.decode()
    assert check_help.startswith("Usage: trace-lint check [OPTIONS] [PATH]...")
    for name in ("grouped", "pylint", "gitlab", "rdjson"):
        assert name in check_help
    completion = run_cli("--show-completion", "bash")
    assert completion.returncode == 0 and b"_TRACE_LINT_COMPLETE" in completion.stdout
    # The shell named, whatever shell the parent processes are (typer alone detects it and
    # ignores the name: "Shell  not supported." where no shell is found above the process).
    zsh = run_cli("--show-completion", "zsh")
    assert zsh.returncode == 0 and zsh.stdout.startswith(b"#compdef trace-lint")
    by_name = run_cli("rule", "capture-left-open")
    assert by_name.returncode == 0 and by_name.stdout == run_cli("rule", "TRC401").stdout
    assert run_cli("rule", "no-such-rule").returncode == 2


def test_watch_sees_a_change_made_while_the_first_check_runs(tmp_path, monkeypatch):
    # The watcher is started before the first check: a file saved while that check runs
    # brings a second check (watching only after it would miss the save until the next one).
    import trace_lint.cli as cli

    project = project_with(tmp_path, host=CAPTURE_READING_HOST)
    checks: list[int] = []

    def check(**_params) -> None:
        checks.append(len(checks))
        if len(checks) == 1:
            (project / "host.py").write_text(CAPTURE_READING_HOST + "\n# saved during the first check\n", encoding="utf-8")
            time.sleep(0.5)
        else:
            raise KeyboardInterrupt  # the second check came: stop watching

    class Context:
        params: dict = {}

    monkeypatch.setattr(cli, "check", check)
    timer = threading.Timer(30, lambda: os.kill(os.getpid(), signal.SIGINT))  # never hang
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            cli._watch(Context(), [str(project)])
    finally:
        timer.cancel()
    assert checks == [0, 1]


def test_watch_checks_again_after_a_change(tmp_path):
    project = project_with(tmp_path, host=CAPTURE_READING_HOST)
    process = subprocess.Popen(
        [cli_path(), "check", "--watch", "--no-cache", "--output-format", "concise", "."],
        cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        # Ctrl-C stops the watch, as at a terminal: a suite run as a background job inherits
        # SIGINT ignored, which the watcher would then never see.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(line.decode() for line in process.stdout), daemon=True).start()

    def wait_for(count: int) -> None:
        deadline = time.monotonic() + 60
        while sum(line.startswith("Found") for line in lines) < count and time.monotonic() < deadline:
            if process.poll() is not None:
                break
            time.sleep(0.05)

    try:
        wait_for(1)
        assert [line for line in lines if line.startswith("Found")] == ["Found 1 error.\n"], lines
        (project / "host.py").write_text(CAPTURE_READING_HOST.replace("y = ttnn.to_torch(x)", "y = ttnn.to_torch(x); ttnn.synchronize_device(device)"), encoding="utf-8")
        wait_for(2)
        assert [line for line in lines if line.startswith("Found")] == ["Found 1 error.\n", "Found 2 errors.\n"], lines
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 0
    assert b"watch mode" in process.stderr.read()
