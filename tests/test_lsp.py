"""The language server end to end: a real server process on stdio (pytest-lsp), real Triton compiles on the CPU
for cuda:90 into the session's throwaway artefact cache."""
from __future__ import annotations

import asyncio
import os
import sys
import textwrap
import time
from typing import Any, Callable
from urllib.parse import unquote

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

SERVER = [sys.executable, "-c", "from tritonlens.lsp.server import main; main()"]
OPTIONS = {"target": "cuda:90", "maxWorkers": 2, "compileTimeout": 120}

VECTOR_ADD = textwrap.dedent('''\
    import triton
    import triton.language as tl


    # tritonlens: x_ptr=*fp32, y_ptr=*fp32, out_ptr=*fp32, n_elements=i32%16, BLOCK_SIZE=1024, num_warps=4
    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
        pid = tl.program_id(axis=0)
        offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x + y, mask=mask)
    ''')

# Line 9 (1-based) `tl.arange(0, 100)`: not a power of two -> SRC001 there.
BROKEN = textwrap.dedent('''\
    import triton
    import triton.language as tl


    # tritonlens: n_elements=i32
    @triton.jit
    def bad_kernel(x_ptr, n_elements):
        pid = tl.program_id(axis=0)
        offs = pid * 128 + tl.arange(0, 100)
        x = tl.load(x_ptr + offs, mask=offs < n_elements)
        tl.store(x_ptr + offs, x + 1, mask=offs < n_elements)
    ''')

# BLOCK_SIZE has no value anywhere -> SRC002 on the parameter (line 6).
UNSPECIFIED = textwrap.dedent('''\
    import triton
    import triton.language as tl


    @triton.jit
    def scale_kernel(x_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
        offs = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + offs, mask=offs < n_elements)
        tl.store(x_ptr + offs, x * 2, mask=offs < n_elements)
    ''')


# ---------------------------------------------------------------- helpers
def workspace(tmp_path, **files: str) -> dict[str, str]:
    """Write files into a fresh workspace folder; returns name -> file URI."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    uris = {}
    for name, text in files.items():
        p = tmp_path / f"{name}.py"
        p.write_text(text)
        uris[name] = p.as_uri()
    return uris


async def start(client: LanguageClient, root, options: dict[str, Any] | None = None) -> None:
    client.statuses = []  # type: ignore[attr-defined]
    client.feature("tritonlens/status")(  # type: ignore[attr-defined]
        lambda params: client.statuses.append(params._asdict()))
    await client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=True)),
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="ws")],
        initialization_options=OPTIONS if options is None else options,
    ))


def open_doc(client: LanguageClient, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)))


def edit_and_save(client: LanguageClient, uri: str, text: str, version: int, path: str | None = None) -> None:
    """Replace the buffer (and the file on disk, as an editor's save does) and send didSave."""
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
    if path is not None:
        with open(path, "w") as f:
            f.write(text)
    client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))


async def wait_for(pred: Callable[[], Any], timeout: float = 90.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def mark(client: LanguageClient) -> int:
    """A point in the status stream: `settled(..., since=mark(client))` waits for a compile started after it."""
    return len(client.statuses)  # type: ignore[attr-defined]


async def settled(client: LanguageClient, uri: str, pred: Callable[[list[types.Diagnostic]], bool] = lambda d: True,
                  timeout: float = 90.0, since: int = 0) -> list[types.Diagnostic]:
    """Diagnostics of `uri` once the server has compiled (after status index `since`), is idle, and `pred` holds."""
    def ready():
        st = client.statuses[since:]  # type: ignore[attr-defined]
        if uri not in client.diagnostics or not st or st[-1]["state"] != "idle":
            return None
        if not any(s["state"] == "compiling" for s in st):
            return None
        diags = list(client.diagnostics[uri])
        return (diags,) if pred(diags) else None
    return (await wait_for(ready, timeout, f"diagnostics of {uri}"))[0]


def by_code(diags, code: str) -> list[types.Diagnostic]:
    return [d for d in diags if d.code == code]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


# ---------------------------------------------------------------- diagnostics
async def test_diagnostics_codes_ranges_and_links(client: LanguageClient, tmp_path):
    uris = workspace(tmp_path, broken=BROKEN, unspecified=UNSPECIFIED, add=VECTOR_ADD)
    await start(client, tmp_path)
    open_doc(client, uris["broken"], BROKEN)
    open_doc(client, uris["unspecified"], UNSPECIFIED)
    open_doc(client, uris["add"], VECTOR_ADD)

    diags = await settled(client, uris["broken"], lambda d: by_code(d, "SRC001"))
    (err,) = by_code(diags, "SRC001")
    assert err.source == "tritonlens"
    assert err.severity == types.DiagnosticSeverity.Error
    assert "power of 2" in err.message
    assert err.range.start.line == 8  # `offs = pid * 128 + tl.arange(0, 100)`, 0-based
    assert BROKEN.splitlines()[8][err.range.start.character:].startswith("tl.arange")
    assert err.code_description.href.endswith("SRC001.md")
    assert err.data["kernel"] == "bad_kernel"

    diags = await settled(client, uris["unspecified"], lambda d: by_code(d, "SRC002"))
    (missing,) = by_code(diags, "SRC002")
    line = UNSPECIFIED.splitlines()[missing.range.start.line]
    assert line[missing.range.start.character:missing.range.end.character] == "BLOCK_SIZE"
    assert missing.data["finding"]["param"] == "BLOCK_SIZE"

    assert [d for d in await settled(client, uris["add"]) if d.severity <= types.DiagnosticSeverity.Warning] == []
    assert any(r for r in client.progress_reports.values()), "no work-done progress while compiling"
    messages = [v.message for reports in client.progress_reports.values() for v in reports
                if getattr(v, "message", None)]
    assert any(m.startswith("Compiling ") and "/" in m for m in messages), messages
