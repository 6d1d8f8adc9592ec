"""The language server's memory over scripted edits: RSS growth, measured, never asserted.

    python bench/lsp_memory.py [--edits 10000] [--sample 1000] [--warm-up 200]

A project of two files (a capture in model.py calling a helper in helpers.py) is opened in
`trace-lint lsp` (debounce 0); then every edit is a didChange of model.py with new text (a
constant changes, and every third edit a host read comes and goes, so diagnostics change
too), each waited for until its diagnostics arrive. Every 100 edits a scratch document is
opened, edited and closed. The server's RSS (VmRSS of /proc/PID/status) is read after the
warm-up and every `--sample` edits; the growth is the last reading less the one after the
warm-up (target: at most 5 MB over 10,000 edits).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench import LspClient, _diagnostics_for  # noqa: E402

HELPERS = textwrap.dedent(
    """\
    import ttnn


    def step(x, scale):
        return ttnn.multiply(x, scale)
    """
)


def model_text(edit: int) -> str:
    lines = [
        "import ttnn",
        "from helpers import step",
        "",
        f"SCALE = {edit}",
        "",
        "",
        "def run(device, x):",
        "    step(x, SCALE)",
        "    tid = ttnn.begin_trace_capture(device, cq_id=0)",
        "    try:",
        "        y = step(x, SCALE)",
        *(["        host = ttnn.to_torch(y)"] if edit % 3 == 1 else []),
        "    finally:",
        "        ttnn.end_trace_capture(device, tid, cq_id=0)",
        "    return y",
    ]
    return "\n".join(lines) + "\n"


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edits", type=int, default=10_000)
    parser.add_argument("--sample", type=int, default=1_000)
    parser.add_argument("--warm-up", type=int, default=200)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--server", default=None, help="the server command (default: this Python's -m trace_lint lsp)")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="trace-lint-lsp-memory-"))
    (root / "pyproject.toml").write_text("[tool.trace-lint]\n", encoding="utf-8")
    (root / "helpers.py").write_text(HELPERS, encoding="utf-8")
    model = root / "model.py"
    model.write_text(model_text(0), encoding="utf-8")
    command = args.server.split() if args.server else [sys.executable, "-m", "trace_lint", "lsp"]
    env = dict(os.environ, TRACE_LINT_LSP_DEBOUNCE="0")
    client = LspClient(command, root, env)
    pid = client.process.pid
    uri = model.as_uri()
    readings: list[tuple[int, int]] = []
    started = time.perf_counter()
    try:
        request = client.send("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {}, "workspaceFolders": [{"uri": root.as_uri(), "name": "bench"}]}, request=True)
        client.wait_for(lambda m: m.get("id") == request, args.timeout)
        client.send("initialized", {})
        client.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": model_text(0)}})
        client.wait_for(lambda m: _diagnostics_for(m, uri, 1), args.timeout)
        for edit in range(1, args.edits + 1):
            version = edit + 1
            client.send("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": model_text(edit)}]})
            published = client.wait_for(lambda m: _diagnostics_for(m, uri, version), args.timeout)
            expected = 1 if edit % 3 == 1 else 0
            if len(published["params"]["diagnostics"]) != expected:
                print(f"edit {edit}: {len(published['params']['diagnostics'])} diagnostics, expected {expected}", file=sys.stderr)
                return 1
            if edit % 100 == 0:
                scratch = (root / f"scratch_{edit}.py").as_uri()
                client.send("textDocument/didOpen", {"textDocument": {"uri": scratch, "languageId": "python", "version": 1, "text": f"VALUE = {edit}\n"}})
                client.wait_for(lambda m: _diagnostics_for(m, scratch, 1), args.timeout)
                client.send("textDocument/didChange", {"textDocument": {"uri": scratch, "version": 2}, "contentChanges": [{"text": f"VALUE = {edit + 1}\n"}]})
                client.wait_for(lambda m: _diagnostics_for(m, scratch, 2), args.timeout)
                client.send("textDocument/didClose", {"textDocument": {"uri": scratch}})
                client.wait_for(lambda m: _diagnostics_for(m, scratch, None) and m["params"].get("version") is None, args.timeout)
            with client.arrived:
                client.messages.clear()  # log messages nobody waits for: the client's memory, not the server's
            if edit == args.warm_up or (edit > args.warm_up and edit % args.sample == 0) or edit == args.edits:
                readings.append((edit, rss_bytes(pid)))
                print(f"edit {edit:>6}: RSS {readings[-1][1] / 2**20:7.1f} MiB  ({time.perf_counter() - started:6.0f} s)", flush=True)
    finally:
        client.close()
    if len(readings) >= 2:
        (first_edit, first), (last_edit, last) = readings[0], readings[-1]
        growth = last - first
        print(f"\nRSS growth from edit {first_edit} to edit {last_edit}: {growth / 2**20:+.2f} MiB "
              f"({growth / max(1, last_edit - first_edit):+.0f} bytes per edit; target <= 5 MB over 10,000 edits)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
