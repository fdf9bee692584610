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
from conftest import evidence

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
    assert "did not finish in time" in evidence(info) and "3 s" in evidence(info), evidence(info)
    # the editor still answers, and the kernel keeps what the file says
    assert by_code(diags, "SRC002"), diags
    assert "Capture launches" in await lens_titles(client, uris["hangs"])


# A tutorial as Triton publishes them: the device from Triton's driver, a test function the file calls itself at the
# top level (through an autograd Function), a check of the result, then a second kernel only reached after that check
# (outputs are never computed without a GPU: the check passes), and a perf_report benchmark.
TUTORIAL = textwrap.dedent('''\
    import torch
    import triton
    import triton.language as tl

    DEVICE = triton.runtime.driver.active.get_active_torch_device()


    @triton.jit
    def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


    @triton.jit
    def shift_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = torch.empty_like(x)
            block = min(1024, triton.next_power_of_2(x.numel()))
            scale_kernel[(triton.cdiv(x.numel(), block),)](x, y, x.numel(), BLOCK=block)
            return y


    scale = Scale.apply


    def test_scale(n, dtype, device=DEVICE):
        x = torch.randn(n, dtype=dtype, device=device)
        assert torch.allclose(scale(x), x * 2)
        block = triton.next_power_of_2(n) // 8
        shift_kernel[(triton.cdiv(n, block),)](x, n, BLOCK=block)


    @triton.testing.perf_report(triton.testing.Benchmark(x_names=["n"], x_vals=[2**i for i in range(12, 20)],
                                                         line_arg="provider", line_vals=["triton"],
                                                         line_names=["Triton"], ylabel="GB/s", plot_name="scale",
                                                         args={}))
    def benchmark(n, provider):
        x = torch.rand(n, device=DEVICE)
        ms = triton.testing.do_bench(lambda: scale(x))
        return 3 * x.numel() * x.element_size() * 1e-9 / (ms * 1e-3)


    test_scale(3000, torch.float16)
    benchmark.run(print_data=True, show_plots=True)
    ''')

# Its test crashes the interpreter outright (no exception, no exit code of its own): one info, on the test.
CRASHES = LAUNCHED.replace('if __name__ == "__main__":', "def test_crash():\n    import os\n    os.abort()\n\n\n"
                           'if False:')


async def test_a_tutorial_compiles_in_the_editor_after_a_crashing_test_cost_its_own_info(client: LanguageClient,
                                                                                          tmp_path):
    uris = workspace(tmp_path, crashes=CRASHES, tutorial=TUTORIAL)
    await start(client, tmp_path, {"target": "cuda:90", "maxWorkers": 1, "compileTimeout": 120,
                                   "autoCaptureTimeout": 60})
    since = mark(client)
    open_doc(client, uris["crashes"], CRASHES)
    crashed = await settled(client, uris["crashes"], lambda d: bool(by_code(d, "SRC008")), timeout=180, since=since)
    (info,) = by_code(crashed, "SRC008")
    assert info.severity == types.DiagnosticSeverity.Information
    assert info.range.start.line == CRASHES.splitlines().index("def test_crash():"), info
    assert by_code(crashed, "SRC002"), crashed  # the kernel keeps what the file says
    # the server lives on: the next file opened gets what the file says first, then what its own code launched
    since = mark(client)
    open_doc(client, uris["tutorial"], TUTORIAL)
    first = await settled(client, uris["tutorial"], since=since)
    assert len(by_code(first, "SRC002")) == 2, first  # BLOCK has no value in either kernel
    diags = await settled(client, uris["tutorial"], lambda d: not by_code(d, "SRC002"), timeout=240, since=since)
    assert not by_code(diags, "SRC001") and not by_code(diags, "SRC008"), diags
    assert all(d.severity != types.DiagnosticSeverity.Warning for d in diags), diags  # test-sized launches
    for line in (8, 14):  # both kernels, the second only reached after the check of the first's result
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uris["tutorial"]), position=types.Position(line, 5)))
        shown = (hover.contents.value if hover and hasattr(hover.contents, "value") else str(hover)).replace("\\", "")
        assert "launched by this file run as a script, no GPU" in shown, shown
