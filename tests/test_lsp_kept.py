"""What the language server keeps between checks (lsp/kept.py) never changes a finding: after
every edit of a buffer, and every change on disk the server is told of or not, each published
document equals `trace-lint check --no-cache` on the same contents written to disk, chains
included. And what is kept is used: an edit re-parses only the edited file's changed parts."""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the lsp extra (pygls) is not installed")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pygls.io_ import StdoutWriter  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

from trace_lint.core.file_facts import content_digest  # noqa: E402
from trace_lint.lsp.framing import dispatch  # noqa: E402
from trace_lint.lsp.server import create_server  # noqa: E402

from .cache_entries import payload  # noqa: E402
from .cli_helpers import run_cli  # noqa: E402
from .test_lsp import WAIT_LIMIT, _recording_client, open_document, replace_text  # noqa: E402

SERVER = ClientServerConfig(
    server_command=[sys.executable, "-m", "trace_lint", "lsp"],
    client_factory=_recording_client,
    server_env={**os.environ, "TRACE_LINT_LSP_DEBOUNCE": "0"},
)

MODEL = textwrap.dedent(
    """\
    import ttnn
    from helpers import release


    def run(device, x):
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        out = ttnn.relu(x)
        ttnn.end_trace_capture(device, tid, cq_id=0)
        release(out)
        ttnn.execute_trace(device, tid, cq_id=0)
        return out
    """
)
# Frees its parameter: model.py's call of it after the capture is a TRC302 there.
HELPERS = "import ttnn\n\n\ndef release(t):\n    ttnn.deallocate(t)\n"
HELPERS_KEEPING = "import ttnn\n\n\ndef release(t):\n    return t\n"
# Helpers through a module on disk only (never open): what it does decides model.py's TRC302.
HELPERS_THROUGH_DISK = "import ttnn\nfrom sub.extra import drop\n\n\ndef release(t):\n    drop(t)\n"
EXTRA_FREEING = "import ttnn\n\n\ndef drop(t):\n    ttnn.deallocate(t)\n"
EXTRA_KEEPING = "import ttnn\n\n\ndef drop(t):\n    return [t]\n"
# A capture that no open buffer reaches: reported by the CLI, never published.
ELSEWHERE = "import ttnn\n\n\ndef go(device, x):\n    tid = ttnn.begin_trace_capture(device, cq_id=0)\n    y = ttnn.to_torch(x)\n    ttnn.end_trace_capture(device, tid, cq_id=0)\n    return y\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[tool.trace-lint]\n", encoding="utf-8")
    (project / "model.py").write_text(MODEL, encoding="utf-8")
    (project / "helpers.py").write_text(HELPERS, encoding="utf-8")
    (project / "elsewhere.py").write_text(ELSEWHERE, encoding="utf-8")
    (project / "sub" / "__init__.py").write_text("", encoding="utf-8")
    return project


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, workspace: Path):
    folder = types.WorkspaceFolder(uri=workspace.as_uri(), name="project")
    await lsp_client.initialize_session(
        types.InitializeParams(capabilities=client_capabilities("visual-studio-code"), root_uri=workspace.as_uri(), workspace_folders=[folder])
    )
    yield
    await lsp_client.shutdown_session()


def _point(line: int, character: int) -> tuple[int, int]:
    return (line + 1, character + 1)  # ASCII text: UTF-16 columns are code points


def _from_server(diagnostic: types.Diagnostic, root: Path) -> tuple:
    related = tuple(
        (Path(types_uri_path(r.location.uri)).resolve().relative_to(root.resolve()).as_posix(), _point(r.location.range.start.line, r.location.range.start.character), r.message)
        for r in diagnostic.related_information or ()
    )
    severity = {types.DiagnosticSeverity.Error: "error", types.DiagnosticSeverity.Warning: "warning"}[diagnostic.severity]
    start, end = diagnostic.range.start, diagnostic.range.end
    return (diagnostic.code, _point(start.line, start.character), _point(end.line, end.character), severity, diagnostic.message, related)


def types_uri_path(uri: str) -> str:
    from pygls.uris import to_fs_path

    return to_fs_path(uri)


