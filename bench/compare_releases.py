"""Before a Triton upgrade: the corpus's captured specs compiled under the installed Triton and under each other
release, what `tritonlens compare` reports, and what it takes on this machine.

For each release given: the time to make its environment once (into a fresh releases folder, the wheel from pip's own
cache when it has it; then again, cached), the compare of every file's specs (`check`'s representative set of the
captured launches, or all of them with --all-captures) — specs compared, how many changed, regressed, past the
default gate, the biggest regressions with their numbers — and the gate's exit code. Printed as Markdown.

    PYTHONPATH=server python3 bench/compare_releases.py CORPUS_SRC [--release 3.7.1 --release 3.9.0]
        [--target cuda:90] [--all-captures] [--workers N] [--out FILE] [--json-dir DIR]

CORPUS_SRC is a folder holding `.tritonlens/captures.jsonl` (Liger-Kernel's `src`); every .py file below it is
compared.
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

from tritonlens.compare import core, envs, output  # noqa: E402
from tritonlens.source import python_files  # noqa: E402
from tritonlens.settings import Settings, default_workers  # noqa: E402


def make_env_times(version: str) -> tuple[float, float]:
    """(seconds to make the release in an empty releases folder, seconds to find it made)."""
    scratch = tempfile.mkdtemp(prefix="releases-")
    old = os.environ.get(envs.RELEASES_ENV)
    os.environ[envs.RELEASES_ENV] = scratch
    try:
        start = time.perf_counter()
        envs.ensure_release(version)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        envs.ensure_release(version)
        warm = time.perf_counter() - start
    finally:
        if old is None:
            os.environ.pop(envs.RELEASES_ENV, None)
        else:
            os.environ[envs.RELEASES_ENV] = old
        shutil.rmtree(scratch, ignore_errors=True)
    return cold, warm


def biggest(outcome: core.Outcome, kinds: tuple[str, ...], n: int) -> list[core.SpecPair]:
    regressed = [p for p in outcome.pairs if any(r.kind in kinds for r in p.regressions)]
    return sorted(regressed, key=lambda p: (not p.gated, min((core.KINDS.index(r.kind), -r.size)
                                                             for r in p.regressions)))[:n]


def table(outcome: core.Outcome, version: str, env_times: tuple[float, float], gate: int, top: int) -> str:
    c = outcome.counts()
    na, nb = output.side_names(outcome)
    kinds: dict[str, list[int]] = {}
    for p in outcome.pairs:
        for r in p.regressions:
            k = kinds.setdefault(r.kind, [0, 0])
            k[0] += 1
            k[1] += r.gated
    lines = [f"## {na} → {nb}", "",
             f"- specs compared: {c['compared']} of {c['specs']} (files {len({p.path for p in outcome.pairs})}, "
             f"kernels {len({(p.path, p.kernel) for p in outcome.pairs})})",
             f"- changed: {c['specs'] - c.get('same', 0)} — regressed {c.get('regressed', 0)} "
             f"({c['gated']} past the default gate), improved {c.get('improved', 0)}, IR only "
             f"{c.get('changed', 0)}, the same {c.get('same', 0)}"
             + (f", not compared {c['unverified']}" if c.get("unverified") else ""),
             f"- regressions by kind (specs, past the gate): "
             + ", ".join(f"{k} {v[0]} ({v[1]})" for k, v in sorted(kinds.items(), key=lambda kv: core.KINDS.index(
                 kv[0]))),
             f"- compile time on {os.cpu_count()} cores: {na} {outcome.seconds['a']:.0f} s, {nb} "
             f"{outcome.seconds['b']:.0f} s",
             f"- making the {version} environment: {env_times[0]:.1f} s once, {env_times[1]:.2f} s when cached",
             f"- `tritonlens compare --triton {version}` exit code (default gate): {gate}", "",
             "| kernel | spec | regressions | improvements |", "|---|---|---|---|"]
    for p in biggest(outcome, core.KINDS, top):
        regs = "; ".join(("**✗** " if r.gated else "") + f"{r.kind}: {r.text}" for r in p.regressions)
        spec = p.describe if len(p.describe) <= 110 else p.describe[:107] + "..."
        lines.append(f"| `{p.path}:{p.def_line}` {p.kernel} | {p.label}: {spec} | {regs} | "
                     f"{'; '.join(p.improvements) or ''} |".replace("\n", " "))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("--release", action="append", default=[])
    ap.add_argument("--target", default="cuda:90")
    ap.add_argument("--all-captures", action="store_true")
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--out", help="write the Markdown there too")
    ap.add_argument("--json-dir", help="keep each release's `compare --format json` there")
    args = ap.parse_args(argv)
    releases = args.release or ["3.7.1", "3.9.0"]
    files, missing = python_files([args.corpus])
    if missing or not files:
        print(f"no Python files under {args.corpus}", file=sys.stderr)
        return 2
    settings = Settings(target=args.target, compile_timeout=300, all_captures=args.all_captures)
    settings.max_workers = args.workers or default_workers(editor=False)
    here = envs.installed()
    what = "every captured spec" if args.all_captures else "the representative set of captured specs check compiles"
    parts = [f"# The corpus under triton {here.triton} and {', '.join(releases)}", "",
             f"`bench/compare_releases.py {os.path.basename(os.path.normpath(args.corpus))}` — {len(files)} files, "
             f"target {args.target}, {what}, "
             f"{settings.max_workers} workers per side.", ""]
    for version in releases:
        env_times = make_env_times(version)
        release, _ = envs.ensure_release(version)
        sides = (core.Side(here, args.target), core.Side(release, args.target))
        start = time.perf_counter()
        outcome = core.run(files, sides, settings, core.Thresholds(),
                           rel=lambda p: os.path.relpath(p, args.corpus))
        total = time.perf_counter() - start
        gate = 1 if outcome.gated else 0
        text = table(outcome, version, env_times, gate, args.top) + f"\n(whole compare {total:.0f} s)\n"
        print(text, flush=True)
        parts.append(text)
        if args.json_dir:
            os.makedirs(args.json_dir, exist_ok=True)
            with open(os.path.join(args.json_dir, f"compare-{here.triton}-{version}.json"), "w") as f:
                json.dump(output.to_json(outcome), f, indent=1)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write("\n".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
