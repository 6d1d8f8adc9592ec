"""What a rule is: one class with visitor methods, its docs and its examples (as in Fixit).

A rule sees captured code through `visit_<NodeType>` methods called by the engine, and
whole regions or the whole project through `check_region` / `check_project`. It reads the
analysis through `self.facts` (the whole program) and `self.context` (the unit visited),
both in `capture/facts.py`, never the engine. It reports with `self.report(node, message)`
and knows nothing about output formats.
"""

from __future__ import annotations

import inspect
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, ClassVar, Optional

import libcst as cst

from ..core import registry

if TYPE_CHECKING:
    from ..capture.facts import ProgramFacts, RuleContext
    from ..core.findings import Fix
    from ..frameworks.region import Region
    from ..semantic.project import ModuleInfo


@dataclass(frozen=True)
class Valid:
    """Code on which the rule must stay silent."""

    code: str

    @property
    def source(self) -> str:
        return textwrap.dedent(self.code).strip("\n") + "\n"


@dataclass(frozen=True)
class Invalid:
    """Code on which the rule must report exactly on `lines` (1-based; a line twice for two findings on it)."""

    code: str
    lines: tuple[int, ...]

    @property
    def source(self) -> str:
        return textwrap.dedent(self.code).strip("\n") + "\n"


class Rule:
    code: ClassVar[str]
    # From the registry (`core/registry.py`) by `code`: name, summary, help, severity, whether
    # it runs by default and whether it offers a fix.
    name: ClassVar[str]
    summary: ClassVar[str]
    help: ClassVar[str] = ""
    severity: ClassVar[str] = "error"
    default_enabled: ClassVar[bool] = True
    # Which captured code the visit_* methods see: the framing code lexically in a region,
    # the captured work reached through calls or declared, or both.
    sees_lexical: ClassVar[bool] = True
    sees_work: ClassVar[bool] = True
    # The rules whose findings win over this one's where both report the same thing
    # (`core/registry.py`'s `wins_over`; set by `rules/__init__`): the engine runs them too.
    overruled_by: ClassVar[tuple[type["Rule"], ...]] = ()
    # Families TRC1-TRC3 are silent inside first-use cache blocks.
    silent_in_first_use_cache: ClassVar[bool] = False
    VALID: ClassVar[list[Valid]] = []
    INVALID: ClassVar[list[Invalid]] = []
    fix_availability: ClassVar[str] = "none"
    # The fix, for the docs: what it does and when it is safe (for "none": why there is none).
    fix_docs: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        spec = registry.BY_CODE.get(cls.__dict__.get("code", ""))
        if spec is not None:
            cls.name, cls.summary, cls.help = spec.name, spec.summary, spec.help
            cls.severity, cls.default_enabled, cls.fix_availability = spec.severity, spec.default_enabled, spec.fix_availability

    # Filled by the engine for each unit of captured code it visits.
    context: "RuleContext"

    def __init__(self, reporter: Callable[..., None], facts: "ProgramFacts"):
        self._reporter = reporter
        # The whole-program facts: regions, calls, effects, names, modules.
        self.facts = facts

    def report(self, node: cst.CSTNode, message: str, *, module: Optional["ModuleInfo"] = None, fix: Optional["Fix"] = None, chain: Optional[list] = None, covers: Optional[cst.CSTNode] = None) -> None:
        """Report at `node`; `fix`: the edits that resolve it (see trace_lint.report.fixes);
        `chain`: steps (`Related`) from the node down to what it does (a helper's free);
        `covers`: what the finding is about, where the rules it wins over stay silent
        (`wins_over` in the registry)."""
        context = getattr(self, "context", None)
        if context is not None and self.silent_in_first_use_cache and context.in_first_use_cache:
            return
        extra = {}
        if chain:
            extra["chain"] = chain
        if covers is not None:
            extra["covers"] = covers
        self._reporter(self, node, message, module or (context.module if context else None), context, fix=fix, **extra)

    def report_at(self, module: "ModuleInfo", line: int, column: int, message: str) -> None:
        """Report at a position rather than a node (a file that did not parse)."""
        self.facts.report_at(self, module, line, column, message)

    # Hooks for rules that look at a whole region or the whole project.
    def check_region(self, region: "Region") -> None:  # pragma: no cover - default does nothing
        pass

    def check_project(self) -> None:  # pragma: no cover - default does nothing
        pass

    # -- docs ------------------------------------------------------------------------------
    @classmethod
    def docs(cls) -> str:
        """The rule's documentation in ruff's shape, from its docstring and examples."""
        body = inspect.cleandoc(cls.__doc__ or "")
        parts = [f"# {cls.name} ({cls.code})", "", body.strip()]
        if not cls.default_enabled:
            parts += ["", f"This rule is opt-in: enable it with `--select {cls.code}`."]
        parts += ["", "## Fix", cls.fix_text()]
        if cls.INVALID:
            parts += ["", "## Example", "```python", cls.INVALID[0].source.rstrip("\n"), "```"]
        if cls.VALID:
            parts += ["", "## Use instead", "```python", cls.VALID[0].source.rstrip("\n"), "```"]
        return "\n".join(parts) + "\n"

    @classmethod
    def fix_text(cls) -> str:
        """The docs' fix section: whether a fix is available, what it does, when it is safe."""
        availability = {
            "always": "Fix is always available.",
            "sometimes": "Fix is sometimes available.",
            "none": "No automatic fix.",
        }[cls.fix_availability]
        details = inspect.cleandoc(cls.fix_docs) if cls.fix_docs else (
            "What to write instead depends on what the code is for (see the example below). "
            f"Where the code is intended, suppress the finding with `# noqa: {cls.code}`; "
            "`trace-lint check --add-noqa` adds one at every finding."
        )
        return f"{availability}\n\n{details}"

    @classmethod
    def explanation(cls, heading: str) -> str:
        """One section of the docstring ("What it does", "Why is this bad?")."""
        text = inspect.cleandoc(cls.__doc__ or "")
        sections: dict[str, list[str]] = {}
        current = None
        for line in text.splitlines():
            if line.startswith("## "):
                current = line[3:].strip().rstrip("?")
                sections[current] = []
            elif current is not None:
                sections[current].append(line)
        return "\n".join(sections.get(heading.rstrip("?"), [])).strip()

    @classmethod
    def visitors(cls) -> dict[type, Callable]:
        """Map from libcst node type to this rule's visit method."""
        table = {}
        for attribute in dir(cls):
            if attribute.startswith("visit_"):
                node_type = getattr(cst, attribute[len("visit_"):], None)
                if isinstance(node_type, type):
                    table[node_type] = getattr(cls, attribute)
        return table
