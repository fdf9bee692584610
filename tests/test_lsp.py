"""The language server end to end: a real server process on stdio (pytest-lsp), real Triton compiles on the CPU
for cuda:90 into a throwaway artefact cache of the test run."""
from __future__ import annotations

import asyncio
import os
import sys
import textwrap
import time
import uuid
from concurrent.futures import Future
from typing import Any, Callable
from urllib.parse import unquote

import pytest
from conftest import missing
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
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


# What VS Code declares for code actions: it fills a picked action's edit with codeAction/resolve.
RESOLVING = types.TextDocumentClientCapabilities(code_action=types.CodeActionClientCapabilities(
    data_support=True, resolve_support=types.ClientCodeActionResolveOptions(properties=["edit"])))


async def start(client: LanguageClient, root, options: dict[str, Any] | None = None,
                text_document: types.TextDocumentClientCapabilities | None = None) -> None:
    client.statuses = []  # type: ignore[attr-defined]
    client.feature("tritonlens/status")(  # type: ignore[attr-defined]
        lambda params: client.statuses.append(params._asdict()))
    await client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=True),
                                              text_document=text_document),
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


async def saved_without(client: LanguageClient, uri: str, path: str, text: str, *codes: str) -> list[types.Diagnostic]:
    """Save `text` (an applied quick fix) and wait for the re-compile: none of `codes`, and no SRC001, remain."""
    since = mark(client)
    edit_and_save(client, uri, text, 2, path)
    diags = await settled(client, uri, since=since)
    for code in (*codes, "SRC001"):
        assert not by_code(diags, code), diags
    return diags


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


# ---------------------------------------------------------------- hover, lens, IR documents
async def test_hover_lens_and_ir_document(client: LanguageClient, tmp_path):
    uris = workspace(tmp_path, add=VECTOR_ADD)
    uri = uris["add"]
    await start(client, tmp_path)
    open_doc(client, uri, VECTOR_ADD)
    await settled(client, uri)

    # A load line: TTGIR ops and PTX instructions that came from it, with links to the IR files and our command.
    load_line = 10  # 0-based: `x = tl.load(x_ptr + offsets, mask=mask)`
    assert "tl.load(x_ptr" in VECTOR_ADD.splitlines()[load_line]
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(load_line, 10)))
    text = hover.contents.value
    assert "**TTGIR**" in text and "tt.load" in text
    assert "**PTX**" in text and "ld.global" in text
    assert "file://" in text and ".ptx#L" in text
    assert "command:tritonlens.showIr?" in text
    link = text.split("command:tritonlens.showIr?")[1].split(")")[0]
    args = __import__("json").loads(unquote(link))
    assert args == [{"uri": uri, "kernel": "add_kernel", "stage": "ttgir", "line": load_line}]

    # The def line: metrics per spec as a table.
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(6, 6)))
    table = hover.contents.value
    assert "| spec | target | warps | regs |" in table
    assert "cuda:90 | 4 |" in table

    # Lens on the decorator line: the summary and Show TTGIR / PTX / SASS.
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert {lens.range.start.line for lens in lenses} == {5}  # `@triton.jit`
    titles = [lens.command.title for lens in lenses]
    assert titles[0].startswith("cuda:90 · 4 warps · ") and "regs" in titles[0] and "smem" in titles[0]
    assert titles[1:] == ["Show TTGIR", "Show PTX", "Show SASS"]
    assert lenses[2].command.command == "tritonlens.showIr"
    assert list(lenses[2].command.arguments) == [{"uri": uri, "kernel": "add_kernel", "stage": "ptx", "line": 6}]

    # irDocument: the PTX text, and which of its lines came from the load line.
    doc = await client.protocol.send_request_async("tritonlens/irDocument",
                                                   {"uri": uri, "kernel": None, "stage": "ptx", "line": load_line})
    doc = doc._asdict() if hasattr(doc, "_asdict") else doc
    assert doc["kernel"] == "add_kernel" and doc["target"] == "cuda:90" and doc["languageId"] == "ptx"
    assert doc["path"].endswith(".ptx") and os.path.exists(doc["path"])
    lines = doc["text"].splitlines()
    ranges = [r._asdict() if hasattr(r, "_asdict") else r for r in doc["ranges"]]
    assert ranges and all(0 <= r["start"] <= r["end"] < len(lines) for r in ranges)
    assert any("ld.global" in lines[i] for r in ranges for i in range(r["start"], r["end"] + 1))
    none = await client.protocol.send_request_async("tritonlens/irDocument",
                                                    {"uri": uri, "kernel": "nope", "stage": "ptx", "line": None})
    assert none is None


