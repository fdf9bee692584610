"""Shared-memory bank conflicts read from the PTX (ir/banks.py): the wavefronts of one warp's shared access, from the
lanes' addresses evaluated out of the PTX that computes them, on real Triton output compiled here for cuda:90.

The reference is ncu on an H200: Liger-Kernel's MoE gather-sum, whose cross-warp reductions store each lane's partial
16 words apart, made 155.7 M shared wavefronts from 19.4 M shared instructions (bench/results/cost/
liger-gather-ncu-metrics.txt: 4,751 a warp); this reader predicts 4,432 a warp for the same compile."""
from __future__ import annotations

import collections
import textwrap

from tritonlens.ir import parse_ptx
from tritonlens.ir.banks import shared_wavefronts, wavefronts


def test_a_warps_wavefronts_are_its_worst_banks_distinct_words():
    lanes = range(32)
    assert wavefronts(tuple(4 * i for i in lanes), 4) == 1  # contiguous words: one bank each
    assert wavefronts(tuple(64 * i for i in lanes), 4) == 16  # 16 words apart: two banks, 16 words each
    assert wavefronts(tuple(128 * i for i in lanes), 4) == 32
    assert wavefronts((0,) * 32, 4) == 1  # one word read by every lane: a broadcast
    assert wavefronts(tuple(2 * i for i in lanes), 2) == 1  # 16-bit halves of 16 words
    assert wavefronts(tuple(16 * i for i in lanes), 16) == 4  # 128-bit accesses: 128 words over 32 banks
    assert wavefronts((0,) * 32, 16) == 1  # one 16-byte vector read by every lane
    assert wavefronts(tuple(64 * i for i in lanes), 4, tuple(i < 2 for i in lanes)) == 1  # two lanes active
    assert wavefronts(None, 16) == 1  # an address not known: the fewest any access takes


def test_a_cross_warp_reduction_stores_16_words_apart_and_a_copy_uses_no_shared_memory(checker, tmp_path):
    path = tmp_path / "k.py"
    path.write_text(textwrap.dedent('''\
        import triton
        import triton.language as tl


        # tritonlens: x_ptr=*fp32, out_ptr=*fp32, BLOCK=128
        @triton.jit
        def column_sum(x_ptr, out_ptr, BLOCK: tl.constexpr):
            rows = tl.arange(0, 4)
            cols = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + rows[:, None] * BLOCK + cols[None, :])
            tl.store(out_ptr + cols, tl.sum(x, axis=0))


        # tritonlens: x_ptr=*fp32, out_ptr=*fp32, BLOCK=128
        @triton.jit
        def copy(x_ptr, out_ptr, BLOCK: tl.constexpr):
            cols = tl.arange(0, BLOCK)
            tl.store(out_ptr + cols, tl.load(x_ptr + cols))
        '''))
    report = checker.check_file(str(path))
    by = {}
    for kr in report.kernels:
        module = parse_ptx(kr.compiled[0].artifacts.asm["ptx"], str(path))
        by[kr.kernel.name] = collections.Counter(shared_wavefronts(module.instrs).values())
    # 4 warps of [1, 4] per thread over 128 columns: each lane's 4 partials go to [column][warp], 16 words apart
    assert by["column_sum"][16] >= 4, by
    assert by["column_sum"][1] >= 4, by  # the reads back, one column a lane: conflict-free
    assert by["copy"] == {}, by
