"""The language server, driven by a real LSP client (pytest-lsp) over stdio."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the lsp extra (pygls) is not installed")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pygls.protocol import default_converter  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features  # noqa: E402

from trace_lint.core.findings import Edit, Location  # noqa: E402
from trace_lint.lsp.positions import split_lines  # noqa: E402
from trace_lint.lsp.server import text_edit  # noqa: E402

from .cli_helpers import CAPTURE_FIXED, CAPTURE_READING_HOST  # noqa: E402


# Fails a test that waits for a message the server never sends, instead of hanging.
WAIT_LIMIT = 60.0


def _recording_client() -> LanguageClient:
    """pytest-lsp's client, also keeping every publishDiagnostics with its version."""
    client = LanguageClient(converter_factory=default_converter)
    client.published = []  # type: ignore[attr-defined]

    def publish(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        client.diagnostics[params.uri] = params.diagnostics
        client.published.append(params)  # type: ignore[attr-defined]

    register_lsp_features(client, {**DEFAULT_CLIENT_FEATURES, types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: publish})
    return client


SERVER = ClientServerConfig(
    server_command=[sys.executable, "-m", "trace_lint", "lsp"],
    client_factory=_recording_client,
)

CAPTURE = CAPTURE_READING_HOST


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n\n[tool.trace-lint]\n', encoding="utf-8")
    return tmp_path


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, workspace: Path):
    folder = types.WorkspaceFolder(uri=workspace.as_uri(), name="demo")
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=workspace.as_uri(),
            workspace_folders=[folder],
        )
    )
    yield
    await lsp_client.shutdown_session()


async def published(client: LanguageClient, uri: str, version: int | None) -> list[types.Diagnostic]:
    """The diagnostics the server publishes for this version of the document."""

    async def wait() -> list[types.Diagnostic]:
        while True:
            for params in client.published:  # type: ignore[attr-defined]
                if params.uri == uri and params.version == version:
                    return list(params.diagnostics)
            await asyncio.sleep(0.05)

    return await asyncio.wait_for(wait(), WAIT_LIMIT)


def open_document(client: LanguageClient, path: Path, text: str, version: int = 1) -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)
        )
    )
    return uri