async def test_a_diagnostic_is_one_line_and_its_hover_holds_the_evidence(client: LanguageClient, tmp_path):
    """The squiggle's message is one line; every number of its evidence (the details the diagnostic carries in its
    data: the rule's account, the spec, the verdict's reason), and the spec, are in the hover over its range."""
    import re

    uris = workspace(tmp_path, narrow=NARROW)
    uri = uris["narrow"]
    await start(client, tmp_path)
    open_doc(client, uri, NARROW)
    diags = await settled(client, uri, lambda d: bool(by_code(d, "PTX001")))
    load = next(d for d in by_code(diags, "PTX001") if d.range.start.line == 10)
    assert "\n" not in load.message and len(load.message) <= 120, load.message
    details = load.data["details"]
    assert details and any(load.data["config"] in d for d in details), details
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=load.range.start))
    shown = " ".join(re.sub(r"\\(.)", r"\1", hover.contents.value).split())
    long = " ".join(" ".join([load.message, *details]).split())
    assert not [n for n in re.findall(r"\d+(?:[.,]\d+)*", long) if n not in shown], (long, shown)
    assert load.data["config"] in shown and load.message in shown


# ---------------------------------------------------------------- latest save wins, settings, commands
async def test_latest_save_wins(client: LanguageClient, tmp_path):
    uris = workspace(tmp_path, broken=BROKEN)
    uri, path = uris["broken"], str(tmp_path / "broken.py")
    await start(client, tmp_path)
    open_doc(client, uri, BROKEN)
    await settled(client, uri, lambda d: by_code(d, "SRC001"))

    # Three quick saves: broken with 48 (also not a power of 2), then fixed with 128, then broken with 100 on another
    # line. Only the last one may be left on the screen, with the last version.
    since = mark(client)
    second = BROKEN.replace("tl.arange(0, 100)", "tl.arange(0, 48)")
    fixed = BROKEN.replace("tl.arange(0, 100)", "tl.arange(0, 128)")
    last = fixed.replace("    x = tl.load", "    offs = offs + tl.arange(0, 100)\n    x = tl.load")
    edit_and_save(client, uri, second, 2, path)
    edit_and_save(client, uri, fixed, 3, path)
    edit_and_save(client, uri, last, 4, path)
    diags = await settled(client, uri, since=since)
    (err,) = by_code(diags, "SRC001")
    assert err.range.start.line == 9, err  # the new `tl.arange(0, 100)` line of the last save
    await asyncio.sleep(1.0)  # nothing from an older compile may arrive afterwards
    assert [d.range.start.line for d in by_code(client.diagnostics[uri], "SRC001")] == [9]


