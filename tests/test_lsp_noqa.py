"""The "suppress on this line" edit: applied to real findings, it must silence exactly the
finding it was made for, and never break the code."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap

import pytest

from trace_lint.report.suppression_edits import suppression_edit
from trace_lint.lsp.positions import from_client, split_lines, to_client

from .conftest import findings_for


def capture(body: str) -> str:
    return textwrap.dedent(
        """\
        import ttnn


        def run(device, x, t):
            tid = ttnn.begin_trace_capture(device, cq_id=0)
            try:
        {body}
            finally:
                ttnn.end_trace_capture(device, tid, cq_id=0)
            return y
        """
    ).format(body=textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8))


def apply(text: str, edit) -> str:
    lines = split_lines(text)
    row = edit.location.row
    assert edit.end_location.row == row
    line = lines[row - 1]
    lines[row - 1] = line[: edit.location.column - 1] + edit.content + line[edit.end_location.column - 1 :]
    return "\n".join(lines)


def suppress_all(text: str, tmp_path, code: str) -> str:
    """Suppress every `code` finding through the edit, one at a time, as a user would."""
    for _ in range(10):
        targets = [f for f in findings_for(text, tmp_path) if f.code == code]
        if not targets:
            return text
        edit = suppression_edit(text, targets[0])
        assert edit is not None, f"no edit for {targets[0]}"
        text = apply(text, edit)
        ast.parse(text)  # still Python
    raise AssertionError("suppressions did not converge")


@pytest.mark.parametrize(
    "body, expected",
    [
        ("y = ttnn.to_torch(x)", "y = ttnn.to_torch(x)  # noqa: TRC102"),
        ("y = ttnn.to_torch(x)   ", "y = ttnn.to_torch(x)  # noqa: TRC102"),
        ("y = ttnn.to_torch(x)  # noqa: E501", "y = ttnn.to_torch(x)  # noqa: E501, TRC102"),
        ("y = ttnn.to_torch(x)  # noqa:E501,W291  # why", "y = ttnn.to_torch(x)  # noqa:E501,W291, TRC102  # why"),
        ("y = ttnn.to_torch(x)  # trace-lint: ignore[TRC101]", "y = ttnn.to_torch(x)  # trace-lint: ignore[TRC101, TRC102]"),
        ("y = ttnn.to_torch(x)  # type: ignore", "y = ttnn.to_torch(x)  # type: ignore  # noqa: TRC102"),
        ('y = ttnn.to_torch(x); s = "# noqa: E501"', 'y = ttnn.to_torch(x); s = "# noqa: E501"  # noqa: TRC102'),
        ('y = ttnn.to_torch(x); s = f"{t} # noqa: E501"', 'y = ttnn.to_torch(x); s = f"{t} # noqa: E501"  # noqa: TRC102'),
    ],
)
def test_suppression_text(body, expected, tmp_path):
    text = capture(body)
    [finding] = [f for f in findings_for(text, tmp_path) if f.code == "TRC102"]
    fixed = apply(text, suppression_edit(text, finding))
    assert fixed.splitlines()[6] == "        " + expected
    assert not [f for f in findings_for(fixed, tmp_path) if f.code == "TRC102"]


def test_multi_line_call_gets_the_comment_on_its_first_line(tmp_path):
    text = capture(
        """
        y = ttnn.from_torch(
            t,
            device=device,
        )
        """
    )
    fixed = suppress_all(text, tmp_path, "TRC101")
    assert fixed.splitlines()[6].endswith("ttnn.from_torch(  # noqa: TRC101")


def test_backslash_continuation_is_left_alone(tmp_path):
    text = capture(
        """
        y = ttnn.to_torch(x) + \\
            1
        """
    )
    [finding] = [f for f in findings_for(text, tmp_path) if f.code == "TRC102"]
    assert finding.location.row == 7
    assert suppression_edit(text, finding) is None  # a comment there would swallow the backslash


def test_a_line_ending_inside_a_string_takes_no_comment(tmp_path):
    text = capture(
        '''
        y = ttnn.to_torch(x, note="""first
        second""")
        '''
    )
    [finding] = [f for f in findings_for(text, tmp_path) if f.code == "TRC102"]
    assert suppression_edit(text, finding) is None
    formatted = text.replace('note="""first', 'note=f"""{t} first')
    [finding] = [f for f in findings_for(formatted, tmp_path) if f.code == "TRC102"]
    assert suppression_edit(formatted, finding) is None


def test_finding_in_a_callee_body(tmp_path):
    # The first statement of a function body: the comment goes on that statement's line.
    text = textwrap.dedent(
        """\
        import ttnn


        def step(x):
            return ttnn.to_torch(x)


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
    fixed = suppress_all(text, tmp_path, "TRC102")
    assert fixed.splitlines()[4] == "    return ttnn.to_torch(x)  # noqa: TRC102"
    assert fixed.splitlines()[3] == "def step(x):"


def test_positions_round_trip_in_every_encoding():
    lines = split_lines('a = "é😀x"; b = 1\r\nnext\rlast')
    assert lines == ['a = "é😀x"; b = 1', "next", "last"]
    expected = {"utf-16": 9, "utf-8": 12, "utf-32": 8}  # the closing quote, after é and 😀
    for encoding, character in expected.items():
        assert to_client(lines, 1, 9, encoding) == (0, character)
        assert from_client(lines, 0, character, encoding) == (1, 9)
    assert to_client(lines, 9, 1) == (2, 4)  # past the end: the end of the text


def test_lsp_command_without_the_extra_explains_itself():
    # Block pygls as if the extra were not installed.
    code = "import sys; sys.modules['pygls'] = None; sys.argv = ['trace-lint', 'lsp']; from trace_lint.cli import main; main()"
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert completed.returncode == 2
    assert "trace-lint[lsp]" in completed.stderr
