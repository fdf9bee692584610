"""Quick fixes that change how a kernel is launched — the hint's num_warps, a literal autotune config — driven
through a real server on stdio (pytest-lsp), each candidate re-compiled by the server for cuda:90 on the CPU before
it is offered; each test applies the offered edit, saves, and checks the finding is gone."""
from __future__ import annotations

import os
import re
import textwrap

import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from conftest import EXAMPLES
from test_lsp import SERVER, apply_edits, by_code, open_doc, quick_fixes, saved_without, settled, start, workspace

with open(os.path.join(EXAMPLES, "bad", "matmul_spill.py")) as fh:
    SPILL = fh.read()

# Config 1 (BLOCK_N=256, 5 stages) needs 240 KB of shared memory on sm_90 (limit 227 KB): RES001 in 1 of 2 configs.
_BODY = '''
@triton.jit
def matmul_at(a_ptr, b_ptr, c_ptr, K, stride_am, stride_bk, stride_cm,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc.to(tl.float16))
'''
_HEAD = ("import triton\nimport triton.language as tl\n\n\n"
         "# tritonlens: a_ptr=*fp16, b_ptr=*fp16, c_ptr=*fp16, K=i32%16, stride_am=i32%16, stride_bk=i32%16, "
         "stride_cm=i32%16\n")
AUTOTUNED = _HEAD + textwrap.dedent('''\
    @triton.autotune(configs=[
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64}, num_warps=8, num_stages=5),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=4, num_stages=3),
    ], key=["K"])''') + _BODY
# The same two configs built by a comprehension: there is no literal to edit, so no fix.
COMPREHENDED = _HEAD + textwrap.dedent('''\
    @triton.autotune(configs=[
        triton.Config({"BLOCK_M": 128, "BLOCK_N": bn, "BLOCK_K": 64}, num_warps=w, num_stages=s)
        for bn, w, s in ((256, 8, 5), (128, 4, 3))
    ], key=["K"])''') + _BODY


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


def _numbers(title: str, pattern: str) -> tuple[int, ...]:
    m = re.search(pattern, title)
    assert m, f"{pattern!r} not in {title!r}"
    return tuple(int(g) for g in m.groups())


async def test_spill_fix_doubles_warps_in_hint(client: LanguageClient, tmp_path):
    uris = workspace(tmp_path, spill=SPILL)
    uri, path = uris["spill"], str(tmp_path / "spill.py")
    await start(client, tmp_path)
    open_doc(client, uri, SPILL)
    diags = await settled(client, uri, lambda d: by_code(d, "SASS001"))
    def_line = next(i for i, ln in enumerate(SPILL.splitlines()) if ln.startswith("def matmul_spill"))
    (diag,) = [d for d in by_code(diags, "SASS001") if d.range.start.line == def_line]

    actions = await quick_fixes(client, uri, diag)
    assert actions, "no quick fix for SASS001"
    fix = actions[0]
    # What the re-compile showed: 296 B of spill at 255 registers with 4 warps, none at 184 with 8.
    assert fix.title.startswith("Use num_warps=8 — removes SASS001 ("), fix.title
    spilled, after, regs0, regs1 = _numbers(fix.title, r"(\d+) B spilled → (\d+); registers (\d+) → (\d+)")
    assert spilled > 0 and after == 0 and regs1 < regs0, fix.title
    (edit,) = fix.edit.changes[uri]
    assert edit.range.start.line == def_line - 2 and "num_warps=8" in edit.new_text  # the hint line, edited
    fixed = apply_edits(SPILL, [edit])
    assert "num_warps=4" not in fixed and fixed.count("# tritonlens:") == 1

    await saved_without(client, uri, path, fixed, "SASS001")


async def test_shared_memory_fix_edits_the_failing_autotune_config(client: LanguageClient, tmp_path):
    uris = workspace(tmp_path, mm=AUTOTUNED)
    uri, path = uris["mm"], str(tmp_path / "mm.py")
    await start(client, tmp_path)
    open_doc(client, uri, AUTOTUNED)
    (diag,) = by_code(await settled(client, uri, lambda d: by_code(d, "RES001")), "RES001")
    assert "in 1 of 2 configs" in diag.message, diag.message

    actions = await quick_fixes(client, uri, diag)
    titles = [a.title for a in actions]
    assert actions and titles[0].startswith("In config 1 (") and ": num_stages 5 → 4 — removes RES001; shared " \
        in titles[0], titles
    before, after = (float(x) for x in re.search(r"shared ([\d.]+) KB → ([\d.]+) KB", titles[0]).groups())
    assert before > 227 >= after, titles[0]
    removal = [a for a in actions if a.title.startswith("Remove config 1 (")]
    assert removal and "removes RES001; 1 config left" in removal[0].title, titles

    (edit,) = actions[0].edit.changes[uri]
    fixed = apply_edits(AUTOTUNED, [edit])
    config_1, config_2 = (ln for ln in fixed.splitlines() if "triton.Config(" in ln)
    assert "num_stages=4" in config_1 and "num_stages=3" in config_2  # only the failing config changed

    await saved_without(client, uri, path, fixed, "RES001")


async def test_removing_a_config_that_cannot_launch(client: LanguageClient, tmp_path):
    uris = workspace(tmp_path, mm=AUTOTUNED)
    uri, path = uris["mm"], str(tmp_path / "mm.py")
    await start(client, tmp_path)
    open_doc(client, uri, AUTOTUNED)
    (diag,) = by_code(await settled(client, uri, lambda d: by_code(d, "RES001")), "RES001")
    (removal,) = [a for a in await quick_fixes(client, uri, diag) if a.title.startswith("Remove config 1")]
    fixed = apply_edits(AUTOTUNED, removal.edit.changes[uri])
    assert fixed.count("triton.Config(") == 1 and '"BLOCK_N": 128' in fixed

    await saved_without(client, uri, path, fixed, "RES001")


async def test_no_config_fix_when_configs_are_built_by_code(client: LanguageClient, tmp_path):
    uris = workspace(tmp_path, mm=COMPREHENDED)
    uri = uris["mm"]
    await start(client, tmp_path)
    open_doc(client, uri, COMPREHENDED)
    (diag,) = by_code(await settled(client, uri, lambda d: by_code(d, "RES001")), "RES001")
    assert "in 1 of 2 configs" in diag.message, diag.message
    assert list(await quick_fixes(client, uri, diag) or []) == []