async def test_settings_change_and_recompile(client: LanguageClient, tmp_path):
    uris = workspace(tmp_path, unspecified=UNSPECIFIED)
    uri = uris["unspecified"]
    await start(client, tmp_path, {**OPTIONS, "maxWorkers": "many", "compileOn": "sometimes"})
    # Bad values fall back to their defaults and say so.
    await wait_for(lambda: any("maxWorkers" in m.message for m in client.log_messages), 10, "settings log")
    assert any("compileOn" in m.message and "save" in m.message for m in client.log_messages)
    open_doc(client, uri, UNSPECIFIED)
    diags = await settled(client, uri, lambda d: by_code(d, "SRC002"))
    assert by_code(diags, "SRC002")[0].severity == types.DiagnosticSeverity.Information

    # didChangeConfiguration as VS Code sends it: the rule's severity changes and the document is re-checked.
    since = mark(client)
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"tritonlens": {**OPTIONS, "rules": {"SRC002": "warning"}}}))
    diags = await settled(client, uri, lambda d: by_code(d, "SRC002") and by_code(d, "SRC002")[0].severity
                          == types.DiagnosticSeverity.Warning, since=since)
    since = mark(client)
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"tritonlens": {**OPTIONS, "rules": {"SRC002": "off"}}}))
    await settled(client, uri, lambda d: not by_code(d, "SRC002"), since=since)

    # compileOn: change compiles the unsaved buffer (debounced) without a save.
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"tritonlens": {**OPTIONS, "compileOn": "change"}}))
    since = mark(client)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=BROKEN)]))
    await settled(client, uri, lambda d: by_code(d, "SRC001"), since=since)

    # The recompile command re-checks open documents.
    since = mark(client)
    await client.workspace_execute_command_async(types.ExecuteCommandParams(command="tritonlens.recompile"))
    await settled(client, uri, lambda d: by_code(d, "SRC001"), since=since)
    assert not client.messages, "the server popped up a message"


# ---------------------------------------------------------------- quick fixes
NARROW = VECTOR_ADD.replace("n_elements=i32%16", "n_elements=i32")


def apply_edits(text: str, edits) -> str:
    """Apply LSP TextEdits (0-based, character offsets) the way an editor does: the fix engine's own applier, which
    reads the same fields."""
    from tritonlens.fixes.edit import apply_edits as apply

    return apply(text, edits)


async def code_actions(client: LanguageClient, uri: str, diag: types.Diagnostic) -> list:
    """One textDocument/codeAction answer for `diag`: proven fixes, and placeholders for those still re-compiling."""
    return await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=diag.range,
        context=types.CodeActionContext(diagnostics=[diag]))) or []


def unverified(action) -> bool:
    return isinstance(action, types.Command) or action.edit is None


async def quick_fixes(client: LanguageClient, uri: str, diag: types.Diagnostic,
                      timeout: float = 180.0) -> list[types.CodeAction]:
    """The fixes offered for `diag` once all its candidates are re-compiled: asked again, as a user would, while
    the answer still holds placeholders (a request answers within a bound; on a loaded machine a re-compile may not)."""
    deadline = time.monotonic() + timeout
    actions = await code_actions(client, uri, diag)
    while any(unverified(a) for a in actions) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
        actions = await code_actions(client, uri, diag)
    return actions


async def test_missing_constexpr_gets_no_guessed_fix(client: LanguageClient, tmp_path):
    """A constexpr no launch site, default or capture gives is never guessed: no power of two is offered as a fix (a
    capture of a real run, or a hint the user writes, supplies it)."""
    uris = workspace(tmp_path, unspecified=UNSPECIFIED)
    uri = uris["unspecified"]
    await start(client, tmp_path)
    open_doc(client, uri, UNSPECIFIED)
    (diag,) = by_code(await settled(client, uri, lambda d: by_code(d, "SRC002")), "SRC002")
    assert await quick_fixes(client, uri, diag) == []


async def test_quick_fix_edits_hint_and_removes_narrow_loads(client: LanguageClient, tmp_path):
    uris = workspace(tmp_path, narrow=NARROW)
    uri, path = uris["narrow"], str(tmp_path / "narrow.py")
    await start(client, tmp_path)
    open_doc(client, uri, NARROW)
    diags = await settled(client, uri)
    assert by_code(diags, "PTX001"), diags
    diag = by_code(diags, "PTX001")[0]
    assert diag.range.start.line == 10 and NARROW.splitlines()[10][diag.range.start.character:].startswith("tl.load")
    assert diag.related_information and diag.related_information[0].location.uri.endswith(".ptx")

    actions = await quick_fixes(client, uri, diag)
    assert actions, "no quick fix for PTX001"
    fix = actions[0]
    assert fix.title.startswith("Tell tritonlens: n_elements % 16 == 0 — removes PTX001 on line 11"), fix.title
    assert not fix.is_preferred  # it changes what tritonlens assumes, not the program
    assert "ld.global 32→128-bit" in fix.title, fix.title
    (edit,) = fix.edit.changes[uri]
    assert edit.range.start.line == 4  # the existing hint line is edited, not a new one added
    assert "n_elements=i32%16" in edit.new_text and "BLOCK_SIZE=1024" in edit.new_text

    fixed = apply_edits(NARROW, [edit])
    assert fixed.count("# tritonlens:") == 1
    await saved_without(client, uri, path, fixed, "PTX001", "PTX002")


