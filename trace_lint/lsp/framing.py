"""LSP base-protocol framing over a byte stream that can be wrong.

pygls reads `Content-Length` headers line by line and trusts them: one message with a wrong,
negative, non-numeric or missing length desynchronizes it for good, and a huge length makes it
allocate that much. This reader validates each header block, caps the body size, and after
any framing error resynchronizes on the next well-formed header block. A header block cannot
occur inside a valid JSON body (raw CR/LF only appear there as whitespace, and the header name
only inside strings), so finding one is a reliable place to start again.

Every malformed message is reported as a `Malformed` event carrying the request id when one
can be recovered, so the server can answer the request instead of leaving the client waiting.
"""

from __future__ import annotations

import json
import os
import queue
import re
import threading
from dataclasses import dataclass
from typing import Any, BinaryIO, Callable, Optional, Union

# Largest body accepted. A whole-file didOpen of a big generated module is a few MB.
MAX_BODY_BYTES = 64 * 1024 * 1024
# A header block longer than this is garbage, not headers.
MAX_HEADER_BYTES = 8 * 1024
# With a body still incomplete (or garbage pending) and no bytes for this long, decide with what
# has arrived: a client that sent one bad message waits for the answer before sending more.
STALL_SECONDS = 0.3

_TOKEN = rb"[A-Za-z0-9!#$%&'*+.^_`|~-]"  # RFC 9110 header-name characters
_HEADER_LINE = re.compile(_TOKEN + rb"+:[^\r\n]{0,%d}\r\n" % MAX_HEADER_BYTES)
# `Content-Length: N` not in the middle of a header name, and the rest of its header block.
_LENGTH_LINE = re.compile(rb"(?i:content-length):[ \t]*\d{1,20}[ \t]*\r\n")
_TOKEN_BYTE = re.compile(_TOKEN)
_LENGTH_LINE_MAX = 64  # "Content-Length:" with room for spaces and 20 digits


def _length_lines(data: Union[bytes, bytearray], start: int, boundary: bool):
    """`_LENGTH_LINE` matches at or after `start`. A line ends in CR LF, which JSON bodies hardly
    ever hold, so looking back from each CR LF is much faster than a regex scan of every byte."""
    end = data.find(b"\r\n", start)
    while end >= 0:
        first = max(start, end - _LENGTH_LINE_MAX)
        while True:
            hit = _LENGTH_LINE.search(data, first, end + 2)
            if hit is None or hit.end() != end + 2:
                break
            # Not in the middle of a header name (`start` is a line start when it is a boundary).
            if (boundary and hit.start() == start) or hit.start() == 0 or not _TOKEN_BYTE.fullmatch(data, hit.start() - 1, hit.start()):
                yield hit
                break
            first = hit.start() + 1
        end = data.find(b"\r\n", end + 2)
_BLOCK_TAIL = re.compile(rb"(?:" + _HEADER_LINE.pattern + rb")*\r\n")
_BLOCK_AT = re.compile(rb"(?:" + _HEADER_LINE.pattern + rb")+\r\n")


def _block_at(data: Union[bytes, bytearray], position: int) -> bool:
    """A complete header block with a valid Content-Length starts exactly at `position`."""
    match = _BLOCK_AT.match(data, position)
    return match is not None and _content_length(bytes(data[position : match.end()]))[1] is None


def _find_header_block(data: Union[bytes, bytearray], start: int = 0, boundary: bool = False) -> Optional[int]:
    """Where the first complete, well-formed header block at or after `start` begins.
    Linear in len(data): candidates are found by their Content-Length line."""
    for hit in _length_lines(data, start, boundary):
        if _BLOCK_TAIL.match(data, hit.end()) is None:
            continue
        begin = hit.start()
        # Header lines just before it (Content-Type first, say) belong to the same block.
        while begin >= start + 2 and data[begin - 2 : begin] == b"\r\n":
            previous = data.rfind(b"\r\n", max(0, begin - 2 - MAX_HEADER_BYTES), begin - 2)
            line_start = previous + 2 if previous >= 0 else 0
            if line_start < start or _HEADER_LINE.fullmatch(data, line_start, begin) is None:
                break
            begin = line_start
        return begin
    return None


