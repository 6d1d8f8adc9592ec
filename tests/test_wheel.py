"""The release: `python -m build` makes a wheel and an sdist from a copy of the repository;
the wheel, installed into a fresh virtual environment (its dependencies from the package
index), runs the CLI, `trace-lint rule`, the language server and the pytest plugin with no
file of the checkout in reach. Rule links from it point at the page the wheel ships, or at
the documentation URL of its metadata."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

from trace_lint import __version__
from trace_lint.core.rule_links import SHIPPED_RULES_PAGE
from trace_lint.docs import render

from .cli_helpers import CAPTURE_READING_HOST, REPO

pytestmark = pytest.mark.slow

# Copying the checkout leaves out what no release holds (and what is large).
NOT_IN_A_RELEASE = shutil.ignore_patterns(".git", "*.egg-info", "build", "dist", "__pycache__", ".venv*", ".*cache*", ".hypothesis", "generated")


def _run(*command: str | Path, cwd: Path, env: dict | None = None, timeout: float = 600, input: bytes | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, timeout=timeout, input=input)
    return result


def _clean_env(**extra: str) -> dict:
    """The environment with nothing that points Python at the checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "COLUMNS", "TRACE_LINT"))}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("release")
    source = base / "source"
    shutil.copytree(REPO, source, ignore=NOT_IN_A_RELEASE, symlinks=True)
    dist = base / "dist"
    built = _run(sys.executable, "-m", "build", "--outdir", dist, source, cwd=base, env=_clean_env())
    assert built.returncode == 0, built.stdout.decode()[-3000:] + built.stderr.decode()[-3000:]
    wheels = sorted(dist.glob("*.whl"))
    sdists = sorted(dist.glob("*.tar.gz"))
    assert [w.name for w in wheels] == [f"trace_lint-{__version__}-py3-none-any.whl"]
    assert [s.name for s in sdists] == [f"trace_lint-{__version__}.tar.gz"]

    venv = base / "venv"
    made = _run(sys.executable, "-m", "venv", venv, cwd=base)
    assert made.returncode == 0, made.stderr.decode()
    python = venv / "bin" / "python"
    installed = _run(python, "-m", "pip", "install", "-q", f"{wheels[0]}[lsp]", "pytest", cwd=base, env=_clean_env())
    assert installed.returncode == 0, installed.stdout.decode()[-3000:] + installed.stderr.decode()[-3000:]
    work = base / "work"  # outside the checkout, so nothing there can be imported by accident
    work.mkdir()
    return {"wheel": wheels[0], "sdist": sdists[0], "venv": venv, "python": python, "work": work}


def _site_packages(release: dict) -> Path:
    out = _run(release["python"], "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=release["work"], env=_clean_env())
    return Path(out.stdout.decode().strip())


def test_the_wheel_and_sdist_hold_the_rule_docs_and_data_tables(release):
    names = set(zipfile.ZipFile(release["wheel"]).namelist())
    for shipped in ("trace_lint/data/rules.md", "trace_lint/data/api.toml", "trace_lint/data/ttnn_ops.toml", "trace_lint/lsp/server.py", "trace_lint/entry.py"):
        assert shipped in names
    metadata = zipfile.ZipFile(release["wheel"]).read(f"trace_lint-{__version__}.dist-info/entry_points.txt").decode()
    assert "trace-lint = trace_lint.entry:main" in metadata
    assert "trace_lint = trace_lint.runtime_guard.pytest_plugin" in metadata
    with tarfile.open(release["sdist"]) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    for shipped in ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "trace_lint/data/rules.md"):
        assert shipped in members


def test_the_installed_package_is_the_wheel_not_the_checkout(release):
    out = _run(release["python"], "-c", "import trace_lint; print(trace_lint.__file__)", cwd=release["work"], env=_clean_env())
    location = Path(out.stdout.decode().strip()).resolve()
    assert release["venv"].resolve() in location.parents
    assert REPO.resolve() not in location.parents


def test_cli_checks_a_file_and_links_to_the_shipped_rule_docs(release):
    work = release["work"]
    (work / "model.py").write_text(CAPTURE_READING_HOST, encoding="utf-8")
    cli = release["venv"] / "bin" / "trace-lint"
    version = _run(cli, "--version", cwd=work, env=_clean_env())
    assert version.returncode == 0 and version.stdout.decode() == f"trace-lint {__version__}\n"
    result = _run(cli, "check", "model.py", "--output-format", "json", "--no-cache", cwd=work, env=_clean_env())
    assert result.returncode == 1, result.stderr.decode()
    [finding] = json.loads(result.stdout)
    assert finding["code"] == "TRC102"
    page = _site_packages(release) / "trace_lint" / "data" / "rules.md"
    assert finding["url"] == f"{page.as_uri()}#trc102"
    assert '<a id="trc102"></a>' in page.read_text(encoding="utf-8")


def test_rule_links_follow_the_documentation_url_of_the_package_metadata(release):
    work = release["work"]
    (work / "model.py").write_text(CAPTURE_READING_HOST, encoding="utf-8")
    [metadata] = _site_packages(release).glob(f"trace_lint-{__version__}.dist-info/METADATA")
    original = metadata.read_text(encoding="utf-8")
    try:
        # As `[project.urls] Documentation = "..."` writes it into the metadata.
        metadata.write_text(original.replace("\nName: ", "\nProject-URL: Documentation, https://docs.example.org/trace-lint/\nName: ", 1), encoding="utf-8")
        cli = release["venv"] / "bin" / "trace-lint"
        result = _run(cli, "check", "model.py", "--output-format", "json", "--no-cache", cwd=work, env=_clean_env())
        [finding] = json.loads(result.stdout)
        assert finding["url"] == "https://docs.example.org/trace-lint/rules.md#trc102"
        sarif = json.loads(_run(cli, "check", "model.py", "--output-format", "sarif", "--no-cache", cwd=work, env=_clean_env()).stdout)
        driver = sarif["runs"][0]["tool"]["driver"]
        assert driver["informationUri"] == "https://docs.example.org/trace-lint/rules.md"
        assert {r["helpUri"] for r in driver["rules"] if r["id"] == "TRC102"} == {"https://docs.example.org/trace-lint/rules.md#trc102"}
    finally:
        metadata.write_text(original, encoding="utf-8")


