"""A spill no knob removes: a cross-entropy kernel that holds each row of a 128256-token vocabulary in one program
(BLOCK_SIZE = next_power_of_2(n_cols), no loop over the row) spills whatever its warps, and the finding names the
rewrite that removes it — a loop over the row in chunks, two passes or online — with the cost model's estimate of what
it saves. The same computation looping over its row in chunks too large for its warps also spills, and gets the
knobs' advice, not the rewrite. The launches are recorded by `tritonlens capture --no-gpu` from the file's own launch
code on torch CPU tensors; the kernels are compiled for real on the CPU for cuda:90."""
from __future__ import annotations

import json
import subprocess
import sys

from conftest import require_module

from tritonlens.cli import main as cli_main

require_module("torch", "the launch code makes torch CPU tensors (pip install -e '.[test]')")

KERNELS = '''"""Cross entropy over a vocabulary: each row's loss, and the row's softmax written back in place."""
import torch
import triton
import triton.language as tl


@triton.jit
def ce_whole_row(logits_ptr, labels_ptr, loss_ptr, stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(logits_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
    m = tl.max(x, axis=0)
    lse = m + tl.log(tl.sum(tl.exp(x - m), axis=0))
    x_y = tl.load(logits_ptr + row * stride + tl.load(labels_ptr + row)).to(tl.float32)
    tl.store(loss_ptr + row, lse - x_y)
    tl.store(logits_ptr + row * stride + cols, tl.exp(x - lse), mask=cols < n_cols)


@triton.jit
def ce_looped(logits_ptr, labels_ptr, loss_ptr, stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    m = -float("inf")
    d = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(logits_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    lse = m + tl.log(d)
    x_y = tl.load(logits_ptr + row * stride + tl.load(labels_ptr + row)).to(tl.float32)
    tl.store(loss_ptr + row, lse - x_y)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(logits_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        tl.store(logits_ptr + row * stride + cols, tl.exp(x - lse), mask=cols < n_cols)


def cross_entropy(logits, labels, looped: bool):
    n_rows, n_cols = logits.shape
    loss = torch.empty(n_rows, dtype=torch.float32, device=logits.device)
    if looped:  # chunks of 32768 columns on 4 warps: 256 values a thread, which more warps would remove
        ce_looped[(n_rows,)](logits, labels, loss, logits.stride(0), n_cols, BLOCK_SIZE=32768, num_warps=4)
    else:
        ce_whole_row[(n_rows,)](logits, labels, loss, logits.stride(0), n_cols,
                                BLOCK_SIZE=triton.next_power_of_2(n_cols), num_warps=32)
    return loss
'''

DRIVER = '''import torch, ce
logits = torch.randn(64, 128256, dtype=torch.bfloat16)
labels = torch.randint(0, 128256, (64,))
ce.cross_entropy(logits, labels, looped=False)
ce.cross_entropy(logits, labels, looped=True)
'''


def _captured(tmp_path) -> str:
    (tmp_path / "ce.py").write_text(KERNELS)
    (tmp_path / "driver.py").write_text(DRIVER)
    proc = subprocess.run([sys.executable, "-m", "tritonlens", "capture", "--no-gpu", "--", sys.executable,
                           "driver.py"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return str(tmp_path / "ce.py")


def _findings(path: str, capsys, fmt: str, *more: str) -> str:
    code = cli_main(["check", path, "--target", "cuda:90", "--gpu", "h100", "--select", "SASS001", "--format", fmt,
                     "--workers", "1", *more])
    out, _ = capsys.readouterr()
    assert code == 1, out  # the spills are warnings
    return out


def test_a_whole_row_spill_names_the_rewrite_and_what_it_saves(tmp_path, capsys):
    path = _captured(tmp_path)
    spills = {f["kernel"]: f for f in json.loads(_findings(path, capsys, "json"))}
    whole, looped = spills["ce_whole_row"], spills["ce_looped"]
    # the whole row: the one-line message names the cause, its full account and the rewrite (with the estimate) are
    # beside it
    assert "one program holds a whole row (n_cols = 128256)" in whole["message"] and len(whole["message"]) <= 200
    account = "\n".join(whole["details"])
    assert "one program holds a whole row (n_cols = 128256 in a block of 131072): loop over it in chunks, no " \
           "launch option removes it" in account, account
    assert "smaller BLOCK or more num_warps" not in account
    assert f"rewrite: {whole['rewrite']}" in whole["details"]
    rewrite = whole["rewrite"]
    assert "n_cols = 128256 values in a block of 131072, 128 a thread (128 even at 1024 threads)" in rewrite, rewrite
    assert "two passes" in rewrite and "online softmax / logsumexp" in rewrite
    cost = whole["cost"]
    assert cost["share"] >= 0.15, cost  # what the spill costs is what the rewrite saves: worth a warning
    assert "estimated to save ~" in rewrite and f"({cost['share']:.0%}, what the cost model prices the spill at)" \
        in rewrite, (rewrite, cost)
    # the looped kernel spills too (32768 columns a chunk on 4 warps), and a knob does remove that: no rewrite
    assert "one program holds a whole row" not in looped["message"] and "rewrite" not in looped
    assert "smaller BLOCK or more num_warps" in "\n".join(looped["details"])

    # one line a finding; with --verbose, its evidence under it, the rewrite once
    text = _findings(path, capsys, "text").splitlines()
    at = next(i for i, line in enumerate(text) if "SASS001" in line and "whole row" in line)
    assert not any("rewrite: " in line for line in text)
    text = _findings(path, capsys, "text", "--verbose").splitlines()
    at = next(i for i, line in enumerate(text) if "SASS001" in line and "whole row" in line)
    assert f"    rewrite: {rewrite}" in text[at + 1:]
    assert sum(1 for line in text if line.startswith("    rewrite: ")) == 1


def test_the_editor_shows_the_rewrite_on_the_rows_line(tmp_path):
    """The diagnostic's related places (what the editor lists under it) start with the rewrite, on the line whose
    mask bounds the row (`cols < n_cols`)."""
    from tritonlens.lsp.diagnostics import to_diagnostic
    from tritonlens.pipeline import Checker
    from tritonlens.settings import Settings

    path = _captured(tmp_path)
    with Checker(Settings(target="cuda:90", gpu="h100")) as checker:
        kr = next(k for k in checker.check_file(path).kernels if k.name == "ce_whole_row")
    spill = next(f for f in kr.findings if f.code == "SASS001")
    diag = to_diagnostic(spill)
    first = diag.related_information[0]
    load_line = next(i for i, line in enumerate(KERNELS.splitlines(), 1) if "x = tl.load(" in line)
    assert first.location.range.start.line == load_line - 1 and first.message == spill.data["rewrite"]
    assert spill.data["whole_row"]["reduce_line"] == load_line + 1  # tl.max, the row's first reduction