_CONTENT_LENGTH_NAME = b"content-length"
_WHITESPACE = b" \t\r\n"

# JSON-RPC error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600


@dataclass
class Message:
    """A well-framed body, parsed as JSON."""

    value: Any


@dataclass
class Malformed:
    """Bytes that were not a well-framed message, and what could be recovered from them."""

    reason: str
    request_id: Union[int, str, None] = None
    is_request: bool = False  # True: an id was found and this is not a response
    method: Optional[str] = None

    @property
    def code(self) -> int:
        return INVALID_REQUEST if self.is_request else PARSE_ERROR


Event = Union[Message, Malformed]


class ChunkSource:
    """Bytes from a file descriptor, read by a daemon thread so a reader can wait with a timeout."""

    def __init__(self, stream: BinaryIO, chunk_size: int = 65536) -> None:
        self._chunks: "queue.Queue[bytes]" = queue.Queue()
        self._stream = stream
        self._chunk_size = chunk_size
        threading.Thread(target=self._pump, name="lsp-stdin", daemon=True).start()

    def _pump(self) -> None:
        try:
            fileno = self._stream.fileno()
        except (AttributeError, OSError, ValueError):
            fileno = None
        while True:
            try:
                if fileno is not None:
                    chunk = os.read(fileno, self._chunk_size)
                else:
                    read1 = getattr(self._stream, "read1", self._stream.read)
                    chunk = read1(self._chunk_size)
            except OSError:
                chunk = b""
            self._chunks.put(chunk)
            if not chunk:
                return

    def get(self, timeout: Optional[float]) -> Optional[bytes]:
        """The next chunk; b"" at end of input; None when nothing came within `timeout`."""
        try:
            return self._chunks.get(timeout=timeout)
        except queue.Empty:
            return None