def _from_cli(item: dict) -> tuple:
    start = (item["location"]["row"], item["location"]["column"])
    end = (item["end_location"]["row"], item["end_location"]["column"])
    if end <= start:  # the server underlines one character of a point
        end = (start[0], start[1] + 1)
    related = tuple((Path(r["filename"]).as_posix(), (r["location"]["row"], r["location"]["column"]), r["message"]) for r in item["related"])
    return (item["code"], start, end, item["severity"], item["message"], related)


def cli_findings(root: Path, buffers: dict[str, str], mirror: Path) -> dict[str, list[tuple]]:
    """`check --no-cache` of the project as it is on disk with the buffers' text in place,
    by file (relative path)."""
    if mirror.exists():
        shutil.rmtree(mirror)
    shutil.copytree(root, mirror, ignore=shutil.ignore_patterns(".trace-lint-cache"))
    for name, text in buffers.items():
        (mirror / name).write_text(text, encoding="utf-8")
    result = run_cli("check", ".", "--no-cache", "--output-format", "json", cwd=mirror)
    assert result.returncode in (0, 1), result.stderr.decode()
    found: dict[str, list[tuple]] = {}
    for item in json.loads(result.stdout):
        found.setdefault(Path(item["filename"]).as_posix(), []).append(_from_cli(item))
    return found


class Editor:
    """The open buffers, and the check that each publish equals the CLI's findings."""

    def __init__(self, client: LanguageClient, root: Path, mirror: Path):
        self.client, self.root, self.mirror = client, root, mirror
        self.buffers: dict[str, str] = {}
        self.versions: dict[str, int] = {}
        self.steps = 0

    def uri(self, name: str) -> str:
        return (self.root / name).as_uri()

    async def open(self, name: str) -> dict[str, list[tuple]]:
        self.buffers[name] = (self.root / name).read_text(encoding="utf-8")
        self.versions[name] = 1
        self.client.published.clear()  # type: ignore[attr-defined]
        open_document(self.client, self.root / name, self.buffers[name])
        return await self.agrees(name)

    async def edit(self, name: str, text: str) -> dict[str, list[tuple]]:
        self.buffers[name] = text
        self.versions[name] += 1
        self.client.published.clear()  # type: ignore[attr-defined]
        replace_text(self.client, self.uri(name), text, self.versions[name])
        return await self.agrees(name)

    async def published(self, names: list[str]) -> dict[str, list[types.Diagnostic]]:
        """The diagnostics of the check started by the last message: every open document's
        at its current version."""
        wanted = {self.uri(name): self.versions[name] for name in names}

        async def wait() -> dict[str, list[types.Diagnostic]]:
            while True:
                seen = {}
                for params in self.client.published:  # type: ignore[attr-defined]
                    if params.uri in wanted and params.version == wanted[params.uri]:
                        seen[params.uri] = list(params.diagnostics)
                if seen.keys() == wanted.keys():
                    return seen
                await asyncio.sleep(0.02)

        return await asyncio.wait_for(wait(), WAIT_LIMIT)

    async def agrees(self, edited: str) -> dict[str, list[tuple]]:
        self.steps += 1
        names = [edited] if len(self.buffers) == 1 else list(self.buffers)
        published = await self.published(names)
        expected = cli_findings(self.root, self.buffers, self.mirror)
        for name in names:
            got = sorted(_from_server(d, self.root) for d in published[self.uri(name)])
            assert got == sorted(expected.get(name, [])), f"step {self.steps}: {name} differs from the CLI"
        return expected


