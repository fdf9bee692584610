"""Launch real libraries' Triton ops at production shapes on a GPU, for checking the cost model on code it was never
fitted on: run under `tritonlens capture --time --workspace ROOT` (ROOT the folder that holds the library's package,
so the captured paths are the package's own), then `tritonlens cost` on the CPU with the captures.

    python library_driver.py OUT.json flaggems            # FlagGems: mm, bmm, addmm, attention, norms, softmax, ...
    python library_driver.py OUT.json liger LIGER_SRC     # Liger-Kernel: fused MoE, fused linear cross entropy, ...
    python library_driver.py OUT.json flaggems-holdout    # other ops and shapes, kept out of the model's design
    python library_driver.py OUT.json liger-holdout LIGER_SRC
    python library_driver.py OUT.json fla                 # flash-linear-attention (fla-core): gated delta rule, ...

Each op is timed by the driver too (CUDA events, suite_driver.timed) into OUT.json. FlagGems' LibEntry keeps each
compiled kernel and launches it directly after the first call, past `JITFunction.run` where the capture counts and
times launches; the driver empties that per-call cache so that every launch goes through `run` (the compile is
Triton's own cache hit: nothing else changes)."""
import os
import sys
import traceback

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import suite_driver as sd  # noqa: E402

timed = sd.timed


def flaggems(dev, ops=True):
    import flag_gems
    from flag_gems.utils.libentry import LibEntry

    run = LibEntry.run

    def through_jit(self, *args, **kwargs):
        for cache in self.kernel_cache:
            cache.clear()
        return run(self, *args, **kwargs)

    LibEntry.run = through_jit
    if not ops:
        return
    bf = torch.bfloat16  # the ops whose autotuner sweeps the fewest configs first, the decode GEMM's retune last
    a, b = torch.randn(8192, 8192, device=dev, dtype=bf), torch.randn(8192, 8192, device=dev, dtype=bf)
    timed("flaggems_mm_8192", "flaggems", lambda: flag_gems.mm(a, b))
    x = torch.randn(49152, 4096, device=dev, dtype=bf)
    wn = torch.randn(4096, device=dev, dtype=bf)
    timed("flaggems_rms_norm_49152x4096", "flaggems", lambda: flag_gems.rms_norm(x, [4096], wn, 1e-6))
    timed("flaggems_layer_norm_49152x4096", "flaggems", lambda: flag_gems.layer_norm(x, [4096], wn, wn, 1e-5))
    x = torch.randn(4096, 32768, device=dev, dtype=bf)
    timed("flaggems_softmax_4096x32768", "flaggems", lambda: flag_gems.softmax(x, -1))
    g, u = (torch.randn(8192, 14336, device=dev, dtype=bf) for _ in range(2))
    timed("flaggems_silu_and_mul_8192x14336", "flaggems", lambda: flag_gems.silu_and_mul(g, u))
    logits = torch.randn(4096, 128256, device=dev, dtype=bf)
    target = torch.randint(0, 128256, (4096,), device=dev)
    timed("flaggems_cross_entropy_4096x128256", "flaggems", lambda: flag_gems.cross_entropy_loss(logits, target))
    q, k, v = (torch.randn(1, 32, 4096, 128, device=dev, dtype=bf) for _ in range(3))
    for causal in (False, True):
        timed(f"flaggems_sdpa_4096{'_causal' if causal else ''}", "flaggems",
              lambda: flag_gems.scaled_dot_product_attention(q, k, v, is_causal=causal))
    q, k = torch.randn(32, 4096, 128, device=dev, dtype=bf), torch.randn(32, 128, 4096, device=dev, dtype=bf)
    timed("flaggems_bmm_32x4096x4096x128", "flaggems", lambda: flag_gems.bmm(q, k))
    a, w = torch.randn(4096, 4096, device=dev, dtype=bf), torch.randn(4096, 14336, device=dev, dtype=bf)
    bias = torch.randn(14336, device=dev, dtype=bf)
    timed("flaggems_addmm_4096x14336x4096", "flaggems", lambda: flag_gems.addmm(bias, a, w))
    x = torch.randn(16, 8192, device=dev, dtype=bf)
    timed("flaggems_mm_decode_16x8192x8192", "flaggems", lambda: flag_gems.mm(x, b))