def test_rule_command_prints_the_docs(release):
    result = _run(release["venv"] / "bin" / "trace-lint", "rule", "TRC102", cwd=release["work"], env=_clean_env())
    assert result.returncode == 0, result.stderr.decode()
    assert "(TRC102)" in result.stdout.decode()


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class _StdioClient:
    """A minimal LSP client over the server's stdin and stdout."""

    def __init__(self, command: list, cwd: Path, env: dict) -> None:
        self.process = subprocess.Popen([str(c) for c in command], cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def send(self, message: dict) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(_frame({"jsonrpc": "2.0", **message}))
        self.process.stdin.flush()

    def receive(self) -> dict:
        stream = self.process.stdout
        assert stream is not None
        length = None
        while True:
            line = stream.readline()
            assert line, "the server closed its output: " + self.process.stderr.read().decode()[-2000:]
            if line in (b"\r\n", b"\n"):
                break
            name, _colon, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        assert length is not None
        return json.loads(stream.read(length))

    def wait_for(self, accept, limit: float = 120) -> dict:
        deadline = time.monotonic() + limit  # a server that never answers fails, not hangs
        while time.monotonic() < deadline:
            message = self.receive()
            if accept(message):
                return message
        raise AssertionError("no such message from the server")


def test_language_server_from_the_wheel_initializes_and_publishes(release):
    work = release["work"]
    (work / "pyproject.toml").write_text("[tool.trace-lint]\n", encoding="utf-8")
    client = _StdioClient([release["venv"] / "bin" / "trace-lint", "lsp"], work, _clean_env(TRACE_LINT_LSP_DEBOUNCE="0"))
    try:
        client.send({"id": 1, "method": "initialize", "params": {"processId": None, "rootUri": work.as_uri(), "capabilities": {}}})
        answer = client.wait_for(lambda m: m.get("id") == 1)
        assert answer["result"]["serverInfo"] == {"name": "trace-lint", "version": __version__}
        capabilities = answer["result"]["capabilities"]
        assert capabilities["hoverProvider"] and capabilities["diagnosticProvider"]
        client.send({"method": "initialized", "params": {}})
        uri = (work / "open.py").as_uri()
        client.send({"method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": CAPTURE_READING_HOST}}})
        published = client.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri)
        [diagnostic] = published["params"]["diagnostics"]
        assert diagnostic["code"] == "TRC102"
        assert diagnostic["codeDescription"]["href"].startswith((_site_packages(release) / "trace_lint").as_uri())
        client.send({"id": 2, "method": "shutdown"})
        client.wait_for(lambda m: m.get("id") == 2)
        client.send({"method": "exit"})
        assert client.process.wait(timeout=60) == 0
    finally:
        if client.process.poll() is None:
            client.process.kill()
            client.process.wait()


def test_pytest_plugin_from_the_wheel_guards_a_session(release):
    # ttnn is not in the fresh environment: a stand-in (the guard tests' own) plays its part.
    project = release["work"] / "guarded"
    project.mkdir()
    shutil.copy(REPO / "tests" / "runtime_guard" / "fake_ttnn.py", project / "fake_ttnn.py")
    (project / "stand_in_ttnn.py").write_text(
        "import fake_ttnn as _fake\nglobals().update({k: v for k, v in vars(_fake.make_ttnn()).items() if not k.startswith('__')})\n",
        encoding="utf-8",
    )
    (project / "test_model.py").write_text(
        "import stand_in_ttnn as ttnn\n\n"
        "def capture(read):\n"
        "    dev = ttnn.MeshDevice()\n"
        "    x = ttnn.Tensor((32, 32), device=dev)\n"
        "    ttnn.relu(x)\n"
        "    tid = ttnn.begin_trace_capture(dev, cq_id=0)\n"
        "    ttnn.relu(x)\n"
        "    if read:\n"
        "        x.cpu()\n"
        "    ttnn.end_trace_capture(dev, tid, cq_id=0)\n"
        "    ttnn.execute_trace(dev, tid)\n\n"
        "def test_clean():\n    capture(read=False)\n\n"
        "def test_reads():\n    capture(read=True)\n",
        encoding="utf-8",
    )
    env = _clean_env(PYTHONPATH=str(project), TRACE_LINT_GUARD_TTNN_MODULE="stand_in_ttnn")
    result = _run(release["python"], "-m", "pytest", "--trace-guard", "-p", "no:cacheprovider", "-q", cwd=project, env=env)
    out = result.stdout.decode()
    assert result.returncode == 1, out + result.stderr.decode()
    assert re.search(r"1 failed, 1 passed", out), out
    assert "TraceSafetyError" in out
    assert "2 captures guarded, 1 clean, 1 with violations, 1 replay" in out


def test_the_shipped_rule_docs_are_the_docs_page():
    # scripts/gen_rule_docs.py writes both; a stale copy would ship stale docs.
    assert SHIPPED_RULES_PAGE.read_text(encoding="utf-8") == render()
    assert (REPO / "docs" / "rules.md").read_text(encoding="utf-8") == render()
