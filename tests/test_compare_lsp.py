"""The editor's side of `compare`: the `tritonlens.compare` command on an open document answers the report's text,
and each compared kernel then gets a lens with its summary. A real server and a real second Triton release (made on
demand into TRITONLENS_RELEASES_DIR, as tests/test_compare.py does; under CI .ci/run has made it)."""
from __future__ import annotations

import os
import shutil

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from test_compare import OTHER, SPILL, release  # noqa: F401 — the fixture
from test_lsp import SERVER, open_doc, settled, start


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_compare_command_and_lens(client: LanguageClient, tmp_path, release):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    path = tmp_path / "matmul_spill.py"
    shutil.copy(SPILL, path)
    uri = path.as_uri()
    await start(client, tmp_path)
    open_doc(client, uri, path.read_text())
    await settled(client, uri)
    answer = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="tritonlens.compare", arguments=[{"uri": uri, "release": OTHER}]))
    assert answer["gated"] == 1, answer
    assert "spill bytes 296 B → 368 B" in answer["text"]
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    [lens] = [x for x in lenses if x.command and x.command.command == "tritonlens.compareWithRelease"]
    assert lens.command.title == f"vs triton {OTHER}: ✗ spills: spill bytes 296 B → 368 B"
    assert list(lens.command.arguments) == [{"uri": uri, "release": OTHER}]
