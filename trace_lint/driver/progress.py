"""Progress of a long run on stderr, only when stderr is a terminal (never in pipes or CI logs)."""

from __future__ import annotations

import sys
import threading
import time
from typing import Optional, TextIO

# Runs over fewer files finish before progress would be worth drawing.
MIN_FILES = 200


class Progress:
    """A one-line status, redrawn from a daemon thread and erased at the end."""

    def __init__(self, stream: TextIO, interval: float = 0.25):
        self.stream = stream
        self.interval = interval
        self.files = 0
        self.shards = ""
        self._started = 0.0
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    @classmethod
    def for_terminal(cls, quiet: bool, stream: Optional[TextIO] = None) -> Optional["Progress"]:
        stream = stream if stream is not None else sys.stderr
        try:
            tty = stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        return cls(stream) if tty and not quiet else None

    def start(self, files: int) -> None:
        if files < MIN_FILES:
            return
        self.files = files
        self._started = time.perf_counter()
        self._thread = threading.Thread(target=self._loop, name="trace-lint-progress", daemon=True)
        self._thread.start()

    def shard_done(self, done: int, total: int) -> None:
        self.shards = f", workers done {done}/{total}"

    def _line(self) -> str:
        from ..semantic.outline import ModuleOutline

        parsed = ModuleOutline.parsed_count
        elapsed = time.perf_counter() - self._started
        return f"trace-lint: {self.files} files, {parsed} parsed{self.shards}, {elapsed:.1f}s"

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.stream.write("\r\x1b[2K" + self._line())
            self.stream.flush()

    def finish(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        self.stream.write("\r\x1b[2K")
        self.stream.flush()
