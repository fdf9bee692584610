"""On a GPU, after `tritonlens capture -o CAPTURES -- python bench/autotune/tutorial_matmul.py`: check the tutorial
matmul with those captures, take the configs tritonlens proposes for its LAUNCH004 findings (fixes/tuning: a tile
that fits the launch's M, compiled and proven on the CPU), and time each on the captured launch against the config
the autotuner chose — same inputs, outputs compared — as `check --fix` would need before keeping one.

    python bench/autotune/time_proposals.py CAPTURES OUT.jsonl
"""
import json
import os
import sys

import torch
import triton

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tutorial_matmul as tm  # noqa: E402

from tritonlens.fixes.search import Search  # noqa: E402
from tritonlens.fixes.tuning import label, proposals  # noqa: E402
from tritonlens.pipeline import Checker  # noqa: E402
from tritonlens.settings import Settings  # noqa: E402


def timed(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=200, quantiles=(0.5, 0.2, 0.8))


def main(captures: str, out_path: str) -> None:
    path = os.path.join(HERE, "tutorial_matmul.py")
    settings = Settings()
    rows = []
    with Checker(settings, capture_file=captures) as checker:
        report = checker.check_file(path)
        text = open(path, encoding="utf-8").read()
        for kr in report.kernels:
            if kr.tuning is not None:
                for line in kr.tuning.key_lines() + [kr.tuning.dead_line()]:
                    print("tuning:", line)
            for f in kr.findings:
                print(f"finding: {f.code} line {f.line} [{f.severity}]: {f.message}")
                if f.code != "LAUNCH004":
                    continue
                held = [cs for cs in kr.compiled if cs.spec.key() in set(f.data.get("specs") or [])]
                if not held:
                    continue
                spec = held[0].spec
                search = Search(kr, f, text, f.code, os.path.dirname(captures))
                fixes = search.run(checker, settings, path, on_gpu=False)
                proven = {fx.title for fx in fixes}
                for fx in fixes:
                    print("proven on the CPU:", fx.title)
                tensors = {n: a["tensor"] for l in spec.launch_records for n, a in l.get("args", {}).items()
                           if "tensor" in a}
                M, K = tensors["a_ptr"]["shape"]
                N = tensors["b_ptr"]["shape"][1]
                torch.manual_seed(1)
                a = torch.randn((M, K), device="cuda", dtype=torch.float16)
                b = torch.randn((K, N), device="cuda", dtype=torch.float16)
                ref = a.float() @ b.float()
                chosen = {k: spec.constants[k] for k in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K",
                                                         "GROUP_SIZE_M")}
                chosen_opts = {"num_warps": spec.options["num_warps"], "num_stages": spec.options["num_stages"]}
                base = tm.matmul(a, b, kernel=tm.matmul_kernel.fn, **chosen, **chosen_opts)
                t0 = timed(lambda: tm.matmul(a, b, kernel=tm.matmul_kernel.fn, **chosen, **chosen_opts))
                err0 = ((base.float() - ref).norm() / ref.norm()).item()
                print(f"chosen {chosen} {chosen_opts}: {t0[0] * 1000:.1f} µs, rel. error {err0:.2e}")
                for cfg in proposals(kr, f, spec.constants, spec.options):
                    opts = {"num_warps": cfg["num_warps"], "num_stages": cfg["num_stages"]}
                    c = tm.matmul(a, b, kernel=tm.matmul_kernel.fn, **cfg["kwargs"], **opts)
                    t = timed(lambda: tm.matmul(a, b, kernel=tm.matmul_kernel.fn, **cfg["kwargs"], **opts))
                    err = ((c.float() - ref).norm() / ref.norm()).item()
                    same = bool(torch.equal(c, base))
                    close = bool(torch.allclose(c.float(), base.float(), rtol=1e-2, atol=1e-1))
                    keep = close and t[0] < t0[0]
                    row = {"shape": [M, N, K], "proposal": label(cfg), "chosen_us": round(t0[0] * 1000, 2),
                           "time_us": round(t[0] * 1000, 2), "p20_us": round(t[1] * 1000, 2),
                           "p80_us": round(t[2] * 1000, 2), "speedup": round(t0[0] / t[0], 3),
                           "outputs_equal": same, "outputs_close": close, "rel_error": err,
                           "proven_on_cpu": any(label(cfg) in title for title in proven),
                           "verdict": "offered" if keep else "withheld"}
                    rows.append(row)
                    print(json.dumps(row))
    with open(out_path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
