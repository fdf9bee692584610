"""`tritonlens doctor`, from the CLI and at the language server's start: a healthy environment passes; a `triton/`
package in the folder the compiles start in (the working directory, or the editor's workspace root: it shadows the installed triton: "module 'triton' has no attribute
'language'") fails with one clear message — in the editor one diagnostic per file, not a compile error per kernel."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from test_lsp import OPTIONS, VECTOR_ADD, settled, start, open_doc, wait_for, workspace

TWO_KERNELS = VECTOR_ADD + textwrap.dedent('''\


    # tritonlens: BLOCK=64
    @triton.jit
    def other(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)
    ''')

SERVER = [sys.executable, "-c", "from tritonlens.lsp.server import main; main()"]


def doctor(cwd, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tritonlens", "doctor", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_doctor_in_a_healthy_environment(tmp_path):
    run = doctor(tmp_path, "--format", "json")
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert report["ok"] is True
    import triton

    assert checks["triton"]["status"] == "ok"
    assert checks["triton"]["detail"]["resolved"] == os.path.realpath(os.path.dirname(triton.__file__))
    assert checks["triton"]["detail"]["import"]["ok"] is True
    assert checks["triton"]["message"].startswith(f"triton {triton.__version__} from ")
    for tool in ("ptxas", "nvdisasm"):  # the copies Triton ships
        assert checks[tool]["status"] == "ok"
        assert os.path.join("backends", "nvidia", "bin", tool) in checks[tool]["detail"]["path"]
    assert checks["gpu"]["status"] in ("ok", "info") and "ncu" in checks
    assert checks["interpreter"]["detail"]["python"] == sys.executable
    assert checks["cache"]["status"] == "ok" and checks["cache"]["detail"]["path"] == os.environ["TRITONLENS_CACHE_DIR"]
    text = doctor(tmp_path)
    assert text.returncode == 0 and "all essential checks pass" in text.stdout
    assert f"triton       triton {triton.__version__}" in text.stdout


def test_doctor_names_a_shadowing_triton_folder(tmp_path):
    (tmp_path / "triton").mkdir()
    (tmp_path / "triton" / "__init__.py").write_text("")
    run = doctor(tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    (line,) = [ln for ln in run.stdout.splitlines() if ln.startswith("FAIL")]
    assert f"another triton shadows the installed one: the folder {tmp_path / 'triton'} is imported" in line
    assert "has no triton.language" in line and "rename or move it" in line
    assert "nothing will compile" in run.stdout
    as_json = json.loads(doctor(tmp_path, "--format", "json").stdout)
    assert as_json["ok"] is False and as_json["checks"][0]["status"] == "fail"


def test_doctor_warns_when_the_workspace_has_another_venv(tmp_path):
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /nowhere\n")
    checks = {c["name"]: c for c in json.loads(doctor(tmp_path, "--format", "json").stdout)["checks"]}
    assert checks["interpreter"]["status"] == "warn"
    assert str(tmp_path / ".venv") in checks["interpreter"]["message"]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def shadowed(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_server_logs_the_doctor_at_start(client: LanguageClient, tmp_path):
    uris = workspace(tmp_path, two=TWO_KERNELS)
    await start(client, tmp_path, OPTIONS)
    log = await wait_for(lambda: [m for m in client.log_messages if m.message.startswith("tritonlens doctor:")],
                         120, "the doctor's log")
    assert "all essential checks pass" in log[0].message and "ptxas" in log[0].message
    open_doc(client, uris["two"], TWO_KERNELS)
    diags = await settled(client, uris["two"], timeout=240)
    assert not [d for d in diags if "cannot compile" in d.message], diags
    assert not [d for d in diags if d.code == "SRC001"], diags  # both kernels compiled


async def test_server_in_a_shadowed_environment_says_it_once(shadowed: LanguageClient, tmp_path):
    """The workspace holds an empty `triton` package at its root, where its compiles start (the server itself runs
    elsewhere, as the client starts it)."""
    uris = workspace(tmp_path, two=TWO_KERNELS)
    (tmp_path / "triton").mkdir()
    (tmp_path / "triton" / "__init__.py").write_text("")
    await start(shadowed, tmp_path, OPTIONS)
    open_doc(shadowed, uris["two"], TWO_KERNELS)
    diags = await settled(shadowed, uris["two"], timeout=240)
    (only,) = diags  # one diagnostic for the file, not one compile error per kernel
    assert only.severity == types.DiagnosticSeverity.Error and only.range.start.line == 0
    assert "cannot compile in this environment: another triton shadows the installed one" in only.message
    assert "has no triton.language" in only.message
    shown = await wait_for(lambda: [m for m in shadowed.messages if "shadows" in m.message], 30, "showMessage")
    assert len(shown) == 1 and shown[0].type == types.MessageType.Error
    log = [m for m in shadowed.log_messages if m.message.startswith("tritonlens doctor:")]
    assert len(log) == 1 and "FAIL" in log[0].message
