"""The cost model against the GPU, by class of kernel: every captured launch of the calibration suite
(bench/cost_kernels/suite.py) and of libraries not used for fitting (FlagGems, Liger-Kernel at production shapes),
the model's estimate beside the time the H200 measured (`capture --time`: median of 10 launches after the first),
checked here without a GPU through the same Checker as `tritonlens check --all-captures`.

    PYTHONPATH=server python3 bench/cost_by_class.py \
        --set suite bench/cost_kernels SUITE_CAPTURES \
        --set flaggems SITE bench/results/cost/flaggems-prod-captures-timed.jsonl \
        --set liger CORPUS/liger-kernel/src LIGER_CAPTURES \
        --json bench/results/cost/by-class-after-2.json --before bench/results/cost/by-class-before-2.json \
        --out bench/results/cost-by-class.md

SUITE_CAPTURES: suite2-captures-timed.jsonl and suite-captures-timed.jsonl of bench/results/cost/ together;
LIGER_CAPTURES: liger-prod-captures-timed.jsonl and liger-prod2-captures-timed.jsonl together; SITE: a folder where the
flag-gems 5.0.2 wheel is installed (`pip install --no-deps --target SITE flag-gems==5.0.2`). Only specs with a timed
launch are checked (an autotuner's sweep is left out). `--json` keeps each launch's estimate, so that a later run
(`--before`) can set the model before and after side by side."""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "server"))

from cost_calibration import check_workspace  # noqa: E402

LONG_US = 20.0
WITHIN = 1.5


def kernel_class(kernel: str, launch: dict) -> str:
    """The suite's class of a launch (the driver's grouping), read from the kernel's name and its arguments."""
    args = launch.get("args") or {}

    def dtype(name):
        return str(((args.get(name) or {}).get("tensor") or {}).get("dtype", ""))

    if kernel == "gemm":
        if "float8" in dtype("a_ptr"):
            rows = (args.get("M") or {}).get("value")
            return "gemm-decode" if isinstance(rows, int) and rows <= 64 else "gemm-fp8"
        rows = (args.get("M") or {}).get("value")
        return "gemm-decode" if isinstance(rows, int) and rows <= 64 else "gemm-bf16"
    return {"gemm_reverse_k": "gemm-bf16", "gemm_persistent": "gemm-persistent", "attention_fwd": "attention",
            "gemm_split_k": "gemm-split-k", "moe_grouped_gemm": "moe", "attention_bwd_dkdv": "attention-bwd",
            "attention_bwd_dq": "attention-bwd",
            "rms_norm": "norm-rows", "layer_norm_looped": "norm-rows", "softmax_online": "softmax-rows",
            "quant_fp8_row": "quantization", "quant_fp8_group": "quantization", "row_sum": "reduction",
            "sum_grid_stride": "reduction", "add": "elementwise", "silu_mul": "elementwise",
            "row_walk_lanes": "strided", "row_walk_tiles": "strided", "column_walk_lanes": "strided"}.get(kernel, kernel)


def rows_of(name: str, reports) -> list[dict]:
    """One row per captured launch the run timed: its kernel, class, grid, estimate and measured time."""
    out = []
    for fr in reports:
        for kr in fr.kernels:
            for cs in kr.compiled:
                for lc in (cs.metrics or {}).get("launch_costs") or []:
                    measured = lc.get("measured_us") or lc.get("timed_us")
                    if not measured:
                        continue
                    launch = next((r for r in cs.spec.launch_records if r.get("grid") == lc.get("grid")), {})
                    cls = kernel_class(kr.kernel.name, launch) if name == "suite" else f"{name}: {kr.kernel.name}"
                    out.append({"set": name, "class": cls, "kernel": kr.kernel.name, "spec": cs.spec.label,
                                "grid": lc.get("grid"), "est_us": lc.get("est_us"), "measured_us": measured,
                                "model_us": lc.get("model_us", lc.get("est_us")), "unknown": lc.get("unknown"),
                                "bound": lc.get("bound"), "confidence": lc.get("confidence"),
                                "parts": {k: lc.get(k) for k in ("memory_us", "dot_us", "issue_us", "program_us",
                                                                 "spill_us", "convert_us", "tile_us", "mio_us")
                                          if k in lc},
                                "programs": lc.get("programs"), "concurrent": lc.get("concurrent")})
    return out


def timed_only(captures: str) -> str:
    """A copy of a capture file with only the specs that have a timed launch: an autotuned library's sweep (160
    compiles of one GEMM) left out, since only the configs the runs chose were timed."""
    import tempfile

    def spec(r: dict) -> str:
        opts = r.get("options") or {}
        return json.dumps([r.get("path"), r.get("kernel"), r.get("signature"), r.get("constants"), r.get("attrs"),
                           opts.get("num_warps"), opts.get("num_stages")], sort_keys=True)

    with open(captures, encoding="utf-8") as f:
        recs = [json.loads(line) for line in f if line.strip()]
    keep = {spec(r) for r in recs if r.get("record") == "summary"
            and any(lc.get("time_us") for lc in r.get("launch_counts") or ())}
    fd, out = tempfile.mkstemp(prefix="tritonlens-timed-", suffix=".jsonl")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        for r in recs:
            if r.get("record") not in (None, "summary") or spec(r) in keep:
                f.write(json.dumps(r) + "\n")
    return out


