"""The language server's framing layer: wrong, negative, non-numeric, missing and huge
Content-Length headers, bodies that are not JSON, garbage between messages. After each one
the server answers the next correct request correctly; a request whose id can be recovered
gets a JSON-RPC error instead of silence."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Optional

import pytest

pytest.importorskip("pygls", reason="the lsp extra (pygls) is not installed")

from trace_lint.lsp.framing import INVALID_REQUEST, PARSE_ERROR, FrameReader, Malformed, Message  # noqa: E402

from .test_lsp_malformed import CAPTURE, RawClient  # noqa: E402


def body(message: dict) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")


def frame(data: bytes, length: Optional[int] = None) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % (len(data) if length is None else length) + data


def request(request_id: int) -> bytes:
    # A real request with a known answer: no code actions for a document that is not open.
    return body({
        "id": request_id,
        "method": "textDocument/codeAction",
        "params": {
            "textDocument": {"uri": "file:///nowhere/x.py"},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
            "context": {"diagnostics": []},
        },
    })


class Chunks:
    """A chunk source that ends (EOF) when the test's chunks run out; None marks a stall."""

    def __init__(self, *chunks: Optional[bytes]):
        self.chunks = list(chunks)

    def __call__(self, timeout):
        if not self.chunks:
            return b""
        chunk = self.chunks.pop(0)
        if chunk is None and timeout is None:
            return self(timeout)  # a blocking read waits past a stall
        return chunk


def events(*chunks: Optional[bytes], max_body: int = 1 << 20) -> list:
    reader = FrameReader(Chunks(*chunks), max_body=max_body, stall=0)
    found = []
    while True:
        event = reader.next_event()
        if event is None:
            return found
        found.append(event)


def good_after(found: list, request_id: int) -> None:
    last = found[-1]
    assert isinstance(last, Message) and last.value["id"] == request_id, found


