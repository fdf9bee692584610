"""Replay against the real run, from a `bench.jsonl` written after `tritonlens capture --time`: for each spec the
replayed (most launched) launch's standalone time (L2 cold) beside the time the captured run measured for that same
launch (CUDA events around its own launches), how many agree within 15%, by size; and the kernels with the most
captured GPU time with their share of HBM peak.

    python bench/replay_agreement.py .tritonlens/bench.jsonl
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict

AGREE = 0.15


def main(path: str) -> int:
    latest: dict[str, dict] = {}
    for line in open(path, encoding="utf-8"):
        rec = json.loads(line)
        latest[rec["identity"]] = rec  # the last run of each spec
    recs = list(latest.values())
    measured = [r for r in recs if r.get("measured") and r.get("time_us")]
    failed = [r for r in recs if r.get("error")]
    both = [r for r in measured if r.get("real_us")]
    print(f"# Replay against the real run ({len(recs)} specs: {len(measured)} replayed, {len(failed)} failed, "
          f"{len(both)} with the real run's time)\n")
    print("| kernel | spec | launches (replayed / all) | real µs | replay µs | replay/real |")
    print("|---|---|---|---|---|---|")
    for r in sorted(both, key=lambda r: -(r["real_us"] or 0)):
        print(f"| {r['kernel']} | {r['label']} | {r.get('count')} / {r.get('launches')} | {r['real_us']:.1f} | "
              f"{r['time_us']:.1f} | {r['replay_vs_real']:.2f} |")
    print()
    buckets = defaultdict(list)
    for r in both:
        size = "≥ 20 µs" if r["real_us"] >= 20 else ("5–20 µs" if r["real_us"] >= 5 else "< 5 µs")
        buckets[size].append(abs(r["replay_vs_real"] - 1) <= AGREE)
        buckets["all"].append(abs(r["replay_vs_real"] - 1) <= AGREE)
    for size in ("all", "≥ 20 µs", "5–20 µs", "< 5 µs"):
        ok = buckets.get(size, [])
        if ok:
            print(f"- agreement within {AGREE:.0%}, {size} (real run's time): {sum(ok)} of {len(ok)} specs "
                  f"({100 * sum(ok) / len(ok):.0f}%)")
    for r in failed[:10]:
        print(f"- failed: {r['kernel']} {r['label']}: {str(r['error'])[:160]}")
    per_kernel: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in measured:
        per_kernel[(r["path"], r["kernel"])].append(r)
    total = sum(r.get("total_us") or 0 for r in measured)
    print("\n## The kernels with the most captured GPU time\n")
    print("| kernel | specs | captured time | share | launches | heaviest spec: µs, % of HBM peak |")
    print("|---|---|---|---|---|---|")
    ranked = sorted(per_kernel.items(), key=lambda kv: -sum(r.get("total_us") or 0 for r in kv[1]))
    for (path, kernel), rs in ranked[:10]:
        t = sum(r.get("total_us") or 0 for r in rs)
        heavy = max(rs, key=lambda r: r.get("total_us") or 0)
        pct = heavy.get("pct_of_peak")
        print(f"| {path}::{kernel} | {len(rs)} | {t / 1e3:.2f} ms | {100 * t / total if total else 0:.0f}% | "
              f"{sum(r.get('launches') or 0 for r in rs)} | {heavy['time_us']:.1f} µs, "
              f"{'-' if pct is None else f'{pct:.0f}%'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
