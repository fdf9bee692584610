"""`tritonlens tune -- CMD`: on a GPU, find the changes that make the kernels carrying the time faster, and prove
them at the real launch.

1. The command runs under `capture --time`: every kernel's compiles, launches and GPU time, the autotuner's trials.
2. The captured kernels are checked on the CPU (findings with their costs); the ones carrying the most GPU time are
   taken, and for each the chosen config's neighbours in the direction of its findings' causes are made
   (fixes/neighbours) and compiled on the CPU (each must compile within the target's shared memory).
3. The command runs again with the proven candidates' trials at the real launches (gpu/trials: its own tensors, its
   grid function, its heuristics; outputs compared; the unchanged launch timed before, between and after).
4. What was measured is written to `.tritonlens/proposals.jsonl`, where `check` and the editor read it: a candidate
   measured faster is offered as a fix with its numbers (`check --fix` writes it), a slower one is withheld.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Any

DESCRIPTION = ("On a GPU: run a command, find changes to the launches that carry its GPU time (from the findings' "
               "causes), time each at the real launch with outputs compared, and record the faster ones as fixes.")
# The trial runs' default time: what the library's own autotuner spent in the captured run, plus this much (the
# command's own start, imports and the candidates' compiles and timings).
BUDGET_OVER_AUTOTUNER_S = 300.0
DEFAULT_KERNELS = 4
LAUNCHES_PER_KERNEL = 2  # distinct launches of a kernel each candidate is timed at


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("tune", help="on a GPU: find and prove faster launches: tune -- python bench.py",
                       description=DESCRIPTION)
    p.add_argument("--workspace", metavar="DIR", help="workspace root (default: the current folder)")
    p.add_argument("--budget", type=float, default=None, metavar="S",
                   help=f"seconds for the trial runs of the command (default: the autotuner's own time in the "
                        f"captured run + {BUDGET_OVER_AUTOTUNER_S:.0f} s)")
    p.add_argument("--kernels", type=int, default=DEFAULT_KERNELS, metavar="N",
                   help=f"tune the N launches (kernel and config) carrying the most GPU time (default "
                        f"{DEFAULT_KERNELS})")
    p.add_argument("--per-kernel", type=int, default=6, metavar="K", help="candidates timed per kernel (default 6)")
    p.add_argument("--no-capture", action="store_true",
                   help="use the captures already in the workspace (from `capture --time`) instead of a first run")
    p.add_argument("--target", default="auto", help="the target the candidates are compiled for (default: this GPU)")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- the command to run")
    p.set_defaults(run=run)
    return p


def _say(msg: str) -> None:
    print(f"tritonlens tune: {msg}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from ..device.targets import has_local_gpu

    cmd = getattr(args, "after_dashes", None) or [c for c in args.cmd if c != "--"]
    if not cmd:
        _say("no command given; usage: tritonlens tune -- python bench.py")
        return 2
    if not has_local_gpu():
        _say("no GPU here: candidates can be compiled but not timed; `tritonlens check` shows the estimated ones")
        return 2
    root = os.path.abspath(args.workspace or os.getcwd())
    started = time.monotonic()
    if not args.no_capture:
        from ..gpu import capture

        _say("1/4 running the command under capture --time")
        code = capture.main(["--time", "--workspace", root, "--", *cmd])
        if code not in (0,):
            _say(f"the command exited {code} under capture; tuning what it launched")
    _say("2/4 checking the captured kernels on the CPU")
    targets, chosen = plan_targets(root, args)
    if not targets:
        _say("no captured kernel launch with candidates to time")
        return 0
    n = sum(len(t["candidates"]) for t in targets)
    _say(f"3/4 timing {n} candidate(s) of {len(targets)} kernel(s) at their real launches")
    from ..gpu.capture import child_env
    from ..gpu.trials import run_plan

    scratch = tempfile.mkdtemp(prefix="tritonlens-tune-")
    env = child_env(os.path.join(scratch, "captures.jsonl"), root)
    budget = args.budget if args.budget is not None else \
        BUDGET_OVER_AUTOTUNER_S + float(getattr(args, "autotuner_s", 0.0) or 0.0)
    _say(f"   time budget {budget:.0f} s" + ("" if args.budget is not None else
                                               " (the autotuner's own time in the captured run + "
                                               f"{BUDGET_OVER_AUTOTUNER_S:.0f} s)"))
    events = run_plan(cmd, root, targets, budget, env, log=_say)
    _say("4/4 recording what was measured")
    rows = record(root, targets, chosen, events)
    print(table(rows))
    kept = sum(1 for r in rows if r["verdict"] == "faster")
    print(f"\n{kept} of {len(rows)} candidate(s) measured faster, outputs equal within tolerance "
          f"({time.monotonic() - started:.0f} s); `tritonlens check --fix` writes them")
    return 0


def _spec_time(cs) -> float:
    """The GPU time a compiled spec carries in the capture: Σ count × measured time (else the estimate)."""
    total = 0.0
    for lc in (cs.metrics or {}).get("launch_costs") or ():
        t = lc.get("measured_us") or lc.get("est_us") or 0.0
        total += float(t) * max(1, int(lc.get("count") or 1))
    return total


def plan_targets(root: str, args: argparse.Namespace) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """The kernels to tune, with their proven candidates, ready for gpu/trials; and per target what it was (path,
    kernel, chosen config, finding per candidate) for the record."""
    from ..frontend.captures import load_captures
    from ..fixes.neighbours import neighbours
    from ..fixes.tuning import _config_names, _existing
    from ..pipeline import Checker
    from ..settings import Settings

    caps, _ = load_captures(root)
    paths = sorted({os.path.join(root, c["path"]) for c in caps if isinstance(c.get("path"), str)})
    paths = [p for p in paths if os.path.isfile(p)]
    with Checker(Settings(target=args.target)) as checker:
        reports = [kr for fr in checker.check_files(paths) for kr in fr.kernels]
        args.autotuner_s = sum(kr.tuning.bench_s or 0.0 for kr in reports if kr.tuning is not None)
        ranked = []  # every captured spec that carries time, of every kernel: a kernel tuned per launch key
        for kr in reports:
            ok = [cs for cs in kr.compiled if cs.spec.capture_id and cs.artifacts is not None and cs.artifacts.ok]
            specs = [cs for cs in ok if cs.spec.autotune != "trial"] or ok  # no GPU chose: every config captured
            ranked.extend((_spec_time(cs), kr, cs) for cs in specs if _spec_time(cs) > 0)
        ranked.sort(key=lambda r: -r[0])
        targets, chosen = [], {}
        for total, kr, cs in ranked[:args.kernels]:
            findings = sorted((f for f in kr.findings if cs.spec.key() in (f.data.get("specs") or [cs.spec.key()])),
                              key=lambda f: -(f.data.get("est_gain_us") or 0.0))
            names = _config_names(kr)
            cands = neighbours(cs.spec.constants, cs.spec.options, findings, names, _existing(kr),
                               limit=3 * args.per_kernel)
            proven = _prove(checker, kr, cs, cands, args.per_kernel)
            tid = f"{kr.kernel.path}::{kr.name}::{cs.spec.capture_id[:12]}"
            rel = os.path.relpath(kr.kernel.path, root).replace(os.sep, "/")
            ints = {k: v for k, v in cs.spec.constants.items() if isinstance(v, (int, bool, float, str))}
            opts = {k: cs.spec.options[k] for k in ("num_warps", "num_stages") if k in cs.spec.options}
            base_label = _label(ints, opts, names)
            _say(f"  {kr.name} ({rel}): {total:.0f} µs captured; {len(proven)} of {len(cands)} candidate(s) "
                 f"compiled on the CPU")
            if not proven:
                continue
            targets.append({"id": tid, "path": rel, "kernel": kr.kernel.func_name or kr.name, "constants": ints,
                            "options": opts, "launches": LAUNCHES_PER_KERNEL,
                            "candidates": [{"label": _label({**ints, **n.constants}, {**opts, **n.options}, names),
                                            "constants": n.constants, "options": n.options} for n in proven]})
            chosen[tid] = {"path": rel, "kernel": kr.name, "chosen": base_label, "captured_us": round(total, 1),
                           "why": {c["label"]: (n.why, n.finding, n.change_text(ints, opts))
                                   for c, n in zip(targets[-1]["candidates"], proven)}}
    return targets, chosen


def _label(constants: dict[str, Any], options: dict[str, Any], names: list[str]) -> str:
    keep = names or [k for k, v in constants.items() if isinstance(v, int) and not isinstance(v, bool)]
    parts = [f"{k}={constants[k]}" for k in keep if k in constants]
    return ", ".join(parts + [f"num_warps={options.get('num_warps', 4)}", f"num_stages={options.get('num_stages', 3)}"])


def _prove(checker, kr, cs, cands, limit: int) -> list:
    """The candidates that compile on the CPU (the spec with the change; no compile error, shared memory within the
    target's limit), at most `limit`, in the order given."""
    from ..model import SpecVariant

    plans = []
    for n in cands:
        v = SpecVariant(kr.name, cs.spec.key(), options=tuple(n.options.items()), constants=tuple(n.constants.items()))
        plans.append((n, checker.plan_file(kr.kernel.path, kernels={kr.name}, variant=v, auto="off")))
    out = []
    for n, plan in plans:
        report = checker.finish(plan)
        new = next((k for k in report.kernels if k.name == kr.name), None)
        ok = new is not None and new.compiled and all(c.artifacts is not None and c.artifacts.ok
                                                      for c in new.compiled)
        if ok and not any(f.code in ("SRC001", "RES001") for f in new.findings) and len(out) < limit:
            out.append(n)
    return out


def record(root: str, targets, chosen, events) -> list[dict[str, Any]]:
    """Append every verdict to `.tritonlens/proposals.jsonl` (the file `check` reads) and return the rows."""
    import json

    from ..fixes.measured import verdicts
    from ..gpu.bench import local_gpu
    from ..report.tuning import PROPOSALS
    from ..sidecar import sidecar_path
    from ..writes import make_folder, open_append

    gpu = str(local_gpu().get("name") or "")
    sets = {(t["id"], c["label"]): {**c["constants"], **c["options"]} for t in targets for c in t["candidates"]}
    rows = []
    for v in verdicts(targets, events):
        info = chosen.get(v.target, {})
        why, finding, change = (info.get("why") or {}).get(v.label, ("", None, ""))
        rows.append({"path": info.get("path"), "kernel": info.get("kernel"), "proposal": v.label,
                     "chosen": info.get("chosen"), "change": change, "set": sets.get((v.target, v.label), {}),
                     "why": why,
                     "finding": finding[0] if finding else None, "finding_line": finding[1] if finding else None,
                     "chosen_us": round(v.before_us, 3) if v.before_us else None,
                     "time_us": round(v.after_us, 3) if v.after_us else None,
                     "speedup": round(v.speedup, 3) if v.speedup else None, "noise": v.noise,
                     "outputs_close": v.verdict not in ("other outputs",) and v.before_us is not None,
                     "max_rel_diff": v.max_rel_diff, "launches": v.launches, "per_launch": v.per_launch,
                     "verdict": v.verdict, "verdict_why": v.why, "gpu": gpu, "source": "tune"})
    timed = [r for r in rows if r["chosen_us"] and r["time_us"]]
    if timed:
        file = sidecar_path(root, PROPOSALS)
        make_folder(os.path.dirname(file), root)
        with open_append(file, root) as f:
            f.write("".join(json.dumps(r) + "\n" for r in timed).encode())
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    head = ("kernel", "change", "before µs", "after µs", "speedup", "verdict")
    body = [(str(r["kernel"]), str(r["change"] or r["proposal"])[:60],
             f"{r['chosen_us']:.1f}" if r["chosen_us"] else "-", f"{r['time_us']:.1f}" if r["time_us"] else "-",
             f"{r['speedup']:.2f}×" if r["speedup"] else "-",
             r["verdict"] + (f" ({r['verdict_why']})" if r["verdict_why"] else "")) for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths)) for b in body]
    return "\n".join(lines)
