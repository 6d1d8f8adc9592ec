#!/usr/bin/env python3
"""Re-create the real-code corpus (TT-NN and CUDA-graph users from PyPI) for hand audits.

Usage: scripts/fetch_corpus.py [CORPUS_DIR] [--only NAME ...] [--torch-from DIR]

Each package lands unpacked in CORPUS_DIR/<name>/ with only its Python sources kept;
CORPUS_DIR/manifest.json records name, version, file and Python-file counts, or why a
package was skipped. Nothing is installed or imported: wheels are unzipped, sdists untarred.
The corpus is never committed (the default folder is outside the repository).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

# (name to show, PyPI requirement). TT-NN users are pinned (the audit note classifies their
# findings one by one); the CUDA-graph users float to the newest wheel, recorded in the manifest.
PACKAGES: list[tuple[str, str]] = [
    ("tt-bio", "tt-bio==0.23.0"),
    ("tt-symbiote", "tt-symbiote==0.1.6"),
    ("tt-check", "tt-check==0.1.3"),
    ("vllm", "vllm"),
    ("sglang", "sglang"),
    ("megatron-core", "megatron-core"),
    ("nemo-toolkit", "nemo-toolkit"),
    # The framework Python code (transformer_engine/pytorch, graph.py) ships in this pure
    # wheel; transformer-engine-torch is only the compiled extension's sdist.
    ("transformer-engine", "transformer-engine"),
    ("lmdeploy", "lmdeploy"),
    ("flashinfer-python", "flashinfer-python"),
    ("deepspeed", "deepspeed"),
    # Smaller packages that capture (`begin_trace_capture(`, `torch.cuda.graph(`), first
    # measured at stop 21.
    ("torch-ttnn", "torch-ttnn"),
    ("tt-wavelet", "tt-wavelet"),
    ("faster-qwen3-tts", "faster-qwen3-tts"),
    ("breakable-cuda-graphs", "breakable-cuda-graphs"),
    ("piecewise-cuda-graphs", "piecewise-cuda-graphs"),
    ("gpuopt-runtime", "gpuopt-runtime"),
    ("moss-tts-lite", "moss-tts-lite"),
    ("flashspec", "flashspec"),
    ("qwen3-tts-streaming", "qwen3-tts-streaming"),
    ("torch-cudagraph-debug", "torch-cudagraph-debug"),
]
# Published as sdists only (an old pre-release wheel would otherwise win the wheel pass).
SDIST_ONLY = {"deepspeed"}

# Wheels are fetched for a platform, not installed; try the versions some packages require.
PYTHON_VERSIONS = ["3.11", "3.12", "3.10"]
PLATFORMS = [
    "manylinux_2_35_x86_64",
    "manylinux_2_31_x86_64",
    "manylinux_2_28_x86_64",
    "manylinux2014_x86_64",
    "linux_x86_64",
]
KEEP_SUFFIXES = (".py", ".pyi")
# Corpora 2 and up ("N req req ..." lines); corpus 1 is PACKAGES above.
CORPORA_FILE = Path(__file__).with_name("corpora.txt")
SDIST_ONLY |= {"mamba-ssm", "flash-attn"}


def corpus_packages(number: int) -> list[tuple[str, str]]:
    if number == 1:
        return PACKAGES
    for line in CORPORA_FILE.read_text().splitlines():
        fields = line.split()
        if fields and fields[0] == str(number):
            return [(req.split("==")[0], req) for req in fields[1:]]
    raise SystemExit(f"no corpus {number} in {CORPORA_FILE}")


def corpus_numbers() -> list[int]:
    """1 (PACKAGES above) and every number that starts a line of corpora.txt."""
    numbers = {1}
    for line in CORPORA_FILE.read_text().splitlines():
        fields = line.split()
        if fields and fields[0].isdigit():
            numbers.add(int(fields[0]))
    return sorted(numbers)


def pip_download(requirement: str, dest: Path, log: list[str], sdist_only: bool) -> Path | None:
    """Download one wheel (or, failing that, the sdist) without dependencies; return its path."""
    base = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(dest)]
    platform_flags = [flag for plat in PLATFORMS for flag in ("--platform", plat)]
    attempts = [] if sdist_only else [
        base + ["--only-binary=:all:", "--python-version", version, *platform_flags, requirement]
        for version in PYTHON_VERSIONS
    ]
    # Last resort: an sdist. pip prepares its metadata, which may need the build deps
    # (no isolation: the running Python's torch serves setup scripts that import it).
    attempts.append(base + ["--no-binary=:all:", "--no-build-isolation", requirement])
    # WITH_CUDA=0: setup scripts that refuse to prepare metadata without a CUDA install
    # (stable-fast) prepare it on this CPU-only machine; nothing is built.
    env = {**os.environ, "WITH_CUDA": "0"}
    for command in attempts:
        result = subprocess.run(command, capture_output=True, text=True, timeout=1800, env=env)
        files = sorted(dest.iterdir())
        if result.returncode == 0 and files:
            return files[0]
        log.append(result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "no output")
        for leftover in files:
            leftover.unlink()
    return None


def version_of(archive: Path) -> str:
    name = archive.name
    if name.endswith(".whl"):
        return name.split("-")[1]
    stem = name.removesuffix(".tar.gz").removesuffix(".zip")
    return stem.rsplit("-", 1)[-1]


def unpack_python_sources(archive: Path, target: Path) -> None:
    """Extract only .py/.pyi members (the analyzer reads nothing else; keeps the corpus small)."""
    target.mkdir(parents=True, exist_ok=True)
    if archive.name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                if member.endswith(KEEP_SUFFIXES):
                    zf.extract(member, target)
    else:
        with tarfile.open(archive) as tf:
            members = [m for m in tf.getmembers() if m.isfile() and m.name.endswith(KEEP_SUFFIXES)]
            tf.extractall(target, members=members, filter="data")


def copy_python_tree(source: Path, target: Path) -> None:
    for path in source.rglob("*"):
        if path.is_file() and path.suffix in KEEP_SUFFIXES and "__pycache__" not in path.parts:
            out = target / path.relative_to(source.parent)
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, out)


def count_python_files(target: Path) -> int:
    return sum(1 for p in target.rglob("*.py") if p.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", default="/tmp/trace-lint-corpus", type=Path)
    parser.add_argument("--only", nargs="*", help="fetch only these package names")
    parser.add_argument(
        "--torch-from",
        type=Path,
        help="an installed torch package folder to copy as the 'torch' entry (default: the "
        "torch importable by this Python, located without importing it)",
    )
    parser.add_argument(
        "--corpus", type=int, choices=corpus_numbers(), dest="number",
        help="fetch corpus N into CORPUS_DIR/corpusN/ (default: corpus 1 into CORPUS_DIR)",
    )
    args = parser.parse_args()
    corpus: Path = args.corpus.resolve()
    if args.number is not None:
        corpus = corpus / f"corpus{args.number}"
    corpus.mkdir(parents=True, exist_ok=True)
    manifest_path = corpus / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}

    wanted = set(args.only) if args.only else None
    for name, requirement in corpus_packages(args.number or 1):
        if wanted is not None and name not in wanted:
            continue
        target = corpus / name
        if target.exists():
            shutil.rmtree(target)
        log: list[str] = []
        with tempfile.TemporaryDirectory() as tmp:
            try:
                archive = pip_download(requirement, Path(tmp), log, name in SDIST_ONLY)
            except subprocess.TimeoutExpired:
                archive, log = None, ["pip download timed out"]
            if archive is None:
                manifest[name] = {"requirement": requirement, "skipped": " | ".join(log)}
                print(f"{name}: SKIPPED ({log[-1] if log else 'unknown'})", flush=True)
                continue
            unpack_python_sources(archive, target)
            manifest[name] = {
                "requirement": requirement,
                "version": version_of(archive),
                "archive": archive.name,
                "python_files": count_python_files(target),
            }
        print(f"{name}: {manifest[name]['version']} ({manifest[name]['python_files']} .py)", flush=True)

    if (args.number or 1) == 1 and (wanted is None or "torch" in wanted):
        torch_dir = args.torch_from
        if torch_dir is None:
            import importlib.util

            spec = importlib.util.find_spec("torch")  # locates, does not import
            torch_dir = Path(spec.origin).parent if spec and spec.origin else None
        if torch_dir is not None and torch_dir.is_dir():
            target = corpus / "torch"
            if target.exists():
                shutil.rmtree(target)
            copy_python_tree(torch_dir, target)
            dist = sorted(torch_dir.parent.glob("torch-*.dist-info"))
            version = dist[0].name.removeprefix("torch-").removesuffix(".dist-info") if dist else "?"
            manifest["torch"] = {
                "requirement": "installed torch",
                "version": version,
                "archive": str(torch_dir),
                "python_files": count_python_files(target),
            }
            print(f"torch: {version} ({manifest['torch']['python_files']} .py)", flush=True)
        else:
            manifest["torch"] = {"requirement": "installed torch", "skipped": "no torch found"}
            print("torch: SKIPPED (no torch found; pass --torch-from)", flush=True)

    manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
