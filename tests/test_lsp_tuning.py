"""What the editor shows for an autotuned kernel with the autotuner's measurements: the tutorial matmul with its H200
capture (tests/data/autotune: decode and prefill keys, 8 configs timed per key), driven through a real server on
stdio (pytest-lsp), compiled for cuda:90 on the CPU. The hover on the kernel has the table of measured times and
the dead configs, the code lens the tuning's summary, and LAUNCH005's quick fix prunes the dead configs (LAUNCH004's
adds the fitting tile)."""
from __future__ import annotations

import os
import shutil

import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient
from lsprotocol import types

from test_lsp import SERVER, apply_edits, by_code, open_doc, quick_fixes, settled, start
from conftest import evidence

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
FIXTURE = os.path.join(HERE, "data", "autotune", "h200-captures.jsonl")


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_hover_lens_and_prune_fix_of_a_tuned_kernel(client: LanguageClient, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (tmp_path / ".tritonlens").mkdir()
    (tmp_path / "bench" / "autotune").mkdir(parents=True)
    path = tmp_path / "bench" / "autotune" / "tutorial_matmul.py"
    shutil.copy(os.path.join(REPO, "bench", "autotune", "tutorial_matmul.py"), path)
    shutil.copy(FIXTURE, tmp_path / ".tritonlens" / "captures.jsonl")
    text, uri = path.read_text(), path.as_uri()
    await start(client, tmp_path, {"target": "cuda:90"})
    open_doc(client, uri, text)
    diags = await settled(client, uri, lambda d: by_code(d, "LAUNCH005") and by_code(d, "LAUNCH004"))
    lines = text.splitlines()
    def_line = next(i for i, ln in enumerate(lines) if ln.startswith("def matmul_kernel"))

    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(def_line, 6)))
    shown = hover.contents.value
    assert "What the autotuner measured" in shown, shown
    # one row per config, a column per key: the decode choice 32×64 at 65.3 µs (`*`), prefill's 128×256 at 1668.3
    assert "65.3 µs\\*" in shown or "65.3 µs*" in shown, shown
    assert "1668.3 µs\\*" in shown or "1668.3 µs*" in shown, shown
    assert sum(1 for ln in shown.splitlines() if ln.startswith("| BLOCK") and ln.endswith("| dead |")) == 6, shown
    assert "6 of 8 configs never came within 10% of the best" in shown

    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    titles = [lens.command.title for lens in lenses if lens.command is not None]
    assert any("autotuned: 8 configs × 2 keys, 6 dead (1.5 s of tuning)" in t for t in titles), titles

    (prune_diag,) = by_code(diags, "LAUNCH005")
    assert "pruning the 6 dead configs still in the autotune list, saving 1.54 s" in evidence(prune_diag)
    actions = await quick_fixes(client, uri, prune_diag)
    prune = next(a for a in actions if a.title.startswith("Remove the 6 dead configs from the autotune list"))
    pruned = apply_edits(text, prune.edit.changes[uri])
    assert pruned.count("triton.Config(") == 2
    assert '"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 64' in pruned and '"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256' in pruned

    (tile_diag,) = by_code(diags, "LAUNCH004")
    actions = await quick_fixes(client, uri, tile_diag)
    assert any(a.title.startswith("Add a config BLOCK_SIZE_M=16, ") for a in actions), [a.title for a in actions]
