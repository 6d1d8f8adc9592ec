"""Suppression comments: `# noqa`, `# trace-lint: ignore[...]`, `disable[...]`/`enable[...]`,
and a file-level `# trace-lint: noqa` (every code) or `# trace-lint: noqa: CODE, ...`. Applied to findings after the rules ran."""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Iterable, Optional

import libcst as cst

from ..core.findings import Finding, Location
from ..core.lines import split_lines
from ..semantic.project import ModuleInfo
from ..frontend.syntax_walk import preorder

from .comments import CODE, DIRECTIVE, NOQA
from .suppression_edits import unused_suppression_fix


@dataclass
class Suppression:
    line: int
    column: int
    kind: str  # "noqa" | "ignore" | "disable" | "enable" | "file" | "malformed"
    codes: Optional[list[str]]  # None: every code
    end_line: Optional[int] = None  # for disable ranges
    used: set[str] = field(default_factory=set)
    # Why a suppression does nothing as written ("malformed": a misspelt code, a misplaced
    # file-level directive); reported as TRC002, never applied.
    problem: Optional[str] = None

    def matches(self, code: str) -> Optional[str]:
        if self.codes is None:
            return "*"
        for selector in self.codes:
            if code.startswith(selector):
                return selector
        return None


def _code_list(text: str) -> list[str]:
    """`TRC101, TRC203  # why` -> [TRC101, TRC203]: the list ends at the first non-code."""
    codes = []
    for token in re.split(r"[,\s]+", text.strip()):
        if not token:
            continue
        if not CODE.match(token):
            break
        codes.append(token)
    return codes


# A token meant as a TRC code but not one: lower case, or a letter O / I / l for a digit.
_LOOKS_LIKE_CODE = re.compile(r"^trc[0-9oil]{0,3}$", re.IGNORECASE)
_DIGIT_FOR = str.maketrans({"O": "0", "I": "1", "L": "1"})


def _malformed_codes(text: str) -> list[tuple[str, str]]:
    """(token, the code it was likely meant to be) for each token of a code list that reads
    as a TRC code but is not one; the list ends at the first token that is neither."""
    found = []
    for token in re.split(r"[,\s]+", text.strip()):
        if not token:
            continue
        if CODE.match(token):
            continue
        if not _LOOKS_LIKE_CODE.match(token):
            break
        found.append((token, token.upper().translate(_DIGIT_FOR)))
    return found


def _malformed_message(problems: list[tuple[str, str]], directive: str) -> str:
    parts = []
    for token, meant in problems:
        if token.upper() == meant:
            parts.append(f"`{token}` is not a code (codes are upper case: `{meant}`)")
        else:
            parts.append(f"`{token}` is not a code (a letter where a digit belongs: `{meant}`?)")
    return f"malformed {directive}: " + "; ".join(parts) + ", so it suppresses nothing"


