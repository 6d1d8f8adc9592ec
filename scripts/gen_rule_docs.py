"""Regenerate docs/rules.md (and its copy the package ships, trace_lint/data/rules.md) and
README.md's rule table from the rule classes, or with --check fail if any is stale.

    python scripts/gen_rule_docs.py          # rewrite docs/rules.md
    python scripts/gen_rule_docs.py --check  # exit 1 if docs/rules.md differs from the code
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from trace_lint.docs import render, with_readme_table  # noqa: E402

OUT = ROOT / "docs" / "rules.md"
SHIPPED = ROOT / "trace_lint" / "data" / "rules.md"
README = ROOT / "README.md"


def main(argv: list[str]) -> int:
    text = render()
    readme = README.read_text(encoding="utf-8") if README.is_file() else None
    if "--check" in argv:
        stale = [page for page in (OUT, SHIPPED) if not page.is_file() or page.read_text(encoding="utf-8") != text]
        if readme is not None and with_readme_table(readme) != readme:
            stale.append(README)
        for path in stale:
            print(f"{path.relative_to(ROOT)} is out of date: run python scripts/gen_rule_docs.py", file=sys.stderr)
        return 1 if stale else 0
    for page in (OUT, SHIPPED):
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(text, encoding="utf-8", newline="\n")
        print(f"wrote {page.relative_to(ROOT)}")
    if readme is not None:
        README.write_text(with_readme_table(readme), encoding="utf-8", newline="\n")
        print(f"wrote {README.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
