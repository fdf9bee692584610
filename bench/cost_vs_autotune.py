"""The cost model judged by the autotuner's own measurements: for every autotuned kernel and key of a capture file
with recorded trials (`capture`'s tuning lines), each timed config is compiled on the CPU and estimated on the launch
the autotuner timed it on, and the estimates are set beside the measured times — no GPU needed.

    PYTHONPATH=server python3 bench/cost_vs_autotune.py \
        --set flaggems SITE bench/results/autotune/flag-gems/captures.jsonl \
            --proposals bench/results/autotune/flag-gems/proposals-addmm.jsonl \
            --proposals bench/results/autotune/flag-gems/proposals-bmm.jsonl \
        --set tutorial . bench/results/autotune/captures.jsonl --proposals bench/results/autotune/proposals.jsonl \
        --json bench/results/autotune/cost-vs-autotune-after.json --before bench/results/autotune/cost-vs-autotune-before.json \
        --out bench/results/cost-vs-autotune.md

SITE: a folder where the flag-gems 5.0.2 wheel is installed (`pip install --no-deps --target SITE flag-gems==5.0.2`).
Run it with PYTHONPATH naming the model to judge (the same command with another checkout's server gives `--before`).

Per key it prints: the configs estimated (at most `--max-configs`, sampled evenly over the measured times, the fastest
and the chosen always among them), how many estimates lie within 1.5x of the measured time, the geomean of
estimate / measured, Spearman's rank correlation between estimates and measured times, and whether the config the
model ranks first is the measured best (or within 10% of it). Proposed configs timed on the GPU (`--proposals`, the
proposals-*.jsonl a GPU proof writes) join the key they were timed on. A config whose estimate the model calls
`uncovered` (e.g. tensor-descriptor arguments with no shape: no memory term) is counted apart."""
from __future__ import annotations

import argparse
import copy
import json
import math
import os
import shutil
import sys
import tempfile
import time

from tritonlens.pipeline import Checker
from tritonlens.settings import Settings

WITHIN = 1.5
NEAR_BEST = 1.10


def _label(kwargs: dict, warps, stages) -> str:
    return ", ".join([f"{k}={v}" for k, v in kwargs.items()] + [f"num_warps={warps}", f"num_stages={stages}"])


def _parse_label(text: str) -> tuple[dict, int | None, int | None]:
    kw: dict = {}
    for part in text.split(","):
        if "=" in part:
            k, v = part.strip().split("=", 1)
            kw[k] = int(v) if v.lstrip("-").isdigit() else v
    return kw, kw.pop("num_warps", None), kw.pop("num_stages", None)


def sample(configs: list[dict], most: int, chosen: int | None) -> list[dict]:
    """At most `most` configs spread evenly over the measured times (the fastest, the slowest and the chosen kept)."""
    timed = sorted((c for c in configs if isinstance(c.get("time_us"), (int, float))), key=lambda c: c["time_us"])
    if len(timed) <= most:
        return timed
    picks = {round(i * (len(timed) - 1) / (most - 1)) for i in range(most)}
    out = [timed[i] for i in sorted(picks)]
    if chosen is not None and 0 <= chosen < len(configs) and configs[chosen] not in out:
        out[-2] = configs[chosen]
    return out


