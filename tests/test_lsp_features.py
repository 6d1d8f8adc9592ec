"""Hover with the rule's docs, `source.fixAll.trace-lint`, and pull diagnostics
(`textDocument/diagnostic`), driven by a real LSP client (pytest-lsp) over stdio."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the lsp extra (pygls) is not installed")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pytest_lsp import LanguageClient, client_capabilities  # noqa: E402

from trace_lint.rules import rule_for  # noqa: E402

from .cli_helpers import CAPTURE_FIXED, CAPTURE_READING_HOST  # noqa: E402
from .test_lsp import SERVER, WAIT_LIMIT, apply_edits, client, edits_of, open_document, published, replace_text, workspace  # noqa: E402,F401
from .test_lsp_fix import OPEN_ON_ERROR  # noqa: E402

FIX_ALL = "source.fixAll.trace-lint"


def _hover(client: LanguageClient, uri: str, line: int, character: int):
    params = types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=character))
    return asyncio.wait_for(client.text_document_hover_async(params), WAIT_LIMIT)


@pytest.mark.asyncio
async def test_hover_over_a_diagnostic_shows_its_rules_docs(client: LanguageClient, workspace: Path):
    uri = open_document(client, workspace / "hover.py", CAPTURE_READING_HOST)
    [diagnostic] = await published(client, uri, 1)
    inside = types.Position(line=diagnostic.range.start.line, character=diagnostic.range.start.character + 3)
    hover = await _hover(client, uri, inside.line, inside.character)
    assert hover is not None
    assert hover.range == diagnostic.range
    assert isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert hover.contents.value == rule_for("TRC102").docs().rstrip("\n")
    # Off the diagnostic's range: nothing to say.
    assert await _hover(client, uri, 0, 0) is None
    # A stale view (the text changed and was not checked yet) gets no hover at old positions.
    replace_text(client, uri, CAPTURE_FIXED, 2)
    assert await published(client, uri, 2) == []
    assert await _hover(client, uri, inside.line, inside.character) is None


def _code_actions(client: LanguageClient, uri: str, only: list[str] | None, diagnostics=()):
    everywhere = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0))
    return client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=everywhere,
            context=types.CodeActionContext(diagnostics=list(diagnostics), only=only),
        )
    )


@pytest.mark.asyncio
async def test_fix_all_applies_every_safe_fix_and_the_findings_go_away(client: LanguageClient, workspace: Path):
    # Two captures left open on an exception: two TRC401 findings, each with a safe fix.
    second = OPEN_ON_ERROR.replace("def capture(", "def capture_again(")
    text = OPEN_ON_ERROR + "\n\n" + second
    uri = open_document(client, workspace / "all.py", text)
    assert [d.code for d in await published(client, uri, 1)].count("TRC401") == 2
    for only in ([FIX_ALL], ["source.fixAll"], ["source"]):
        [action] = await _code_actions(client, uri, only)
        assert action.kind == FIX_ALL
        assert {d.code for d in action.diagnostics} == {"TRC401"}
    # Asked only for quick fixes, there is no fix-all among them.
    assert all(a.kind == types.CodeActionKind.QuickFix for a in await _code_actions(client, uri, [types.CodeActionKind.QuickFix]))
    [action] = await _code_actions(client, uri, [FIX_ALL])
    fixed = apply_edits(text, edits_of(action, uri))
    compile(fixed, "all.py", "exec")
    assert fixed.count("    try:\n") == 2 and fixed.count("    finally:\n") == 2
    replace_text(client, uri, fixed, 2)
    assert [d for d in await published(client, uri, 2) if d.code == "TRC401"] == []
    # Nothing left to fix: no action.
    assert not await _code_actions(client, uri, [FIX_ALL])


@pytest_lsp.fixture(config=SERVER)
async def uninitialized_client(lsp_client: LanguageClient):
    yield


@pytest.mark.asyncio
async def test_the_server_declares_the_fix_all_kind_hover_and_pull_diagnostics(uninitialized_client: LanguageClient, workspace: Path):
    result = await uninitialized_client.initialize_session(
        types.InitializeParams(capabilities=client_capabilities("visual-studio-code"), root_uri=workspace.as_uri())
    )
    capabilities = result.capabilities
    assert FIX_ALL in capabilities.code_action_provider.code_action_kinds
    assert capabilities.hover_provider
    assert capabilities.diagnostic_provider.identifier == "trace-lint"
    assert capabilities.diagnostic_provider.inter_file_dependencies
    await uninitialized_client.shutdown_session()


def _pulling_capabilities() -> types.ClientCapabilities:
    capabilities = client_capabilities("neovim")  # Neovim 0.11 pulls diagnostics
    assert capabilities.text_document.diagnostic is not None
    return capabilities


@pytest_lsp.fixture(config=SERVER)
async def pulling_client(lsp_client: LanguageClient, workspace: Path):
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=_pulling_capabilities(),
            root_uri=workspace.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="demo")],
        )
    )
    yield
    await lsp_client.shutdown_session()


def _pull(client: LanguageClient, uri: str, previous: str | None = None):
    request = client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri), previous_result_id=previous)
    )
    return asyncio.wait_for(request, WAIT_LIMIT)  # a server that never answers fails the test


@pytest.mark.asyncio
async def test_pull_diagnostics_answer_the_current_text_and_nothing_is_pushed_twice(pulling_client: LanguageClient, workspace: Path):
    client = pulling_client
    uri = open_document(client, workspace / "pulled.py", CAPTURE_READING_HOST)
    report = await _pull(client, uri)
    assert report.kind == "full"
    [diagnostic] = report.items
    assert diagnostic.code == "TRC102" and diagnostic.code_description.href.endswith("#trc102")
    # Unchanged since the last pull: the client keeps what it has.
    again = await _pull(client, uri, report.result_id)
    assert again.kind == "unchanged" and again.result_id == report.result_id
    # An edit: the next pull has the new text's findings, whatever the debounce.
    replace_text(client, uri, CAPTURE_FIXED, 2)
    fixed = await _pull(client, uri, report.result_id)
    assert fixed.kind == "full" and not fixed.items and fixed.result_id != report.result_id
    replace_text(client, uri, CAPTURE_READING_HOST, 3)
    assert [d.code for d in (await _pull(client, uri, fixed.result_id)).items] == ["TRC102"]
    await asyncio.sleep(1.0)  # past the debounce: a push would have come by now
    assert [p for p in client.published if p.diagnostics] == []  # type: ignore[attr-defined]


@pytest.mark.asyncio
async def test_pull_of_a_document_never_opened_is_empty(pulling_client: LanguageClient, workspace: Path):
    report = await _pull(pulling_client, (workspace / "nowhere.py").as_uri())
    assert report.kind == "full" and not report.items