async def test_no_fix_offered_when_it_does_not_help(client: LanguageClient, tmp_path):
    # Every value a fix could give BLOCK_SIZE makes `tl.arange(0, 3 * BLOCK_SIZE)` a non-power-of-2 range: each
    # candidate re-compiles to SRC001, so no fix is offered.
    hopeless = UNSPECIFIED.replace("tl.arange(0, BLOCK_SIZE)", "tl.arange(0, 3 * BLOCK_SIZE)")
    uris = workspace(tmp_path, hopeless=hopeless)
    uri = uris["hopeless"]
    await start(client, tmp_path)
    open_doc(client, uri, hopeless)
    (diag,) = by_code(await settled(client, uri, lambda d: by_code(d, "SRC002")), "SRC002")
    assert list(await quick_fixes(client, uri, diag) or []) == []


# ---------------------------------------------------------------- a client we did not write
def test_neovim_client(tmp_path):
    """Headless Neovim's built-in LSP client: diagnostics on open, cleared after a fix and `:write`."""
    import json
    import shutil
    import subprocess

    nvim = shutil.which("nvim")
    if nvim is None:
        missing("nvim", "nvim is not installed (apt-get install neovim)")
    workspace(tmp_path, broken=BROKEN)
    script = os.path.join(os.path.dirname(__file__), "nvim", "check_diagnostics.lua")
    out = tmp_path / "nvim.json"
    env = {**os.environ, "TRITONLENS_NVIM_OUT": str(out), "TRITONLENS_NVIM_CMD": json.dumps(SERVER)}
    proc = subprocess.run([nvim, "--headless", "--clean", "-u", "NONE", "-c", f"luafile {script}", "broken.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert out.exists(), proc.stderr[-2000:]
    seen = json.loads(out.read_text())
    assert "error" not in seen, seen
    assert seen["first_wait"], seen
    assert [(d["code"], d["lnum"]) for d in seen["before"]] == [("SRC001", 8)]
    assert seen["second_wait"] and seen["after"] == [], seen


def _neovim_hover_and_action(tmp_path, name: str, text: str, load_line: int) -> dict:
    """Run tests/nvim/hover_and_action.lua on `text` (saved as NAME.py); what it saw."""
    import json
    import shutil
    import subprocess

    nvim = shutil.which("nvim")
    if nvim is None:
        missing("nvim", "nvim is not installed (apt-get install neovim)")
    workspace(tmp_path, **{name: text})
    script = os.path.join(os.path.dirname(__file__), "nvim", "hover_and_action.lua")
    out = tmp_path / "nvim.json"
    env = {**os.environ, "TRITONLENS_NVIM_OUT": str(out), "TRITONLENS_NVIM_CMD": json.dumps(SERVER),
           "TRITONLENS_NVIM_LINE": str(load_line)}
    proc = subprocess.run([nvim, "--headless", "--clean", "-u", "NONE", "-c", f"luafile {script}", f"{name}.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=400)
    assert out.exists(), proc.stderr[-2000:]
    seen = json.loads(out.read_text())
    assert "error" not in seen, seen
    assert seen["diagnostics_wait"] and seen["hover_wait"], seen
    hover = "\n".join(seen["hover"])
    assert "**PTX**" in hover and "ld.global" in hover and f"line {load_line + 1}" in hover, hover
    assert seen["action_wait"], seen
    assert seen["actions"][0].startswith("Tell tritonlens: n_elements % 16 == 0"), seen["actions"]
    assert seen["fixed_wait"], seen
    return seen


def test_neovim_hover_and_code_action(tmp_path):
    """Headless Neovim as a user drives it: `vim.lsp.buf.hover()` shows the IR counts of a load line, and
    `vim.lsp.buf.code_action()` on PTX001 applies the hint fix, after which `:write` clears the finding."""
    load_line = next(i for i, s in enumerate(NARROW.splitlines()) if "tl.load(x_ptr" in s)
    seen = _neovim_hover_and_action(tmp_path, "narrow", NARROW, load_line)
    assert "PTX001" not in seen["after"], seen
    assert "n_elements=i32%16" in (tmp_path / "narrow.py").read_text()


def test_neovim_code_action_in_a_many_kernel_file(tmp_path):
    """The same on a five-kernel file (one compile worker): the code action is asked for as soon as the first PTX001
    is shown, while other kernels still compile, and its fix arrives and applies (resolved when still re-compiling)."""
    from test_lsp_fixes import MULTI

    load_line = next(i for i, s in enumerate(MULTI.splitlines()) if "tl.load(x_ptr" in s)
    seen = _neovim_hover_and_action(tmp_path, "multi", MULTI, load_line)
    assert seen["action_line"] == load_line, seen
    hint = next(s for s in (tmp_path / "multi.py").read_text().splitlines() if "n_elements=" in s)
    assert "n_elements=i32%16" in hint and "BLOCK_SIZE=1024" in hint, hint


# ---------------------------------------------------------------- files changing on disk
CALLER = textwrap.dedent('''\
    import triton
    import triton.language as tl
    from helpers import twice


    # tritonlens: n_elements=i32%16, BLOCK_SIZE=1024
    @triton.jit
    def caller_kernel(x_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
        offs = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + offs, mask=offs < n_elements)
        tl.store(x_ptr + offs, twice(x), mask=offs < n_elements)
    ''')
HELPER = textwrap.dedent('''\
    import triton
    import triton.language as tl


    @triton.jit
    def twice(x):
        return x * 2
    ''')


async def test_captures_and_helper_modules_are_watched(client: LanguageClient, tmp_path):
    import json

    uris = workspace(tmp_path, unspecified=UNSPECIFIED, caller=CALLER, helpers=HELPER)
    await start(client, tmp_path)
    open_doc(client, uris["unspecified"], UNSPECIFIED)
    open_doc(client, uris["caller"], CALLER)
    await settled(client, uris["unspecified"], lambda d: by_code(d, "SRC002"))
    assert not by_code(await settled(client, uris["caller"]), "SRC001")

    # A capture gives BLOCK_SIZE its value: the open document is re-checked without a save.
    since = mark(client)
    (tmp_path / ".tritonlens").mkdir()
    (tmp_path / ".tritonlens" / "captures.jsonl").write_text(json.dumps({
        "version": 1, "path": "unspecified.py", "kernel": "scale_kernel",
        "signature": {"x_ptr": "*fp32", "n_elements": "i32", "BLOCK_SIZE": "constexpr"},
        "constants": {"BLOCK_SIZE": 256}, "attrs": {"x_ptr": {"divisibility": 16}},
        "options": {"num_warps": 4, "num_stages": 3}, "target": "cuda:90", "triton_version": "3.6.0"}) + "\n")
    await settled(client, uris["unspecified"], lambda d: not by_code(d, "SRC002"), since=since)

    # The imported helper module breaks on disk (it is not open in the editor): its importer is re-checked.
    since = mark(client)
    (tmp_path / "helpers.py").write_text(HELPER.replace("return x * 2", "return x * tl.arange(0, 100)"))
    diags = await settled(client, uris["caller"], lambda d: by_code(d, "SRC001"), since=since)
    assert "power of 2" in by_code(diags, "SRC001")[0].message


async def test_server_survives_bad_input(client: LanguageClient, tmp_path):
    syntax_error = "import triton\n\n@triton.jit\ndef k(x_ptr:\n    pass\n"
    uris = workspace(tmp_path, syntax=syntax_error)
    await start(client, tmp_path, {"target": 42, "rules": "loud", "nonsense": True})
    assert any("tritonlens.target" in m.message for m in client.log_messages)
    open_doc(client, uris["syntax"], syntax_error)
    # Requests about documents the server does not know, and junk parameters, answer empty rather than fail.
    unknown = types.TextDocumentIdentifier(uri=(tmp_path / "nowhere.py").as_uri())
    assert await client.text_document_hover_async(types.HoverParams(
        text_document=unknown, position=types.Position(0, 0))) is None
    assert not await client.text_document_code_lens_async(types.CodeLensParams(text_document=unknown))
    assert await client.protocol.send_request_async("tritonlens/irDocument", {"uri": 7, "line": "x"}) is None
    junk = types.Diagnostic(range=types.Range(types.Position(0, 0), types.Position(0, 1)), message="?",
                            source="tritonlens", code="PTX001", data="not an object")
    assert not await quick_fixes(client, uris["syntax"], junk)
    diags = await settled(client, uris["syntax"])
    assert by_code(diags, "SRC001"), diags  # the syntax error is a diagnostic
    assert not client.messages
    # Still alive: a hover on the syntax-error file answers.
    await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uris["syntax"]), position=types.Position(3, 0)))


async def raw_request(client: LanguageClient, method: str, params: Any) -> Any:
    """A request with `params` sent as they are: pygls' client would type-check them before sending."""
    msg_id = f"raw-{uuid.uuid4()}"
    answer: Future = Future()
    client.protocol._request_futures[msg_id] = answer
    client.protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return await asyncio.wrap_future(answer)


async def test_malformed_requests_are_answered_at_once_with_invalid_params(client: LanguageClient, tmp_path):
    uris = workspace(tmp_path, add=VECTOR_ADD)
    await start(client, tmp_path)
    open_doc(client, uris["add"], VECTOR_ADD)
    doc = {"uri": uris["add"]}
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": 12, "character": 0}}
    malformed = {  # method, params (raw JSON, as a faulty client sends them), the field the error must name
        "textDocument/codeAction": ({"textDocument": doc, "range": whole,
                                     "context": {"diagnostics": [{"message": "x", "code": "PTX001"}]}},
                                    "context.diagnostics[0].range"),
        "textDocument/hover": ({"textDocument": doc}, "position"),
        "textDocument/codeLens": ({"textDocument": 5}, "text_document"),
        "codeAction/resolve": ({"kind": "quickfix"}, "title"),
    }
    for method, (params, field) in malformed.items():
        started = time.monotonic()
        with pytest.raises(JsonRpcException) as err:
            await asyncio.wait_for(raw_request(client, method, params), 5)
        assert err.value.code == -32602, (method, err.value)  # InvalidParams
        assert method in err.value.message and field in err.value.message, err.value.message
        assert time.monotonic() - started < 5
    # The server goes on serving well-formed requests.
    assert await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uris["add"]))) is not None


