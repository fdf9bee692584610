"""Before/after op table of `bench/tune/ops.py` runs: time per op, speedup, outputs compared (max difference relative
to the largest value, against the dtype's tolerance as `tune` uses it).

    python bench/tune/compare_ops.py BEFORE.json AFTER.json"""
import json
import math
import os
import sys

import torch


def main():
    before, after = (json.load(open(p)) for p in sys.argv[1:3])
    ob, oa = (torch.load(os.path.splitext(p)[0] + ".pt") for p in sys.argv[1:3])
    print(f"GPU: {after['gpu']}\n")
    print(f"| op | before µs | after µs | speedup | outputs (max rel. diff) |\n|---|---|---|---|---|")
    ratios = []
    for name, t0 in before["ops"].items():
        t1 = after["ops"].get(name)
        if t1 is None:
            continue
        a, b = ob[name], oa[name]
        scale = float(a.abs().max().clamp_min(1e-30))
        diff = float((a - b).abs().max()) / scale if a.shape == b.shape else math.inf
        ratios.append(t0 / t1)
        print(f"| {name} | {t0:.1f} | {t1:.1f} | {t0 / t1:.2f}× | {diff:.2g} |")
    if ratios:
        g = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"\ngeomean over {len(ratios)} ops: {g:.3f}×; slowest change {min(ratios):.3f}×")


if __name__ == "__main__":
    main()
