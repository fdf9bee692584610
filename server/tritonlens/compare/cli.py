"""`tritonlens compare PATH... --triton 3.7.1` (or `--python PATH`, or `--target A --target B`): every spec `check`
would compile, compiled on both sides, what changed — regressions first — and a gate (exit 1) on thresholds."""
from __future__ import annotations

import argparse
import json
import os
import sys

from ..model import BROKEN_HERE
from ..settings import target_arg
from ..source import python_files
from .core import DEFAULT_FAIL_ON, KINDS, Side, Thresholds

EXIT_OK, EXIT_REGRESSED, EXIT_ERROR = 0, 1, 2


def _kinds(value: str) -> frozenset[str]:
    names = {v.strip() for v in value.split(",") if v.strip()}
    if names == {"all"}:
        return frozenset(KINDS)
    if names == {"none"}:
        return frozenset()
    bad = sorted(names - set(KINDS))
    if bad:
        raise argparse.ArgumentTypeError(f"unknown {', '.join(bad)}; choose from {', '.join(KINDS)}, all, none")
    return frozenset(names)


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "compare", help="compile every spec under the installed Triton and another release (or for two targets) "
                        "and report what changed, regressions first; exit 1 on regressions past the thresholds",
        description="Compare what the compiler does to each kernel and spec under two Triton releases "
                    "(--triton VERSION or --python PATH) or for two targets (--target A --target B).")
    p.add_argument("paths", nargs="*", metavar="PATH")
    other = p.add_argument_group("the other side")
    other.add_argument("--triton", metavar="VERSION",
                       help="the other Triton release (e.g. 3.7.1): installed on demand beside tritonlens's cache "
                            "(TRITONLENS_RELEASES_DIR) and reused")
    other.add_argument("--python", metavar="PATH", help="an interpreter whose triton is the other release")
    other.add_argument("--target", action="append", type=target_arg, default=[], metavar="TARGET",
                       help="once: both sides compile for it (default auto: the local GPU, else cuda:90); twice: "
                            "compare the first target with the second (cuda:90 vs cuda:100, cuda:90 vs hip:gfx942)")
    other.add_argument("--prepare", action="store_true",
                       help="only make the --triton release's environment (e.g. in a CI step that caches it) and "
                            "print its interpreter")
    out = p.add_argument_group("output")
    out.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    out.add_argument("--output", "-o", metavar="FILE", help="write the report there instead of stdout")
    out.add_argument("--html", metavar="FILE.html",
                     help="also a page with each changed spec's TTGIR and PTX side by side")
    out.add_argument("--verbose", "-v", action="store_true", help="text: also the specs whose IR alone changed")
    gate = p.add_argument_group("the gate (exit 1 when a regression passes its threshold)")
    gate.add_argument("--fail-on", type=_kinds, default=DEFAULT_FAIL_ON, metavar="KINDS",
                      help=f"comma-separated: {', '.join(KINDS)}; all; none (default "
                           f"{','.join(k for k in KINDS if k in DEFAULT_FAIL_ON)})")
    gate.add_argument("--spill-bytes", type=int, default=0, metavar="N",
                      help="spill bytes a spec may gain (default 0: any spill that appears or grows fails)")
    gate.add_argument("--registers", type=int, default=0, metavar="N", help="registers a spec may gain (default 0)")
    gate.add_argument("--occupancy-drop", type=float, default=0.0, metavar="PCT",
                      help="percent of resident warps a spec may lose (default 0)")
    gate.add_argument("--conversions", type=int, default=0, metavar="N",
                      help="convert_layout ops a spec may gain (default 0)")
    gate.add_argument("--time-pct", type=float, default=10.0, metavar="PCT",
                      help="percent the cost model's estimated time may grow (default 10)")
    gate.add_argument("--instructions-pct", type=float, default=10.0, metavar="PCT",
                      help="percent the PTX/AMDGCN instruction count may grow (default 10)")
    gate.add_argument("--exit-zero", action="store_true", help="report only: exit 0 whatever regressed")
    comp = p.add_argument_group("compiling (as for check)")
    comp.add_argument("--captures", metavar="FILE", help="captured launches (default: .tritonlens/captures.jsonl)")
    comp.add_argument("--all-captures", action="store_true",
                      help="every captured spec, autotuner trials included (default: the representative set)")
    comp.add_argument("--timeout", type=float, default=120.0, help="seconds per compile (default 120)")
    comp.add_argument("--workers", type=int, default=None, help="compile processes per side (default: the cores)")
    comp.add_argument("--memory-mb", type=int, default=None, metavar="MB",
                      help="resident memory bound of each compile worker, 0 for none (default 8192)")
    comp.add_argument("--module-execution", choices=("definitions", "full"), default="definitions")
    comp.add_argument("--gpu", default="", metavar="NAME", help="the GPU to answer as and report for (as for check)")
    comp.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                      help="an environment variable for the compile workers' imports (repeatable)")
    p.set_defaults(run=run)
    return p


def _err(msg: str) -> int:
    print(f"tritonlens compare: {msg}", file=sys.stderr)
    return EXIT_ERROR


