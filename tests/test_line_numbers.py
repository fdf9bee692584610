"""One line-numbering everywhere, Python's own: a line ends at \\n, \\r\\n or \\r, as the tokenizer, ast, Triton's
locations, the LSP and editors count. `str.splitlines()` also breaks at form feeds, \\x0b, \\x1c-\\x1e, \\x85, U+2028
and U+2029, which a file may hold in a comment or a string: one above a launch made `check --fix` change another
statement, one above a hint comment made it ignored, and every line the hover, the diagnostics and kernel
discovery looked up after it was the wrong one. Attacks against the real CLI and language server (Triton compiles
on the CPU), and a scan that no module numbers lines with `splitlines()`."""
from __future__ import annotations

import ast
import json
import os
import textwrap
from pathlib import Path

import pytest_lsp
import tritonlens
from conftest import EXAMPLES
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from test_lsp import SERVER, VECTOR_ADD, by_code, mark, open_doc, settled, start, workspace
from tritonlens.cli import main as cli_main
from tritonlens.source import split_lines

PACKAGE = Path(tritonlens.__file__).parent

# Every character `str.splitlines()` breaks at and Python does not (a comment may hold each of them).
BREAKS = "\x0c \x0b \x1c \x1d \x1e \x85 \u2028 \u2029"

# `splitlines()` on text that is not a Python file and never mapped to a position; anything that numbers the lines
# of a source, a capture file, an IR text or an edit uses `source.split_lines`.
ALLOWED = {
    # a tool's own output (a probe's JSON on its last line, ptxas' and nvidia-smi's reports, a child's stderr tail)
    "compiler/sandbox.py": "tool output",
    "gpu/autocapture.py": "a child's stderr tail",
    "gpu/autocapture_run.py": "an exception's first line",
    "compare/core.py": "an error's first line, PTX counted",
    "compare/envs.py": "pip's and a probe's output",
    "compare/html.py": "two IR texts side by side, never mapped to a source",
    # linecache's lines of the module text, for inspect.getsource: still splitlines() — a string with one of the
    # characters above, in a statement kept above a kernel, shifts the source Triton reads; to convert
}


def splitlines_calls(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr == "splitlines"]


def test_no_module_numbers_lines_with_splitlines():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        calls = splitlines_calls(path)
        if calls and rel not in ALLOWED:
            found[rel] = calls
    assert found == {}, f"str.splitlines() breaks lines where Python does not; use source.split_lines: {found}"
    assert all((PACKAGE / rel).exists() for rel in ALLOWED), "an allowed file is gone: drop it from ALLOWED"


def test_split_lines_is_pythons_numbering():
    text = "a\x0cb\u2028c\r\nd\re\nf"
    assert split_lines(text) == ["a\x0cb\u2028c", "d", "e", "f"]
    assert split_lines(text, keepends=True) == ["a\x0cb\u2028c\r\n", "d\r", "e\n", "f"]
    assert split_lines("") == [] and split_lines("x\n") == ["x"] and split_lines("x\n\n") == ["x", ""]
    tree = ast.parse("# " + BREAKS + "\nx = 1\n")
    assert split_lines("# " + BREAKS + "\nx = 1\n")[tree.body[0].lineno - 1] == "x = 1"


def _check(capsys, *argv) -> tuple[int, str, str]:
    code = cli_main(["check", *argv, "--target", "cuda:90", "--workers", "1"])
    out, err = capsys.readouterr()
    return code, out, err


def test_fix_edits_the_launch_below_a_character_python_does_not_break_at(tmp_path, capsys):
    """matmul_spill spills at 4 warps; its launch, below a comment holding every such character and a statement with
    a 4 of its own, gets num_warps=8 — nothing else in the file changes."""
    text = open(os.path.join(EXAMPLES, "bad", "matmul_spill.py"), encoding="utf-8").read()
    text = text[:text.index("# tritonlens:")] + text[text.index("@triton.jit"):]
    launcher = textwrap.dedent(f"""\


        def matmul(a, b, c, K):
            # tiles of 128: {BREAKS}
            grid = (a.shape[0] // 128, b.shape[1] // 128)
            split = 4
            matmul_spill[grid](a, b, c, K, a.stride(0), b.stride(0), c.stride(0),
                               BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, num_warps=4, num_stages=2)
        """)
    path = tmp_path / "mm.py"
    path.write_bytes((text + launcher).encode("utf-8"))
    launch_line = next(n for n, ln in enumerate(split_lines(text + launcher), 1) if "matmul_spill[grid](" in ln)
    code, out, _ = _check(capsys, str(path), "--fix", "--select", "SASS001")
    assert f"SASS001 fixed: Use num_warps=8 at the launch on line {launch_line} — " in out, out
    assert path.read_bytes().decode("utf-8") == text + launcher.replace("num_warps=4", "num_warps=8")


KERNEL = textwrap.dedent('''\
    import triton
    import triton.language as tl

    NOTE = "{breaks}"
    # set by the caller: {breaks}
    # tritonlens: x_ptr=*fp32, n=i32%16, BLOCK=256, bogus=1
    @triton.jit
    def scale(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(x_ptr + offs, x * 2, mask=offs < n)
    ''').replace("{breaks}", BREAKS)


def test_a_hint_below_such_a_character_is_read_and_its_finding_is_on_its_line(tmp_path, capsys):
    """BLOCK has no value but the hint's: the hint is honoured (no SRC002), and its bad entry is reported on the
    hint's own line (6), the way Python and the editor number it."""
    path = tmp_path / "scale.py"
    path.write_bytes(KERNEL.encode("utf-8"))
    code, out, err = _check(capsys, str(path), "--format", "json")
    findings = [(f["code"], f["line"]) for f in json.loads(out)]
    assert ("SRC004", 6) in findings and not any(c in ("SRC002", "SRC001") for c, _ in findings), (findings, err)


# ---------------------------------------------------------------- the language server
ADD = VECTOR_ADD.replace("import triton.language as tl\n", f"import triton.language as tl\n# notes: {BREAKS}\n")


def _line(text: str, needle: str) -> int:
    """0-based, as the editor numbers it."""
    return next(n for n, ln in enumerate(split_lines(text)) if needle in ln)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_hover_and_an_incremental_change_below_such_a_character(client: LanguageClient, tmp_path):
    """The hover on a load line shows what that line compiled to (not the kernel's table of the lines above); the
    editor's incremental change lands on the line it names (the hint's `num_warps=4` made `num_warps=four`, a
    bad hint), and the buffer the server compiles is the editor's."""
    uri = workspace(tmp_path, add=ADD)["add"]
    await start(client, tmp_path)
    open_doc(client, uri, ADD)
    await settled(client, uri)
    load = _line(ADD, "x = tl.load(")
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(load, 10)))
    assert "tt.load" in hover.contents.value and "| spec |" not in hover.contents.value, hover.contents.value

    hint = _line(ADD, "# tritonlens:")
    col = split_lines(ADD)[hint].index("num_warps=4") + len("num_warps=")
    since = mark(client)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(hint, col), types.Position(hint, col + 1)), text="four")]))
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    diags = await settled(client, uri, since=since)
    assert [(d.code, d.range.start.line) for d in diags] == [("SRC004", hint)], diags
