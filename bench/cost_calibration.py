"""The cost model against the GPU: estimated vs measured time of every captured launch, and estimated vs measured
gain of each cost-class kernel's finding (bench/cost_kernels), without a GPU.

Inputs are what `bench/gpu_cost_calibration.sh` wrote on a GPU machine: capture files recorded with `capture --time`
(each distinct launch with the real run's median time) and the cost kernels' driver timings (each case and its
well-written twin). Each captured spec is checked here (the same Checker as `tritonlens check --all-captures`, the
GPU model named by --gpu), and the model's estimate of each recorded launch is set beside the run's own time.

    PYTHONPATH=server python3 bench/cost_calibration.py --gpu h200 \
        --workspace bench/cost_kernels --captures bench/results/cost/cost-captures-timed.jsonl \
        --measured bench/results/cost/cost-measured.json \
        --workspace CORPUS/liger-kernel/src --captures bench/results/cost/liger-captures-timed.jsonl \
        --out bench/results/cost-calibration.md
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "server"))

from tritonlens.pipeline import Checker  # noqa: E402
from tritonlens.settings import Settings  # noqa: E402

# case of cost_kernels/driver.py -> (kernel, the finding's code, the driver's timing of the same work done well: the
# case's twin, or torch's own kernel where the twin has a defect of its own — the column sum's twin, a block of
# columns per program, runs 64 programs on 132 SMs)
CASES = {
    "one_program_sum": ("sum_one_program", "LAUNCH002", "one_program_sum.twin"),
    "column_sum": ("column_sum_strided", "LAUNCH003", "column_sum.torch"),
    "softmax_spill": ("softmax_rows", "SASS001", "softmax_spill.twin"),
    "idle_rows": ("scale_rows", "LAUNCH001", "idle_rows.twin"),
    "narrow_flat": ("scale_flat", "PTX001", "narrow_flat.twin"),
    "fma_dot": ("matmul", "TTGIR002", "fma_dot.twin"),
}
LONG_US = 20.0


def check_workspace(root: str, captures: str, gpu: str):
    """Every captured spec of the files the capture names, checked with the capture copied into the workspace."""
    with open(captures, encoding="utf-8") as f:
        paths = sorted({json.loads(line).get("path") for line in f if line.strip()} - {None})
    tmp = tempfile.mkdtemp(prefix="tritonlens-calibration-")
    work = os.path.join(tmp, "ws")
    shutil.copytree(root, work, ignore=shutil.ignore_patterns(".tritonlens", "__pycache__"))
    os.makedirs(os.path.join(work, ".tritonlens"))
    shutil.copy(captures, os.path.join(work, ".tritonlens", "captures.jsonl"))
    settings = Settings(target="cuda:90", gpu=gpu, all_captures=True, max_workers=2)
    reports = []
    with Checker(settings) as checker:
        for rel in paths:
            path = os.path.join(work, rel)
            if os.path.exists(path):
                reports.append(checker.check_file(path, workspace_root=work))
    return reports


def launch_rows(reports):
    rows = []
    for fr in reports:
        for kr in fr.kernels:
            for cs in kr.compiled:
                for lc in (cs.metrics or {}).get("launch_costs") or []:
                    # a time too few launches or too wide a spread gave is kept apart (trusted False), not dropped
                    t = lc.get("measured_us") or lc.get("timed_us")
                    if t:
                        rows.append((kr.kernel.name, cs.spec.label,
                                     dict(lc, measured_us=t, trusted=bool(lc.get("measured_us")))))
    return rows


def findings_by_kernel(reports):
    out = {}
    for fr in reports:
        for kr in fr.kernels:
            out.setdefault(kr.kernel.name, []).extend(kr.findings)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workspace", action="append", required=True)
    p.add_argument("--captures", action="append", required=True)
    p.add_argument("--measured", help="the cost kernels' driver timings (JSON)")
    p.add_argument("--gpu", default="h200")
    p.add_argument("--out")
    args = p.parse_args()
    started = time.time()
    reports = []
    for root, cap in zip(args.workspace, args.captures):
        reports.extend(check_workspace(root, cap, args.gpu))
    lines = [f"# The cost model against measured times ({args.gpu}, triton checked on the CPU)", ""]
    rows = launch_rows(reports)
    rows.sort(key=lambda r: -r[2]["measured_us"])
    lines += ["## Each captured launch: the model's estimate and the real run's time (capture --time)", "",
              "| kernel | spec | grid | est. µs | measured µs | est/measured | bound | memory | issue | dot | spill | "
              "conversions |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for kernel, label, lc in rows:
        ratio = lc["est_us"] / lc["measured_us"]
        lines.append(f"| {kernel} | {label} | {'x'.join(map(str, lc.get('grid') or []))} | {lc['est_us']:.1f} | "
                     f"{lc['measured_us']:.1f} | {ratio:.2f} | {lc['bound']} | {lc.get('memory_us', 0):.1f} | "
                     f"{lc.get('issue_us', 0):.1f} | {lc.get('dot_us', 0):.1f} | {lc.get('spill_us', 0):.1f} | "
                     f"{lc.get('convert_us', 0):.1f} |")
    long = [r for r in rows if r[2]["measured_us"] >= LONG_US]
    within = [r for r in long if 1 / 1.5 <= r[2]["est_us"] / r[2]["measured_us"] <= 1.5]
    small = [r for r in rows if r[2]["measured_us"] < LONG_US]
    small_within = [r for r in small if 1 / 1.5 <= r[2]["est_us"] / r[2]["measured_us"] <= 1.5]
    trusted = [r for r in long if r[2].get("trusted", True)]
    trusted_within = [r for r in trusted if 1 / 1.5 <= r[2]["est_us"] / r[2]["measured_us"] <= 1.5]
    lines += ["", f"Launches of {LONG_US:.0f} µs or more: **{len(within)} of {len(long)}** estimated within 1.5× of the "
                  f"measured time ({len(trusted_within)} of the {len(trusted)} whose time is trusted: the median of "
                  f"5 or more launches within 1.5× of their fastest); under {LONG_US:.0f} µs: {len(small_within)} of "
                  f"{len(small)}.", ""]
    if args.measured:
        with open(args.measured, encoding="utf-8") as f:
            measured = json.load(f)
        found = findings_by_kernel(reports)
        lines += ["## Each cause: the finding's estimated gain and what the well-written twin measured", "",
                  "| case | finding | severity | est. gain / launch | measured: case → done well | measured gain | "
                  "est. share | measured share |", "|---|---|---|---|---|---|---|---|"]
        for case, (kernel, code, well) in CASES.items():
            fs = [f for f in found.get(kernel, []) if f.code == code]
            bad, twin = measured.get(case), measured.get(well)
            if not fs or bad is None or twin is None:
                lines.append(f"| {case} | {code}: {'not reported' if not fs else 'no twin'} | | | | | | |")
                continue
            f = max(fs, key=lambda f: f.data.get("est_gain_us") or 0)
            gain = f.data.get("est_gain_us")
            mgain = bad - twin
            lines.append(f"| {case} | {code} line {f.line} | {f.severity} | "
                         f"{'-' if gain is None else f'{gain:.1f} µs'} | {bad:.1f} → {twin:.1f} µs | {mgain:.1f} µs | "
                         f"{(f.data.get('est_share') or 0):.0%} | {mgain / bad:.0%} |")
        lines += ["", "Driver timings (CUDA events, median of 20 launches after warm-up; the tiny cases include the "
                      "host's submission, which the capture's own timing excludes):", ""]
        lines += [f"- {k}: {v if isinstance(v, str) else f'{v:.1f} µs'}" for k, v in measured.items()]
    lines += ["", f"Checked in {time.time() - started:.0f} s on this machine's CPU."]
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
