"""The full-block fix (fixes/tail.py) in the editor: offered preferred on examples/bad/vector_add_unaligned.py,
applied and saved, and the re-check leaves only the masked tail's findings. A real server on stdio compiling for
cuda:90 on the CPU; the fix engine's own tests are tests/test_fix_tail.py."""
from __future__ import annotations

from pytest_lsp import LanguageClient

from test_fix_tail import VECTOR_ADD, VECTOR_ADD_FIXED_BODY
from test_lsp import (apply_edits, by_code, edit_and_save, mark, open_doc, quick_fixes, settled, start,
                      workspace)
from test_lsp import client  # noqa: F401 — the language server on stdio, as a fixture


async def test_the_editor_offers_the_full_block_path_preferred_and_applies_it(client: LanguageClient, tmp_path):
    uris = workspace(tmp_path, add=VECTOR_ADD)
    uri, path = uris["add"], str(tmp_path / "add.py")
    await start(client, tmp_path)
    open_doc(client, uri, VECTOR_ADD)
    diags = await settled(client, uri, lambda d: by_code(d, "PTX001"))
    diag = next(d for d in by_code(diags, "PTX001") if d.range.start.line == 12)

    actions = await quick_fixes(client, uri, diag)
    titles = [a.title for a in actions]
    program = [a for a in actions if a.title.startswith("Add an unmasked path for full blocks — ")]
    assert len(program) == 1, titles
    (fix,) = program
    assert fix.title == ("Add an unmasked path for full blocks — loads 32 → 128-bit and stores 32 → 128-bit on the "
                         "fast path (re-compiled); the last block stays masked"), fix.title
    assert fix.is_preferred  # a program change, proven
    hints = [a for a in actions if a.title.startswith("Tell tritonlens: ")]
    assert hints and not any(a.is_preferred for a in hints), titles
    (edit,) = fix.edit.changes[uri]
    fixed = apply_edits(VECTOR_ADD, [edit])
    assert fixed.endswith(VECTOR_ADD_FIXED_BODY)

    since = mark(client)
    edit_and_save(client, uri, fixed, 2, path)
    after = await settled(client, uri, since=since)
    assert not by_code(after, "SRC001")
    # what is left is the masked tail's (lines 18-20); the fast path (14-16) is clean
    assert sorted((d.code, d.range.start.line + 1) for d in after if str(d.code).startswith("PTX")) == [
        ("PTX001", 18), ("PTX001", 19), ("PTX002", 20)], after
