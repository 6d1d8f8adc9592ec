"""The language server follows the runtime guard's observed calls too (it runs the checker),
judging an edge's freshness against the editor's buffer."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the lsp extra (pygls) is not installed")
pytest_lsp = pytest.importorskip("pytest_lsp")

from pytest_lsp import LanguageClient  # noqa: E402

from .test_lsp import client, open_document, published, replace_text  # noqa: E402,F401  (client: the session fixture)
from .test_observed import STEPS, make_project, run_guarded  # noqa: E402


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch) -> Path:
    """The registry project of test_observed.py, with the record of its guarded capture."""
    root = make_project(tmp_path / "project")
    run_guarded(root, monkeypatch)
    return root


@pytest.mark.asyncio
async def test_an_observed_finding_is_a_diagnostic_until_the_buffer_changes(client: LanguageClient, workspace: Path):
    uri = open_document(client, workspace / "app" / "steps.py", STEPS)
    [diagnostic] = await published(client, uri, 1)
    assert diagnostic.code == "TRC102" and diagnostic.range.start.line == 5
    messages = [info.message for info in diagnostic.related_information or []]
    assert any("observed at run time by the capture begun at app/model.py:12" in message for message in messages), messages
    # An unsaved edit of the callee: the recorded edge no longer matches what is checked.
    replace_text(client, uri, STEPS.replace("return ttnn.from_device(x)", "return ttnn.from_device(x)  # edited"), 2)
    assert await published(client, uri, 2) == []
