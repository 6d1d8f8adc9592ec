"""The language server: diagnostics for open Python documents (published, or pulled with
`textDocument/diagnostic` by clients that say they pull), the rule's docs on hover, and code
actions to suppress a finding, apply its fix, or apply every safe fix of the document
(`source.fixAll.trace-lint`).

Each document is checked as part of its project (the folder of the nearest pyproject.toml
with `[tool.trace-lint]`, else the workspace folder holding it), with the text of every
open buffer of that project in place of the file on disk, so calls into other files resolve
and unsaved edits count. One check covers every open document of that project; it reads and
fills the project's result cache as the CLI does.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import logging
import os
import traceback
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional, Sequence
from urllib.parse import unquote

# Loaded here, in the thread that starts the server: the binder defers libcst
# (`frontend.deferred_import`), and a deferred module first used from two threads at once (a
# check runs in a worker thread) is not safe before Python 3.12.
import libcst  # noqa: F401
from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import from_fs_path, to_fs_path

from .. import __version__
from ..frontend.discovery import discover
from ..core.findings import Edit, Finding, Related
from ..core.files import cache_folder
from ..driver.checker import check
from ..core.config import ConfigError, Settings, load_settings
from ..report.fixes import apply_fixes, wanted
from .framing import serve_stdio
from .kept import KeptInputs, KeptParses, KeptResultCache
from ..report.suppression_edits import suppression_edit
from .positions import split_lines, to_client

logger = logging.getLogger(__name__)

SOURCE = "trace-lint"
DEBOUNCE_SECONDS = 0.5
PYTHON_SUFFIXES = (".py", ".pyi")
# Suppressing these with `# noqa` means nothing: a parse error, or a stale suppression itself.
NOT_SUPPRESSIBLE = ("TRC001", "TRC002")
# Error messages remembered so each is shown once (they name documents: bounded).
MAX_SHOWN_ERRORS = 256
# The code action that applies every safe fix of a document (editors run it on save).
FIX_ALL_KIND = f"{types.CodeActionKind.SourceFixAll.value}.{SOURCE}"

_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


@dataclass
class _Checked:
    """What the last check saw of one document and what it found there."""

    version: Optional[int]
    text: str
    findings: list[Finding]
    diagnostics: list[types.Diagnostic]
    result_id: str = ""  # for pull diagnostics: unchanged since the client's last pull


@dataclass(frozen=True)
class _Kept:
    parses: KeptParses
    inputs: KeptInputs
    cache: KeptResultCache


@dataclass(frozen=True)
class _Project:
    root: Optional[Path]  # None: the document alone
    settings: Settings


class _Protocol(LanguageServerProtocol):
    """pygls 2 files the future of every notification it runs through one of its generator
    handlers (didOpen, didChange, didClose, ...) under a fresh id in `_request_futures` and
    never removes it: about 1.5 KB for every keystroke the editor sends. A notification's
    future is dropped once it is done; requests keep pygls' own bookkeeping."""

    def _execute_handler(self, msg_id, handler, callback, args=None, kwargs=None):
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        if callback != self._check_handler_result:  # a request: answered, then popped by pygls
            return
        future = self._request_futures.get(msg_id)
        if future is not None:
            future.add_done_callback(lambda _done: self._request_futures.pop(msg_id, None))