def grid_of(kwargs: dict, args: dict, trials: list[dict]) -> list[int] | None:
    """The grid a proposed config launches, when the trials' grids all follow one rule of the blocks over the
    launch's M and N: programs = cdiv(M, BLOCK_M) · cdiv(N, BLOCK_N), on one axis or on two; None otherwise."""
    def dims(kw):
        bm = next((v for k, v in kw.items() if "M" in k.split("_")[-1] and k != "GROUP_M" and "GROUP" not in k), None)
        bn = next((v for k, v in kw.items() if k.split("_")[-1] == "N"), None)
        m, n = (args.get("M") or {}).get("value"), (args.get("N") or {}).get("value")
        if not all(isinstance(x, int) and x > 0 for x in (bm, bn, m, n)):
            return None
        return -(-m // bm), -(-n // bn)

    rules = []
    for rule in ("1d", "2d"):
        ok = True
        for c in trials:
            d = dims(c.get("kwargs") or {})
            g = list(c.get("grid") or [])
            want = [d[0] * d[1]] if d and rule == "1d" else [d[0], d[1]] if d else None
            if want is None or g != want:
                ok = False
                break
        if ok and trials:
            rules.append(rule)
    d = dims(kwargs)
    if not rules or d is None:
        return None
    return [d[0] * d[1]] if rules[0] == "1d" else [d[0], d[1]]


def _dtypes(args: dict) -> list:
    return sorted((n, (a.get("tensor") or {}).get("dtype")) for n, a in args.items()
                  if isinstance(a, dict) and "tensor" in a)


def key_workloads(caps: str, proposals: list[str], most: int) -> list[dict]:
    """Per autotuned kernel and key: the launch records to check (one per config, the launch the trial ran) and the
    measured time of each."""
    with open(caps, encoding="utf-8") as f:
        recs = [json.loads(line) for line in f if line.strip()]
    launches = [r for r in recs if r.get("record") is None and isinstance(r.get("launch"), dict)]
    props: list[dict] = []
    for p in proposals:
        with open(p, encoding="utf-8") as f:
            props += [json.loads(line) for line in f if line.strip()]
    tunings = [t for t in recs if t.get("record") == "tuning"]

    def chosen_of(t: dict) -> dict | None:
        configs = t.get("configs") or []
        i = t.get("chosen")
        return configs[i] if isinstance(i, int) and 0 <= i < len(configs) and isinstance(configs[i], dict) else None

    # a proposal joins the key of its kernel whose chosen config's time is the one it was compared with
    home: dict[int, list[dict]] = {}
    for p in props:
        if not isinstance(p.get("time_us"), (int, float)) or not p.get("chosen_us"):
            continue
        near = [(abs(float(p["chosen_us"]) / c["time_us"] - 1), i) for i, t in enumerate(tunings)
                if p.get("kernel", t["kernel"]) == t["kernel"] and (c := chosen_of(t)) and c.get("time_us")]
        if near and min(near)[0] <= 0.03:
            home.setdefault(min(near)[1], []).append(p)
    out = []
    for ti, t in enumerate(tunings):
        configs = [c for c in t.get("configs") or [] if isinstance(c, dict)]
        chosen = t.get("chosen") if isinstance(t.get("chosen"), int) else None
        picked = [dict(c, source="trial") for c in sample(configs, most, chosen)]
        chosen_cfg = chosen_of(t)
        for p in home.get(ti, []):
            kw, warps, stages = _parse_label(p["proposal"])
            grid = p.get("grid") or grid_of(kw, t.get("args") or {}, configs)
            if grid is None:
                continue
            picked.append({"kwargs": kw, "num_warps": warps, "num_stages": stages, "time_us": p["time_us"],
                           "grid": grid, "source": "proposal"})
        mine = [r for r in launches if r.get("kernel") == t["kernel"] and r.get("path") == t["path"]]
        want = _dtypes(t.get("args") or {})
        items = []
        for c in picked:
            same = [r for r in mine if _dtypes(r["launch"].get("args") or {}) == want] or mine
            exact = [r for r in same if all(r.get("constants", {}).get(k) == v for k, v in c["kwargs"].items())
                     and (r.get("options") or {}).get("num_warps") == c.get("num_warps")
                     and (r.get("options") or {}).get("num_stages") == c.get("num_stages")]
            if not (exact or same):
                continue
            rec = copy.deepcopy((exact or same)[0])
            rec["constants"] = {**rec.get("constants", {}), **c["kwargs"]}
            rec["options"] = {**rec.get("options", {}), "num_warps": c["num_warps"], "num_stages": c["num_stages"]}
            args = {**copy.deepcopy(t.get("args") or {}), **{k: {"value": v} for k, v in c["kwargs"].items()}}
            rec["launch"] = {"grid": list(c.get("grid") or rec["launch"].get("grid") or []), "args": args}
            rec.pop("autotune", None)
            items.append({"record": rec, "label": _label(c["kwargs"], c["num_warps"], c["num_stages"]),
                          "measured_us": float(c["time_us"]), "source": c["source"],
                          "chosen": chosen_cfg is not None and c.get("kwargs") == chosen_cfg.get("kwargs") and
                          c.get("num_warps") == chosen_cfg.get("num_warps") and
                          c.get("num_stages") == chosen_cfg.get("num_stages") and c["source"] == "trial"})
        out.append({"kernel": t["kernel"], "path": t["path"], "key": t.get("key"), "offered": len(configs),
                    "timed": sum(1 for c in configs if isinstance(c.get("time_us"), (int, float))), "items": items})
    return out


def _spec_id(constants: dict, options: dict) -> str:
    return json.dumps([sorted((k, str(v)) for k, v in constants.items()), options.get("num_warps"),
                       options.get("num_stages")])


def estimate_key(root: str, work: dict, gpu: str) -> list[dict]:
    """Check the key's configs in a copy of the workspace with their launches as its captures; each config's
    estimate as the same Checker as `tritonlens check --all-captures` makes it."""
    tmp = tempfile.mkdtemp(prefix="tritonlens-cost-vs-autotune-")
    ws = os.path.join(tmp, "ws")
    try:
        top = work["path"].split("/")[0]  # the package (or folder) the kernel's file is in, copied whole
        src = os.path.join(root, top)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(ws, top), ignore=shutil.ignore_patterns(".tritonlens", "__pycache__"))
        else:
            os.makedirs(ws)
            shutil.copy(src, os.path.join(ws, top))
        os.makedirs(os.path.join(ws, ".tritonlens"), exist_ok=True)
        with open(os.path.join(ws, ".tritonlens", "captures.jsonl"), "w", encoding="utf-8") as f:
            f.writelines(json.dumps(it["record"]) + "\n" for it in work["items"])
        settings = Settings(target="cuda:90", gpu=gpu, all_captures=True, max_workers=2)
        with Checker(settings) as checker:
            report = checker.check_file(os.path.join(ws, work["path"]), workspace_root=ws)
        est: dict[str, dict] = {}
        for kr in report.kernels:
            if kr.kernel.name != work["kernel"]:
                continue
            for cs in kr.compiled:
                for lc in (cs.metrics or {}).get("launch_costs") or []:
                    est[_spec_id(cs.spec.constants, cs.spec.options)] = lc
        rows = []
        for it in work["items"]:
            rec = it["record"]
            lc = est.get(_spec_id(rec["constants"], rec["options"]))
            rows.append({"label": it["label"], "measured_us": it["measured_us"], "source": it["source"],
                         "chosen": it["chosen"], "programs": math.prod(rec["launch"]["grid"] or [1]),
                         "est_us": lc.get("est_us") if lc else None, "bound": lc.get("bound") if lc else None,
                         "confidence": lc.get("confidence") if lc else None,
                         "parts": {k: lc.get(k) for k in ("memory_us", "tile_us", "dot_us", "issue_us",
                                                          "program_us", "overlap") if lc and k in lc}})
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def spearman(xs: list[float], ys: list[float]) -> float | None:
    if len(xs) < 3:
        return None

    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2
            i = j + 1
        return r

    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sx = math.sqrt(sum((a - mx) ** 2 for a in rx))
    sy = math.sqrt(sum((b - my) ** 2 for b in ry))
    return cov / (sx * sy) if sx and sy else None