def replace_text(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def apply_edits(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP edits the way an editor does (UTF-16 columns), last first."""
    lines = text.split("\n")

    def offset(position: types.Position) -> int:
        line = lines[position.line]
        encoded = line.encode("utf-16-le")[: position.character * 2].decode("utf-16-le")
        return sum(len(item) + 1 for item in lines[: position.line]) + len(encoded)

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
        lines = text.split("\n")
    return text


def edits_of(action: types.CodeAction, uri: str) -> list[types.TextEdit]:
    assert action.edit is not None
    if action.edit.document_changes:
        [change] = action.edit.document_changes
        assert change.text_document.uri == uri
        return list(change.edits)
    return list(action.edit.changes[uri])


@pytest.mark.asyncio
async def test_open_publishes_code_severity_link_and_utf16_range(client: LanguageClient, workspace: Path):
    # A non-BMP character before the call: two UTF-16 code units, one code point.
    text = CAPTURE.replace("y = ttnn.to_torch(x)", 's = "😀"; y = ttnn.to_torch(x)')
    uri = open_document(client, workspace / "unsaved.py", text)  # never written to disk
    [diagnostic] = await published(client, uri, 1)
    assert diagnostic.code == "TRC102"
    assert diagnostic.source == "trace-lint"
    assert diagnostic.severity == types.DiagnosticSeverity.Error
    assert diagnostic.code_description.href.endswith("#trc102")
    line = text.splitlines()[6]
    start = line.index("ttnn.to_torch")
    assert diagnostic.range.start == types.Position(line=6, character=start + 1)
    assert diagnostic.range.end == types.Position(line=6, character=start + 1 + len("ttnn.to_torch(x)"))


@pytest.mark.asyncio
async def test_call_chain_into_another_file_is_related_information(client: LanguageClient, workspace: Path):
    package = workspace / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    helpers = "import ttnn\n\n\ndef step(x):\n    return ttnn.to_torch(x)\n"
    (package / "helpers.py").write_text(helpers, encoding="utf-8")
    main = textwrap.dedent(
        """\
        import ttnn
        from pkg.helpers import step


        def run(device, x):
            step(x)
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            try:
                out = step(x)
            finally:
                ttnn.end_trace_capture(device, tid, cq_id=0)
            return out
        """
    )
    (package / "main.py").write_text(main, encoding="utf-8")
    # Only the callee is open: the capture that reaches it is in a file on disk.
    uri = open_document(client, package / "helpers.py", helpers)
    [diagnostic] = await published(client, uri, 1)
    assert diagnostic.code == "TRC102"
    assert diagnostic.range.start.line == 4
    related = diagnostic.related_information
    assert related, "the call chain should come as related information"
    main_uri = (package / "main.py").resolve().as_uri()
    assert {r.location.uri for r in related} == {main_uri}
    lines = {r.location.range.start.line for r in related}
    assert 6 in lines and 8 in lines  # the begin call and the call of `step`


@pytest.mark.asyncio
async def test_change_updates_diagnostics(client: LanguageClient, workspace: Path):
    path = workspace / "model.py"
    path.write_text(CAPTURE, encoding="utf-8")
    uri = open_document(client, path, CAPTURE)
    assert [d.code for d in await published(client, uri, 1)] == ["TRC102"]

    replace_text(client, uri, CAPTURE_FIXED, 2)
    assert await published(client, uri, 2) == []

    moved = CAPTURE_FIXED.replace("        y = ttnn.relu(x)\n", "        y = ttnn.relu(x)\n        ttnn.synchronize_device(device)\n")
    replace_text(client, uri, moved, 3)
    [diagnostic] = await published(client, uri, 3)
    assert diagnostic.code == "TRC103"
    assert diagnostic.range.start.line == 7

    # Saving checks again; the text on disk is not what counts, the buffer is.
    client.published.clear()  # type: ignore[attr-defined]
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    assert [d.code for d in await published(client, uri, 3)] == ["TRC103"]

    # Closing clears what the editor shows for the file.
    client.published.clear()  # type: ignore[attr-defined]
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    assert await published(client, uri, None) == []


@pytest.mark.asyncio
async def test_workspace_settings_apply(client: LanguageClient, workspace: Path):
    (workspace / "pyproject.toml").write_text('[tool.trace-lint]\nignore = ["TRC101"]\n', encoding="utf-8")
    text = CAPTURE.replace("y = ttnn.to_torch(x)", "y = ttnn.from_torch(x, device=device)")
    uri = open_document(client, workspace / "alloc.py", text)
    codes = sorted(d.code for d in await published(client, uri, 1))
    assert codes == ["TRC301"]  # TRC101 is ignored by the project's configuration


@pytest.mark.asyncio
async def test_excluded_files_get_no_diagnostics(client: LanguageClient, workspace: Path):
    (workspace / "pyproject.toml").write_text('[tool.trace-lint]\nexclude = ["generated"]\n', encoding="utf-8")
    (workspace / "generated").mkdir()
    excluded = workspace / "generated" / "model.py"
    excluded.write_text(CAPTURE, encoding="utf-8")
    kept = workspace / "model.py"
    kept.write_text(CAPTURE, encoding="utf-8")
    excluded_uri = open_document(client, excluded, CAPTURE)
    kept_uri = open_document(client, kept, CAPTURE)
    assert await published(client, excluded_uri, 1) == []
    assert [d.code for d in await published(client, kept_uri, 1)] == ["TRC102"]


@pytest.mark.asyncio
async def test_code_action_appends_noqa_and_the_edit_silences_the_finding(client: LanguageClient, workspace: Path):
    text = CAPTURE.replace("y = ttnn.to_torch(x)", 's = "😀"; y = ttnn.to_torch(x)')
    uri = open_document(client, workspace / "act.py", text)
    [diagnostic] = await published(client, uri, 1)
    cursor = types.Range(start=types.Position(line=6, character=0), end=types.Position(line=6, character=0))
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=cursor,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    titles = [a.title for a in actions]
    assert titles == ["Suppress TRC102 on this line"]
    [action] = actions
    assert action.kind == types.CodeActionKind.QuickFix
    assert action.diagnostics and action.diagnostics[0].code == "TRC102"
    fixed = apply_edits(text, edits_of(action, uri))
    assert fixed.splitlines()[6] == '        s = "😀"; y = ttnn.to_torch(x)  # noqa: TRC102'

    replace_text(client, uri, fixed, 2)
    assert await published(client, uri, 2) == []


@pytest.mark.asyncio
async def test_code_action_extends_an_existing_noqa_list(client: LanguageClient, workspace: Path):
    text = CAPTURE.replace("y = ttnn.to_torch(x)", "y = ttnn.from_torch(x, device=device)  # noqa: TRC101  # known")
    uri = open_document(client, workspace / "extend.py", text)
    [diagnostic] = await published(client, uri, 1)
    assert diagnostic.code == "TRC301"
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    [action] = [a for a in actions if a.title == "Suppress TRC301 on this line"]
    fixed = apply_edits(text, edits_of(action, uri))
    assert fixed.splitlines()[6].endswith("# noqa: TRC101, TRC301  # known")
    replace_text(client, uri, fixed, 2)
    assert await published(client, uri, 2) == []


@pytest.mark.asyncio
async def test_syntax_error_buffer_is_a_diagnostic_and_the_server_goes_on(client: LanguageClient, workspace: Path):
    uri = open_document(client, workspace / "broken.py", "import ttnn\n\ndef f(:\n    pass\n")
    [diagnostic] = await published(client, uri, 1)
    assert diagnostic.code == "TRC001"
    assert diagnostic.range.start.line == 2
    replace_text(client, uri, CAPTURE, 2)
    assert [d.code for d in await published(client, uri, 2)] == ["TRC102"]


@pytest.mark.asyncio
async def test_edits_of_a_file_no_capture_reads_keep_every_diagnostic_right(client: LanguageClient, workspace: Path):
    # The server keeps the project's cache: these edits reuse the analysis of model.py's
    # capture (cache.AnalysisRecord) except where the edited file itself says otherwise.
    (workspace / "model.py").write_text(CAPTURE, encoding="utf-8")
    helpers = workspace / "helpers.py"
    plain = "def scale(values, factor):\n    return [v * factor for v in values]\n"
    helpers.write_text(plain, encoding="utf-8")
    model_uri = open_document(client, workspace / "model.py", CAPTURE)
    assert [d.code for d in await published(client, model_uri, 1)] == ["TRC102"]
    uri = open_document(client, helpers, plain)
    assert await published(client, uri, 1) == []
    replace_text(client, uri, plain + "\ndef broken(:\n", 2)
    assert [d.code for d in await published(client, uri, 2)] == ["TRC001"]
    replace_text(client, uri, plain + "\n\ndef shift(values):  # noqa: TRC101\n    return values\n", 3)
    assert [d.code for d in await published(client, uri, 3)] == ["TRC002"]
    replace_text(client, uri, plain, 4)
    assert await published(client, uri, 4) == []
    client.published.clear()  # type: ignore[attr-defined]
    replace_text(client, model_uri, CAPTURE_FIXED, 2)
    assert await published(client, model_uri, 2) == []


@pytest.mark.asyncio
async def test_requests_about_unknown_documents_get_empty_answers(client: LanguageClient, workspace: Path):
    nowhere = (workspace / "missing.py").as_uri()
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=nowhere),
            range=types.Range(start=types.Position(line=99, character=0), end=types.Position(line=99, character=5)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert not actions
    replace_text(client, nowhere, "x = 1\n", 7)  # a change for a document never opened
    uri = open_document(client, workspace / "after.py", CAPTURE)
    assert [d.code for d in await published(client, uri, 1)] == ["TRC102"]


@pytest.mark.asyncio
async def test_configuration_error_is_shown_not_fatal(client: LanguageClient, workspace: Path):
    (workspace / "pyproject.toml").write_text('[tool.trace-lint]\nslect = ["TRC1"]\n', encoding="utf-8")
    uri = open_document(client, workspace / "conf.py", CAPTURE)
    assert await published(client, uri, 1) == []

    async def shown() -> str:
        while not client.messages:
            await asyncio.sleep(0.05)
        return client.messages[0].message

    assert "slect" in await asyncio.wait_for(shown(), WAIT_LIMIT)
    (workspace / "pyproject.toml").write_text("[tool.trace-lint]\n", encoding="utf-8")
    replace_text(client, uri, CAPTURE, 2)
    assert [d.code for d in await published(client, uri, 2)] == ["TRC102"]


def test_fix_edits_convert_to_utf16_ranges():
    # No rule ships a fix yet; the conversion that "apply fix" uses is checked directly.
    lines = split_lines('x = "😀"; y = ttnn.to_torch(t)\nz = 1\n')
    edit = Edit(content="ttnn.relu", location=Location(1, 15), end_location=Location(1, 28))
    converted = text_edit(lines, edit)
    assert converted.new_text == "ttnn.relu"
    assert converted.range.start == types.Position(line=0, character=15)
    assert converted.range.end == types.Position(line=0, character=28)
    spanning = text_edit(lines, Edit(content="", location=Location(1, 8), end_location=Location(2, 1)))
    assert (spanning.range.start.line, spanning.range.end.line) == (0, 1)