class FrameReader:
    """Turns a byte stream into `Message` and `Malformed` events; `next_event()` is None at EOF."""

    def __init__(
        self,
        next_chunk: Callable[[Optional[float]], Optional[bytes]],
        max_body: int = MAX_BODY_BYTES,
        stall: float = STALL_SECONDS,
    ) -> None:
        self._next_chunk = next_chunk
        self._buffer = bytearray()
        self._eof = False
        # Where the bytes that came after the last pause start: a client that waited for an
        # answer starts its next message there, even if the previous one was cut short.
        self._fresh: Optional[int] = None
        self._paused = False
        self.max_body = max_body
        self.stall = stall

    # -- input ---------------------------------------------------------------------------
    def _fill(self, timeout: Optional[float]) -> bool:
        """Append the next chunk; False on a stall (timeout) or at end of input."""
        if self._eof:
            return False
        chunk = self._next_chunk(timeout)
        if chunk is None:
            self._paused = True
            return False
        if not chunk:
            self._eof = True
            return False
        if self._paused:
            self._paused = False
            self._fresh = len(self._buffer) or None
        self._buffer += chunk
        return True

    def _take(self, count: int) -> bytes:
        taken = bytes(self._buffer[:count])
        del self._buffer[:count]
        if self._fresh is not None:
            self._fresh = self._fresh - count if self._fresh > count else None
        return taken

    def _next_header(self, start: int, boundary: bool = False) -> Optional[int]:
        """Where the next header block at or after `start` begins: one found in the stream, or
        one that starts right after a pause (even glued to the bytes before it)."""
        found = _find_header_block(self._buffer, start, boundary)
        fresh = self._fresh
        if fresh is not None and fresh >= start and (found is None or fresh < found) and _block_at(self._buffer, fresh):
            return fresh
        return found

    # -- events --------------------------------------------------------------------------
    def next_event(self) -> Optional[Event]:
        while True:
            # Blank lines between messages are tolerated.
            while self._buffer[:1] and self._buffer[:1] in (b"\r", b"\n"):
                del self._buffer[:1]
            if not self._buffer:
                if not self._fill(self.stall) and self._eof:
                    return None
                continue
            fresh = self._fresh
            if fresh is not None and _block_at(self._buffer, fresh):
                return self._garbage(self._take(fresh), "a message cut short (the next one began after a pause)")
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buffer) <= MAX_HEADER_BYTES and not self._looks_like_garbage():
                    if self._fill(self.stall) or not self._eof:
                        continue
                    if not self._buffer.strip():
                        return None
                    return self._garbage(self._take(len(self._buffer)), "input ended inside a header")
                return self._resync("no header block (expected `Content-Length: N` and a blank line)")
            if end > MAX_HEADER_BYTES:
                return self._resync(f"header block over {MAX_HEADER_BYTES} bytes")
            header = bytes(self._buffer[: end + 4])
            length, problem = _content_length(header)
            if problem:
                return self._resync(problem)
            assert length is not None
            if length > self.max_body:
                return self._resync(f"Content-Length {length} is over the {self.max_body}-byte limit", skip=len(header))
            del self._buffer[: end + 4]
            return self._body(length)

    def _looks_like_garbage(self) -> bool:
        """Bytes that cannot start a header block (a JSON body with its header lost, say)."""
        first_line = bytes(self._buffer.split(b"\r\n", 1)[0])
        return re.fullmatch(_TOKEN + rb"*(?::[^\r\n]*)?\r?", first_line) is None

    def _body(self, length: int) -> Event:
        scanned = 0
        while len(self._buffer) < length:
            # A header block inside the pending body: the length was too long, and what came
            # before it is the real message.
            marker = self._next_header(max(0, scanned - MAX_HEADER_BYTES), boundary=scanned <= MAX_HEADER_BYTES)
            if marker is not None and marker < length:
                body = self._take(marker)
                return _describe(body, f"Content-Length {length} is longer than the message ({len(body)} bytes)")
            scanned = len(self._buffer)
            if self._fill(self.stall):
                continue
            if self._eof:
                return self._garbage(self._take(len(self._buffer)), f"input ended {length - len(self._buffer)} bytes short of Content-Length {length}")
            # Stalled: if what came is a whole JSON value, the length was too long.
            if _complete_json(self._buffer):
                body = self._take(len(self._buffer))
                return _describe(body, f"Content-Length {length} is longer than the message ({len(body)} bytes)")
        body = bytes(self._buffer[:length])
        value = _json_value(body)
        if value is not _INVALID:
            del self._buffer[:length]
            return Message(value)
        # Not JSON. The next message may begin inside it (this one was cut short) ...
        marker = self._next_header(0, boundary=True)
        if marker is not None and marker < length:
            body = self._take(marker)
            return _describe(body, f"Content-Length {length} is longer than the message ({len(body)} bytes)")
        # ... or the body is bad, or the length was too short and the rest of the message
        # follows: look at what comes after it.
        while True:
            rest = bytes(self._buffer[length:])
            marker = self._next_header(length, boundary=True)
            if marker is not None:
                marker -= length
            if rest[: marker if marker is not None else len(rest)].strip(_WHITESPACE):
                # More bytes before the next header: read them as the rest of this message.
                stop = marker if marker is not None else len(rest)
                if marker is None and self._fill(self.stall):
                    continue
                joined = self._take(length + stop)
                return _describe(joined, f"Content-Length {length} does not match the message", skipped=len(joined) - length)
            if marker is not None or self._eof or not self._fill(self.stall):
                return _describe(self._take(length), "the body is not valid JSON")

    def _resync(self, reason: str, skip: int = 0) -> Event:
        """Drop bytes up to the next well-formed header block, reporting what was dropped."""
        start = max(skip, 1)
        while True:
            marker = self._next_header(start)
            if marker is not None:
                return self._garbage(self._take(marker), reason)
            start = max(1, len(self._buffer) - MAX_HEADER_BYTES)
            if not self._fill(self.stall):
                # Stalled or ended: answer for what arrived; later bytes are scanned afresh.
                return self._garbage(self._take(len(self._buffer)), reason)
            if len(self._buffer) > 2 * self.max_body:
                # Keep memory bounded while discarding a huge run of garbage.
                dropped = self._take(len(self._buffer) - MAX_HEADER_BYTES)
                event = self._garbage(dropped, reason)
                if event.request_id is not None:
                    return event

    def _garbage(self, data: bytes, reason: str) -> Malformed:
        # A header block, if any, then what may be the body.
        split = data.find(b"\r\n\r\n")
        candidate = data[split + 4 :] if split >= 0 and split < MAX_HEADER_BYTES else data
        first = candidate.find(b"{")
        return _describe(candidate[first:] if first >= 0 else candidate, reason)


