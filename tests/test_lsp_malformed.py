"""Bytes a typed LSP client cannot send: broken JSON, params of the wrong shape, unknown
methods. The server answers what it can and keeps serving."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the lsp extra (pygls) is not installed")

WAIT_LIMIT = 60.0  # fails instead of hanging when the server never answers


class RawClient:
    """JSON-RPC over the server's stdin/stdout, framed by hand."""

    def __init__(self, cwd: Path, command: "list[str] | None" = None):
        self.process = subprocess.Popen(
            command or [sys.executable, "-m", "trace_lint", "lsp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
        )
        self.messages: "queue.Queue[dict]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            headers = {}
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                headers[name.strip().lower()] = value.strip()
            body = stream.read(int(headers["content-length"]))
            self.messages.put(json.loads(body))

    def send_bytes(self, body: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def send(self, message: dict) -> None:
        self.send_bytes(json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8"))

    def expect(self, predicate) -> dict:
        while True:
            message = self.messages.get(timeout=WAIT_LIMIT)
            if predicate(message):
                return message

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


@pytest.fixture
def raw(tmp_path: Path):
    client = RawClient(tmp_path)
    client.send({"id": 1, "method": "initialize", "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}})
    client.expect(lambda m: m.get("id") == 1)
    client.send({"method": "initialized", "params": {}})
    yield client
    client.close()


CAPTURE = (
    "import ttnn\n\n\ndef run(device, x):\n    tid = ttnn.begin_trace_capture(device, cq_id=0)\n"
    "    try:\n        y = ttnn.to_torch(x)\n    finally:\n        ttnn.end_trace_capture(device, tid, cq_id=0)\n"
    "    return y\n"
)


def test_malformed_messages_leave_the_server_serving(raw: RawClient, tmp_path: Path):
    raw.send_bytes(b"{this is not json")
    raw.send({"id": 2, "method": "textDocument/codeAction", "params": {"textDocument": 5, "range": "x"}})
    error = raw.expect(lambda m: m.get("id") == 2)
    assert "error" in error and "result" not in error

    raw.send({"id": 3, "method": "trace-lint/no-such-method", "params": {}})
    assert raw.expect(lambda m: m.get("id") == 3)["error"]["code"] == -32601  # method not found

    raw.send({"method": "textDocument/didOpen", "params": {"textDocument": {"uri": 17}}})
    raw.send({"method": "textDocument/didChange", "params": None})

    uri = (tmp_path / "ok.py").as_uri()
    raw.send({
        "method": "textDocument/didOpen",
        "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": CAPTURE}},
    })
    published = raw.expect(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri)
    assert [d["code"] for d in published["params"]["diagnostics"]] == ["TRC102"]

    raw.send({"id": 4, "method": "shutdown"})
    assert raw.expect(lambda m: m.get("id") == 4).get("result", "missing") is None
    raw.send({"method": "exit"})
    assert raw.process.wait(timeout=WAIT_LIMIT) == 0