def key(r: dict) -> str:
    return f"{r['set']}|{r['kernel']}|{r['spec']}|{r['grid']}|{r['measured_us']}"


def summary(rows: list[dict]) -> tuple[int, int, float | None]:
    """(launches >= LONG_US estimated within WITHIN, launches >= LONG_US, geomean of estimate / measured): a launch
    the model has no estimate of (`unknown`: trips it cannot count, an estimate below the physical floor) is not
    within and out of the geomean."""
    long = [r for r in rows if r["measured_us"] >= LONG_US]
    known = [r for r in long if r["est_us"]]
    within = sum(1 for r in known if 1 / WITHIN <= r["est_us"] / r["measured_us"] <= WITHIN)
    geo = math.exp(sum(math.log(r["est_us"] / r["measured_us"]) for r in known) / len(known)) if known else None
    return within, len(long), geo


def render(rows: list[dict], before: dict[str, dict]) -> str:
    lines = ["# The cost model by class of kernel (H200, estimates made on the CPU)", "",
             "Each launch timed by `capture --time` on an H200 (median of 10 launches after the first), set beside the "
             "model's estimate for the GPU model `h200`, made on the CPU. `before`: the model of the `--before` run; "
             "`after`: this one. Sets other than `suite` are libraries the model was not fitted on.", "",
             f"| class | launches ≥ {LONG_US:.0f} µs | within {WITHIN}× before | within {WITHIN}× after | "
             "geomean est/measured before | after |", "|---|---|---|---|---|---|"]
    classes: dict[str, list[dict]] = {}
    for r in rows:
        classes.setdefault(r["class"], []).append(r)
    for cls, rs in sorted(classes.items(), key=lambda kv: (kv[0].count(":"), kv[0])):
        w, n, g = summary(rs)
        old = [dict(r, est_us=before[key(r)]["est_us"]) for r in rs if key(r) in before]
        ow, on, og = summary(old) if old else (None, 0, None)
        lines.append(f"| {cls} | {n} | {f'{ow} of {on}' if old else '-'} | {w} of {n} | "
                     f"{f'{og:.2f}' if og else '-'} | {f'{g:.2f}' if g else '-'} |")
    for name in sorted({r["set"] for r in rows}):
        rs = [r for r in rows if r["set"] == name]
        w, n, g = summary(rs)
        old = [dict(r, est_us=before[key(r)]["est_us"]) for r in rs if key(r) in before]
        ow, on, og = summary(old) if old else (None, 0, None)
        lines.append(f"| **all of {name}** | {n} | {f'{ow} of {on}' if old else '-'} | **{w} of {n}** | "
                     f"{f'{og:.2f}' if og else '-'} | {f'{g:.2f}' if g else '-'} |")
    lines += ["", "## Each launch", "", "| class | kernel | grid | measured µs | est. µs before | est. µs after | "
              "after/measured | bound | confidence | memory | dot | issue | per program | spill | conversions |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["class"], -r["measured_us"])):
        b = before.get(key(r), {}).get("est_us")
        p = r["parts"]
        est = f"{r['est_us']:.1f}" if r["est_us"] else f"unknown: {r.get('unknown')} (model {r['model_us']:.1f})"
        lines.append(f"| {r['class']} | {r['kernel']} | {'x'.join(map(str, r['grid'] or []))} | "
                     f"{r['measured_us']:.1f} | {f'{b:.1f}' if b else '-'} | {est} | "
                     f"{r['est_us'] / r['measured_us'] if r['est_us'] else 0:.2f} | {r['bound']} | "
                     f"{r.get('confidence') or '-'} | "
                     + " | ".join(f"{p.get(k, 0) or 0:.1f}" for k in ("memory_us", "dot_us", "issue_us", "program_us",
                                                                     "spill_us", "convert_us")) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--set", nargs=3, action="append", metavar=("NAME", "WORKSPACE", "CAPTURES"), required=True)
    p.add_argument("--gpu", default="h200")
    p.add_argument("--json", help="write each launch's estimate here")
    p.add_argument("--before", help="an earlier --json, for the before column")
    p.add_argument("--out")
    args = p.parse_args()
    started = time.time()
    rows = []
    for name, root, caps in args.set:
        rows += rows_of(name, check_workspace(root, timed_only(caps), args.gpu))
    before = {}
    if args.before:
        with open(args.before, encoding="utf-8") as f:
            before = {key(r): r for r in json.load(f)}
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=0)
    text = render(rows, before) + f"\nChecked in {time.time() - started:.0f} s on this machine's CPU.\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
