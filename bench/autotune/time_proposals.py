"""On a GPU: time the configs tritonlens proposes for a kernel's LAUNCH004 findings (fixes/tuning: a tile that fits
the launch's M, compiled and proven on the CPU) on the captured launch, against the config the autotuner chose —
same inputs, every tensor compared after the launch — as a proposal must be before it is kept: faster and the same
outputs, else withheld.

    python bench/autotune/time_proposals.py ROOT PATH MODULE [-o OUT.jsonl] [--captures FILE] [--no-save]

ROOT holds `.tritonlens/captures.jsonl` (from `tritonlens capture --time`), PATH is the kernel's file relative to ROOT,
MODULE the importable module that defines the kernel (`flag_gems.ops.addmm`; for the tutorial matmul,
`tutorial_matmul` with bench/autotune on sys.path). The kernel is launched directly below its autotuner and any
library wrapper (its `@triton.heuristics`, which recomputes its constexprs for the proposal, else its JITFunction) with the captured launch's tensors (random values, the captured shapes, strides and
dtypes) and scalars. The grid of a proposal: the grid formula that reproduces every grid the autotuner's trials
launched (each axis a product of up to two `cdiv(scalar, constexpr)`, fitted to the tuning line's grids), else the
captured grid when the proposal changes only the tile that already covered the extent. The timings are appended to
ROOT/.tritonlens/proposals.jsonl, where `check` and the editor read them (fixes/tuning.proposal_timings): a
proposal measured slower, or with other outputs, is withheld; one measured faster is the preferred fix.
"""
from __future__ import annotations

import argparse
import importlib
import itertools
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _jit(obj):
    """The JITFunction under autotuner / heuristics / library wrappers (`.fn` chains)."""
    from triton.runtime.jit import JITFunction

    seen = 0
    while not isinstance(obj, JITFunction) and hasattr(obj, "fn") and seen < 8:
        obj, seen = obj.fn, seen + 1
    return obj if isinstance(obj, JITFunction) else None


def _launchable(obj):
    """What the library's launch reaches below its autotuner (and any library wrapper): `@triton.heuristics` when
    there is one (it computes its constexprs from the launch's values and the config's), else the JITFunction."""
    from triton.runtime.autotuner import Heuristics
    from triton.runtime.jit import JITFunction

    for _ in range(8):
        if isinstance(obj, (Heuristics, JITFunction)):
            return obj
        obj = getattr(obj, "fn", None)
    return None


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def grid_formula(configs, scalars: dict[str, int]):
    """A function config-kwargs -> grid that reproduces the grid of every config the autotuner timed, or None. Each
    axis is a constant or a product of up to two `cdiv(scalar, constexpr)` terms."""
    rows = [(dict(c.kwargs), tuple(c.grid)) for c in configs if c.grid]
    if len(rows) < 2 or len({len(g) for _, g in rows}) != 1:
        return None
    names = sorted({k for kw, _ in rows for k, v in kw.items() if isinstance(v, int) and v > 0})
    ints = {k: v for k, v in scalars.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0}
    terms = [(s, c) for s in ints for c in names]
    axes = []
    for axis in range(len(rows[0][1])):
        wanted = [g[axis] for _, g in rows]
        found = None
        if len(set(wanted)) == 1:
            found = ("const", wanted[0])
        for n in (1, 2):
            if found is not None:
                break
            for combo in itertools.combinations(terms, n):
                if all(all(c in kw for _, c in combo) and
                       _prod(_cdiv(ints[s], kw[c]) for s, c in combo) == w for (kw, _), w in zip(rows, wanted)):
                    found = ("terms", combo)
                    break
        if found is None:
            return None
        axes.append(found)

    def grid(kwargs: dict[str, int]) -> tuple[int, ...]:
        return tuple(v if kind == "const" else _prod(_cdiv(ints[s], kwargs[c]) for s, c in v) for kind, v in axes)

    grid.axes = axes  # type: ignore[attr-defined]
    return grid


def _prod(xs) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