def _lines(text: str) -> list[str]:
    """Lines as Python counts them: `str.splitlines` also splits at form feeds and other
    separators, which do not end a line in source code."""
    lines = split_lines(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _comments(text: str) -> list[tuple[int, int, str, bool]]:
    """(line, column, comment, alone on its line) for every comment token."""
    out = []
    lines = _lines(text)
    try:
        # newline=None: lines end at \r\n, \r or \n, as Python reads source.
        for token in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            if token.type == tokenize.COMMENT:
                line, column = token.start
                alone = line - 1 >= len(lines) or lines[line - 1][:column].strip() == ""
                out.append((line, column + 1, token.string, alone))
    except (tokenize.TokenError, SyntaxError, IndentationError, RecursionError, MemoryError):
        pass
    return out


def parse_suppressions(module: ModuleInfo, text: Optional[str] = None) -> list[Suppression]:
    if text is None:
        text = module.text
    if "noqa" not in text.lower() and "trace-lint" not in text:
        return []
    first_code_line = _first_code_line(module)
    lines = _lines(text)
    result: list[Suppression] = []
    open_disables: list[Suppression] = []
    for line, column, comment, alone in _comments(text):
        for match in DIRECTIVE.finditer(comment):
            verb = match.group("verb").lower()
            codes = _code_list(match.group("codes")) if match.group("codes") is not None else None
            if match.group("codes") is not None:
                bad = _malformed_codes(match.group("codes"))
                if bad:
                    result.append(Suppression(line, column, "malformed", [], problem=_malformed_message(bad, f"`# trace-lint: {verb}[...]`")))
            if verb == "noqa":
                listed = re.match(r"\s*:\s*(?P<codes>.*)", comment[match.end():])
                if listed is not None and match.group("codes") is None:
                    bad = _malformed_codes(listed.group("codes"))
                    if bad:
                        result.append(Suppression(line, column, "malformed", [], problem=_malformed_message(bad, "`# trace-lint: noqa:`")))
                if alone and (first_code_line is None or line < first_code_line):
                    # `# trace-lint: noqa: TRC102` (or `noqa[TRC102]`): that code, file-wide.
                    if listed is not None and codes is None:
                        codes = _code_list(listed.group("codes")) or None
                    result.append(Suppression(line, column, "file", codes))
                else:
                    where = "after the first statement" if alone else "after code on its line"
                    result.append(Suppression(line, column, "malformed", [], problem=(
                        f"file-level `# trace-lint: noqa` {where} has no effect: it must stand alone "
                        "on a line before the first statement (use `# noqa: CODE` for one line)")))
                continue
            if verb == "ignore":
                result.append(Suppression(line, column, "ignore", codes))
            elif verb == "disable":
                suppression = Suppression(line, column, "disable", codes, end_line=len(lines) + 1)
                result.append(suppression)
                open_disables.append(suppression)
            elif verb == "enable":
                for disable in reversed(open_disables):
                    if codes is None or disable.codes is None or set(codes) & set(disable.codes):
                        disable.end_line = line
                        open_disables.remove(disable)
                        break
        for match in NOQA.finditer(comment):
            if comment[: match.start()].rstrip().endswith(":") and "trace-lint" in comment[: match.start()]:
                continue  # `# trace-lint: noqa`, handled above
            codes = _code_list(match.group("codes")) if match.group("colon") else None
            bad = _malformed_codes(match.group("codes")) if match.group("colon") else []
            if bad:
                result.append(Suppression(line, column, "malformed", [], problem=_malformed_message(bad, "`# noqa:`")))
            result.append(Suppression(line, column, "noqa", codes))
    return result


def suppression_facts(module: ModuleInfo) -> tuple[Optional[int], dict[int, int]]:
    """What suppressions need from the parse tree, small enough to send between processes."""
    return _first_code_line(module), statement_first_lines(module)


def install_suppression_facts(module: ModuleInfo, facts: tuple[Optional[int], dict[int, int]]) -> None:
    """Give a module facts computed elsewhere, so that suppressions need no parse here."""
    module._first_code_line = facts[0]  # type: ignore[attr-defined]
    module._statement_lines = facts[1]  # type: ignore[attr-defined]


def _first_code_line(module: ModuleInfo) -> Optional[int]:
    """The first line of code that is not a docstring or an import."""
    if hasattr(module, "_first_code_line"):
        return module._first_code_line  # type: ignore[attr-defined]
    module.load()
    if module.has_outline:
        return module.outline_facts[0]
    tree = module.tree
    if tree is None:
        return None
    for index, statement in enumerate(tree.body):
        if isinstance(statement, cst.SimpleStatementLine):
            small = statement.body
            if all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in small):
                continue
            if index == 0 and len(small) == 1 and isinstance(small[0], cst.Expr) and isinstance(small[0].value, (cst.SimpleString, cst.ConcatenatedString)):
                continue
        return module.start(statement)[0]
    return None