def _content_length(header: bytes) -> tuple[Optional[int], Optional[str]]:
    """The length a header block declares, or why it declares none that can be trusted."""
    found: Optional[int] = None
    for line in header[:-4].split(b"\r\n"):
        name, colon, value = line.partition(b":")
        if not colon or not re.fullmatch(_TOKEN + rb"+", name):
            return None, f"bad header line {line[:60]!r}"
        if name.strip().lower() != _CONTENT_LENGTH_NAME:
            continue
        text = value.strip()
        if not text.isdigit() or not text.isascii():
            return None, f"Content-Length {text[:40].decode('ascii', 'replace')!r} is not a non-negative integer"
        if found is not None and found != int(text):
            return None, "two different Content-Length headers"
        found = int(text)
    if found is None:
        return None, "no Content-Length header"
    return found, None


_INVALID = object()


def _json_value(data: Union[bytes, bytearray]) -> Any:
    try:
        return json.loads(bytes(data))
    except (ValueError, RecursionError):
        return _INVALID


def _complete_json(data: Union[bytes, bytearray]) -> bool:
    stripped = bytes(data).strip(_WHITESPACE)
    return stripped[:1] in (b"{", b"[") and _json_value(stripped) is not _INVALID


def _describe(data: bytes, reason: str, skipped: int = 0) -> Malformed:
    """A Malformed event for `data`, with the request id if one can be recovered."""
    value = _json_value(data.strip(_WHITESPACE))
    fields = value if isinstance(value, dict) else _top_level_scalars(data)
    event = Malformed(reason)
    request_id = fields.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
        request_id = None
    method = fields.get("method")
    event.method = method if isinstance(method, str) else None
    if request_id is not None:
        event.request_id = request_id
        event.is_request = "result" not in fields and "error" not in fields
    return event


_SCALAR = re.compile(rb'\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null)')


def _top_level_scalars(data: bytes, limit: int = 1 << 16) -> dict[str, Any]:
    """Keys of the outermost JSON object in `data` (possibly cut short) with their scalar
    values; keys whose value is a container map to None. Enough to learn a broken request's id."""
    text = data[:limit]
    start = text.find(b"{")
    if start < 0:
        return {}
    fields: dict[str, Any] = {}
    position = start + 1
    depth = 1
    in_string = False
    key: Optional[str] = None
    expect_key = True
    while position < len(text):
        char = text[position : position + 1]
        if depth == 1 and not in_string:
            if char in (b" ", b"\t", b"\r", b"\n", b","):
                if char == b",":
                    expect_key, key = True, None
                position += 1
                continue
            if char == b"}":
                break
            if char == b":":
                expect_key = False
                position += 1
                match = _SCALAR.match(text, position)
                if match is not None and key is not None:
                    try:
                        fields[key] = json.loads(match.group(1))
                    except ValueError:
                        pass
                    position = match.end()
                    continue
                if key is not None:
                    fields[key] = None
                continue
            if char == b'"' and expect_key:
                match = re.compile(rb'"((?:[^"\\]|\\.)*)"').match(text, position)
                if match is None:
                    break
                try:
                    key = json.loads(b'"' + match.group(1) + b'"')
                except ValueError:
                    key = None
                position = match.end()
                continue
        # Inside a nested container or string: track depth only.
        if in_string:
            if char == b"\\":
                position += 2
                continue
            if char == b'"':
                in_string = False
        elif char == b'"':
            in_string = True
        elif char in (b"{", b"["):
            depth += 1
        elif char in (b"}", b"]"):
            depth -= 1
            if depth == 0:
                break
        position += 1
    return fields