class TraceLintServer(LanguageServer):
    def __init__(self, debounce: float = DEBOUNCE_SECONDS) -> None:
        super().__init__("trace-lint", __version__, protocol_cls=_Protocol)
        self.debounce = debounce
        self.checked: dict[str, _Checked] = {}
        self._pending: dict[str, asyncio.Task] = {}
        self._shown_errors: set[str] = set()
        self._result_ids = itertools.count(1)
        # Documents whose findings changed since a pulling client last pulled them.
        self._changed_since_pull: set[str] = set()
        # Per project root: what its checks keep between them (see kept_for).
        self._kept: dict[Optional[Path], _Kept] = {}
        # Checks holding garbage collection off (see _collection_held), and whether the
        # first kept parses were frozen out of the collector's sight.
        self._collection_holds = 0
        self._collection_was_enabled = True
        self._frozen = False
        # One check at a time, off the event loop: requests keep being answered meanwhile.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trace-lint-check")

    # -- documents -------------------------------------------------------------------------
    def open_document(self, uri: str):
        documents = self.workspace.text_documents
        return documents.get(uri) or documents.get(unquote(uri))

    def is_python(self, uri: str) -> bool:
        document = self.open_document(uri)
        if document is not None and document.language_id == "python":
            return True
        return unquote(uri).endswith(PYTHON_SUFFIXES)

    def document_path(self, uri: str) -> Path:
        path = to_fs_path(uri) if uri.startswith("file:") else None
        if path:
            return Path(path).resolve()
        # An untitled buffer: checked on its own, under a name in the working folder.
        name = Path(unquote(uri).rsplit("/", 1)[-1] or "untitled").name
        return (Path.cwd() / (name if name.endswith(PYTHON_SUFFIXES) else name + ".py")).resolve()

    def encoding(self) -> str:
        encoding = str(self.workspace.position_encoding or types.PositionEncodingKind.Utf16)
        return encoding if encoding in ("utf-8", "utf-16", "utf-32") else "utf-16"

    # -- scheduling ------------------------------------------------------------------------
    def schedule(self, uri: str, delay: float) -> None:
        """Check `uri` after `delay` seconds; a newer request for the same document replaces it."""
        pending = self._pending.pop(uri, None)
        if pending is not None:
            pending.cancel()
        self._pending[uri] = asyncio.get_running_loop().create_task(self._check_later(uri, delay))

    async def _check_later(self, uri: str, delay: float) -> None:
        try:
            if delay:
                await asyncio.sleep(delay)
            await self.check_document(uri)
            self.refresh_pulled()
        except asyncio.CancelledError:
            raise
        except Exception as error:  # never let one document take the server down
            self.report_failure(f"checking {uri} failed: {type(error).__name__}: {error}", traceback.format_exc())
            document = self.open_document(uri)
            if document is not None:
                self.publish_failure(document.uri, document.version, document.source, error)
        finally:
            if self._pending.get(uri) is asyncio.current_task():
                del self._pending[uri]

    def forget(self, uri: str) -> None:
        pending = self._pending.pop(uri, None)
        if pending is not None:
            pending.cancel()
        self.checked.pop(uri, None)
        self._changed_since_pull.discard(uri)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        if not any(other != uri and self.is_python(other) for other in list(self.workspace.text_documents)):
            self._executor.submit(self._drop_kept)  # nothing open: nothing kept for later

    def _drop_kept(self) -> None:
        self._write_caches(lambda cache: cache.write_kept_facts())  # what only memory held
        self._kept.clear()

    def report_failure(self, message: str, details: str = "") -> None:
        self.window_log_message(types.LogMessageParams(type=types.MessageType.Error, message=f"{message}\n{details}".rstrip()))
        if message not in self._shown_errors:  # tell the user once, not on every keystroke
            if len(self._shown_errors) >= MAX_SHOWN_ERRORS:
                self._shown_errors.clear()  # bounded: a long session's errors are not kept forever
            self._shown_errors.add(message)
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=f"trace-lint: {message}"))

    # -- checking --------------------------------------------------------------------------
    def project_for(self, path: Path) -> _Project:
        start = path.parent if not path.is_dir() else path
        while not start.exists() and start != start.parent:
            start = start.parent
        settings = load_settings(start)
        if settings.config_file is not None:
            return _Project(settings.root, settings)
        folder = self.workspace_folder_of(path)
        if folder is None:
            return _Project(None, settings)
        return _Project(folder, replace(settings, root=folder))

    def workspace_folder_of(self, path: Path) -> Optional[Path]:
        candidates = []
        for folder in self.workspace.folders.values():
            folder_path = to_fs_path(folder.uri)
            if folder_path:
                candidates.append(Path(folder_path).resolve())
        if not candidates and self.workspace.root_path:
            candidates.append(Path(self.workspace.root_path).resolve())
        inside = [c for c in candidates if c == path or c in path.parents]
        return max(inside, key=lambda c: len(c.parts)) if inside else None

    async def check_document(self, uri: str) -> None:
        document = self.open_document(uri)
        if document is None or not self.is_python(uri):
            return
        path = self.document_path(document.uri)
        try:
            project = self.project_for(path)
        except ConfigError as error:
            self.report_failure(f"configuration error: {error}")
            self._publish(document.uri, document.version, document.source, [])
            return
        # Every open buffer of the same project, as the editor holds it now.
        snapshot: dict[str, tuple[Path, Optional[int], str]] = {}
        for other_uri in list(self.workspace.text_documents):
            other = self.open_document(other_uri)
            if other is None or not self.is_python(other.uri):
                continue
            other_path = self.document_path(other.uri)
            if other.uri != document.uri and (project.root is None or project.root not in other_path.parents):
                continue
            snapshot[other.uri] = (other_path, other.version, other.source)
        with self._collection_held():
            await self._check_and_publish(document, project, path, snapshot)

    @contextmanager
    def _collection_held(self):
        """No cyclic garbage collection from a check's start until its diagnostics are out: a
        check pauses it (`checker.collection_paused`), and the first collection after it walks
        everything the check made (25-35 ms after an edit of the bench's 2,000-line model
        file), so it runs after the publish instead. Held on the event loop's thread only,
        counted for overlapping checks."""
        if self._collection_holds == 0:
            self._collection_was_enabled = gc.isenabled()
            gc.disable()
        self._collection_holds += 1
        try:
            yield
        finally:
            self._collection_holds -= 1
            if self._collection_holds == 0 and self._collection_was_enabled:
                gc.enable()

    async def _check_and_publish(self, document, project: _Project, path: Path, snapshot: dict) -> None:
        loop = asyncio.get_running_loop()
        try:
            findings = await loop.run_in_executor(self._executor, self._run_check, project, path, snapshot)
        except Exception as error:
            # Say so on every document of the check: old diagnostics would be a silent lie.
            self.report_failure(f"checking {document.uri} failed: {type(error).__name__}: {error}", traceback.format_exc())
            for other_uri, (_path, version, text) in snapshot.items():
                current = self.open_document(other_uri)
                if current is not None and current.version == version:
                    self.publish_failure(other_uri, version, text, error)
            return
        for other_uri, (other_path, version, text) in snapshot.items():
            current = self.open_document(other_uri)
            if current is None or current.version != version:
                continue  # edited meanwhile: a newer check is on its way
            self._publish(other_uri, version, text, findings.get(other_path, []))
        # The check's cache entries are written now, after its diagnostics, and what it did
        # not use is dropped: on the checks' thread, so before the next check (which flushes
        # the writes itself where this comes later).
        self._executor.submit(self._after_check)

    def _after_check(self) -> None:
        for kept in list(self._kept.values()):
            kept.parses.keep_used()
            kept.inputs.end()
            kept.cache.end()
        self._flush_caches()

    def _flush_caches(self) -> None:
        self._write_caches(lambda cache: cache.flush())

    def _write_caches(self, write) -> None:
        for kept in list(self._kept.values()):
            try:
                write(kept.cache)
            except Exception as error:  # a cache that cannot be written is no error of the check
                logger.info("trace-lint: writing the cache failed: %s: %s", type(error).__name__, error)

    def kept_for(self, project: _Project) -> "_Kept":
        """What checks of this project keep between them; made anew where the cache folder
        moved (a config edit)."""
        folder = cache_folder(project.settings)
        kept = self._kept.get(project.root)
        if kept is None or kept.cache.folder != folder:
            if kept is not None:
                kept.cache.write_kept_facts()
            parses = KeptParses()
            kept = self._kept[project.root] = _Kept(parses, KeptInputs(), KeptResultCache(folder, parses))
        return kept

    def forget_files(self) -> None:
        """The editor says files changed on disk (or settings did): read everything again.
        Parses are kept: they are keyed by the text they were made from. Done on the checks'
        thread (what is kept is theirs), before any check scheduled after this."""

        def forget() -> None:
            for kept in list(self._kept.values()):
                kept.inputs.forget()

        self._executor.submit(forget)

    def _run_check(self, project: _Project, path: Path, snapshot: dict) -> dict[Path, list[Finding]]:
        sources = {p: text for p, _version, text in snapshot.values()}
        # The open buffers are the named files of a whole-program run (as `check FILE ...`):
        # the analysis sees the project, and what is reported is located in them (the same
        # as a run over the whole project filtered to them: tests/test_split_property.py),
        # which is all that is published. Named files are always parsed (a syntax error shows).
        # The project's result cache, as the CLI keeps it: an edit that no capture reads
        # reuses the last analysis (cache.AnalysisRecord) and costs a parse of that file.
        # What does not change with the buffers is kept between checks (lsp/kept.py).
        kept = self.kept_for(project)
        cache = kept.cache if project.root is not None else None
        kept.inputs.begin(project.settings)
        with kept.parses:  # what the check did not use is dropped after the publish (_after_check)
            result = check(list(sources), project.settings, sources=sources, cache=cache, whole_program=project.root is not None, root=project.root, inputs=kept.inputs)
        if not self._frozen and any(kept.parses.sizes() or ()):
            # After the first check that parsed: what it keeps (the project's parses) is moved
            # out of the collector's sight for good, so later collections walk only what is new.
            self._frozen = True
            gc.collect()
            gc.freeze()
        if result.errors:
            logger.info("trace-lint: %s", "; ".join(result.errors))
        excluded = self._excluded({p for p, _version, _text in snapshot.values()}, project.settings)
        by_path: dict[Path, list[Finding]] = {}
        for finding in result.findings:
            finding_path = Path(os.path.abspath(finding.filename)).resolve()
            if finding_path not in excluded:
                by_path.setdefault(finding_path, []).append(finding)
        return by_path

    @staticmethod
    def _excluded(paths: set[Path], settings: Settings) -> set[Path]:
        """Open files that the configured excludes leave out, as `check --force-exclude` does."""
        on_disk = [p for p in paths if p.is_file()]
        kept = {f.resolve() for f in discover(on_disk, settings, force_exclude=True).files}
        return {p for p in on_disk if p not in kept}

    def publish_failure(self, uri: str, version: Optional[int], text: str, error: BaseException) -> None:
        """Replace a document's diagnostics with one that says its check failed."""
        diagnostic = types.Diagnostic(
            range=types.Range(start=types.Position(0, 0), end=types.Position(0, 1)),
            severity=types.DiagnosticSeverity.Error,
            source=SOURCE,
            message=f"trace-lint could not check this file (internal error: {type(error).__name__}: {error}); "
            "its findings are unknown. The server log has the traceback.",
        )
        self._deliver(uri, _Checked(version, text, [], [diagnostic]))

    def _publish(self, uri: str, version: Optional[int], text: str, findings: list[Finding]) -> None:
        lines = split_lines(text)
        diagnostics = [self.diagnostic(finding, lines) for finding in findings]
        self._deliver(uri, _Checked(version, text, findings, diagnostics))

    def _deliver(self, uri: str, checked: _Checked) -> None:
        """Keep what a check found for the document, and push it unless the client pulls."""
        previous = self.checked.get(uri)
        if previous is not None and previous.diagnostics == checked.diagnostics and previous.text == checked.text:
            checked.result_id = previous.result_id
        else:
            checked.result_id = str(next(self._result_ids))
        self.checked[uri] = checked
        if not self.pulls_diagnostics():
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, version=checked.version, diagnostics=checked.diagnostics))
        elif previous is None or previous.result_id != checked.result_id:
            self._changed_since_pull.add(uri)

    def pulls_diagnostics(self) -> bool:
        """The client asks for diagnostics (`textDocument/diagnostic`): pushing them as well
        would show each one twice."""
        capabilities = self.client_capabilities
        return bool(capabilities and capabilities.text_document and capabilities.text_document.diagnostic)

    def refresh_pulled(self) -> None:
        """Ask a pulling client to pull again: a check may change the findings of other open
        documents (a callee's edit changes its callers' chains)."""
        if not self._changed_since_pull:
            return
        self._changed_since_pull.clear()
        capabilities = self.client_capabilities
        workspace = capabilities.workspace if capabilities else None
        if workspace and workspace.diagnostics and workspace.diagnostics.refresh_support:
            self.workspace_diagnostic_refresh(None)

    def current(self, uri: str) -> Optional[_Checked]:
        """What the last check found, if it checked the document's current version."""
        checked = self.checked.get(uri) or self.checked.get(unquote(uri))
        document = self.open_document(uri)
        if checked is None or document is None or document.version != checked.version:
            return None
        return checked

    async def pull(self, params: types.DocumentDiagnosticParams) -> types.DocumentDiagnosticReport:
        uri = params.text_document.uri
        checked = self.current(uri)
        if checked is None and self.open_document(uri) is not None and self.is_python(uri):
            pending = self._pending.get(uri)
            if pending is not None and not pending.done():
                await asyncio.wait([pending])  # the debounced check on its way (or cancelled by a newer edit)
                checked = self.current(uri)
            if checked is None:
                await self.check_document(uri)
                checked = self.current(uri)
            self._changed_since_pull.discard(uri)  # this answer brings it
            self.refresh_pulled()
        if checked is None:
            return types.RelatedFullDocumentDiagnosticReport(items=[])
        if params.previous_result_id is not None and params.previous_result_id == checked.result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=checked.result_id)
        return types.RelatedFullDocumentDiagnosticReport(items=checked.diagnostics, result_id=checked.result_id)

    # -- hover -----------------------------------------------------------------------------
    def hover(self, params: types.HoverParams) -> Optional[types.Hover]:
        """The docs of the rule of each diagnostic under the cursor."""
        from ..rules import rule_for

        checked = self.current(params.text_document.uri)
        if checked is None:
            return None
        at = (params.position.line, params.position.character)
        under = [d for d in checked.diagnostics if _contains(d.range, at)]
        docs: list[str] = []
        for diagnostic in under:
            rule = rule_for(str(diagnostic.code)) if diagnostic.code else None
            text = rule.docs().rstrip("\n") if rule is not None else None
            if text and text not in docs:
                docs.append(text)
        if not docs:
            return None
        capabilities = self.client_capabilities
        hover = capabilities.text_document.hover if capabilities and capabilities.text_document else None
        formats = hover.content_format if hover else None
        kind = types.MarkupKind.Markdown if not formats or types.MarkupKind.Markdown in formats else types.MarkupKind.PlainText
        return types.Hover(contents=types.MarkupContent(kind=kind, value="\n\n---\n\n".join(docs)), range=under[0].range)

    # -- conversion ------------------------------------------------------------------------
    def lines_of(self, filename: str) -> Optional[list[str]]:
        path = Path(os.path.abspath(filename)).resolve()
        for uri in list(self.workspace.text_documents):
            document = self.open_document(uri)
            if document is not None and self.document_path(document.uri) == path:
                return split_lines(document.source)
        try:
            return split_lines(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            return None

    def lsp_range(self, lines: Optional[Sequence[str]], start: tuple[int, int], end: tuple[int, int]) -> types.Range:
        return lsp_range(lines, start, end, self.encoding())

    def diagnostic(self, finding: Finding, lines: Sequence[str]) -> types.Diagnostic:
        start = (finding.location.row, finding.location.column)
        end = (finding.end_location.row, finding.end_location.column)
        if end <= start:  # a point (a parse error): underline one character so editors show it
            end = (start[0], start[1] + 1)
        related = []
        for step in self._chain_steps(finding):
            step_lines = lines if Path(os.path.abspath(step.filename)).resolve() == Path(os.path.abspath(finding.filename)).resolve() else self.lines_of(step.filename)
            position = (step.location.row, step.location.column)
            related.append(
                types.DiagnosticRelatedInformation(
                    location=types.Location(
                        uri=from_fs_path(str(Path(os.path.abspath(step.filename)).resolve())) or step.filename,
                        range=self.lsp_range(step_lines, position, position),
                    ),
                    message=step.message,
                )
            )
        return types.Diagnostic(
            range=self.lsp_range(lines, start, end),
            severity=_SEVERITY.get(finding.severity, types.DiagnosticSeverity.Error),
            code=finding.code,
            code_description=types.CodeDescription(href=finding.url) if finding.url else None,
            source=SOURCE,
            message=finding.message,
            related_information=related or None,
        )

    @staticmethod
    def _chain_steps(finding: Finding) -> list[Related]:
        """Every call chain back to a capture site, outermost first, each step once."""
        steps: list[Related] = []
        for chain in finding.chains or [finding.related]:
            for step in chain:
                if step not in steps:
                    steps.append(step)
        return steps

    def text_edit(self, lines: Sequence[str], edit: Edit) -> types.TextEdit:
        return text_edit(lines, edit, self.encoding())

    def workspace_edit(self, uri: str, version: Optional[int], edits: list[types.TextEdit]) -> types.WorkspaceEdit:
        capabilities = self.client_capabilities
        versioned = bool(
            capabilities.workspace
            and capabilities.workspace.workspace_edit
            and capabilities.workspace.workspace_edit.document_changes
        )
        if versioned:
            # The client drops the edit if the document changed since it was checked.
            identifier = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
            return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=identifier, edits=edits)])
        return types.WorkspaceEdit(changes={uri: edits})

    # -- code actions ----------------------------------------------------------------------
    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        checked = self.current(uri)
        if checked is None:
            return []  # positions would be stale; the next check brings fresh ones
        only = params.context.only
        actions: list[types.CodeAction] = []
        if _asked_for(only, FIX_ALL_KIND):
            fix_all = self.fix_all_action(uri, checked)
            if fix_all is not None:
                actions.append(fix_all)
        if not _asked_for(only, types.CodeActionKind.QuickFix.value):
            return actions
        wanted = params.range
        lines = split_lines(checked.text)
        for finding, diagnostic in zip(checked.findings, checked.diagnostics):
            if not _overlaps(diagnostic.range, wanted) and not _listed(diagnostic, params.context.diagnostics):
                continue
            if finding.fix is not None and finding.fix.applicability != "display-only":
                edits = [self.text_edit(lines, edit) for edit in finding.fix.edits]
                actions.append(
                    types.CodeAction(
                        title=f"Fix {finding.code}: {finding.fix.message}",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        is_preferred=finding.fix.applicability == "safe",
                        edit=self.workspace_edit(uri, checked.version, edits),
                    )
                )
            if finding.code in NOT_SUPPRESSIBLE:
                continue
            noqa = suppression_edit(checked.text, finding)
            if noqa is not None:
                actions.append(
                    types.CodeAction(
                        title=f"Suppress {finding.code} on this line",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        edit=self.workspace_edit(uri, checked.version, [self.text_edit(lines, noqa)]),
                    )
                )
        return actions

    def fix_all_action(self, uri: str, checked: _Checked) -> Optional[types.CodeAction]:
        """One edit that applies every safe fix of the document, as `check --fix` would."""
        fixable = [f for f in checked.findings if wanted(f.fix, unsafe=False)]
        if not fixable:
            return None
        fixed, count = apply_fixes(checked.text, fixable, unsafe=False)
        if not count or fixed == checked.text:
            return None
        lines = split_lines(checked.text)
        end = (len(lines), len(lines[-1]) + 1) if lines else (1, 1)
        whole = types.TextEdit(range=self.lsp_range(lines, (1, 1), end), new_text=fixed)
        return types.CodeAction(
            title=f"Fix all trace-lint findings with a safe fix ({count})",
            kind=FIX_ALL_KIND,
            diagnostics=[d for f, d in zip(checked.findings, checked.diagnostics) if f in fixable],
            edit=self.workspace_edit(uri, checked.version, [whole]),
        )


