"""Compare two capture files spec by spec: signature, constants, divisibility attrs, num_warps, num_stages.

    python bench/compare_captures.py A.jsonl B.jsonl [--by key|order]

Made for the same driver captured two ways (say `DEVICE=cuda tritonlens capture -- python examples/driver.py` on a
GPU and `tritonlens capture --no-gpu -- python examples/driver.py`): compile records are matched by path + kernel +
constants (`--by key`, the default; among several records of one key an identical one is paired first, then the rest in
file order), or by their order
in each file (`--by order`). Summary records (capture format 2) are ignored. Prints a markdown table and
"N of M identical"; exits 1 when any spec differs or has no partner.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict

FIELDS = ("signature", "constants", "attrs", "num_warps", "num_stages")


def compiles(path: str) -> list[dict]:
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                print(f"{path}:{n}: not JSON, skipped", file=sys.stderr)
                continue
            if isinstance(rec, dict) and rec.get("record", "compile") == "compile" and "kernel" in rec:
                out.append(rec)
    return out


def fields(rec: dict) -> dict:
    attrs = rec.get("attrs") or {}
    opts = rec.get("options") or {}
    return {"signature": rec.get("signature"), "constants": rec.get("constants"),
            "attrs": {k: v.get("divisibility") for k, v in sorted(attrs.items()) if isinstance(v, dict)},
            "num_warps": opts.get("num_warps"), "num_stages": opts.get("num_stages")}


def key(rec: dict) -> str:
    return json.dumps([rec.get("path"), rec.get("kernel"), rec.get("constants")], sort_keys=True)


def pair(a: list[dict], b: list[dict], by: str) -> list[tuple[dict | None, dict | None]]:
    if by == "order":
        return [(a[i] if i < len(a) else None, b[i] if i < len(b) else None) for i in range(max(len(a), len(b)))]
    left = defaultdict(list)
    for rec in b:
        left[key(rec)].append(rec)
    out: list[tuple[dict | None, dict | None]] = []
    unpaired = []
    for rec in a:  # an identical partner first (records of one key may come in another order), else the next one
        cands = left[key(rec)]
        twin = next((c for c in cands if fields(c) == fields(rec)), None)
        if twin is not None:
            cands.remove(twin)
            out.append((rec, twin))
        else:
            unpaired.append(rec)
    out += [(rec, left[key(rec)].pop(0) if left[key(rec)] else None) for rec in unpaired]
    out += [(None, rec) for recs in left.values() for rec in recs]
    return out


def short(value) -> str:
    return json.dumps(value, sort_keys=True).replace("|", "\\|")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--by", choices=("key", "order"), default="key")
    args = ap.parse_args()
    pairs = pair(compiles(args.a), compiles(args.b), args.by)
    print(f"| # | path | kernel | constants | {' | '.join(FIELDS)} |")
    print("|---|---|---|---|" + "---|" * len(FIELDS))
    same = 0
    for i, (x, y) in enumerate(pairs, 1):
        ref = x or y
        cells = []
        if x is None or y is None:
            cells = [f"only in {'A' if y is None else 'B'}"] * len(FIELDS)
        else:
            fx, fy = fields(x), fields(y)
            cells = ["=" if fx[f] == fy[f] else f"A {short(fx[f])} / B {short(fy[f])}" for f in FIELDS]
            same += all(c == "=" for c in cells)
        print(f"| {i} | {ref.get('path')} | {ref.get('kernel')} | {short(ref.get('constants'))} | "
              + " | ".join(cells) + " |")
    print(f"\n{same} of {len(pairs)} identical ({args.a} vs {args.b}, matched by {args.by})")
    return 0 if pairs and same == len(pairs) else 1


if __name__ == "__main__":
    sys.exit(main())