def flaggems_holdout(dev):
    """Other ops and shapes of the same library, run after the model's mechanisms were settled: a hold-out."""
    import flag_gems

    flaggems(dev, ops=False)
    bf = torch.bfloat16
    for m, n, k in ((2048, 4096, 14336), (4096, 4096, 4096), (64, 28672, 4096)):
        a, b = torch.randn(m, k, device=dev, dtype=bf), torch.randn(k, n, device=dev, dtype=bf)
        timed(f"flaggems_mm_{m}x{n}x{k}", "flaggems", lambda: flag_gems.mm(a, b))
    for bt, m, n, k in ((64, 1024, 1024, 64), (8, 2048, 2048, 2048)):
        a, b = torch.randn(bt, m, k, device=dev, dtype=bf), torch.randn(bt, k, n, device=dev, dtype=bf)
        timed(f"flaggems_bmm_{bt}x{m}x{n}x{k}", "flaggems", lambda: flag_gems.bmm(a, b))
    a, w = torch.randn(8192, 4096, device=dev, dtype=bf), torch.randn(4096, 4096, device=dev, dtype=bf)
    bias = torch.randn(4096, device=dev, dtype=bf)
    timed("flaggems_addmm_8192x4096x4096", "flaggems", lambda: flag_gems.addmm(bias, a, w))
    q, k, v = (torch.randn(2, 16, 8192, 64, device=dev, dtype=bf) for _ in range(3))
    timed("flaggems_sdpa_2x16x8192x64_causal", "flaggems",
          lambda: flag_gems.scaled_dot_product_attention(q, k, v, is_causal=True))
    x = torch.randn(8192, 8192, device=dev, dtype=bf)
    wn = torch.randn(8192, device=dev, dtype=bf)
    timed("flaggems_rms_norm_8192x8192", "flaggems", lambda: flag_gems.rms_norm(x, [8192], wn, 1e-6))
    timed("flaggems_softmax_8192x8192", "flaggems", lambda: flag_gems.softmax(x, -1))


def liger_holdout(dev, src):
    """Liger's fused MoE at other shapes (many small experts, a decode batch): a hold-out."""
    os.environ.setdefault("LIGER_FUSED_MOE_AUTOTUNE", "0")
    sys.path.insert(0, src)
    from liger_kernel.ops.fused_moe import LigerFusedMoEFunction

    bf = torch.bfloat16
    for tokens, hidden, inter, experts, topk in ((8192, 2048, 1408, 64, 6), (256, 4096, 14336, 8, 2)):
        x = torch.randn(tokens, hidden, device=dev, dtype=bf)
        gate_up = torch.randn(experts, 2 * inter, hidden, device=dev, dtype=bf) * 0.02
        down = torch.randn(experts, hidden, inter, device=dev, dtype=bf) * 0.02
        weights, index = torch.topk(torch.randn(tokens, experts, device=dev).softmax(-1), topk, dim=-1)
        index = index.to(torch.int32).contiguous()
        timed(f"liger_fused_moe_{tokens}x{experts}x{inter}", "liger",
              lambda: LigerFusedMoEFunction.apply(x, gate_up, down, index, weights.to(bf)))


def liger(dev, src):
    os.environ.setdefault("LIGER_FUSED_MOE_AUTOTUNE", "0")  # one config per kernel: no autotuner sweep on the GPU
    sys.path.insert(0, src)
    from liger_kernel.ops.fused_linear_cross_entropy import LigerFusedLinearCrossEntropyFunction
    from liger_kernel.ops.fused_moe import LigerFusedMoEFunction

    bf = torch.bfloat16
    tokens, hidden, inter, experts, topk = 4096, 4096, 14336, 8, 2
    x = torch.randn(tokens, hidden, device=dev, dtype=bf)
    gate_up = torch.randn(experts, 2 * inter, hidden, device=dev, dtype=bf) * 0.02
    down = torch.randn(experts, hidden, inter, device=dev, dtype=bf) * 0.02
    scores = torch.randn(tokens, experts, device=dev)
    weights, index = torch.topk(scores.softmax(-1), topk, dim=-1)
    index = index.to(torch.int32).contiguous()
    timed("liger_fused_moe_4096x8x14336", "liger", lambda: LigerFusedMoEFunction.apply(x, gate_up, down, index,
                                                                                       weights.to(bf)))
    w = torch.randn(128256, hidden, device=dev, dtype=bf) * 0.02
    target = torch.randint(0, 128256, (tokens,), device=dev)
    timed("liger_flce_4096x4096x128256", "liger", lambda: LigerFusedLinearCrossEntropyFunction.apply(x, w, target))
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    from liger_kernel.ops.softmax import LigerSoftmaxFunction

    x = torch.randn(49152, 4096, device=dev, dtype=bf)
    wn = torch.randn(4096, device=dev, dtype=bf)
    timed("liger_rms_norm_49152x4096", "liger", lambda: LigerRMSNormFunction.apply(x, wn, 1e-6, 0.0, "llama", False))
    x = torch.randn(4096, 32768, device=dev, dtype=bf)
    timed("liger_softmax_4096x32768", "liger", lambda: LigerSoftmaxFunction.apply(x))


