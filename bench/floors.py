"""Lower bounds of trace-lint's runs on one tree: the work a run cannot skip on this
interpreter with libcst, measured without the analysis.

`python floors.py record OUT ROOT` runs a cold `check --no-cache -j1` of ROOT in this process
and writes to OUT (JSON) what it imported, which files it outlined and which chunks libcst parsed.
`python floors.py STAGE OUT [EDITED]` then does only the work of STAGE, in a fresh process
timed by the caller (bench.py):

- `start`: the interpreter starting this script.
- `inputs`: the command line's modules, discovering, reading and hashing every file: what
  every run does before it knows what changed (a warm run, a one-file run after a whole run).
- `imports`: importing all that the cold run imported (trace_lint, libcst, typer, ...): what
  any run that analyses loads.
- `cold`: imports and inputs, plus the `ast` outline of each file the run outlined and libcst's parse of
  each chunk it parsed, with the position pass on those it positioned: the cold run's floor
  with nothing analysed.
- `edit`: imports and inputs, plus the outline and the parse of EDITED's chunks only: the floor of a
  run after an edit of that file if every other file's facts came from the cache.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import sys
from pathlib import Path


def record(root: Path, out: Path) -> None:
    before = set(sys.modules)
    from trace_lint.cli import app
    from trace_lint.semantic import outline as outline_module
    from trace_lint.semantic import project

    outlined: list[str] = []
    parsed: list[list] = []
    positioned: set[int] = set()
    parse_chunk, outline, chunk_positions = project._parse_chunk, outline_module._outline, project._chunk_positions

    def recorded_parse(module, chunk):
        tree = parse_chunk(module, chunk)
        parsed.append([module.display_path, chunk.first_line, chunk.text, id(tree)])
        return tree

    def recorded_outline(module, text, digest=None):
        outlined.append(str(module.path))
        return outline(module, text, digest)

    def recorded_positions(tree, first_line):
        positioned.add(id(tree))
        return chunk_positions(tree, first_line)

    project._parse_chunk, outline_module._outline, project._chunk_positions = recorded_parse, recorded_outline, recorded_positions
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
        try:
            app(["check", str(root), "--no-cache", "-j1", "--exit-zero", "--output-format", "concise"], standalone_mode=False)
        except SystemExit:
            pass
    modules = [name for name in sys.modules if name not in before]
    chunks = [[path, first, text, tree in positioned] for path, first, text, tree in parsed]
    out.write_text(json.dumps({"root": str(root), "modules": modules, "outlined": outlined, "chunks": chunks}))


def _inputs(root: Path) -> None:
    from trace_lint.core.config import load_settings
    from trace_lint.frontend.discovery import discover
    from trace_lint.frontend.source import read_bytes

    found = discover([root], load_settings(root))
    for path in found.files:
        hashlib.blake2b(read_bytes(path), digest_size=16).hexdigest()


def _parse(recorded: dict, only: str | None) -> None:
    from trace_lint.frontend import syntax_limits
    from trace_lint.frontend.source import decode, read_bytes
    from trace_lint.frontend.syntax_walk import parse_module, positions

    for path in recorded["outlined"]:
        if only is None or Path(path).resolve() == Path(only).resolve():
            syntax_limits.read(decode(read_bytes(Path(path))).text)
    root = Path(recorded["root"])
    chosen = [
        chunk
        for chunk in recorded["chunks"]
        if only is None or Path(only).resolve() in ((root / chunk[0]).resolve(), Path(chunk[0]).resolve())
    ]
    if not chosen:
        print(f"floors.py: the cold run parsed nothing of {only}", file=sys.stderr)
        sys.exit(2)
    for display, first_line, text, was_positioned in chosen:
        tree = parse_module(text)
        if was_positioned:
            positions(tree, first_line)


def main() -> None:
    stage, out = sys.argv[1], Path(sys.argv[2])
    if stage == "record":
        record(Path(sys.argv[3]), out)
        return
    if stage == "start":
        return
    recorded = json.loads(out.read_text())
    gc.disable()  # as the run analyses (checker.collection_paused)
    if stage == "inputs":
        import trace_lint.cli  # noqa: F401  (what a run loads before it knows what changed)

        _inputs(Path(recorded["root"]))
        return
    for name in recorded["modules"]:
        try:
            __import__(name)
        except Exception:  # a module the run imported lazily by another route
            pass
    if stage == "imports":
        return
    _inputs(Path(recorded["root"]))
    _parse(recorded, sys.argv[3] if stage == "edit" else None)


if __name__ == "__main__":
    main()
