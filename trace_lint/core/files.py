"""The tool's own files: where the cache folder is, and reading and writing there safely.

Shared by the result cache (driver/cache.py) and the runtime guard's records of observed calls
(core/observed.py), which stands beside the analyzer and may import only core."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import Optional

DEFAULT_DIR = ".trace-lint-cache"
# Over the config, as RUFF_CACHE_DIR is (CI caches, read-only checkouts); relative to the
# current folder.
CACHE_DIR_VARIABLE = "TRACE_LINT_CACHE_DIR"


def cache_folder(settings) -> Path:
    """`$TRACE_LINT_CACHE_DIR`, else `cache-dir` from the config (relative to the config's
    folder), else `.trace-lint-cache` there."""
    override = os.environ.get(CACHE_DIR_VARIABLE)
    if override:
        return Path(override).absolute()
    folder = Path(settings.cache_dir) if settings.cache_dir else Path(DEFAULT_DIR)
    return folder if folder.is_absolute() else Path(settings.root) / folder


def mark_cache_folder(folder: Path) -> None:
    """As ruff does: keep the cache folder out of git and out of backups."""
    for name, content in ((".gitignore", "*\n"), ("CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n")):
        path = folder / name
        if not path.exists():
            try:
                path.write_text(content, encoding="utf-8")
            except OSError:
                pass


def write_atomically(path: Path, text: "str | bytes", prefix: str = ".entry-") -> None:
    """Write through a temporary file in the same folder moved into place with os.replace:
    a reader sees the old file or the new one, never half of one. Text is written as UTF-8."""
    handle, temporary = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=path.parent)
    data = text.encode("utf-8") if isinstance(text, str) else text
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def read_regular_file(path: Path, most: int) -> Optional[bytes]:
    """The bytes of `path` if it is a regular file of at most `most` bytes; None for anything
    else (missing, a folder, a FIFO or device that would block or never end, unreadable)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        handle = os.open(path, flags)
    except OSError:
        return None
    try:
        status = os.fstat(handle)
        if not stat.S_ISREG(status.st_mode) or status.st_size > most:
            return None
        with os.fdopen(handle, "rb", closefd=False) as stream:
            data = stream.read(most + 1)
        return data if len(data) <= most else None
    except OSError:
        return None
    finally:
        os.close(handle)
