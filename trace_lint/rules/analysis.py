"""TRC0xx: findings about the analysis itself."""

from __future__ import annotations

from .base import Invalid, Rule, Valid


class UnparsableFile(Rule):
    """
    ## What it does
    Reports a file that cannot be parsed: a syntax error, bytes that do not decode in the
    file's encoding, a NUL byte, or nesting past what Python's own parser accepts (more than
    200 levels of brackets, more than 99 levels of indentation; these are measured before
    any other parser sees the file, so no input can crash the run). The rest of the project
    is still checked. Code that Python parses is never reported here.

    ## Why is this bad?
    Nothing in a file that does not parse can be checked, so its captures and the code they
    call go unexamined. Fix the file, or exclude it if it is not Python.
    """

    code = "TRC001"
    fix_docs = """
        Only the author knows what the file should say. This finding cannot be suppressed
        with a comment: exclude the file (`exclude`, `extend-exclude`) if it is not meant to
        be Python.
    """

    INVALID = [
        Invalid(
            """
            import ttnn

            def capture(device, x:
                tid = ttnn.begin_trace_capture(device)
            """,
            lines=(3,),
        )
    ]
    VALID = [
        Valid(
            """
            import ttnn

            def capture(device, x):
                tid = ttnn.begin_trace_capture(device)
                try:
                    y = ttnn.relu(x)
                finally:
                    ttnn.end_trace_capture(device, tid)
                return y
            """
        )
    ]

    def check_project(self) -> None:
        for module in self.facts.modules:
            if module.parse_error is not None:
                message, line, column = module.parse_error
                self.report_at(module, line, column, message)


class UnusedSuppression(Rule):
    """
    ## What it does
    Reports a suppression comment that suppresses nothing (`# noqa: TRC101` on a line
    with no TRC101 finding, an `ignore[...]` or a `disable[...]` range that matches
    nothing), or that names a TRC code that does not exist. Also one that does nothing as
    written: a misspelt code (`# noqa: trc102` in lower case, `TRC1O2` with a letter O),
    or a file-level `# trace-lint: noqa` after the first statement or after code on its
    line. Codes of other tools (`# noqa: E501`) and a bare `# noqa` are left alone: they
    may be for another linter.

    ## Why is this bad?
    A stale suppression hides the next real finding on that line, and a misspelt code
    suppresses nothing while looking as if it does.
    """

    code = "TRC002"
    fix_docs = """
        The fix takes the unused and unknown codes out of the comment (`# noqa: TRC101,
        TRC102` -> `# noqa: TRC101`), and the whole directive when no code is left, keeping
        any other comment on the line. It is always safe: a comment changes nothing the
        program computes. A `disable[...]` range is not edited (its `enable` would no longer
        match); correct or remove it by hand.
    """

    INVALID = [
        Invalid(
            """
            import ttnn

            def prepare(device, host):
                return ttnn.from_torch(host, device=device)  # noqa: TRC101
            """,
            lines=(4,),
        ),
        Invalid(
            """
            import ttnn

            def capture(device, x):
                x(device)
                tid = ttnn.begin_trace_capture(device)  # noqa: TRC401, TRC999
                y = x(device)
                ttnn.end_trace_capture(device, tid)
                return y
            """,
            lines=(5,),
        ),
    ]
    VALID = [
        Valid(
            """
            import ttnn

            def capture(device, x):
                x(device)
                tid = ttnn.begin_trace_capture(device)  # noqa: TRC401  # ends in the caller's finally
                y = x(device)
                ttnn.end_trace_capture(device, tid)
                return y
            """
        )
    ]


RULES = [UnparsableFile, UnusedSuppression]