def statement_first_lines(module: ModuleInfo) -> dict[int, int]:
    """For lines inside multi-line statements: the statement's first line (noqa_row)."""
    cached = getattr(module, "_statement_lines", None)
    if cached is not None:
        return cached
    mapping: dict[int, int] = {}
    module.load()
    if module.has_outline:
        mapping = module.outline_facts[1]
    elif module.tree is not None:
        for node in preorder(module.tree):
            code_range = module.positions.get(node)
            if code_range is None:
                continue
            if isinstance(node, cst.SimpleStatementLine):
                start, end = code_range.start.line, code_range.end.line
            elif isinstance(node, (cst.If, cst.While, cst.For, cst.With, cst.FunctionDef, cst.ClassDef, cst.Match)):
                start = code_range.start.line
                if isinstance(node, cst.Match):
                    # No body: the header ends before the first `case`.
                    end = module.positions[node.cases[0]].start.line - 1 if node.cases else start
                    if end > start:
                        for line in range(start + 1, end + 1):
                            mapping.setdefault(line, start)
                    continue
                body = node.body
                # An indented body starts on a later line: the header ends before its first statement.
                if isinstance(body, cst.IndentedBlock) and body.body:
                    end = module.positions[body.body[0]].start.line - 1
                else:
                    end = module.positions[body].start.line
            else:
                continue
            if end > start:
                for line in range(start + 1, end + 1):
                    mapping.setdefault(line, start)
    module._statement_lines = mapping  # type: ignore[attr-defined]
    return mapping


def apply_suppressions(
    module: ModuleInfo,
    findings: list[Finding],
    known_codes: Iterable[str],
    enabled_codes: set[str],
    unused_code: str,
    unused_message,
    text: Optional[str] = None,
) -> list[Finding]:
    """The findings that survive, plus unused-suppression findings for this file. `text`: the
    module's source when it is not to be parsed here (facts installed from a worker)."""
    suppressions = parse_suppressions(module, text)
    first_lines = statement_first_lines(module)
    for finding in findings:
        if finding.noqa_row is None:
            finding.noqa_row = first_lines.get(finding.location.row, finding.location.row)
    if not suppressions:
        return findings
    kept = []
    for finding in findings:
        lines = {finding.location.row, finding.noqa_row}
        suppressed = False
        for suppression in suppressions:
            if suppression.kind == "file":
                hit = suppression.matches(finding.code)
            elif suppression.kind in ("noqa", "ignore"):
                hit = suppression.matches(finding.code) if suppression.line in lines else None
            elif suppression.kind == "disable":
                hit = suppression.matches(finding.code) if suppression.line <= finding.location.row < (suppression.end_line or 0) else None
            else:
                hit = None
            if hit is not None:
                suppression.used.add(hit)
                suppressed = True
        if not suppressed:
            kept.append(finding)
    if unused_code not in enabled_codes:
        return kept
    known = set(known_codes)
    lines: Optional[list[str]] = None
    for suppression in suppressions:
        if suppression.problem is not None:
            location = Location(suppression.line, suppression.column)
            kept.append(Finding(code=unused_code, message=suppression.problem, filename=module.display_path,
                                location=location, end_location=location, noqa_row=suppression.line))
            continue
        if suppression.kind == "enable" or suppression.codes is None:
            continue
        unknown = [c for c in suppression.codes if c.startswith("TRC") and not any(k.startswith(c) for k in known)]
        unused = [
            c for c in suppression.codes
            if c.startswith("TRC") and c not in unknown and c not in suppression.used
            and any(k.startswith(c) and k in enabled_codes for k in known) and not unused_code.startswith(c)
        ]
        if unknown or unused:
            if lines is None:
                lines = split_lines(text if text is not None else module.text)
            line = lines[suppression.line - 1] if suppression.line <= len(lines) else ""
            location = Location(suppression.line, suppression.column)
            kept.append(
                Finding(
                    code=unused_code,
                    message=unused_message(unknown, unused),
                    filename=module.display_path,
                    location=location,
                    end_location=location,
                    noqa_row=suppression.line,
                    fix=unused_suppression_fix(line, suppression.line, suppression.column, suppression.kind, [*unknown, *unused]),
                )
            )
    return kept
