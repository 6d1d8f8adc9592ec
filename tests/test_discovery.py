"""File discovery agrees with git: the repository root's .gitignore and .git/info/exclude
apply whichever folder is named, nested .gitignore files and `!` re-includes work as in git,
and a linked work tree shares the main repository's exclude file."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from trace_lint.frontend.discovery import discover
from trace_lint.core.config import Settings

FILES = (
    "src/model.py",
    "src/generated/ops.py",
    "src/local_scratch.py",
    "src/sub/keep.skip.py",
    "src/sub/drop.skip.py",
    "src/sub/deep/other.skip.py",
    "src/b.skip.py",
    "tools/run.py",
)


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git("init", "-q", ".", cwd=root)
    for name in FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x = 1\n", encoding="utf-8")
    (root / ".gitignore").write_text("src/generated/\n*.skip.py\n", encoding="utf-8")
    (root / "src" / "sub" / ".gitignore").write_text("!keep.skip.py\n", encoding="utf-8")
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("src/local_*.py\n", encoding="utf-8")
    return root


def git_untracked(root: Path, folder: str) -> set[str]:
    """What git itself reports as untracked and not ignored under `folder`."""
    listed = git("ls-files", "--others", "--exclude-standard", "--", folder, cwd=root)
    return {line for line in listed.splitlines() if line.endswith(".py")}


def found(root: Path, folder: str, monkeypatch) -> set[str]:
    monkeypatch.chdir(root)
    result = discover([Path(folder)], Settings(root=root))
    assert not result.errors
    return {Path(p).as_posix().removeprefix("./") for p in result.files}


@pytest.mark.parametrize("folder", [".", "src", "src/sub"])
def test_discovery_equals_git_for_any_named_folder(repo, folder, monkeypatch):
    expected = git_untracked(repo, folder)
    assert "src/model.py" in expected or folder == "src/sub"
    assert found(repo, folder, monkeypatch) == expected
    # The root's rules apply when a subfolder is named (they did only for `.` before).
    assert not any(name.startswith("src/generated/") or "local_" in name for name in found(repo, folder, monkeypatch))


def test_named_subfolder_from_inside_it(repo, monkeypatch):
    monkeypatch.chdir(repo / "src")
    result = discover([Path(".")], Settings(root=repo))
    assert sorted(Path(p).as_posix() for p in result.files) == ["model.py", "sub/keep.skip.py"]


def test_linked_work_tree_uses_the_main_repository_exclude(repo, tmp_path, monkeypatch):
    git("add", "-A", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "init", cwd=repo)
    linked = tmp_path / "linked"
    git("worktree", "add", "-q", str(linked), cwd=repo)
    assert (linked / ".git").is_file()
    (linked / "src" / "local_other.py").write_text("x = 1\n", encoding="utf-8")
    (linked / "src" / "new.py").write_text("x = 1\n", encoding="utf-8")
    assert git_untracked(linked, "src") == {"src/new.py"}
    assert "src/local_other.py" not in found(linked, "src", monkeypatch)
    assert "src/new.py" in found(linked, "src", monkeypatch)


def test_outside_a_repository_gitignore_applies_from_the_named_folder(tmp_path, monkeypatch):
    (tmp_path / "pkg" / "out").mkdir(parents=True)
    (tmp_path / "pkg" / ".gitignore").write_text("out/\n", encoding="utf-8")
    (tmp_path / "pkg" / "out" / "x.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "pkg" / "y.py").write_text("x = 1\n", encoding="utf-8")
    assert found(tmp_path, "pkg", monkeypatch) == {"pkg/y.py"}


def test_display_paths_are_what_relpath_gives(tmp_path, monkeypatch):
    # `display_path` skips `os.path.relpath` for a path already relative and plain: the
    # shortcut must give what relpath gives, for every shape of path.
    import os

    from trace_lint.frontend.discovery import display_path

    monkeypatch.chdir(tmp_path)
    inside = str(tmp_path)
    shapes = ["a/b.py", "./a/b.py", "a/./b.py", "a/../b.py", "../x/y.py", "a//b.py", "b.py", ".", "..", str(tmp_path / "a.py"), str(tmp_path.parent / "x.py"), "/"]
    # Absolute: inside the working folder, plain or not, the folder itself, and a sibling
    # folder whose name starts with the working folder's.
    shapes += [inside + "/a/b.py", inside + "/a/./b.py", inside + "/a/../b.py", inside + "//a.py", inside + "/a//b.py", inside, inside + "/", inside + "x/a.py", inside + "/../" + tmp_path.name + "/a.py"]
    for folder in (tmp_path, Path("/")):
        monkeypatch.chdir(folder)
        for shape in [*shapes, "/a/b.py", "/a/./b.py", "//a.py"]:
            for path in (Path(shape), shape):
                assert display_path(path) == os.path.relpath(path), (folder, shape)
