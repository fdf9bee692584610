"""Launch every case of the calibration suite (suite.py) at production shapes on a GPU, REPS times each, under
`tritonlens capture --time` (which times the launches after the first and records them with the capture); the
driver's own CUDA-event timings (median and minimum after two warm-ups) go to the JSON file named by the first
argument, keyed by case, with the class each case belongs to; `--parts a,b` runs only those parts (PARTS).
`--liger SRC` runs Liger-Kernel's forward ops at production shapes instead (a library the model is not fitted on),
under a capture whose workspace is SRC."""
import json
import os
import sys
import traceback

import torch
import triton

import suite as s

REPS = 12  # capture --time leaves the first untimed and times the next 10
SMS = torch.cuda.get_device_properties(0).multi_processor_count if torch.cuda.is_available() else 132
RESULTS = {}


# under `capture --no-gpu` torch answers as the virtual GPU, but nothing runs: each launch is recorded once, untimed
RUNS = torch.cuda.is_available() and not os.environ.get("TRITONLENS_CAPTURE_NO_GPU")


def timed(case, cls, fn):
    try:
        fn()
        if not RUNS:
            RESULTS[case] = {"class": cls, "recorded": True}
            return
        torch.cuda.synchronize()
        times = []
        for _ in range(REPS):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(500_000)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) * 1000.0)
        times.sort()
        RESULTS[case] = {"class": cls, "median_us": round(times[len(times) // 2], 3), "min_us": round(times[0], 3)}
        print(f"{case:34s} {cls:14s} {times[len(times) // 2]:10.1f} µs (min {times[0]:.1f})", flush=True)
    except Exception as exc:  # noqa: BLE001 — one case's failure is reported, the others go on
        RESULTS[case] = {"class": cls, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        print(f"{case}: FAILED {type(exc).__name__}: {str(exc)[:300]}", flush=True)
        traceback.print_exc(limit=2)


def gemms(dev):
    bf, f8 = torch.bfloat16, torch.float8_e4m3fn
    for m, n, k in ((8192, 8192, 8192), (4096, 4096, 4096)):
        a, b = torch.randn(m, k, device=dev, dtype=bf), torch.randn(k, n, device=dev, dtype=bf)
        c = torch.empty(m, n, device=dev, dtype=bf)
        grid = (triton.cdiv(m, 128) * triton.cdiv(n, 256),)
        timed(f"gemm_bf16_{m}", "gemm-bf16", lambda: s.gemm[grid](
            a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
            BM=128, BN=256, BK=64, GROUP_M=8, num_warps=8, num_stages=3))
        timed(f"gemm_persistent_{m}", "gemm-persistent", lambda: s.gemm_persistent[(SMS,)](
            a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
            BM=128, BN=256, BK=64, NUM_SMS=SMS, num_warps=8, num_stages=3))
        timed(f"gemm_reverse_k_{m}", "gemm-bf16", lambda: s.gemm_reverse_k[(m // 128, n // 128)](
            a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0), BM=128, BN=128, BK=64, num_warps=8,
            num_stages=3))
        a8 = a.to(f8)
        b8 = b.t().contiguous().to(f8).t()  # K-major B, as fp8 GEMMs take it
        timed(f"gemm_fp8_{m}", "gemm-fp8", lambda: s.gemm[grid](
            a8, b8, c, m, n, k, a8.stride(0), a8.stride(1), b8.stride(0), b8.stride(1), c.stride(0), c.stride(1),
            BM=128, BN=256, BK=128, GROUP_M=8, num_warps=8, num_stages=3))
        del a, b, c, a8, b8
    for m, n, k in ((16, 8192, 8192), (64, 28672, 4096)):
        a, w = torch.randn(m, k, device=dev, dtype=bf), torch.randn(k, n, device=dev, dtype=bf)
        c = torch.empty(m, n, device=dev, dtype=bf)
        grid = (triton.cdiv(n, 128),)
        timed(f"gemm_decode_bf16_m{m}", "gemm-decode", lambda: s.gemm[grid](
            a, w, c, m, n, k, a.stride(0), a.stride(1), w.stride(0), w.stride(1), c.stride(0), c.stride(1),
            BM=64, BN=128, BK=128, GROUP_M=1, num_warps=4, num_stages=4))
        a8, w8 = a.to(f8), w.t().contiguous().to(f8).t()
        timed(f"gemm_decode_fp8_m{m}", "gemm-decode", lambda: s.gemm[grid](
            a8, w8, c, m, n, k, a8.stride(0), a8.stride(1), w8.stride(0), w8.stride(1), c.stride(0), c.stride(1),
            BM=64, BN=128, BK=128, GROUP_M=1, num_warps=4, num_stages=4))
        del a, w, c, a8, w8


def attention(dev):
    for bh, seq in ((128, 4096), (256, 1024)):
        q, k, v = (torch.randn(bh, seq, 128, device=dev, dtype=torch.bfloat16) for _ in range(3))
        o = torch.empty_like(q)
        for causal in (False, True):
            timed(f"attention_fwd_{seq}{'_causal' if causal else ''}", "attention", lambda: s.attention_fwd[
                (seq // 128, bh)](q, k, v, o, seq, q.stride(0), q.stride(1), 0.088, BLOCK_M=128, BLOCK_N=64,
                                  HEAD=128, CAUSAL=causal, num_warps=8, num_stages=3))
        del q, k, v, o


def split_k(dev):
    bf = torch.bfloat16
    for m, n, k, split in ((64, 8192, 28672, 8), (256, 4096, 14336, 4)):
        a, b = torch.randn(m, k, device=dev, dtype=bf), torch.randn(k, n, device=dev, dtype=bf)
        c = torch.zeros(m, n, device=dev, dtype=torch.float32)
        bm = 64
        grid = (triton.cdiv(m, bm) * triton.cdiv(n, 128), split)
        timed(f"gemm_split_k_m{m}", "gemm-split-k", lambda: s.gemm_split_k[grid](
            a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0), BM=bm, BN=128, BK=64, SPLIT_K=split,
            num_warps=4, num_stages=4))
        del a, b, c


def moe(dev):
    bf = torch.bfloat16
    experts, n, k = 8, 14336, 4096
    for tokens in (4096, 512):  # tokens per expert: prefill, decode batch
        counts = [tokens] * experts
        offs = torch.tensor([0] + list(torch.tensor(counts).cumsum(0)), device=dev, dtype=torch.int32)
        a = torch.randn(sum(counts), k, device=dev, dtype=bf)
        w = torch.randn(experts, k, n, device=dev, dtype=bf)
        c = torch.empty(sum(counts), n, device=dev, dtype=bf)
        timed(f"moe_grouped_gemm_{tokens}", "moe", lambda: s.moe_grouped_gemm[(SMS,)](
            a, w, c, offs, n, k, a.stride(0), w.stride(0), w.stride(1), c.stride(0), E=experts, BM=128, BN=256,
            BK=64, NUM_SMS=SMS, num_warps=8, num_stages=3))
        del a, w, c


def attention_bwd(dev):
    bh, seq, head = 32, 4096, 128
    q, k, v, do = (torch.randn(bh, seq, head, device=dev, dtype=torch.bfloat16) * 0.1 for _ in range(4))
    m = torch.zeros(bh, seq, device=dev, dtype=torch.float32)
    d = torch.zeros(bh, seq, device=dev, dtype=torch.float32)
    dq, dk, dv = (torch.empty_like(q) for _ in range(3))
    for causal in (False, True):
        tag = "_causal" if causal else ""
        timed(f"attention_bwd_dkdv_{seq}{tag}", "attention-bwd", lambda: s.attention_bwd_dkdv[(seq // 128, bh)](
            q, k, v, do, m, d, dk, dv, seq, q.stride(0), q.stride(1), 0.088, BLOCK_M=32, BLOCK_N=128, HEAD=head,
            CAUSAL=causal, num_warps=8, num_stages=3))
        timed(f"attention_bwd_dq_{seq}{tag}", "attention-bwd", lambda: s.attention_bwd_dq[(seq // 128, bh)](
            q, k, v, do, m, d, dq, seq, q.stride(0), q.stride(1), 0.088, BLOCK_M=128, BLOCK_N=32, HEAD=head,
            CAUSAL=causal, num_warps=8, num_stages=3))
    del q, k, v, do, m, d, dq, dk, dv


def rows(dev):
    bf = torch.bfloat16
    for r, c in ((49152, 4096), (4096, 8192), (8, 1024)):
        x = torch.randn(r, c, device=dev, dtype=bf)
        w = torch.randn(c, device=dev, dtype=bf)
        y = torch.empty_like(x)
        block = triton.next_power_of_2(c)
        timed(f"rms_norm_{r}x{c}", "norm-rows", lambda: s.rms_norm[(r,)](x, w, y, x.stride(0), c, 1e-6, BLOCK=block,
                                                                          num_warps=8 if c >= 4096 else 4))
        del x, w, y
    for r, c in ((16384, 8192), (64, 65536)):
        x = torch.randn(r, c, device=dev, dtype=bf)
        w, b = torch.randn(c, device=dev, dtype=bf), torch.randn(c, device=dev, dtype=bf)
        y = torch.empty_like(x)
        timed(f"layer_norm_looped_{r}x{c}", "norm-rows", lambda: s.layer_norm_looped[(r,)](
            x, w, b, y, x.stride(0), c, 1e-5, BLOCK=1024, num_warps=4))
        del x, w, b, y
    for r, c in ((4096, 32768), (8, 131072)):
        x = torch.randn(r, c, device=dev, dtype=bf)
        y = torch.empty_like(x)
        timed(f"softmax_online_{r}x{c}", "softmax-rows", lambda: s.softmax_online[(r,)](
            x, y, x.stride(0), c, BLOCK=2048, num_warps=8))
        del x, y


def quant(dev):
    for r, c in ((16384, 7168), (512, 7168)):
        x = torch.randn(r, c, device=dev, dtype=torch.bfloat16)
        q = torch.empty(r, c, device=dev, dtype=torch.float8_e4m3fn)
        sc = torch.empty(r, device=dev, dtype=torch.float32)
        timed(f"quant_fp8_row_{r}x{c}", "quantization", lambda: s.quant_fp8_row[(r,)](
            x, q, sc, x.stride(0), c, BLOCK=1024, num_warps=4))
        groups = r * c // 128
        sg = torch.empty(groups, device=dev, dtype=torch.float32)
        timed(f"quant_fp8_group_{r}x{c}", "quantization", lambda: s.quant_fp8_group[(triton.cdiv(groups, 16),)](
            x, q, sg, groups, GROUP=128, GROUPS_PER_PROGRAM=16, num_warps=4))
        del x, q, sc, sg


def reductions(dev):
    for r, c in ((16384, 8192), (64, 1 << 20)):
        x = torch.randn(r, c, device=dev)
        out = torch.empty(r, device=dev)
        timed(f"row_sum_{r}x{c}", "reduction", lambda: s.row_sum[(r,)](x, out, x.stride(0), c, BLOCK=1024,
                                                                       num_warps=4))
        del x, out
    n = 1 << 28
    x = torch.randn(n, device=dev)
    for programs in (2 * SMS, 16):
        out = torch.empty(programs, device=dev)
        timed(f"sum_grid_stride_{programs}", "reduction", lambda: s.sum_grid_stride[(programs,)](
            x, out, n, BLOCK=4096, num_warps=8))
    del x


def elementwise(dev):
    for n in (1 << 28, 1 << 22, 8192):
        x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
        out = torch.empty_like(x)
        timed(f"add_{n}", "elementwise", lambda: s.add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024))
        del x, y, out
    n = 8192 * 14336
    g, u = (torch.randn(n, device=dev, dtype=torch.bfloat16) for _ in range(2))
    out = torch.empty_like(g)
    timed("silu_mul_bf16", "elementwise", lambda: s.silu_mul[(triton.cdiv(n, 2048),)](g, u, out, n, BLOCK=2048))
    del g, u, out


def strided(dev):
    """Lanes a row apart (LAUNCH003) against whole-sector tiles of the same rows, and the coalesced twin."""
    for r, c in ((65536, 1024), (262144, 256)):
        x = torch.randn(r, c, device=dev)
        out = torch.empty(r, device=dev)
        timed(f"row_walk_lanes_{r}x{c}", "strided", lambda: s.row_walk_lanes[(triton.cdiv(r, 128),)](
            x, out, r, c, BLOCK=128, num_warps=4))
        timed(f"row_walk_tiles_{r}x{c}", "strided", lambda: s.row_walk_tiles[(triton.cdiv(r, 128),)](
            x, out, r, c, BLOCK=128, COLS=8, num_warps=4))
        del x, out
    r, c = 1024, 65536
    x = torch.randn(r, c, device=dev)
    out = torch.empty(c, device=dev)
    timed(f"column_walk_lanes_{r}x{c}", "strided", lambda: s.column_walk_lanes[(triton.cdiv(c, 128),)](
        x, out, r, c, BLOCK=128, num_warps=4))
    del x, out


def liger(dev, src):
    sys.path.insert(0, src)
    from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction
    from liger_kernel.ops.geglu import LigerGELUMulFunction
    from liger_kernel.ops.layer_norm import LigerLayerNormFunction
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction

    bf = torch.bfloat16
    x = torch.randn(16384, 4096, device=dev, dtype=bf)
    w, b = torch.randn(4096, device=dev, dtype=bf), torch.randn(4096, device=dev, dtype=bf)
    timed("liger_rms_norm_16384x4096", "liger", lambda: LigerRMSNormFunction.apply(x, w, 1e-6, 0.0, "llama", False))
    timed("liger_layer_norm_16384x4096", "liger", lambda: LigerLayerNormFunction.apply(x, w, b, 1e-5))
    del x, w, b
    g, u = (torch.randn(8192, 14336, device=dev, dtype=bf) for _ in range(2))
    timed("liger_swiglu_8192x14336", "liger", lambda: LigerSiLUMulFunction.apply(g, u))
    timed("liger_geglu_8192x14336", "liger", lambda: LigerGELUMulFunction.apply(g, u))
    del g, u
    logits = torch.randn(4096, 128256, device=dev, dtype=bf)
    target = torch.randint(0, 128256, (4096,), device=dev)
    timed("liger_cross_entropy_4096x128256", "liger", lambda: LigerCrossEntropyFunction.apply(logits, target, None))


PARTS = ("gemms", "split_k", "moe", "attention", "attention_bwd", "rows", "quant", "reductions", "elementwise",
         "strided")


def main(out_path, liger_src=None, only=None):
    dev = "cuda"
    parts = tuple(globals()[name] for name in PARTS if not only or name in only)
    for part in ((lambda d: liger(d, liger_src)),) if liger_src else parts:
        try:
            part(dev)
        except Exception:  # noqa: BLE001 — a part that cannot start (an import) leaves the others
            traceback.print_exc()
        torch.cuda.empty_cache()
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(RESULTS, f, indent=1)


if __name__ == "__main__":
    args = sys.argv[1:]
    liger_src = None
    if "--liger" in args:
        i = args.index("--liger")
        liger_src = args[i + 1]
        del args[i:i + 2]
    only = None
    if "--parts" in args:  # e.g. --parts split_k,moe,attention_bwd: only these classes
        i = args.index("--parts")
        only = set(args[i + 1].split(","))
        del args[i:i + 2]
    main(args[0], liger_src, only)