def settings_from(args):
    from ..device.virtual_gpu import lookup, validate
    from ..settings import Settings, default_workers

    s = Settings(target="auto", compile_timeout=args.timeout, module_execution=args.module_execution,
                 all_captures=args.all_captures)
    s.max_workers = max(1, args.workers) if args.workers else default_workers(editor=False)
    if args.memory_mb is not None:
        s.compile_memory_mb = max(0, args.memory_mb)
    for item in args.env:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ValueError(f"--env: expected NAME=VALUE, got {item!r}")
        s.env[name] = value
    if args.gpu:
        s.gpu = lookup(args.gpu).key
    for t in args.target or ["auto"]:
        problem = validate(s.gpu, t) if s.gpu else None
        if problem:
            raise ValueError(f"--gpu: {problem}")
    return s


def sides_from(args, settings, say) -> tuple[tuple[Side, Side], float]:
    """The two sides the flags name, and the seconds spent making the other release's environment (0: cached)."""
    from ..device.run import run_devices
    from . import envs

    if args.triton and args.python:
        raise ValueError("give --triton or --python, not both")
    if len(args.target) > 2:
        raise ValueError("--target at most twice: the first side's and the second's")
    here = envs.installed()
    made = 0.0
    other = here
    if args.triton:
        other, made = envs.ensure_release(args.triton, say)
    elif args.python:
        other = envs.from_python(args.python)
    targets = [run_devices(t, settings.gpu)[0].target for t in (args.target or ["auto"])]
    if other is here and len(targets) < 2:
        raise ValueError("nothing to compare: give --triton VERSION, --python PATH, or --target twice")
    ta, tb = targets[0], targets[-1]
    return (Side(here, ta), Side(other, tb)), made


def run(args) -> int:
    from . import envs

    say = (lambda m: print(f"tritonlens compare: {m}", file=sys.stderr))
    if args.prepare:
        if not args.triton:
            return _err("--prepare needs --triton VERSION")
        try:
            release, made = envs.ensure_release(args.triton, say)
        except envs.ReleaseError as exc:
            return _err(str(exc))
        say(f"triton {release.triton}: {release.python}" + (f" (made in {made:.0f} s)" if made else " (cached)"))
        print(release.python)
        return EXIT_OK
    if not args.paths:
        return _err("give the files or folders to compare")
    files, problems = python_files(args.paths)
    for msg in problems:
        say(msg)
    if not files:
        return _err("no Python files to compare")
    try:
        settings = settings_from(args)
        sides, made = sides_from(args, settings, say)
    except (ValueError, envs.ReleaseError) as exc:
        return _err(str(exc))
    th = Thresholds(fail_on=args.fail_on, spill_bytes=args.spill_bytes, registers=args.registers,
                    occupancy_pct=args.occupancy_drop, conversions=args.conversions, time_pct=args.time_pct,
                    instructions_pct=args.instructions_pct)
    return report(files, sides, settings, th, args, made, say)


def report(files, sides, settings, th, args, made: float, say) -> int:
    from . import core, output

    progress = _Progress() if sys.stderr.isatty() else None
    outcome = core.run(files, sides, settings, th, capture_file=args.captures, with_text=bool(args.html),
                       progress=progress)
    if progress is not None:
        progress.clear()
    if made:
        outcome.seconds["environment"] = made
    for msg in outcome.problems:
        say(msg)
    if args.format == "json":
        text = json.dumps(output.to_json(outcome), indent=1) + "\n"
    elif args.format == "sarif":
        text = json.dumps(output.to_sarif(outcome, os.getcwd()), indent=1) + "\n"
    else:
        text = output.to_text(outcome, args.verbose)
    if args.output:
        from ..writes import write_file

        write_file(args.output, text)
        say(output.headline(outcome))
    else:
        sys.stdout.write(text)
    if args.html:
        from .html import write_page

        write_page(outcome, args.html)
        say(f"side-by-side report written to {args.html}")
    broken = [p for p in outcome.pairs if p.unverified and BROKEN_HERE & {(p.a or {}).get("compiled"),
                                                                         (p.b or {}).get("compiled")}]
    if broken:
        return _err(f"{len(broken)} spec(s) could not be compiled by tritonlens itself; see 'Not compared'")
    return EXIT_REGRESSED if outcome.gated and not args.exit_zero else EXIT_OK


class _Progress:
    def __init__(self) -> None:
        self.width = 0

    def __call__(self, side: str, kr, done: int, total: int) -> None:
        line = f"[{'first' if side == 'a' else 'second'} side {done}/{total}] {kr.kernel.name}"
        sys.stderr.write("\r" + line.ljust(self.width))
        sys.stderr.flush()
        self.width = len(line)

    def clear(self) -> None:
        sys.stderr.write("\r" + " " * self.width + "\r")
        sys.stderr.flush()


def main(argv: list[str] | None = None) -> int:
    """`python -m tritonlens.compare.cli ...`: the command on its own."""
    parser = argparse.ArgumentParser(prog="tritonlens")
    add_parser(parser.add_subparsers(dest="command", required=True))
    try:
        args = parser.parse_args(["compare", *(sys.argv[1:] if argv is None else argv)])
    except SystemExit as exc:
        return EXIT_ERROR if exc.code else EXIT_OK
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