def _asked_for(only: Optional[Sequence[str]], kind: str) -> bool:
    """A code action kind the request asks for: all when `only` is absent, else a listed kind
    or one it refines (`source` asks for `source.fixAll.trace-lint`)."""
    if not only:
        return True
    return any(kind == str(asked) or kind.startswith(f"{asked}.") for asked in only)


def _contains(span: types.Range, at: tuple[int, int]) -> bool:
    return (span.start.line, span.start.character) <= at <= (span.end.line, span.end.character)


def lsp_range(lines: Optional[Sequence[str]], start: tuple[int, int], end: tuple[int, int], encoding: str = "utf-16") -> types.Range:
    """1-based (row, code-point column) pairs -> an LSP range in the client's units."""
    if lines is None:  # the file cannot be read: columns stay code points
        return types.Range(
            start=types.Position(line=max(start[0] - 1, 0), character=max(start[1] - 1, 0)),
            end=types.Position(line=max(end[0] - 1, 0), character=max(end[1] - 1, 0)),
        )
    first = to_client(lines, *start, encoding)
    last = to_client(lines, *end, encoding)
    return types.Range(start=types.Position(*first), end=types.Position(*max(first, last)))


def text_edit(lines: Sequence[str], edit: Edit, encoding: str = "utf-16") -> types.TextEdit:
    start = (edit.location.row, edit.location.column)
    end = (edit.end_location.row, edit.end_location.column)
    return types.TextEdit(range=lsp_range(lines, start, end, encoding), new_text=edit.content)


