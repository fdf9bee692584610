"""The server's half of the client contract: a real server over stdio receives exactly the messages the VS Code
client builds (test/contract/lsp.json, which client/test/contract.test.ts checks against the client code) and must
answer in the shapes the client reads."""
from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import unquote

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from test_lsp import SERVER, mark, settled, start, wait_for, workspace
from tritonlens.gpu.profile import can_profile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
with open(os.path.join(REPO, "test", "contract", "lsp.json"), encoding="utf-8") as _f:
    CONTRACT = json.load(_f)


def fill(value: Any, uri: str) -> Any:
    return json.loads(json.dumps(value).replace("${uri}", uri))


def plain(value: Any) -> Any:
    """pygls hands custom results back as named tuples; the client sees JSON."""
    if hasattr(value, "_asdict"):
        value = value._asdict()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


async def ir_document(client: LanguageClient, params: dict[str, Any]) -> dict[str, Any] | None:
    return plain(await client.protocol.send_request_async("tritonlens/irDocument", params))


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_client_messages_get_the_answers_the_client_reads(client: LanguageClient, tmp_path):
    source = "\n".join(CONTRACT["source"])
    uri = workspace(tmp_path, add=source)["add"]
    c = fill(CONTRACT, uri)
    await start(client, tmp_path, c["initializationOptions"])
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=source)))
    await settled(client, uri)
    assert not [m for m in client.log_messages if m.type <= types.MessageType.Warning], client.log_messages

    # tritonlens/status: exactly the keys parseStatus reads, states it knows.
    statuses = [plain(s) for s in client.statuses]
    assert statuses and all(sorted(s) == c["statusKeys"] for s in statuses), statuses
    assert {s["state"] for s in statuses} <= set(c["statusStates"])
    assert statuses[-1]["target"] == "cuda:90"

    # Code lenses: the showIr commands, with 0-based lines, as the fixture has them.
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    shown = [{"title": lens.command.title, "command": lens.command.command, "arguments": plain(lens.command.arguments)}
             for lens in lenses if lens.command.command == "tritonlens.showIr"]
    assert shown == c["codeLensShowIr"]
    assert {lens.range.start.line for lens in lenses} == {c["decoratorLine"]}

    # Hover links: the arguments the client's showIr command parses.
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(c["loadLine"], 8)))
    links = [json.loads(unquote(part.split(")")[0]))
             for part in hover.contents.value.split("command:tritonlens.showIr?")[1:]]
    assert links == c["hoverShowIrArguments"]

    # irDocument for each way the client asks: the result keys it reads, ranges 0-based and inside the text.
    results = {}
    for name, params in c["irDocumentRequests"].items():
        doc = await ir_document(client, params)
        assert doc is not None, name
        assert sorted(doc) == c["irDocumentResultKeys"], name
        assert doc["kernel"] == c["kernel"] and doc["target"] == "cuda:90"
        lines = doc["text"].split("\n")
        assert all(0 <= r["start"] <= r["end"] < len(lines) for r in doc["ranges"]), (name, doc["ranges"])
        assert os.path.isfile(doc["path"])
        results[name] = doc
    cursor = results["fromCursorCommand"]
    assert any("ld.global" in cursor["text"].split("\n")[i]
               for r in cursor["ranges"] for i in range(r["start"], r["end"] + 1))
    assert results["restoredTab"]["ranges"] == [] and results["restoredTab"]["languageId"] == "ttgir"
    assert results["followCursor"]["ranges"] and results["followCursor"]["ranges"] != cursor["ranges"]

    # Cursor follow naming the text the tab holds: no text while it is current; the same ranges as a full answer.
    follow = c["irDocumentFollowUp"]
    held = await ir_document(client, follow["held"])
    assert held is not None and isinstance(held["hash"], str) and held["text"]
    named = json.loads(json.dumps(follow).replace("${path}", held["path"]).replace("${hash}", held["hash"]))
    again = await ir_document(client, follow["held"])
    assert again["hash"] == held["hash"], "the hash names the content: the same text gets the same hash"
    short = await ir_document(client, named["followCursor"])
    assert short is not None and sorted(short) == follow["unchangedKeys"] and short["unchanged"] is True, short
    full = {k: v for k, v in results["followCursor"].items() if k != "text"}
    assert {k: v for k, v in short.items() if k != "unchanged"} == full
    stale = await ir_document(client, named["staleHave"])
    assert sorted(stale) == c["irDocumentResultKeys"] and stale["text"] == held["text"]
    assert stale["ranges"] == short["ranges"]
    moved = {**named["followCursor"], "have": {**named["followCursor"]["have"], "path": "/elsewhere/add_kernel.ptx"}}
    assert "text" in await ir_document(client, moved), "another file with the same hash is not what the client holds"

    for name, params in c["irDocumentNullRequests"].items():
        assert await ir_document(client, params) is None, name

    # workspace/executeCommand as the client forwards it.
    for name in ("recompileFromPalette", "recompileOneFile"):
        since = mark(client)
        await client.workspace_execute_command_async(types.ExecuteCommandParams(**c["executeCommand"][name]))
        await settled(client, uri, since=since)
    # After a recompile that made the same PTX, the text the client holds is still current.
    assert (await ir_document(client, named["followCursor"])).get("unchanged") is True
    profile = c["executeCommand"]["profileKernelFromLens"]
    # The command must answer, not fail. Without a GPU: null and a message saying why. With one (and ncu): this
    # kernel was never captured, so the answer carries that error and the user is told too.
    answer = await client.workspace_execute_command_async(types.ExecuteCommandParams(**profile))
    if can_profile()[0]:
        assert answer is not None and "no capture of add_kernel" in answer["error"]
    else:
        assert answer is None
    await wait_for(lambda: client.messages, 10, "a message saying profiling cannot run")

    # didChangeConfiguration as the client sends it: a hip target has no SASS, so irDocument answers null.
    since = mark(client)
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings=c["didChangeConfigurationToHip"]["settings"]))
    await settled(client, uri, since=since, timeout=180)
    assert plain(client.statuses[-1])["target"] == "hip:gfx942"
    assert await ir_document(client, c["irDocumentOnHip"]["sass"]) is None
    amd = await ir_document(client, c["irDocumentOnHip"]["amdgcn"])
    assert amd is not None and amd["target"] == "hip:gfx942" and amd["languageId"] == "amdgcn"
