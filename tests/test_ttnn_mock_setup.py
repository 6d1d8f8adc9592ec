"""The ttnn mock-device setup lives in the repository: scripts/setup_ttnn_mock.sh and
scripts/ttnn_mock/ name nothing outside it, and the setup says why and exports nothing
where it cannot build the mock (so the ttnn tests skip instead of failing)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SETUP = ROOT / "scripts" / "setup_ttnn_mock.sh"
MOCK = ROOT / "scripts" / "ttnn_mock"

bash = shutil.which("bash")
pytestmark = pytest.mark.skipif(bash is None, reason="needs bash")


def test_the_mock_files_are_in_the_repository():
    for name in ("riscv-tt-elf-g++", "kernel.S", "blackhole_p150_mock.yaml"):
        assert (MOCK / name).is_file(), name
    assert os.access(MOCK / "riscv-tt-elf-g++", os.X_OK)
    assert os.access(SETUP, os.X_OK)


def test_the_setup_names_no_path_outside_the_repository():
    outside = re.compile(r"\.\.[/]shared|[/](work|root|home|opt|tmp)[/]")
    for path in [SETUP, *sorted(MOCK.iterdir())]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            assert not outside.search(line), f"{path.relative_to(ROOT)}:{number}: {line.strip()}"


def test_the_scripts_parse():
    for path in (SETUP, MOCK / "riscv-tt-elf-g++"):
        result = subprocess.run([bash, "-n", str(path)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr


def test_without_python_3_12_the_setup_exports_nothing_and_says_why(tmp_path):
    env = {"PATH": str(tmp_path / "empty-bin") + os.pathsep + os.path.dirname(bash) + os.pathsep + "/usr/bin:/bin",
           "PYTHON312": str(tmp_path / "no-such-python3.12"), "HOME": str(tmp_path)}
    result = subprocess.run([bash, str(SETUP), str(tmp_path / "venv")], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0
    assert result.stdout == ""  # nothing for `eval` to export: the ttnn tests skip
    assert "no Python 3.12" in result.stderr and "will be skipped" in result.stderr
    assert not (tmp_path / "venv").exists()


def test_the_compiler_stand_in_answers_like_the_real_one(tmp_path):
    stand_in = MOCK / "riscv-tt-elf-g++"
    version = subprocess.run([str(stand_in), "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("riscv-tt-elf-g++")
    out, deps = tmp_path / "k.o", tmp_path / "k.d"
    compiled = subprocess.run([str(stand_in), "-c", "kernel.cpp", "-o", str(out), "-MF", str(deps)], capture_output=True)
    assert compiled.returncode == 0 and out.read_bytes() == b"" and deps.read_text() == f"{out}:\n"
    header = subprocess.run([str(stand_in), "-x", "c++-header", "pch.hpp", "-o", str(tmp_path / "pch")], capture_output=True)
    assert header.returncode != 0  # precompiled headers fail; ttnn only warns
