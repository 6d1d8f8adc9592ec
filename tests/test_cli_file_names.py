"""Odd file names through every output format (issue 25): names that are not UTF-8, control
characters, the characters each format escapes. Every format must write every name, in
valid UTF-8, escaped where the name is not printable (`\\xNN`, as Python's backslashreplace),
and SARIF must still point at the file's own bytes."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import unquote_to_bytes

import pytest

from trace_lint.output import FORMAT_NAMES

from .cli_helpers import CAPTURE_READING_HOST, run_cli

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="names as bytes are a POSIX file system's")

FIXED_NAMES = [
    b"caf\xe9.py",  # latin-1: the name of the crash report
    b"\xff\xfe.py",
    b"\xed\xa0\x80surrogate.py",  # an encoded surrogate is not UTF-8 either
    b"has space.py",
    b"comma,colon:.py",  # separators of the github format's properties
    b"percent%41.py",
    b"[brackets].py",
    b"\xe4\xb8\xad\xe6\x96\x87.py",  # CJK, valid UTF-8
    b"emoji\xf0\x9f\x98\x80.py",
    b"combining e\xcc\x81.py",
    b"-dash.py",
    b"quote\"'.py",
    b"amp&<>.py",
    b"back\\slash.py",
    b"new\nline.py",
    b"tab\t.py",
    b"cr\r.py",
    b"line\xe2\x80\xa8separator.py",  # U+2028: str.splitlines ends a line there
    b"#hash.py",
]


def random_names(count: int, seed: int) -> list[bytes]:
    """Names of random bytes (any but `/` and NUL), seeded so that a failure reproduces."""
    rng = random.Random(seed)
    allowed = [b for b in range(1, 256) if b not in (ord("/"), ord("."))]
    return [bytes(rng.choice(allowed) for _ in range(rng.randint(1, 12))) + b".py" for _ in range(count)]


NAMES = FIXED_NAMES + random_names(24, seed=25)


def expected_name(raw: bytes) -> str:
    """How output writes a name: UTF-8 as it is, other bytes and control characters as `\\xNN`."""
    text = raw.decode("utf-8", "backslashreplace")
    return re.sub("[\x00-\x1f\x7f-\x9f\u2028\u2029]", lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("odd-names")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for raw in NAMES:
        with open(os.path.join(os.fsencode(root), raw), "wb") as handle:
            handle.write(CAPTURE_READING_HOST.encode("utf-8"))
    return root


def reported_names(name: str, text: str) -> list[str]:
    """The file names a format's output gives, one per finding."""
    if name in ("json", "gitlab"):
        items = json.loads(text)
        return [item["filename"] if name == "json" else item["location"]["path"] for item in items]
    if name == "json-lines":
        return [json.loads(line)["filename"] for line in text.splitlines()]
    if name == "rdjson":
        return [d["location"]["path"] for d in json.loads(text)["diagnostics"]]
    if name == "junit":
        return [case.get("file") for case in ET.fromstring(text).iter("testcase")]
    if name == "github":
        found = []
        for line in text.splitlines():
            properties = line.split("::")[1].split(" ", 1)[1]
            value = dict(p.split("=", 1) for p in properties.split(","))["file"]
            found.append(value.replace("%3A", ":").replace("%2C", ",").replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%"))
        return found
    if name == "pylint":
        return [line.rsplit(":7: [TRC102]", 1)[0] for line in text.splitlines()]
    if name == "concise":
        return [line.rsplit(":7:13:", 1)[0] for line in text.splitlines() if ":7:13: TRC102" in line]
    if name == "full":
        return [line.rsplit(":7:13:", 1)[0] for line in text.splitlines() if ":7:13: TRC102" in line]
    if name == "grouped":
        return [line[:-1] for line in text.splitlines() if line.endswith(":") and not line.startswith(" ")]
    raise AssertionError(f"no reader for the {name} format in this test")


@pytest.mark.parametrize("name", [n for n in FORMAT_NAMES if n != "sarif"])
def test_every_format_writes_every_odd_name(project, name):
    result = run_cli("check", "--no-cache", "--output-format", name, ".", cwd=project)
    assert result.returncode == 1, result.stderr.decode("utf-8", "replace")
    text = result.stdout.decode("utf-8")  # strict: the output is valid UTF-8
    assert sorted(reported_names(name, text)) == sorted(expected_name(raw) for raw in NAMES)


def test_sarif_uris_carry_each_names_own_bytes(project):
    result = run_cli("check", "--no-cache", "--output-format", "sarif", ".", cwd=project)
    assert result.returncode == 1, result.stderr.decode("utf-8", "replace")
    log = json.loads(result.stdout.decode("utf-8"))
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]]
    assert all(uri.isascii() for uri in uris)
    assert sorted(unquote_to_bytes(uri) for uri in uris) == sorted(NAMES)


def test_show_files_writes_odd_names_escaped(project):
    result = run_cli("check", "--show-files", ".", cwd=project)
    assert result.returncode == 0, result.stderr.decode("utf-8", "replace")
    listed = result.stdout.decode("utf-8").splitlines()
    assert sorted(listed) == sorted(expected_name(raw) for raw in NAMES)