# Each malformed input, then a correct request; what the reader must report for the bad one.
MALFORMED = {
    "length too long": (frame(request(1), len(request(1)) + 40), 1),
    "length too short": (frame(request(1), len(request(1)) - 7), 1),
    "length zero": (frame(request(1), 0), 1),
    "negative length": (b"Content-Length: -5\r\n\r\n" + request(1), 1),
    "non-numeric length": (b"Content-Length: abc\r\n\r\n" + request(1), 1),
    "missing length": (b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + request(1), 1),
    "huge length": (b"Content-Length: 1000000000000\r\n\r\n" + request(1), 1),
    "no header at all": (request(1), 1),
    "two lengths": (b"Content-Length: 10\r\nContent-Length: 20\r\n\r\n" + request(1), 1),
    "header line too long": (b"X-Junk: " + b"a" * 20_000 + b"\r\n" + frame(request(1))[:-len(request(1))] + request(1), None),
    "not json": (frame(b"{this is not json"), None),
    "not utf-8": (frame(b'{"jsonrpc": "2.0", "id": 1, "method": "\xff\xfe"}'), 1),
    "binary garbage": (b"\x00\xff\xfe garbage\r\n\r\n\x00", None),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_reader_reports_the_bad_message_and_resyncs(case: str):
    data, bad_id = MALFORMED[case]
    found = events(data, None, frame(request(2)))
    good_after(found, 2)
    bad = [e for e in found if isinstance(e, Malformed)]
    assert bad, found
    if bad_id is not None:
        assert any(e.request_id == bad_id and e.is_request and e.code == INVALID_REQUEST for e in bad), bad


def test_reader_passes_well_framed_messages_split_anywhere():
    stream = frame(request(1)) + frame(request(2)) + b"Content-Type: x\r\n" + frame(request(3))
    for cut in range(1, len(stream), 7):
        found = events(stream[:cut], stream[cut:])
        assert [e.value["id"] for e in found] == [1, 2, 3], cut


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_reader_resyncs_without_a_pause_too(case: str):
    # A client that pipelines: the next message follows in the same write.
    data, _bad_id = MALFORMED[case]
    good_after(events(data + frame(request(2))), 2)


def test_reader_never_allocates_a_claimed_huge_body():
    found = events(b"Content-Length: 1000000000000\r\n\r\n" + b"x" * 5000, None, frame(request(2)), max_body=4096)
    good_after(found, 2)


def test_a_response_or_notification_is_never_answered_as_a_request():
    notification = body({"method": "textDocument/didSave", "params": {"textDocument": {"uri": "file:///a.py"}}})
    response = body({"id": 9, "result": None})
    for data in (notification, response):
        found = events(frame(data, len(data) - 3), None, frame(request(2)))
        good_after(found, 2)
        assert not any(isinstance(e, Malformed) and e.is_request for e in found), found


def test_parse_error_without_an_id_has_code_minus_32700():
    (bad,) = events(frame(b"[1, 2"))
    assert bad.request_id is None and bad.code == PARSE_ERROR


# -- the real server process over stdio --------------------------------------------------------
@pytest.fixture
def raw(tmp_path: Path):
    client = RawClient(tmp_path)
    client.send({"id": 0, "method": "initialize", "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}})
    client.expect(lambda m: m.get("id") == 0)
    client.send({"method": "initialized", "params": {}})
    yield client
    client.close()


def raw_write(client: RawClient, data: bytes) -> None:
    assert client.process.stdin is not None
    client.process.stdin.write(data)
    client.process.stdin.flush()


def test_server_answers_correctly_after_each_malformed_message(raw: RawClient, tmp_path: Path):
    next_id = 100
    for case in sorted(MALFORMED):
        data, bad_id = MALFORMED[case]
        bad_id = None if bad_id is None else next_id
        data = data.replace(b'"id": 1,', b'"id": %d,' % next_id)
        if bad_id is not None:
            # The length in the header was computed for id 1; keep each case's own mismatch.
            data = data.replace(b"Content-Length: %d\r" % len(request(1)), b"Content-Length: %d\r" % len(request(next_id)))
        raw_write(raw, data)
        if bad_id is not None:
            answer = raw.expect(lambda m: m.get("id") == bad_id)
            assert answer["error"]["code"] == INVALID_REQUEST, (case, answer)
        good_id = next_id + 1
        raw_write(raw, frame(request(good_id)))
        answer = raw.expect(lambda m: m.get("id") == good_id)
        assert answer.get("result", "missing") == [], (case, answer)
        assert raw.process.poll() is None, case
        next_id += 2

    # Still a working language server: diagnostics for a document opened now.
    uri = (tmp_path / "ok.py").as_uri()
    raw.send({
        "method": "textDocument/didOpen",
        "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": CAPTURE}},
    })
    published = raw.expect(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri)
    assert [d["code"] for d in published["params"]["diagnostics"]] == ["TRC102"]
    raw.send({"id": 1, "method": "shutdown"})
    assert raw.expect(lambda m: m.get("id") == 1).get("result", "missing") is None
    raw.send({"method": "exit"})
    assert raw.process.wait(timeout=60) == 0


def test_parse_error_is_answered_with_a_null_id(raw: RawClient):
    raw_write(raw, frame(b"{this is not json"))
    answer = raw.expect(lambda m: "error" in m)
    assert answer["id"] is None and answer["error"]["code"] == PARSE_ERROR


# -- a check that fails shows as a diagnostic --------------------------------------------------
FAILING_SERVER = (
    "import sys\n"
    "import trace_lint.lsp.server as server\n"
    "real_check = server.check\n"
    "def check(targets, settings, sources=None, **kw):\n"
    "    if any('FAIL_THIS_CHECK' in text for text in (sources or {}).values()):\n"
    "        raise RuntimeError('injected failure')\n"
    "    return real_check(targets, settings, sources=sources, **kw)\n"
    "server.check = check\n"
    "server.start()\n"
)


def test_a_failed_check_replaces_stale_diagnostics(tmp_path: Path):
    client = RawClient(tmp_path, [sys.executable, "-c", FAILING_SERVER])
    try:
        client.send({"id": 0, "method": "initialize", "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}})
        client.expect(lambda m: m.get("id") == 0)
        client.send({"method": "initialized", "params": {}})
        uri = (tmp_path / "doc.py").as_uri()
        client.send({"method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": CAPTURE}}})
        first = client.expect(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"].get("version") == 1)
        assert [d["code"] for d in first["params"]["diagnostics"]] == ["TRC102"]
        client.send({
            "method": "textDocument/didChange",
            "params": {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": CAPTURE + "# FAIL_THIS_CHECK\n"}]},
        })
        second = client.expect(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"].get("version") == 2)
        (diagnostic,) = second["params"]["diagnostics"]
        assert "could not check this file" in diagnostic["message"] and "injected failure" in diagnostic["message"]
        assert diagnostic["severity"] == 1
        # The next good edit brings the real findings back.
        client.send({
            "method": "textDocument/didChange",
            "params": {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": CAPTURE}]},
        })
        third = client.expect(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"].get("version") == 3)
        assert [d["code"] for d in third["params"]["diagnostics"]] == ["TRC102"]
    finally:
        client.close()


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="needs a file system that takes non-UTF-8 names")
def test_workspace_with_a_non_utf8_file_name_gets_diagnostics(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.trace-lint]\n", encoding="utf-8")
    (tmp_path / os.fsdecode(b"x\xff.py")).write_bytes(CAPTURE.encode())
    client = RawClient(tmp_path)
    try:
        client.send({"id": 0, "method": "initialize", "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}})
        client.expect(lambda m: m.get("id") == 0)
        client.send({"method": "initialized", "params": {}})
        uri = (tmp_path / "ok.py").as_uri()
        (tmp_path / "ok.py").write_text(CAPTURE, encoding="utf-8")
        client.send({"method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": CAPTURE}}})
        published = client.expect(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri)
        assert [d["code"] for d in published["params"]["diagnostics"]] == ["TRC102"]
    finally:
        client.close()


# -- fuzz: whatever came before, a message sent after a pause is read ----------------------------
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_PIECES = [
    b"Content-Length: ", b"content-length:", b"Content-Type: application/vscode-jsonrpc\r\n", b"0", b"7", b"42",
    b"-1", b"99999999999", b"\r\n", b"\r\n\r\n", b"\n", b"{", b"}", b"[", b'"', b"\\", b":", b",", b'"id": 5',
    b'"method": "x"', b'"result": null', b"\x00", b"\xff", b" ", request(5), frame(request(6)),
]
_garbage = st.lists(st.one_of(st.sampled_from(_PIECES), st.binary(max_size=12)), max_size=12).map(b"".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(garbage=_garbage, cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=3))
def test_any_garbage_then_a_pause_never_loses_the_next_message(garbage: bytes, cuts: list[int]):
    pieces, start = [], 0
    for cut in sorted(c for c in cuts if c < len(garbage)):
        pieces.append(garbage[start:cut])
        start = cut
    pieces.append(garbage[start:])
    chunks = [p for p in pieces if p] + [None, frame(request(424242))]
    found = events(*chunks)
    last = found[-1]
    assert isinstance(last, Message) and last.value["id"] == 424242, found