# -- serving a pygls server through this reader ------------------------------------------------
def serve_stdio(server, stdin: Optional[BinaryIO] = None, stdout: Optional[BinaryIO] = None) -> None:
    """Run a pygls `LanguageServer` on stdin/stdout with this framing instead of pygls' own."""
    import asyncio
    import sys

    from pygls.io_ import StdoutWriter

    server._stop_event = threading.Event()
    server.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
    reader = FrameReader(ChunkSource(stdin or sys.stdin.buffer).get)
    exit_code: Optional[Any] = None
    try:
        asyncio.run(_serve(server, reader))
    except BrokenPipeError:
        pass  # the client is gone
    except SystemExit as stop:  # the `exit` notification
        exit_code = stop.code
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
    if exit_code is not None:
        raise SystemExit(exit_code)


async def _serve(server, reader: FrameReader) -> None:
    import asyncio

    loop = asyncio.get_running_loop()
    events: "asyncio.Queue[Optional[Event]]" = asyncio.Queue()

    def read_events() -> None:
        # A daemon thread: a blocked read of stdin must never keep the process alive at exit.
        while True:
            try:
                event = reader.next_event()
            except Exception as error:  # a reader bug must not silence the server
                event = Malformed(f"framing error: {type(error).__name__}: {error}")
            loop.call_soon_threadsafe(events.put_nowait, event)
            if event is None:
                return

    threading.Thread(target=read_events, name="lsp-framing", daemon=True).start()
    while not server._stop_event.is_set():
        event = await events.get()
        if event is None:
            return
        if isinstance(event, Malformed):
            _answer_malformed(server, event)
        else:
            dispatch(server, event.value)


def _send_error(protocol, request_id: Union[int, str, None], code: int, message: str) -> None:
    # Written as a plain object: pygls leaves out an id that is None, JSON-RPC wants "id": null.
    protocol._send_data({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


def _log(server, message: str) -> None:
    from lsprotocol import types

    try:
        server.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=f"trace-lint: {message}"))
    except Exception:  # logging must never be what breaks the loop
        pass


def _answer_malformed(server, event: Malformed) -> None:
    what = f"dropped a malformed message ({event.reason})"
    if event.method:
        what += f", method {event.method!r}"
    _log(server, what)
    if event.is_request:
        _send_error(server.protocol, event.request_id, INVALID_REQUEST, f"malformed message: {event.reason}")
    elif event.request_id is None and event.method is None:
        # JSON-RPC 2.0: a message whose id cannot be told gets a parse error with a null id.
        _send_error(server.protocol, None, PARSE_ERROR, f"parse error: {event.reason}")


def dispatch(server, value: Any) -> None:
    """Hand one parsed JSON value to pygls; answer a request that pygls cannot take."""
    from pygls.exceptions import JsonRpcException

    protocol = server.protocol
    if not isinstance(value, dict):
        _log(server, "dropped a message that is not a JSON object")
        _send_error(protocol, None, INVALID_REQUEST, "a message must be a JSON object (LSP has no batches)")
        return
    request_id = value.get("id")
    valid_id = isinstance(request_id, (int, str)) and not isinstance(request_id, bool)
    is_request = "id" in value and isinstance(value.get("method"), str) and "result" not in value and "error" not in value
    try:
        if value.get("jsonrpc") != "2.0" or ("method" in value and not isinstance(value["method"], str)):
            raise ValueError("not a JSON-RPC 2.0 message")
        if "id" in value and request_id is not None and not valid_id:
            raise ValueError(f"invalid id {request_id!r}")
        message = protocol.structure_message(value)
    except JsonRpcException as error:
        _log(server, f"dropped a message pygls cannot read: {error}")
        if is_request:
            response = error.to_response_error()
            _send_error(protocol, request_id if valid_id else None, response.code, response.message)
        return
    except Exception as error:
        _log(server, f"dropped an invalid message: {error}")
        if is_request or "id" in value:
            if "result" not in value and "error" not in value:
                _send_error(protocol, request_id if valid_id else None, INVALID_REQUEST, f"invalid request: {error}")
        return
    try:
        protocol.handle_message(message)
    except Exception as error:  # pygls answers handler errors itself; this is what it missed
        _log(server, f"handling {value.get('method')!r} failed: {type(error).__name__}: {error}")
        if is_request and valid_id:
            _send_error(protocol, request_id, -32603, f"internal error: {type(error).__name__}: {error}")