def fla(dev, budget_s=360.0, configs=4):
    """flash-linear-attention (fla-core), a library the model was never fitted on, at an LLM's shapes: Qwen3-Next's
    chunked gated delta rule (forward), the delta rule and GLA (forward and backward), simple GLA, its RMS norm
    (plain, forward and backward, and gated). Its autotuners keep
    `configs` of their configs each (evenly spaced over the library's own list): a fresh GPU compiles every config of
    every kernel before the first launch, and the point here is each launch's time beside its estimate, whatever the
    config. Cases not started within `budget_s` are skipped (what ran is kept); FLA_CASES=SUBSTRING runs only the
    cases whose names hold it."""
    import time

    import torch.nn.functional as F
    import triton

    tune = triton.autotune

    def fewer(*args, **kwargs):
        if "configs" in kwargs:
            cs, rest = list(kwargs.pop("configs")), args
        else:
            cs, rest = list(args[0]), args[1:]
        if len(cs) > configs:
            cs = [cs[round(i * (len(cs) - 1) / (configs - 1))] for i in range(configs)]
        return tune(cs, *rest, **kwargs)

    triton.autotune = fewer
    from fla.modules.norm.fused_norm_gate import rms_norm_gated
    from fla.modules.norm.layernorm import rms_norm
    from fla.ops.delta_rule import chunk_delta_rule
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule
    from fla.ops.gla import chunk_gla
    from fla.ops.simple_gla import chunk_simple_gla

    def leaf(x):
        return x.detach().requires_grad_()

    def fwd_bwd(op, *args):
        def go():
            o = op(*args)[0]
            o.backward(torch.ones_like(o))
        return go

    end = time.monotonic() + budget_s
    bf = torch.bfloat16
    cases = []
    for b, t, h, d in ((2, 4096, 16, 128), (1, 16384, 32, 128)):
        q, k = (leaf(F.normalize(torch.randn(b, t, h, d, device=dev), dim=-1).to(bf)) for _ in range(2))
        v = leaf(torch.randn(b, t, h, d, device=dev, dtype=bf))
        g = leaf(F.logsigmoid(torch.randn(b, t, h, device=dev)))
        gk = leaf(F.logsigmoid(torch.randn(b, t, h, d, device=dev)))
        beta = leaf(torch.rand(b, t, h, device=dev, dtype=bf))
        shape = f"{b}x{t}x{h}x{d}"
        # the gated delta rule's backward refuses Triton < 3.7.1 on Hopper (a miscompile the library knows of)
        cases.append((f"fla_gated_delta_rule_fwd_{shape}", lambda q=q, k=k, v=v, g=g, beta=beta:
                      chunk_gated_delta_rule(q, k, v, g, beta)))
        cases.append((f"fla_delta_rule_fwd_bwd_{shape}", fwd_bwd(chunk_delta_rule, q, k, v, beta)))
        cases.append((f"fla_gla_fwd_bwd_{shape}", fwd_bwd(chunk_gla, q, k, v, gk)))
        cases.append((f"fla_simple_gla_fwd_{shape}", lambda q=q, k=k, v=v, g=g: chunk_simple_gla(q, k, v, g)))
    x = leaf(torch.randn(32768, 4096, device=dev, dtype=bf))
    gate = torch.randn(32768, 4096, device=dev, dtype=bf)
    w = leaf(torch.ones(4096, device=dev, dtype=bf))
    cases.append(("fla_rms_norm_fwd_bwd_32768x4096", fwd_bwd(lambda *a: (rms_norm(*a),), x, w, None)))
    cases.append(("fla_rms_norm_gated_32768x4096", lambda: rms_norm_gated(x, gate, w, None)))
    only = os.environ.get("FLA_CASES")  # a substring: run only the cases whose names hold it (for ncu)
    for name, fn in cases:
        if only and only not in name:
            continue
        if time.monotonic() > end:
            print(f"{name}: skipped (the driver's {budget_s:.0f} s are spent)", flush=True)
            continue
        with torch.enable_grad() if "fwd_bwd" in name else torch.no_grad():
            timed(name, "fla", fn)


def main(out_path, which, src=None):
    import json

    try:
        {"flaggems": lambda: flaggems("cuda"), "flaggems-holdout": lambda: flaggems_holdout("cuda"),
         "liger": lambda: liger("cuda", src), "liger-holdout": lambda: liger_holdout("cuda", src),
         "fla": lambda: fla("cuda")}[which]()
    except Exception:  # noqa: BLE001 — what ran before the failure is kept
        traceback.print_exc()
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(sd.RESULTS, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
