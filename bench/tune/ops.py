"""Real libraries' Triton ops at production shapes, timed as a user's `bench.py` would time them: the op table that
`tritonlens tune` is judged by (before, and after `tune` + `check --fix` with every autotuner cache cleared).

    python bench/tune/ops.py LIB [OUT.json]      # LIB: tutorial | liger | flaggems

Each op: 3 calls to warm up (compiles, autotuning), then 9 rounds of 20 calls between CUDA events; the median round\nper call printed.
The outputs of each op are saved beside OUT.json (OUT.pt) so that before and after can be compared."""
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROUNDS, CALLS = 9, 20


def timed(name, fn, table, outs):
    """GPU time per call: 20 calls back to back between two CUDA events (the host stays ahead of the GPU, so the time
    is the kernels', not Python's), the median of 9 such rounds."""
    for _ in range(3):
        out = fn()
    torch.cuda.synchronize()
    rounds = []
    for _ in range(ROUNDS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(CALLS):
            fn()
        b.record()
        b.synchronize()
        rounds.append(a.elapsed_time(b) * 1000.0 / CALLS)
    rounds.sort()
    table[name] = round(rounds[len(rounds) // 2], 2)
    outs[name] = (out[0] if isinstance(out, tuple) else out).detach().float().cpu()
    print(f"{name:40s} {table[name]:10.1f} us (rounds {rounds[0]:.1f}-{rounds[-1]:.1f})", flush=True)


def tutorial(dev, table, outs):
    sys.path.insert(0, os.environ.get("TUTORIAL_DIR") or os.path.join(HERE, "..", "autotune"))
    import tutorial_matmul as tm

    g = torch.Generator(device=dev).manual_seed(0)
    for m, n, k in ((16, 8192, 8192), (64, 28672, 4096), (4096, 4096, 4096)):
        a = torch.randn(m, k, device=dev, dtype=torch.float16, generator=g)
        b = torch.randn(k, n, device=dev, dtype=torch.float16, generator=g)
        timed(f"tutorial_matmul_{m}x{n}x{k}", lambda: tm.matmul(a, b), table, outs)


def liger(dev, table, outs):
    from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction
    from liger_kernel.ops.geglu import LigerGELUMulFunction
    from liger_kernel.ops.layer_norm import LigerLayerNormFunction
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction

    g = torch.Generator(device=dev).manual_seed(0)
    bf = torch.bfloat16
    x = torch.randn(16384, 4096, device=dev, dtype=bf, generator=g)
    w = torch.randn(4096, device=dev, dtype=bf, generator=g)
    timed("liger_rms_norm_16384x4096", lambda: LigerRMSNormFunction.apply(x, w, 1e-6), table, outs)
    timed("liger_layer_norm_16384x4096", lambda: LigerLayerNormFunction.apply(x, w, w, 1e-5), table, outs)
    a = torch.randn(8192, 14336, device=dev, dtype=bf, generator=g)
    b = torch.randn(8192, 14336, device=dev, dtype=bf, generator=g)
    timed("liger_swiglu_8192x14336", lambda: LigerSiLUMulFunction.apply(a, b), table, outs)
    timed("liger_geglu_8192x14336", lambda: LigerGELUMulFunction.apply(a, b), table, outs)
    logits = torch.randn(4096, 128256, device=dev, dtype=bf, generator=g)
    target = torch.randint(0, 128256, (4096,), device=dev, generator=g)
    timed("liger_cross_entropy_4096x128256",
          lambda: LigerCrossEntropyFunction.apply(logits.clone(), target, None, -100, 0.0, 0.0, "mean"), table, outs)


def flaggems(dev, table, outs):
    import flag_gems

    g = torch.Generator(device=dev).manual_seed(0)
    bf = torch.bfloat16
    for m, n, k in ((16, 8192, 8192), (4096, 4096, 4096)):
        a = torch.randn(m, k, device=dev, dtype=bf, generator=g)
        b = torch.randn(k, n, device=dev, dtype=bf, generator=g)
        timed(f"flaggems_mm_{m}x{n}x{k}", lambda: flag_gems.mm(a, b), table, outs)
    x = torch.randn(16384, 4096, device=dev, dtype=bf, generator=g)
    w = torch.randn(4096, device=dev, dtype=bf, generator=g)
    timed("flaggems_rms_norm_16384x4096", lambda: flag_gems.rms_norm(x, [4096], w, 1e-6), table, outs)
    x = torch.randn(4096, 32768, device=dev, dtype=bf, generator=g)
    timed("flaggems_softmax_4096x32768", lambda: flag_gems.softmax(x, -1), table, outs)


def main():
    lib = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else None
    table, outs = {}, {}
    globals()[lib]("cuda", table, outs)
    if out:
        with open(out, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "ops": table}, f, indent=1)
        torch.save(outs, os.path.splitext(out)[0] + ".pt")


if __name__ == "__main__":
    main()
