"""The language server keeps no state for a document past its didClose, and none per message:
the real server and protocol, fed JSON-RPC messages through the framing layer's dispatch.
(bench/lsp_memory.py measures the RSS over 10,000 edits; nothing here is timed.)"""

from __future__ import annotations

import asyncio
import io
import time
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the lsp extra (pygls) is not installed")

from pygls.io_ import StdoutWriter  # noqa: E402

from trace_lint.lsp.framing import dispatch  # noqa: E402
from trace_lint.lsp.server import create_server  # noqa: E402

from .cli_helpers import CAPTURE_FIXED, CAPTURE_READING_HOST  # noqa: E402


def _notify(server, method: str, params: dict) -> None:
    dispatch(server, {"jsonrpc": "2.0", "method": method, "params": params})


async def _until(condition, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, "the server never got there"
        await asyncio.sleep(0.02)


@pytest.mark.asyncio
async def test_edits_and_closed_documents_leave_nothing_behind(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.trace-lint]\n", encoding="utf-8")
    server = create_server(debounce=0)
    output = io.BytesIO()
    server.protocol.set_writer(StdoutWriter(output))
    try:
        dispatch(server, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}})
        _notify(server, "initialized", {})
        uris = []
        for number in range(3):
            uri = (tmp_path / f"doc{number}.py").as_uri()
            uris.append(uri)
            _notify(server, "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": CAPTURE_READING_HOST}})
            for version in range(2, 40):
                text = CAPTURE_FIXED if version % 2 else CAPTURE_READING_HOST
                _notify(server, "textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]})
            await _until(lambda: uri in server.checked and server.checked[uri].version == 39)
        await _until(lambda: not server._pending)
        # Every notification's bookkeeping is gone once it was handled (pygls kept each one).
        assert server.protocol._request_futures == {}
        for uri in uris:
            _notify(server, "textDocument/didClose", {"textDocument": {"uri": uri}})
        await asyncio.sleep(0)
        assert server.checked == {}
        assert server._pending == {}
        assert not server._changed_since_pull
        assert not server.workspace.text_documents
        assert server.protocol._request_futures == {}
    finally:
        server._executor.shutdown(wait=True)


@pytest.mark.asyncio
async def test_what_checks_keep_is_dropped_once_no_document_is_open(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.trace-lint]\n", encoding="utf-8")
    server = create_server(debounce=0)
    server.protocol.set_writer(StdoutWriter(io.BytesIO()))
    try:
        dispatch(server, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}})
        _notify(server, "initialized", {})
        uris = [(tmp_path / f"doc{number}.py").as_uri() for number in range(2)]
        for uri in uris:
            _notify(server, "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": CAPTURE_READING_HOST}})
            await _until(lambda: uri in server.checked)
        await _until(lambda: not server._pending)
        assert server._kept  # the project's parses, reads and records, for the next edit
        _notify(server, "textDocument/didClose", {"textDocument": {"uri": uris[0]}})
        server._executor.submit(lambda: None).result(timeout=60)
        assert server._kept  # one document of the project is still open
        _notify(server, "textDocument/didClose", {"textDocument": {"uri": uris[1]}})
        server._executor.submit(lambda: None).result(timeout=60)
        assert server._kept == {}
    finally:
        server._executor.shutdown(wait=True)
