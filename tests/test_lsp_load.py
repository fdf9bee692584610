"""The language server under load, over stdio (pytest-lsp) with real compiles: a burst of saves across files, files
renamed, deleted and closed while they compile. It must keep answering, show each file's latest state only, and
leave no compile worker behind when it stops. Time bounds are generous: the machines are shared."""
from __future__ import annotations

import asyncio
import os
import time

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from test_lsp import BROKEN, SERVER, by_code, edit_and_save, mark, open_doc, settled, start, workspace


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield lsp_client
    if not getattr(lsp_client, "_tl_stopped", False):
        await lsp_client.shutdown_session()


def variant(n: int) -> str:
    """BROKEN with `tl.arange(0, n)` (an error unless n is a power of two) and, for n < 0, the error moved a line
    down: that version's SRC001 is on line 9 (0-based), the others' on line 8."""
    if n < 0:
        fixed = BROKEN.replace("tl.arange(0, 100)", "tl.arange(0, 128)")
        return fixed.replace("    x = tl.load", "    offs = offs + tl.arange(0, 100)\n    x = tl.load")
    return BROKEN.replace("tl.arange(0, 100)", f"tl.arange(0, {n})")


def workers_of(pid: int) -> set[int]:
    """Compile worker processes whose parent is `pid` (Linux /proc)."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid and b"tritonlens.compiler.worker" in cmd:
            found.add(int(entry))
    return found


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


async def hover_within(client: LanguageClient, uri: str, line: int, bound: float) -> float:
    start_t = time.monotonic()
    await asyncio.wait_for(client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line, 8))), bound)
    return time.monotonic() - start_t


async def stop_and_count_workers(client: LanguageClient) -> None:
    """Shut the server down; every worker it had must end with it."""
    pid = client._server.pid  # the server process pytest-lsp started
    workers = workers_of(pid)
    await client.shutdown_session()
    client._tl_stopped = True  # type: ignore[attr-defined]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not all(gone(w) for w in workers):
        await asyncio.sleep(0.2)
    assert all(gone(w) for w in workers), f"workers left behind: {sorted(w for w in workers if not gone(w))}"


async def test_fifty_saves_in_a_second_across_five_files(client: LanguageClient, tmp_path):
    names = [f"f{i}" for i in range(5)]
    uris = workspace(tmp_path, **{n: BROKEN for n in names})
    await start(client, tmp_path)
    for n in names:
        open_doc(client, uris[n], BROKEN)
    await settled(client, uris[names[-1]], lambda d: by_code(d, "SRC001"), timeout=240)

    since = mark(client)
    sizes = [48, 128, 100, 64, 96, 256, 80, 32, 112]
    t0 = time.monotonic()
    for version in range(2, 12):  # 10 saves per file, 50 in all; the last moves the error a line down
        for n in names:
            edit_and_save(client, uris[n], variant(sizes[version - 2] if version < 11 else -1), version,
                          str(tmp_path / f"{n}.py"))
        await asyncio.sleep(0.01)
    assert time.monotonic() - t0 < 3.0
    took = await hover_within(client, uris[names[0]], 8, 30.0)  # answered in the middle of the storm

    for n in names:
        diags = await settled(client, uris[n], lambda d: [e.range.start.line for e in by_code(d, "SRC001")] == [9],
                              timeout=300, since=since)
        assert [e.range.start.line for e in by_code(diags, "SRC001")] == [9]
    await asyncio.sleep(2.0)  # nothing from an older save may arrive afterwards
    for n in names:
        assert [e.range.start.line for e in by_code(client.diagnostics[uris[n]], "SRC001")] == [9], n
    assert took < 30.0
    await stop_and_count_workers(client)


async def test_files_renamed_deleted_and_closed_while_compiling(client: LanguageClient, tmp_path):
    uris = workspace(tmp_path, gone=BROKEN, moved=BROKEN, closed=BROKEN)
    await start(client, tmp_path)
    for name in ("gone", "moved", "closed"):
        open_doc(client, uris[name], BROKEN)
    # at once, while the three compile: one file deleted (and closed, as an editor does), one renamed (closed under
    # its old name, opened under the new), one closed
    os.remove(tmp_path / "gone.py")
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uris["gone"])))
    os.rename(tmp_path / "moved.py", tmp_path / "renamed.py")
    renamed = (tmp_path / "renamed.py").as_uri()
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uris["moved"])))
    open_doc(client, renamed, BROKEN)
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uris["closed"])))

    assert await hover_within(client, renamed, 8, 30.0) < 30.0
    diags = await settled(client, renamed, lambda d: by_code(d, "SRC001"), timeout=240)
    assert by_code(diags, "SRC001")[0].range.start.line == 8
    await asyncio.sleep(3.0)  # let any compile of the closed documents finish
    for name in ("gone", "moved", "closed"):  # closed documents keep no diagnostics
        assert not client.diagnostics.get(uris[name]), (name, client.diagnostics.get(uris[name]))
    assert not [m.message for m in client.log_messages if "internal error" in m.message or "Traceback" in m.message]
    await stop_and_count_workers(client)