@pytest.mark.asyncio
async def test_every_publish_equals_the_cli_on_the_same_contents(client: LanguageClient, workspace: Path, tmp_path: Path):
    editor = Editor(client, workspace, tmp_path / "mirror")
    await editor.open("model.py")
    found = await editor.open("helpers.py")
    assert [f[0] for f in found["model.py"]].count("TRC302") == 1  # the helper frees the output
    assert "elsewhere.py" in found  # reported by the CLI; no buffer reaches it

    # The helper's body decides what model.py reports.
    found = await editor.edit("helpers.py", HELPERS_KEEPING)
    assert "TRC302" not in [f[0] for f in found.get("model.py", [])]
    # Back, with lines above it: the chain's step into helpers.py moves.
    await editor.edit("helpers.py", "# moved\n\n" + HELPERS)
    # model.py's own edits: lines moved, then its first text again (a result seen before).
    await editor.edit("model.py", "# a comment\n" + MODEL)
    await editor.edit("model.py", MODEL.replace("    release(out)\n", "    ttnn.synchronize_device(device)\n    release(out)\n"))
    await editor.edit("model.py", MODEL)
    await editor.edit("helpers.py", HELPERS)

    # Files on disk that no buffer holds, changed without telling the server: a new module
    # (a new file in a folder), found by the next check a buffer's edit starts.
    (workspace / "sub" / "extra.py").write_text(EXTRA_FREEING, encoding="utf-8")
    found = await editor.edit("helpers.py", HELPERS_THROUGH_DISK)
    assert [f[0] for f in found["model.py"]].count("TRC302") == 1
    # Long enough for the server to trust what it read (lsp/kept.py _quiet), then read it
    # again: the module's text changes on disk, the folder's entries do not.
    await asyncio.sleep(2.2)
    await editor.edit("model.py", "# settle\n" + MODEL)
    (workspace / "sub" / "extra.py").write_text(EXTRA_KEEPING, encoding="utf-8")
    found = await editor.edit("model.py", MODEL)
    assert "TRC302" not in [f[0] for f in found.get("model.py", [])]

    # A change the editor reports (didChangeWatchedFiles): the module frees again.
    await asyncio.sleep(2.2)
    await editor.edit("model.py", "# settle\n" + MODEL)
    (workspace / "sub" / "extra.py").write_text(EXTRA_FREEING, encoding="utf-8")
    client.published.clear()  # type: ignore[attr-defined]
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(changes=[types.FileEvent(uri=(workspace / "sub" / "extra.py").as_uri(), type=types.FileChangeType.Changed)])
    )
    assert [f[0] for f in (await editor.agrees("model.py"))["model.py"]].count("TRC302") == 1


def _notify(server, method: str, params: dict) -> None:
    dispatch(server, {"jsonrpc": "2.0", "method": method, "params": params})


@pytest.mark.asyncio
async def test_an_edit_parses_only_what_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """In-process: after the first check, an edit of model.py parses the def it changed,
    never helpers.py again (its text did not change)."""
    import trace_lint.semantic.project as project_module

    (tmp_path / "pyproject.toml").write_text("[tool.trace-lint]\n", encoding="utf-8")
    (tmp_path / "helpers.py").write_text(HELPERS, encoding="utf-8")
    model = tmp_path / "model.py"
    model.write_text(MODEL, encoding="utf-8")
    parsed: list[str] = []
    real_parse = project_module.parse_module
    monkeypatch.setattr(project_module, "parse_module", lambda text, *a, **k: parsed.append(text) or real_parse(text, *a, **k))
    server = create_server(debounce=0)
    server.protocol.set_writer(StdoutWriter(io.BytesIO()))
    try:
        uri = await _opened_in_process(server, tmp_path, model)
        assert any("def release" in text for text in parsed)  # the first check parses both files
        codes = [f.code for f in server.checked[uri].findings]
        assert "TRC302" in codes
        parsed.clear()
        edited = MODEL.replace("    return out\n", "    y = ttnn.relu(out)\n    return out\n")
        _notify(server, "textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": edited}]})
        await _until(lambda: server.checked[uri].version == 2)
        assert [f.code for f in server.checked[uri].findings] == codes
        # The edited def again; helpers.py, unchanged, is not parsed again.
        assert any("y = ttnn.relu(out)" in text for text in parsed)
        assert not any("def release" in text for text in parsed)
        # The check's cache entries are written once its diagnostics are out: the CLI
        # finds the analysis of the edited text.
        server._executor.submit(lambda: None).result(timeout=60)
        recorded = [payload(p.read_text())["hashes"] for p in (tmp_path / ".trace-lint-cache").glob("analysis-*.json")]
        assert any(content_digest(edited.encode()) in hashes.values() for hashes in recorded)
    finally:
        server._executor.shutdown(wait=True)


async def _opened_in_process(server, root: Path, model: Path) -> str:
    """The server initialised on `root`, with `model` (holding MODEL) open and checked."""
    dispatch(server, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}})
    _notify(server, "initialized", {})
    uri = model.as_uri()
    _notify(server, "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": MODEL}})
    await _until(lambda: uri in server.checked and server.checked[uri].version == 1)
    return uri


