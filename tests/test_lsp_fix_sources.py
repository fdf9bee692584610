"""The pointer and the conditional launch fix through a real server on stdio: a kernel launched as Liger-Kernel's
ops launch theirs (`BLOCK_SIZE, num_warps = calculate_settings(n_cols)`), with captured specs, compiled for cuda:90
on the CPU; its spill finding's code actions are read as an editor reads them."""
from __future__ import annotations

import ast
import asyncio
import time

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from test_fix_sources import _NORM, _capture, _line, liger_workspace
from test_lsp import SERVER, by_code, code_actions, open_doc, settled, start
from tritonlens.lsp.actions import SHOW_SOURCE


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


def _placeholder(action) -> bool:
    return action.title.endswith("— not verified yet (re-compiling)")


def _command(action) -> tuple[str, list]:
    """(command, arguments) of an edit-less code action. The test client's library reads a CodeAction that carries a
    command and no edit as a bare Command whose `command` is the nested object's text (VS Code tells them apart)."""
    cmd = action.command
    if isinstance(cmd, str) and cmd.startswith("{"):
        nested = ast.literal_eval(cmd)
        return nested["command"], nested["arguments"]
    return (cmd, action.arguments) if isinstance(cmd, str) else (cmd.command, cmd.arguments)


async def test_a_helper_computed_num_warps_gets_a_pointer_and_a_proven_conditional(client: LanguageClient, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    norm = liger_workspace(tmp_path, [_capture(1024, 4), _capture(4096, 4), _capture(16384, 4)])
    uri = norm.as_uri()
    await start(client, tmp_path)
    open_doc(client, uri, _NORM)
    diags = await settled(client, uri, lambda d: by_code(d, "SASS001"))
    (diag,) = [d for d in by_code(diags, "SASS001") if d.range.start.line == _line(_NORM, "def _norm_kernel") - 1]
    deadline = time.monotonic() + 240
    actions = await code_actions(client, uri, diag)
    while any(_placeholder(a) for a in actions) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
        actions = await code_actions(client, uri, diag)
    titles = [a.title for a in actions]
    assert not any(_placeholder(a) for a in actions), titles
    pointer = next(a for a in actions if a.title.startswith("num_warps comes from calculate_settings(n_cols)"))
    assert getattr(pointer, "edit", None) is None and not getattr(pointer, "is_preferred", False), titles
    assert _command(pointer) == (SHOW_SOURCE, [str(tmp_path / "pkg" / "utils.py"), 10]), pointer
    assert " — removes SASS001 (" in pointer.title and "spilled → 0" in pointer.title, titles
    cond = next(a for a in actions if a.title.startswith("Use num_warps=8 if BLOCK_SIZE >= 16384 else num_warps"))
    (edit,) = cond.edit.changes[uri]
    assert edit.new_text == "8 if BLOCK_SIZE >= 16384 else num_warps"
    assert edit.range.start.line == _line(_NORM, "_norm_kernel[(") - 1
    # the proof's numbers, and the trade (the registers it takes cut occupancy): offered, not preferred
    assert "spilled → 0" in cond.title and "; but occupancy" in cond.title and not cond.is_preferred, titles

    # the pointer's command opens the helper's line in the editor (window/showDocument)
    ran = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=SHOW_SOURCE, arguments=list(_command(pointer)[1])))
    shown = client.shown_documents
    assert ran is True and len(shown) == 1, (ran, shown)
    assert shown[0].uri == (tmp_path / "pkg" / "utils.py").as_uri() and shown[0].selection.start.line == 9