# Two definitions of one kernel name under a module-level if/else: each is its own kernel, with its own report.
BRANCHES = textwrap.dedent('''\
    import triton
    import triton.language as tl

    FAST = False

    if FAST:
        @triton.jit
        def k(x_ptr):
            tl.store(x_ptr + tl.arange(0, 100), 1.0)
    else:
        @triton.jit
        def k(x_ptr):
            tl.store(x_ptr + tl.arange(0, 128), 1.0)
    ''')


async def test_same_name_in_two_branches_keeps_both_reports(client: LanguageClient, tmp_path):
    uris = workspace(tmp_path, branches=BRANCHES)
    await start(client, tmp_path)
    open_doc(client, uris["branches"], BRANCHES)
    diags = await settled(client, uris["branches"], lambda d: bool(by_code(d, "SRC001")))
    assert [d.range.start.line + 1 for d in by_code(diags, "SRC001")] == [9]  # only the `if` branch fails

    async def ir_at(line0):
        return await client.protocol.send_request_async("tritonlens/irDocument", {
            "uri": uris["branches"], "kernel": "k", "stage": "ttgir", "line": line0})

    good = await ir_at(12)  # the else branch compiled: its IR, mapped to its own line
    assert good is not None and "tt.func public @k" in good.text and good.ranges
    assert await ir_at(8) is None  # the if branch did not compile: nothing, not the other branch's IR
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uris["branches"])))
    assert sorted({lens.range.start.line + 1 for lens in lenses}) == [7, 11]