async def _until(condition, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, "the server never got there"
        await asyncio.sleep(0.02)


def test_a_stat_is_trusted_once_the_file_system_clock_has_moved_past_it():
    from trace_lint.driver.stat_index import RACY_FINE_NS, RACY_NS, quiet as _quiet

    now = 1_700_000_000_123_456_789
    fine = (now - 2 * RACY_FINE_NS, now - 2 * RACY_FINE_NS, 10, 1, 1)
    assert _quiet(fine, now)
    assert not _quiet((now - RACY_FINE_NS // 2,) * 2 + (10, 1, 1), now)
    # Whole seconds: a file system that may keep no finer (FAT: 2 s) waits the long window.
    whole = now - now % 1_000_000_000 - 1_000_000_000
    assert not _quiet((whole, whole, 10, 1, 1), now)
    assert _quiet((whole - RACY_NS, whole - RACY_NS, 10, 1, 1), now)
    assert _quiet(None, now)  # nothing there: nothing to trust


def test_the_server_writes_per_file_facts_once_enough_are_new(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """An edit adds a scan and an outline; the server keeps them in memory and writes a kind's
    entry only once `FACTS_WRITE_AFTER` new facts of it have gathered (its first check
    writes every kind), so that a check does not pay for rewriting entries after each edit."""
    from trace_lint.driver.cache import ResultCache
    from trace_lint.lsp import kept

    monkeypatch.setattr(kept, "FACTS_WRITE_AFTER", 3)
    writes: list[str] = []
    real = ResultCache.store_facts
    monkeypatch.setattr(ResultCache, "store_facts", lambda self, kind, key, facts: writes.append(kind) or real(self, kind, key, facts))
    cache = kept.KeptResultCache(tmp_path / "cache")
    first = cache.load_facts("scans", "k")
    for n in range(4):
        first.put(f"{n:032x}", (None, [], False))
    cache.store_facts("scans", "k", first)
    cache.flush()
    assert writes == ["scans"]  # four new: written
    for n in range(4, 6):
        later = cache.load_facts("scans", "k")
        assert set(later.known) >= {f"{m:032x}" for m in range(n)}  # what was kept is known
        later.put(f"{n:032x}", (None, [], False))
        cache.store_facts("scans", "k", later)
        cache.flush()
    assert writes == ["scans"]  # two new since: kept in memory only
    last = cache.load_facts("scans", "k")
    last.put(f"{6:032x}", (None, [], False))
    cache.store_facts("scans", "k", last)
    cache.flush()
    assert writes == ["scans", "scans"]
    # On disk: all seven, for the command line or a later server.
    assert len(ResultCache(tmp_path / "cache").load_facts("scans", "k").known) == 7


@pytest.mark.asyncio
async def test_facts_kept_in_memory_only_are_written_at_shutdown(tmp_path: Path):
    """The outlines of a small project's texts are kept in memory (fewer than
    `FACTS_WRITE_AFTER` new facts); the server writes them when the client shuts it down, so
    the next command line run does not outline those texts again."""
    (tmp_path / "pyproject.toml").write_text("[tool.trace-lint]\n", encoding="utf-8")
    (tmp_path / "helpers.py").write_text(HELPERS, encoding="utf-8")
    model = tmp_path / "model.py"
    model.write_text(MODEL, encoding="utf-8")
    edited = MODEL.replace("    return out\n", "    y = ttnn.relu(out)\n    return out\n")
    digest = content_digest(edited.encode())

    def outlines_on_disk() -> str:
        return "".join(p.read_text() for p in (tmp_path / ".trace-lint-cache").glob("outlines-*.json"))

    server = create_server(debounce=0)
    server.protocol.set_writer(StdoutWriter(io.BytesIO()))
    try:
        uri = await _opened_in_process(server, tmp_path, model)
        _notify(server, "textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": edited}]})
        await _until(lambda: server.checked[uri].version == 2)
        server._executor.submit(lambda: None).result(timeout=60)
        assert digest not in outlines_on_disk()  # a few new outlines: kept in memory only
        dispatch(server, {"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None})
        await _until(lambda: digest in outlines_on_disk())
        assert content_digest(MODEL.encode()) in outlines_on_disk()  # the first text's too
    finally:
        server._executor.shutdown(wait=True)


def _record_data(record) -> dict:
    from trace_lint.driver.cache import finding_to_data

    def findings(found) -> list:
        return sorted(json.dumps(finding_to_data(f), sort_keys=True) for f in found)

    groups = [
        (list(g.members), sorted(g.dependent), sorted(g.searches.tokens), sorted(g.searches.calls), sorted(g.searches.defs), sorted((k, sorted(v)) for k, v in g.kinds.items()), findings(g.findings))
        for g in record.groups
    ]
    facts = {display: (first, sorted(lines.items())) for display, (first, lines) in record.facts.items()}
    reported = None if record.reported is None else {display: findings(found) for display, found in record.reported.items()}
    return {"hashes": record.hashes, "groups": groups, "facts": facts, "reported": reported, "files": sorted(record.files)}


def test_the_record_kept_after_a_write_is_what_decoding_its_bytes_gives(workspace: Path):
    """After each check the server keeps the analysis record it wrote as the decoding of the
    bytes written (its findings decoded); a read of those bytes from disk, checked and
    completed field by field, gives the same record, after an edit as after the first check."""
    from trace_lint.core.config import load_settings
    from trace_lint.driver.cache import ResultCache
    from trace_lint.driver.checker import check
    from trace_lint.lsp import kept

    settings = load_settings(workspace)
    cache = kept.KeptResultCache(workspace / ".trace-lint-cache")
    inputs, parses = kept.KeptInputs(), kept.KeptParses()
    model = workspace / "model.py"
    compared = 0
    for text in (MODEL, MODEL + "\n\nVALUE = 1\n", MODEL.replace("def ", "def  ", 1)):
        inputs.begin(settings)
        with parses:
            check([model], settings, sources={model: text}, cache=cache, whole_program=True, root=settings.root, inputs=inputs)
        parses.keep_used()
        inputs.end()
        cache.end()
        before = set(cache._decoded)
        cache.flush()
        for memo in set(cache._decoded) - before:
            data, key, files = memo
            fresh = ResultCache(cache.folder)._decode_analysis(data, key, files)
            assert ResultCache(cache.folder).complete(fresh)
            assert _record_data(cache._decoded[memo]) == _record_data(fresh)
            compared += 1
    assert compared >= 2


@pytest.mark.asyncio
async def test_the_analysis_finds_the_outlines_the_record_plan_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """An edit of helpers.py outside what model.py's analysis read of it: the analysis
    record's plan loads it (does the edit keep what was read?) before the analysis opens its
    outline facts, and the kept cache hands the analysis the plan's outlines, so the edited
    text is outlined once, not twice; every finding is the same without that hand-over."""
    from trace_lint.frontend import syntax_limits
    from trace_lint.lsp import kept

    edited = HELPERS + "\n\ndef unrelated(t):\n    return t\n"
    outlined: list[str] = []
    real_read = syntax_limits.read
    monkeypatch.setattr(syntax_limits, "read", lambda text, *a, **k: outlined.append(text) or real_read(text, *a, **k))

    async def edit_once(root: Path) -> tuple[list, int]:
        root.mkdir()
        (root / "pyproject.toml").write_text("[tool.trace-lint]\n", encoding="utf-8")
        (root / "helpers.py").write_text(HELPERS, encoding="utf-8")
        model = root / "model.py"
        model.write_text(MODEL, encoding="utf-8")
        server = create_server(debounce=0)
        server.protocol.set_writer(StdoutWriter(io.BytesIO()))
        try:
            uri = await _opened_in_process(server, root, model)
            helpers = (root / "helpers.py").as_uri()
            _notify(server, "textDocument/didOpen", {"textDocument": {"uri": helpers, "languageId": "python", "version": 1, "text": HELPERS}})
            await _until(lambda: helpers in server.checked and server.checked[uri].version == 1)
            outlined.clear()
            _notify(server, "textDocument/didChange", {"textDocument": {"uri": helpers, "version": 2}, "contentChanges": [{"text": edited}]})
            await _until(lambda: helpers in server.checked and server.checked[helpers].version == 2)
            server._executor.submit(lambda: None).result(timeout=60)
            found = [
                (f.code, f.location, f.end_location, f.message, [[(Path(r.filename).name, r.location, r.message) for r in chain] for chain in f.chains])
                for document in (uri, helpers)
                for f in server.checked[document].findings
            ]
            return found, outlined.count(edited)
        finally:
            server._executor.shutdown(wait=True)

    with monkeypatch.context() as off:
        off.setattr(kept.KeptParses, "outlines_used", lambda self: {})
        without, outlined_without = await edit_once(tmp_path / "off")
    found, outlined_with = await edit_once(tmp_path / "on")
    assert found == without and "TRC302" in [f[0] for f in found]
    assert (outlined_without, outlined_with) == (2, 1)


@pytest.mark.asyncio
async def test_a_record_plans_once_per_check_and_finds_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The checker asks a record's plan to settle the run from it and again for the analysis;
    a record keeps its plan for the same arguments (`AnalysisRecord._planned`), so it is
    computed once per check, and every finding after each edit is the same as with it
    computed each time."""
    from trace_lint.driver.cache import AnalysisRecord, GroupRecord

    computed: list[int] = []
    real_touched = GroupRecord.touched
    monkeypatch.setattr(GroupRecord, "touched", lambda self, *a: computed.append(1) or real_touched(self, *a))
    real_plan = AnalysisRecord.plan
    edits = [MODEL.replace("    return out\n", "    y = ttnn.relu(out)\n    return out\n"), "# a comment\n" + MODEL, MODEL]

    async def edit_all(root: Path) -> tuple[list, int]:
        root.mkdir()
        (root / "pyproject.toml").write_text("[tool.trace-lint]\n", encoding="utf-8")
        (root / "helpers.py").write_text(HELPERS, encoding="utf-8")
        model = root / "model.py"
        model.write_text(MODEL, encoding="utf-8")
        server = create_server(debounce=0)
        server.protocol.set_writer(StdoutWriter(io.BytesIO()))
        found = []
        try:
            uri = await _opened_in_process(server, root, model)
            computed.clear()
            for version, text in enumerate(edits, start=2):
                _notify(server, "textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]})
                await _until(lambda: server.checked[uri].version == version)
                server._executor.submit(lambda: None).result(timeout=60)
                found.append([(f.code, f.location, f.end_location, f.message, [[(Path(r.filename).name, r.location, r.message) for r in chain] for chain in f.chains]) for f in server.checked[uri].findings])
            return found, len(computed)
        finally:
            server._executor.shutdown(wait=True)

    with monkeypatch.context() as off:
        off.setattr(AnalysisRecord, "plan", lambda self, *a: (setattr(self, "_planned", None), real_plan(self, *a))[1])
        without, planned_without = await edit_all(tmp_path / "off")
    found, planned = await edit_all(tmp_path / "on")
    assert found == without and all("TRC302" in [f[0] for f in step] for step in found)
    assert 0 < planned < planned_without


def test_an_entry_is_read_again_only_once_its_stat_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The kept cache keeps an entry's bytes while its stat stays the same (an analysis record
    is megabytes, read on every check otherwise); every read answers what a plain
    `ResultCache` reads from the same folder: after a rewrite, and for a link, which the
    plain cache refuses."""
    from trace_lint.core.file_facts import FileFacts
    from trace_lint.driver.cache import ResultCache
    from trace_lint.driver import stat_index
    from trace_lint.lsp import kept

    monkeypatch.setattr(stat_index, "RACY_FINE_NS", 0)
    monkeypatch.setattr(stat_index, "RACY_NS", 0)
    opened: list[str] = []
    real_read = kept.read_regular_file
    monkeypatch.setattr(kept, "read_regular_file", lambda path, most: opened.append(str(path)) or real_read(path, most))
    folder = tmp_path / "cache"
    cache = kept.KeptResultCache(folder)

    def store(count: int) -> None:
        facts = FileFacts()
        for n in range(count):
            facts.put(f"{n:032x}", (None, [], False))
        ResultCache(folder).store_facts("scans", "k", facts)
        time.sleep(0.01)  # past the (here zero) racy window

    def agree() -> dict:
        through_kept = ResultCache.load_facts(cache, "scans", "k").known
        assert through_kept == ResultCache(folder).load_facts("scans", "k").known
        return through_kept

    store(2)
    assert len(agree()) == 2 and len(opened) == 1
    assert len(agree()) == 2 and len(opened) == 1  # the same stat: the kept bytes
    store(3)
    assert len(agree()) == 3 and len(opened) == 2  # rewritten: read again
    entry = folder / "scans-k.json"
    moved = tmp_path / "elsewhere.json"
    entry.rename(moved)
    entry.symlink_to(moved)
    assert agree() == {} and len(opened) == 3  # a link: refused, as the plain cache does