def judge(rows: list[dict]) -> dict:
    rs = [r for r in rows if r["est_us"]]
    covered = [r for r in rs if r["confidence"] != "uncovered"]
    if not rs:
        return {"n": 0}
    within = sum(1 for r in rs if 1 / WITHIN <= r["est_us"] / r["measured_us"] <= WITHIN)
    geo = math.exp(sum(math.log(r["est_us"] / r["measured_us"]) for r in rs) / len(rs))
    rho = spearman([r["est_us"] for r in rs], [r["measured_us"] for r in rs])
    best = min(rs, key=lambda r: r["measured_us"])
    pick = min(rs, key=lambda r: r["est_us"])
    return {"n": len(rs), "uncovered": len(rs) - len(covered), "within": within, "geomean": geo, "spearman": rho,
            "best": best["label"], "best_us": best["measured_us"], "model_pick": pick["label"],
            "model_pick_us": pick["measured_us"], "pick_is_best": pick is best,
            "pick_near_best": pick["measured_us"] <= NEAR_BEST * best["measured_us"]}


def _key_text(key) -> str:
    dtypes = sorted({str(k).replace("torch.", "") for k in key or [] if isinstance(k, str)})
    return "×".join(str(k) for k in key or [] if isinstance(k, int)) + "".join(f" {d}" for d in dtypes)


def _count(res: dict) -> str:
    rows = [r for r in res["rows"] if r["est_us"]]
    props = sum(1 for r in rows if r["source"] == "proposal")
    return f"{len(rows) - props} of {res['timed']}" + (f" + {props} proposed" if props else "")