def _overlaps(a: types.Range, b: types.Range) -> bool:
    # By line: editors ask with the cursor's position, and the actions are about lines.
    return a.start.line <= b.end.line and b.start.line <= a.end.line


def _listed(diagnostic: types.Diagnostic, sent: Sequence[types.Diagnostic]) -> bool:
    return any(
        d.source == SOURCE and d.code == diagnostic.code and d.range == diagnostic.range for d in sent or ()
    )


def create_server(debounce: float = DEBOUNCE_SECONDS) -> TraceLintServer:
    server = TraceLintServer(debounce=debounce)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TraceLintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TraceLintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, ls.debounce)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: TraceLintServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if unquote(uri).endswith(("pyproject.toml", "trace-lint.toml")):
            _recheck_all(ls)  # the settings may have changed
        else:
            ls.forget_files()  # what is on disk changed: kept reads would be checked by stat anyway
            ls.schedule(uri, 0)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: TraceLintServer, params: None) -> None:
        # On the checks' thread, after any check in flight; the reply waits for the writes.
        ls._executor.submit(ls._drop_kept).result()

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TraceLintServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(ls: TraceLintServer, params: types.DidChangeConfigurationParams) -> None:
        _recheck_all(ls)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: TraceLintServer, params: types.DidChangeWatchedFilesParams) -> None:
        _recheck_all(ls)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND], resolve_provider=False),
    )
    def code_action(ls: TraceLintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return ls.code_actions(params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: TraceLintServer, params: types.HoverParams) -> Optional[types.Hover]:
        return ls.hover(params)

    @server.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        # A document's findings depend on other files (calls into them, their captures).
        types.DiagnosticOptions(identifier=SOURCE, inter_file_dependencies=True, workspace_diagnostics=False),
    )
    async def diagnostic(ls: TraceLintServer, params: types.DocumentDiagnosticParams) -> types.DocumentDiagnosticReport:
        return await ls.pull(params)

    return server


def _recheck_all(ls: TraceLintServer) -> None:
    ls._shown_errors.clear()
    ls.forget_files()
    for uri in list(ls.workspace.text_documents):
        if ls.is_python(uri):
            ls.schedule(uri, 0)


def start() -> None:
    """Serve on stdin/stdout until the client says exit, through the framing layer that
    survives malformed messages (pygls' own reader does not)."""
    debounce = os.environ.get("TRACE_LINT_LSP_DEBOUNCE")
    serve_stdio(create_server(float(debounce) if debounce else DEBOUNCE_SECONDS))
