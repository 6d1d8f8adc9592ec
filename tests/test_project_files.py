"""What a user's clone relies on: a LICENSE that matches pyproject, pre-commit snippets that
name only revisions that exist, rule anchors for every link, the `slow` marker on the long
tests, and no file of the package, tests or docs naming a path outside the repository."""

from __future__ import annotations

import re
import subprocess
import sys

from trace_lint import __version__
from trace_lint.rules import ALL_RULES

from .cli_helpers import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def test_license_is_the_apache_2_text_pyproject_declares():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["license"] == "Apache-2.0"
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text.splitlines()[0] and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)


def test_pre_commit_snippets_name_no_revision_that_does_not_exist():
    revisions = []
    for page in [REPO / "README.md", *(REPO / "docs").glob("*.md")]:
        revisions += re.findall(r"^\s*rev:\s*(\S+)", page.read_text(encoding="utf-8"), re.M)
    assert revisions, "the pre-commit snippet is gone"
    for revision in revisions:
        if revision.startswith("<"):
            continue  # a placeholder the reader fills in, explained beside it
        if revision == f"v{__version__}":
            # This release's tag, made when it is released: the version and its changelog
            # entry are what the tag will name.
            assert f"## [{__version__}]" in (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
            continue
        if _git("rev-parse", "--git-dir").returncode != 0:
            continue  # an unpacked archive: nothing to compare with
        assert _git("rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}").returncode == 0, revision


def test_every_rule_has_the_anchor_its_links_point_at():
    text = (REPO / "docs" / "rules.md").read_text(encoding="utf-8")
    for rule in ALL_RULES:
        assert f'<a id="{rule.code.lower()}"></a>' in text


def test_property_tests_carry_the_slow_marker():
    from . import test_property

    marks = test_property.pytestmark if isinstance(test_property.pytestmark, list) else [test_property.pytestmark]
    assert "slow" in {mark.name for mark in marks}
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert any(marker.startswith("slow:") for marker in pyproject["tool"]["pytest"]["ini_options"]["markers"])


CACHE_FOLDERS = {".trace-lint-cache", "__pycache__", ".pytest_cache", ".hypothesis"}


def test_no_path_outside_the_repository():
    outside = re.compile(r"\.\.[/]shared|[/]work[/]")
    offenders = []
    for folder in ("trace_lint", "tests", "docs"):
        for path in (REPO / folder).rglob("*"):
            if CACHE_FOLDERS.intersection(path.relative_to(REPO).parts):
                continue  # what runs of the tests and of trace-lint leave, not the repository's
            if path.suffix in (".py", ".md", ".toml", ".json") and path.is_file():
                for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                    if outside.search(line):
                        offenders.append(f"{path.relative_to(REPO)}:{number}")
    for name in ("README.md", "pyproject.toml"):
        if outside.search((REPO / name).read_text(encoding="utf-8")):
            offenders.append(name)
    assert not offenders, offenders
