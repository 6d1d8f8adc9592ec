"""The language server's "apply fix" code action carries the rule's fix edits (TRC401's
try/finally); applied as an editor does, the document checks clean and compiles."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the lsp extra (pygls) is not installed")
pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pytest_lsp import LanguageClient  # noqa: E402

from .test_lsp import apply_edits, client, edits_of, open_document, published, replace_text, workspace  # noqa: E402,F401

OPEN_ON_ERROR = textwrap.dedent(
    """\
    import ttnn


    def capture(device, model, x):
        model(x)
        tid = ttnn.begin_trace_capture(device, cq_id=0)
        # recorded
        out = model(x)
        ttnn.end_trace_capture(device, tid, cq_id=0)
        return tid, out
    """
)


@pytest.mark.asyncio
async def test_fix_action_wraps_the_capture_and_the_finding_goes_away(client: LanguageClient, workspace: Path):
    uri = open_document(client, workspace / "cap.py", OPEN_ON_ERROR)
    diagnostics = [d for d in await published(client, uri, 1) if d.code == "TRC401"]
    [diagnostic] = diagnostics
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    [fix] = [a for a in actions if a.title.startswith("Fix TRC401")]
    assert fix.is_preferred and fix.kind == types.CodeActionKind.QuickFix
    fixed = apply_edits(OPEN_ON_ERROR, edits_of(fix, uri))
    compile(fixed, "cap.py", "exec")
    assert fixed.splitlines()[5:12] == [
        "    tid = ttnn.begin_trace_capture(device, cq_id=0)",
        "    try:",
        "        # recorded",
        "        out = model(x)",
        "    finally:",
        "        ttnn.end_trace_capture(device, tid, cq_id=0)",
        "    return tid, out",
    ]
    replace_text(client, uri, fixed, 2)
    assert [d for d in await published(client, uri, 2) if d.code == "TRC401"] == []
