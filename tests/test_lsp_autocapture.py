"""First open of a kernel file with nothing captured: the editor shows what the file says at once, then runs the
file's own launch code without a GPU (sandboxed, bounded) and republishes with the specs it launched. A real server
on stdio (pytest-lsp), real Triton compiles on the CPU for cuda:90."""
from __future__ import annotations

import textwrap

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from test_lsp import SERVER, by_code, mark, open_doc, settled, start, workspace

pytest.importorskip("torch", reason="the file's launch code allocates torch tensors")

# BLOCK_SIZE has no value in the file but its `__main__` block launches it: SRC002 first, compiled once it ran.
LAUNCHED = textwrap.dedent('''\
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def axpy_kernel(x_ptr, y_ptr, alpha, n_elements, BLOCK_SIZE: tl.constexpr):
        offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offs < n_elements
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(y_ptr + offs, alpha * x + y, mask=mask)


    def axpy(alpha, x, y):
        n = x.numel()
        block = triton.next_power_of_2(min(n, 2048))
        axpy_kernel[(triton.cdiv(n, block),)](x, y, alpha, n, BLOCK_SIZE=block)


    if __name__ == "__main__":
        x = torch.randn(3000, device="cuda", dtype=torch.float16)
        y = torch.randn(3000, device="cuda", dtype=torch.float16)
        axpy(0.5, x, y)
    ''')

# Its test never returns: the run is stopped at the bound and the file gets one info, on the test.
HANGS = LAUNCHED.replace('if __name__ == "__main__":', "def test_forever():\n    while True:\n        pass\n\n\n"
                         'if False:')


async def lens_titles(client: LanguageClient, uri: str) -> str:
    lens = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    return " ".join(c.command.title for c in lens if c.command)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_main_block_launch_compiles_the_kernel_after_first_diagnostics(client: LanguageClient, tmp_path):
    uris = workspace(tmp_path, axpy=LAUNCHED)
    await start(client, tmp_path, {"target": "cuda:90", "maxWorkers": 1, "compileTimeout": 120,
                                   "autoCaptureTimeout": 60})
    since = mark(client)
    open_doc(client, uris["axpy"], LAUNCHED)
    first = await settled(client, uris["axpy"], since=since)
    assert by_code(first, "SRC002"), first  # what the file says alone: BLOCK_SIZE has no value
    # the launch code ran in the background; the document is compiled again with what it launched
    diags = await settled(client, uris["axpy"], lambda d: not by_code(d, "SRC002"), timeout=180, since=since)
    assert not by_code(diags, "SRC001") and not by_code(diags, "SRC008"), diags
    assert "Capture launches" not in await lens_titles(client, uris["axpy"])  # the kernel has a complete spec now
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uris["axpy"]), position=types.Position(6, 5)))
    shown = hover.contents.value if hover and hasattr(hover.contents, "value") else str(hover)
    shown = shown.replace("\\", "")  # the hover escapes Markdown (`BLOCK\_SIZE`)
    assert "BLOCK_SIZE=2048" in shown and "launched by the `__main__` block of this file, no GPU" in shown, shown


async def test_hanging_test_costs_one_info_not_the_editor(client: LanguageClient, tmp_path):
    uris = workspace(tmp_path, hangs=HANGS)
    await start(client, tmp_path, {"target": "cuda:90", "maxWorkers": 1, "compileTimeout": 120,
                                   "autoCaptureTimeout": 3})
    since = mark(client)
    open_doc(client, uris["hangs"], HANGS)
    diags = await settled(client, uris["hangs"], lambda d: bool(by_code(d, "SRC008")), timeout=180, since=since)
    info = by_code(diags, "SRC008")[0]
    assert info.severity == types.DiagnosticSeverity.Information
    assert info.range.start.line == HANGS.splitlines().index("def test_forever():"), info
    assert "did not finish in time" in info.message and "3 s" in info.message, info.message
    # the editor still answers, and the kernel keeps what the file says
    assert by_code(diags, "SRC002"), diags
    assert "Capture launches" in await lens_titles(client, uris["hangs"])