def render(results: list[dict], before: dict) -> str:
    head = (f"| set | kernel | key | configs (of timed) | uncovered | within {WITHIN}× | geomean est/measured | "
            f"Spearman | model's pick: measured µs (best µs) | pick is best / within 10% |")
    lines = [head, "|" + "---|" * 10]
    for res in results:
        j = res["judge"]
        if not j.get("n"):
            lines.append(f"| {res['set']} | {res['kernel']} | {_key_text(res['key'])} | 0 of {res['timed']} | "
                         "| | | | | |")
            continue
        rho = f"{j['spearman']:.2f}" if j["spearman"] is not None else "-"
        b = before.get(res["id"], {}).get("judge")
        if b and b.get("n"):
            rho = f"{b['spearman']:.2f} → {rho}" if b["spearman"] is not None else rho
        within = f"{b['within']} → {j['within']}" if b and b.get("n") else f"{j['within']}"
        geo = f"{b['geomean']:.2f} → {j['geomean']:.2f}" if b and b.get("n") else f"{j['geomean']:.2f}"
        pick = f"{j['model_pick_us']:.1f} ({j['best_us']:.1f})"
        if b and b.get("n"):
            pick = f"{b['model_pick_us']:.1f} → {pick}"
        verdict = ("yes" if j["pick_is_best"] else "no") + " / " + ("yes" if j["pick_near_best"] else "no")
        lines.append(f"| {res['set']} | {res['kernel']} | {_key_text(res['key'])} | {_count(res)} | "
                     f"{j['uncovered']} | {within} | {geo} | {rho} | {pick} | {verdict} |")
    lines += ["", "Each config (measured µs, estimate µs, bound, confidence; `*` the chosen, `+` a proposal):", ""]
    for res in results:
        lines.append(f"- {res['set']} {res['kernel']} key {_key_text(res['key'])}:")
        b = {r["label"] + r["source"]: r for r in before.get(res["id"], {}).get("rows", [])}
        for r in sorted(res["rows"], key=lambda r: r["measured_us"]):
            mark = "*" if r["chosen"] else "+" if r["source"] == "proposal" else " "
            old = b.get(r["label"] + r["source"], {}).get("est_us")
            est = f"{r['est_us']:.1f}" if r["est_us"] else "-"
            if old:
                est = f"{old:.1f} → {est}"
            lines.append(f"  - {mark} {r['label']} ({r['programs']} programs): measured {r['measured_us']:.1f}, "
                         f"est {est} ({r['bound'] or '-'}, {r['confidence'] or '-'})")
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--set", nargs=3, action="append", metavar=("NAME", "WORKSPACE", "CAPTURES"), required=True)
    p.add_argument("--proposals", action="append", default=[],
                   help="proposals-*.jsonl timed on the GPU, for the --set before it")
    p.add_argument("--max-configs", type=int, default=40)
    p.add_argument("--kernel", action="append", help="only these kernels")
    p.add_argument("--gpu", default="h200")
    p.add_argument("--json")
    p.add_argument("--before")
    p.add_argument("--out")
    args = p.parse_args()
    # --proposals belongs to the --set before it
    props_of: dict[str, list[str]] = {}
    current = None
    argv = sys.argv[1:]
    for i, a in enumerate(argv):
        if a == "--set":
            current = argv[i + 1]
        elif a == "--proposals" and current is not None:
            props_of.setdefault(current, []).append(argv[i + 1])
    started = time.time()
    results = []
    for name, root, caps in args.set:
        for work in key_workloads(caps, props_of.get(name, []), args.max_configs):
            if args.kernel and work["kernel"] not in args.kernel:
                continue
            t0 = time.time()
            rows = estimate_key(root, work, args.gpu)
            res = {"set": name, "kernel": work["kernel"], "key": work["key"], "timed": work["timed"],
                   "id": f"{name}|{work['kernel']}|{json.dumps(work['key'])}", "rows": rows}
            res["judge"] = judge(rows)
            results.append(res)
            print(f"{name} {work['kernel']} {_key_text(work['key'])}: {len(rows)} configs in {time.time() - t0:.0f} s",
                  file=sys.stderr, flush=True)
    before = {}
    if args.before:
        with open(args.before, encoding="utf-8") as f:
            before = {r["id"]: r for r in json.load(f)}
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=0)
    text = render(results, before) + f"\nChecked in {time.time() - started:.0f} s on this machine's CPU " \
        f"(at most {args.max_configs} configs a key).\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
