"""The `trace-lint` console script. `--version` and `-V` alone are answered here, before the
command line (typer, click) is imported: that import is most of the start-up time, and
editors and scripts ask for the version often. Everything else goes to `trace_lint.cli`."""

from __future__ import annotations

import sys

from . import __version__

VERSION_FLAGS = ("--version", "-V")


def main() -> None:
    if len(sys.argv) == 2 and sys.argv[1] in VERSION_FLAGS:
        sys.stdout.write(f"trace-lint {__version__}\n")
        sys.stdout.flush()
        sys.exit(0)
    from .cli import main as cli_main

    cli_main()
