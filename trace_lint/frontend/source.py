"""Reading source files: bytes to text, with every failure turned into a message."""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

# The files that make a folder a package; such a file's module is the package itself.
PACKAGE_FILES = ("__init__.py", "__init__.pyi")


@dataclass(frozen=True)
class SourceText:
    text: str
    # A problem that makes the file unparseable (TRC001), with its 1-based position.
    error: Optional[str] = None
    error_line: int = 1
    error_column: int = 1


class ReadError(Exception):
    """The file could not be read at all (missing, unreadable, a symlink loop)."""


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ReadError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ReadError(f"{path}: is a directory") from None
    except PermissionError:
        raise ReadError(f"{path}: permission denied") from None
    except OSError as error:
        raise ReadError(f"{path}: cannot read: {error.strerror or error}") from None


def decode(data: bytes) -> SourceText:
    """Decode as Python does (PEP 263 cookie, BOM), reporting where it fails."""
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        column = nul - (data.rfind(b"\n", 0, nul) + 1) + 1
        return SourceText("", "source contains a NUL byte", line, column)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        if not _python_reads(data):
            return SourceText("", f"invalid encoding declaration: {error.msg}", getattr(error, "lineno", 1) or 1)
        encoding = "utf-8"  # bad bytes in a comment on the first two lines, no declaration
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        if _python_reads(data):
            # CPython (3.10 to 3.13) never decodes comments: bad bytes there are valid code.
            # Each bad sequence becomes U+FFFD; only what follows it on its line moves.
            text = data.decode(encoding, errors="replace")
        else:
            line = data.count(b"\n", 0, error.start) + 1
            column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
            return SourceText("", f"cannot decode as {encoding}: {error.reason} (byte 0x{data[error.start]:02x})", line, column)
    except LookupError:
        return SourceText("", f"unknown encoding {encoding!r}")
    if text.startswith("\ufeff"):
        text = text[1:]
    return SourceText(text)


def _python_reads(data: bytes) -> bool:
    """Whether CPython's own parser decodes these bytes (it refuses cleanly, never crashes):
    only a decoding error counts here; other syntax errors are reported later."""
    try:
        ast.parse(data)
    except SyntaxError as error:
        message = (error.msg or "").lower()
        return not any(word in message for word in ("unicode", "codec", "encod", "decod"))
    except (ValueError, RecursionError, MemoryError):
        return True
    return True