_DTYPES = {"float16": "float16", "bfloat16": "bfloat16", "float32": "float32", "float8_e4m3fn": "float8_e4m3fn",
           "int32": "int32", "int64": "int64", "int8": "int8", "uint8": "uint8", "bool": "bool"}


def make_inputs(launch: dict, torch, seed: int = 1) -> dict:
    """The captured launch's arguments on the GPU: tensors with its shapes, strides and dtypes (random normal values
    for floats, small integers otherwise), scalars as captured."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    out = {}
    for name, arg in (launch.get("args") or {}).items():
        t = arg.get("tensor") if isinstance(arg, dict) else None
        if t:
            dtype = getattr(torch, _DTYPES.get(t["dtype"], t["dtype"]))
            shape, stride = t["shape"], t["stride"]
            size = 1 + sum((s - 1) * st for s, st in zip(shape, stride) if s > 0)
            if dtype.is_floating_point:
                flat = torch.randn(size, device="cuda", dtype=torch.float32, generator=gen).to(dtype)
            else:
                flat = torch.randint(0, 4, (size,), device="cuda", generator=gen).to(dtype)
            out[name] = torch.as_strided(flat, shape, stride)
        elif isinstance(arg, dict) and "value" in arg:
            out[name] = arg["value"]
    return out


def launch_with(jit, inputs: dict, constants: dict, cfg: dict, grid, torch, launcher=None):
    """Launch `launcher` (default `jit`) on copies of `inputs` with the config's constexprs and options; the tensors
    after the launch."""
    args = {k: (v.clone() if torch.is_tensor(v) else v) for k, v in inputs.items()}
    constexprs = {p.name for p in jit.params if p.is_constexpr}
    call = {}
    for name in jit.arg_names:
        if name in constexprs:
            call[name] = cfg["kwargs"].get(name, constants.get(name))
        elif name in args:
            call[name] = args[name]
        else:
            call[name] = constants.get(name)
    (launcher or jit)[grid](**call, num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    torch.cuda.synchronize()
    return call, {k: v for k, v in args.items() if torch.is_tensor(v)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("path")
    ap.add_argument("module")
    ap.add_argument("-o", "--out", default=None)
    ap.add_argument("--captures", default=None)
    ap.add_argument("--no-save", action="store_true",
                    help="do not append the timings to ROOT/.tritonlens/proposals.jsonl (where check and the editor "
                         "read them: a proposal measured slower is withheld, one measured faster preferred)")
    a = ap.parse_args(argv)
    import torch
    import triton

    from tritonlens.fixes import launch as launch_fixes
    from tritonlens.fixes.tuning import label, proposal_candidates
    from tritonlens.pipeline import Checker
    from tritonlens.settings import Settings

    sys.path.insert(0, HERE)
    path = os.path.join(os.path.abspath(a.root), a.path)
    text = open(path, encoding="utf-8").read()
    module = importlib.import_module(a.module)
    rows = []
    settings = Settings(target="auto")
    with Checker(settings, capture_file=a.captures) as checker:
        report = checker.check_file(path)
        for kr in report.kernels:
            findings = [f for f in kr.findings if f.code == "LAUNCH004"]
            for f in kr.findings:
                print(f"finding: {kr.name} {f.code} line {f.line} [{f.severity}]: {f.message[:400]}")
            if not findings:
                continue
            run = _launchable(getattr(module, kr.name, None))
            jit = _jit(run)
            if jit is None:
                print(f"{kr.name}: not found in {a.module}")
                continue
            for f in findings:
                held = [cs for cs in kr.compiled if cs.spec.key() in set(f.data.get("specs") or [])]
                if not held or not held[0].spec.launch_records:
                    continue
                spec = held[0].spec
                rec = spec.launch_records[0]
                scalars = {n: v["value"] for n, v in (rec.get("args") or {}).items()
                           if isinstance(v, dict) and isinstance(v.get("value"), int)}
                keys = kr.tuning.keys if kr.tuning is not None else []
                kt = next((k for k in keys if k.chosen_config is not None and k.chosen_config.grid is not None and
                           list(k.chosen_config.grid) == list(rec.get("grid") or [])), keys[0] if keys else None)
                formula = grid_formula(kt.timed, scalars) if kt is not None else None
                names = [k for k in (dict(kt.chosen_config.kwargs) if kt and kt.chosen_config else spec.constants)]
                chosen = {"kwargs": {k: spec.constants[k] for k in names if k in spec.constants},
                          "num_warps": spec.options.get("num_warps", 4), "num_stages": spec.options.get("num_stages", 3)}
                grid0 = tuple(rec["grid"])
                if formula is not None and formula(chosen["kwargs"]) != grid0:
                    formula = None
                inputs = make_inputs(rec, torch)
                _, base = launch_with(jit, inputs, spec.constants, chosen, grid0, torch, run)
                call0, _ = launch_with(jit, inputs, spec.constants, chosen, grid0, torch, run)
                t0 = triton.testing.do_bench(lambda: run[grid0](**call0, num_warps=chosen["num_warps"],
                                                                num_stages=chosen["num_stages"]),
                                             warmup=25, rep=200, quantiles=(0.5, 0.2, 0.8))
                print(f"chosen {label(chosen)}: grid {grid0}, {t0[0] * 1000:.1f} µs")
                for cfg, cand in proposal_candidates(kr, f, text, measured=False):
                    shown = launch_fixes.prove(checker, path, text, kr, f, cand)
                    row = {"kernel": kr.name, "path": a.path, "finding_line": f.line, "shape": scalars,
                           "proposal": label(cfg), "chosen": label(chosen), "proven_on_cpu": shown is not None,
                           "cpu_proof": shown[0] if shown else cand.why, "preferred_on_cpu": bool(shown) and not shown[1]}
                    only_tile = all(cfg["kwargs"].get(k) == v for k, v in chosen["kwargs"].items()
                                    if k != f.data.get("name"))
                    grid = formula(cfg["kwargs"]) if formula is not None else grid0 if only_tile else None
                    if grid is None:
                        row.update(verdict="not timed", why="no grid formula fits the trials' grids")
                        rows.append(row)
                        print(json.dumps(row))
                        continue
                    call, outs = launch_with(jit, inputs, spec.constants, cfg, grid, torch, run)
                    t = triton.testing.do_bench(lambda: run[grid](**call, num_warps=cfg["num_warps"],
                                                                  num_stages=cfg["num_stages"]),
                                                warmup=25, rep=200, quantiles=(0.5, 0.2, 0.8))
                    equal = all(torch.equal(outs[k], base[k]) for k in base)
                    diffs = [((outs[k].float() - base[k].float()).abs().max() /
                              base[k].float().abs().max().clamp_min(1e-6)).item() for k in base]
                    close = all(torch.allclose(outs[k].float(), base[k].float(), rtol=1e-2, atol=1e-2) for k in base)
                    keep = close and t[0] < t0[0]
                    row.update(grid=list(grid), grid_from="trials' grids" if formula is not None else "captured",
                               chosen_us=round(t0[0] * 1000, 2), time_us=round(t[0] * 1000, 2),
                               p20_us=round(t[1] * 1000, 2), p80_us=round(t[2] * 1000, 2),
                               speedup=round(t0[0] / t[0], 3), outputs_equal=equal, outputs_close=close,
                               max_rel_diff=max(diffs) if diffs else 0.0, verdict="offered" if keep else "withheld")
                    rows.append(row)
                    print(json.dumps(row))
    gpu = torch.cuda.get_device_name()
    for r in rows:
        r["gpu"] = gpu
    if a.out:
        with open(a.out, "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows)
    if not a.no_save:
        from tritonlens.report.tuning import PROPOSALS
        from tritonlens.sidecar import sidecar_path

        with open(sidecar_path(os.path.abspath(a.root), PROPOSALS), "a", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows if r.get("verdict") in ("offered", "withheld"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
