"""`tritonlens` on the command line: check, ir, report, explain, serve, capture, profile."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Sequence

from . import __version__
from .model import BROKEN_HERE, SEVERITY_RANK, Finding, Target
from .report.cost import fmt_bytes

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _target_arg(value: str) -> str:
    if value == "auto":
        return value
    try:
        return str(Target.parse(value))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _gpu_arg(value: str) -> str:
    from .device.virtual_gpu import lookup

    try:
        return lookup(value).key
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _env_arg(value: str) -> tuple[str, str]:
    name, sep, text = value.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {value!r}")
    return name, text


def _device_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpu", type=_gpu_arg, default=None, metavar="NAME",
                   help="the GPU to answer as and report for (h100, h200, b200, a100, l40s, rtx4090, rtx5090, mi300x, "
                        "...; default: the local GPU with --target auto, else the target's default; --target auto "
                        "then means its arch)")
    p.add_argument("--env", type=_env_arg, action="append", default=[], metavar="NAME=VALUE",
                   help="an environment variable for the compile workers' imports (repeatable)")


class UsageError(ValueError):
    """A combination of flags that cannot work (exit 2)."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tritonlens", description="What the Triton compiler did to your kernels.")
    p.add_argument("--version", action="version", version=f"tritonlens {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("check", help="compile every kernel in the given files/folders and report findings")
    c.add_argument("paths", nargs="+", metavar="PATH")
    c.add_argument("--target", type=_target_arg, default="auto",
                   help="cuda:80 | cuda:90 | cuda:100 | hip:gfx942 | auto (local GPU, else cuda:90)")
    c.add_argument("--extra-target", action="append", type=_target_arg, default=[], dest="extra_targets",
                   help="also compile for this target (repeatable)")
    c.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    c.add_argument("--select", help="comma-separated codes or prefixes to report (e.g. PTX,SASS001)")
    c.add_argument("--captures", metavar="FILE", help="captured launches (default: .tritonlens/captures.jsonl)")
    c.add_argument("--all-captures", action="store_true",
                   help="compile every captured spec, autotuner trials included (default: a representative set)")
    c.add_argument("--timeout", type=float, default=60.0, help="seconds per compile (default 60)")
    _memory_flag(c)
    c.add_argument("--workers", type=int, default=None, help="compile processes (default: the cores available, up to 16, about 2 GB of memory each)")
    c.add_argument("--module-execution", choices=("definitions", "full"), default="definitions",
                   help="definitions (default): import only what the kernels need; full: run the whole module")
    c.add_argument("--storm-threshold", type=int, default=3)
    c.add_argument("--quiet", "-q", action="store_true", help="text format: findings only, no compile summary")
    c.add_argument("--baseline", metavar="FILE",
                   help="report what is new since this baseline (BASE001); findings it already has do not fail")
    c.add_argument("--fix", action="store_true",
                   help="apply the preferred fix of each finding (a program edit, re-compiled and proven; only the "
                        "findings --select keeps) and write the files")
    c.add_argument("--diff", action="store_true",
                   help="print the fixes as a unified diff and write nothing (alone or with --fix)")
    _device_flags(c)

    i = sub.add_parser("ir", help="print one layer of a kernel's compile: tritonlens ir FILE::KERNEL --stage ptx")
    i.add_argument("kernel", metavar="PATH::KERNEL")
    i.add_argument("--stage", choices=("ttir", "ttgir", "llir", "ptx", "sass", "amdgcn"), default="ttgir")
    i.add_argument("--target", type=_target_arg, default="auto")
    i.add_argument("--spec", type=int, default=1, help="which spec of the kernel (1-based; see `check`)")
    i.add_argument("--line", type=int, default=None, help="only the IR lines that came from this source line")
    i.add_argument("--timeout", type=float, default=60.0)
    _memory_flag(i)
    i.add_argument("--module-execution", choices=("definitions", "full"), default="definitions")
    _device_flags(i)

    b = sub.add_parser("baseline", help="save what the compiler did now: tritonlens baseline save PATH...")
    bs = b.add_subparsers(dest="baseline_command", required=True).add_parser(
        "save", help="compile the kernels of PATH... and write .tritonlens/baseline.json in the workspace root")
    bs.add_argument("paths", nargs="+", metavar="PATH")
    bs.add_argument("--output", "-o", metavar="FILE", help="where to write it (default .tritonlens/baseline.json)")
    bs.add_argument("--ir", default="ttir,ttgir,ptx,sass,amdgcn", metavar="STAGES",
                    help="layers whose normalised text is kept for `diff --stage` (default: all but llir, which is "
                         "large; every layer is hashed either way); 'none' keeps none")
    bs.add_argument("--profile", action="store_true",
                    help="on a GPU machine with ncu: also measure each kernel's first replayable captured launch "
                         "(tritonlens profile) and keep its metrics in the baseline")
    _compile_flags(bs)

    d = sub.add_parser("diff", help="what changed since the baseline: metrics, findings, and with --stage the IR")
    d.add_argument("paths", nargs="+", metavar="PATH")
    d.add_argument("--baseline", metavar="FILE", help="default: .tritonlens/baseline.json in the workspace root")
    d.add_argument("--format", choices=("text", "json"), default="text")
    d.add_argument("--stage", choices=("ttir", "ttgir", "llir", "ptx", "sass", "amdgcn"),
                   help="also a unified diff of this layer (locations, SSA and register numbers normalised)")
    _compile_flags(d)

    r = sub.add_parser("report", help="write one self-contained HTML page: source with findings, TTGIR/PTX/SASS "
                                      "panes linked to it, metrics, config matrix")
    r.add_argument("paths", nargs="+", metavar="PATH")
    r.add_argument("--output", "-o", metavar="FILE.html", required=True)
    r.add_argument("--title", default="tritonlens report")
    _compile_flags(r)
    r.add_argument("--baseline", metavar="FILE", help="show what changed in each kernel since this baseline")

    e = sub.add_parser("explain", help="what a rule code means and how to fix it")
    e.add_argument("code")

    sub.add_parser("serve", help="run the language server on stdio")

    cap = sub.add_parser("capture", help="run a command and record the kernels it compiles: capture -- python x.py")
    cap.add_argument("cmd", nargs=argparse.REMAINDER)

    sub.add_parser("bench", help="replay captured launches and time them on the local GPU (a static floor without "
                                 "one): tritonlens bench FILE[::KERNEL]")
    prof = sub.add_parser("profile", help="profile a kernel with Nsight Compute (needs a GPU)")
    prof.add_argument("rest", nargs=argparse.REMAINDER)

    doc = sub.add_parser("doctor", help="which triton, ptxas, GPU, interpreter and cache this environment uses")
    doc.add_argument("--format", choices=("text", "json"), default="text")
    doc.add_argument("--workspace", metavar="DIR", help="the project root (default: the current folder)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # `capture` and `profile` pass everything after them to their own parsers (they wrap a user command).
    if argv and argv[0] in ("capture", "profile", "bench"):
        return _delegate(argv[0], argv[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return EXIT_ERROR if exc.code else EXIT_OK
    try:
        if args.command == "check":
            return cmd_check(args)
        if args.command == "ir":
            return cmd_ir(args)
        if args.command == "baseline":
            return cmd_baseline_save(args)
        if args.command == "diff":
            return cmd_diff(args)
        if args.command == "report":
            return cmd_report(args)
        if args.command == "explain":
            return cmd_explain(args.code)
        if args.command == "doctor":
            return cmd_doctor(args)
        if args.command == "serve":
            from .lsp.server import main as serve_main

            serve_main()
            return EXIT_OK
    except KeyboardInterrupt:
        return EXIT_ERROR
    except UsageError as exc:
        print(f"tritonlens {args.command}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 — the CLI reports, it does not dump tracebacks on users
        if os.environ.get("TRITONLENS_DEBUG"):
            raise
        print(f"tritonlens: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_ERROR


def _delegate(command: str, rest: list[str]) -> int:
    if command == "capture":
        from .gpu.capture import main as capture_main
    elif command == "bench":
        from .gpu.bench import main as capture_main  # type: ignore[no-redef]
    else:
        from .gpu.profile import main as capture_main  # type: ignore[no-redef]
    return capture_main(rest)


# ---------------------------------------------------------------- check
def _collect_files(paths: list[str]) -> tuple[list[str], list[str]]:
    files, problems = [], []
    for p in paths:
        if os.path.isdir(p):
            for folder, dirs, names in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("__pycache__", "node_modules"))
                files.extend(os.path.join(folder, n) for n in sorted(names) if n.endswith(".py"))
        elif os.path.exists(p):
            files.append(p)
        else:
            problems.append(f"{p}: no such file or folder")
    return files, problems


def _memory_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--memory-mb", type=int, default=None, metavar="MB",
                   help="resident memory bound of each compile worker, 0 for none (default 8192); a compile past it is "
                        "reported as tritonlens's limit (SRC007), not as an error")


def _settings_from(args):
    from .settings import Settings

    s = Settings(target=args.target, extra_targets=list(getattr(args, "extra_targets", [])),
                 compile_timeout=args.timeout, module_execution=args.module_execution)
    if getattr(args, "memory_mb", None) is not None:
        s.compile_memory_mb = max(0, args.memory_mb)
    if getattr(args, "workers", None):
        s.max_workers = max(1, args.workers)
    else:
        from .settings import default_workers

        s.max_workers = default_workers(editor=False)
    s.all_captures = bool(getattr(args, "all_captures", False))
    if getattr(args, "storm_threshold", None):
        s.storm_threshold = args.storm_threshold
    s.gpu = getattr(args, "gpu", "") or ""
    s.env = dict(getattr(args, "env", None) or [])
    if s.gpu:
        from .device.virtual_gpu import validate

        problem = validate(s.gpu, s.target)
        if problem:
            raise UsageError(f"--gpu: {problem}")
    return s


def cmd_check(args) -> int:
    from .pipeline import Checker

    files, problems = _collect_files(args.paths)
    for msg in problems:
        print(f"tritonlens: {msg}", file=sys.stderr)
    if problems and not files:
        return EXIT_ERROR
    select = {s.strip().upper() for s in args.select.split(",") if s.strip()} if args.select else None
    settings = _settings_from(args)
    fixing = args.fix or args.diff
    if fixing and (args.format != "text" or args.baseline):
        raise UsageError("--fix and --diff print text and take no --baseline")
    base = _load_baseline(args.baseline) if args.baseline else None
    if args.baseline and base is None:
        return EXIT_ERROR
    if fixing:
        return _check_fix(args, files, select, settings)
    reports = []
    progress = _Progress() if sys.stderr.isatty() and not args.quiet else None
    with Checker(settings, select=select, capture_file=args.captures) as checker:
        if args.format == "text" and not args.quiet:
            print(gpu_line(checker.targets()[0], settings.gpu))
        for report in checker.check_files(files, on_kernel=progress):
            if progress is not None:
                progress.clear()
            for msg in report.problems:
                print(f"tritonlens: {msg}", file=sys.stderr)
            reports.append(report)
            if base is not None:
                _gate(report, base, args.baseline, settings)
            if args.format == "text":
                _print_text(report, select, quiet=args.quiet)
    for msg in _unused_captures(files, reports, args.captures):
        print(f"tritonlens: {msg}", file=sys.stderr)
    findings = [f for r in reports for f in r.all_findings() if _keep(f, select)]
    if args.format == "json":
        json.dump([{**f.to_json(), **_baseline_state(f)} for f in findings], sys.stdout, indent=2)
        print()
    elif args.format == "sarif":
        from .report.sarif import to_sarif

        json.dump(to_sarif(findings, base=os.getcwd()), sys.stdout, indent=2)
        print()
    elif not args.quiet:
        n_k = sum(len(r.kernels) for r in reports)
        counts = {s: sum(1 for f in findings if f.severity == s) for s in SEVERITY_RANK}
        print(f"\n{n_k} kernel(s) in {len(files)} file(s): " +
              ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items()))
    broken = sorted({f.data["kind"] for r in reports for f in r.all_findings()
                     if f.code == "SRC007" and f.data.get("kind") in BROKEN_HERE})
    if broken:
        print(f"tritonlens: some compiles failed inside tritonlens ({', '.join(broken)}; see SRC007): the check is "
              f"incomplete", file=sys.stderr)
        return EXIT_ERROR
    # With a baseline, what it already had does not fail the check: only what is new (BASE001 and new findings).
    gating = [f for f in findings if f.data.get("baseline_state") != "unchanged"]
    return EXIT_FINDINGS if any(SEVERITY_RANK.get(f.severity, 3) <= 1 for f in gating) else EXIT_OK


def _check_fix(args, files: list[str], select: set[str] | None, settings) -> int:
    """`check --fix` / `--diff`: each file's preferred proven fixes applied (written, or printed as a diff), then
    what is left reported as `check` does; exit 1 when something at warning or above is left, or (--diff) when a file
    would change."""
    from .fixes.apply import fix_file
    from .pipeline import Checker, find_workspace_root
    from .source import read_source

    write = not args.diff
    applied = changed = 0
    left: list[Finding] = []
    with Checker(settings, select=select, capture_file=args.captures) as checker:
        if not args.quiet and write:
            print(gpu_line(checker.targets()[0], settings.gpu))
        for report in checker.check_files(files):
            for msg in report.problems:
                print(f"tritonlens: {msg}", file=sys.stderr)
            text, _ = read_source(report.path)
            if text is None or not report.kernels:
                left.extend(f for f in report.all_findings() if _keep(f, select))
                continue
            done = fix_file(checker, settings, report, text, lambda f: _keep(f, select),
                            find_workspace_root(report.path))
            for a in done.applied:
                verb = "fixed" if write else "would fix"
                print(f"{_rel(report.path)}:{a.finding.line}: {a.finding.code} {verb}: {a.fix.title}",
                      file=sys.stderr if not write else sys.stdout)
            applied += len(done.applied)
            if done.changed:
                changed += 1
                if write:
                    with open(report.path, "w", encoding="utf-8", newline="") as fh:
                        fh.write(done.text)
                else:
                    sys.stdout.write(done.diff(_rel(report.path)))
            if write:
                _print_text(done.report, select, quiet=True)
            left.extend(f for f in done.report.all_findings() if _keep(f, select))
    gating = [f for f in left if SEVERITY_RANK.get(f.severity, 3) <= 1]
    summary = (f"{applied} fix(es) {'applied' if write else 'to apply'} in {changed} file(s), each re-compiled and "
               f"proven; {len(gating)} finding(s) at warning or above left")
    print(summary, file=sys.stdout if write else sys.stderr)
    return EXIT_FINDINGS if gating or (not write and changed) else EXIT_OK


def gpu_line(target: str, name: str) -> str:
    """The report's header: the GPU the imports saw and the findings' numbers are for."""
    from .device.targets import local_gpu_target
    from .device.virtual_gpu import resolve

    gpu = resolve(target, name)
    how = ("the local GPU" if local_gpu_target() == target and not name else
           "virtual: the imports' device queries and the findings' limits answer as it; --gpu NAME for another")
    return f"GPU: {gpu.label()}, {target} ({how})"


class _Progress:
    """One status line on a terminal's stderr while kernels compile: `[12/82] path::kernel (5 specs)`."""

    def __call__(self, kr, done: int, total: int) -> None:
        n = len(kr.compiled)
        text = f"[{done}/{total}] {_rel(kr.kernel.path)}::{kr.kernel.display_name} ({n} spec{'s' if n != 1 else ''})"
        sys.stderr.write("\r\033[K" + text[:160])
        sys.stderr.flush()

    def clear(self) -> None:
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()


def _unused_captures(files: list[str], reports, capture_file: str | None) -> list[str]:
    """Captures that matched no checked file or kernel, said once per workspace (never dropped silently)."""
    from .frontend.captures import unmatched
    from .pipeline import find_workspace_root

    checked = {r.path: {n for k in r.kernels for n in (k.kernel.name, k.kernel.func_name)} for r in reports}
    out: list[str] = []
    for root in dict.fromkeys(find_workspace_root(p) for p in files):
        for msg in unmatched(root, capture_file, checked):
            if msg not in out:
                out.append(msg)
    return out


def _gate(report, base: dict, base_file: str, settings) -> None:
    from .report.baseline import gate_report

    rel = _rel_to(_baseline_root(base_file))(report.path)
    gate_report(report, base, rel, settings.severity_for("BASE001", "warning"))


def _baseline_state(f: Finding) -> dict:
    state = f.data.get("baseline_state")
    return {"baseline_state": state} if state else {}


def _keep(f: Finding, select: set[str] | None) -> bool:
    return not select or any(f.code == s or f.code.startswith(s) for s in select)


def _rel(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _print_text(report, select, quiet: bool) -> None:
    """Findings as `path:line:col: CODE [severity] message`, grouped by kernel under one line that names the spec(s)
    they were compiled under — the spec is said once, not at the end of every finding."""
    kept = [f for f in report.all_findings() if _keep(f, select)]
    by_kernel: dict[str | None, list] = {}
    for f in kept:
        by_kernel.setdefault(f.kernel, []).append(f)
    reports = {kr.kernel.name: kr for kr in report.kernels}
    for name, found in by_kernel.items():
        kr = reports.get(name) if name else None
        specs = [cs.spec.describe() for cs in kr.compiled] if kr else []
        if kr is not None and specs:
            shown = f"[{specs[0]}]" if len(set(specs)) == 1 else \
                f"{len(specs)} specs ({'; '.join(cs.spec.label or cs.spec.describe() for cs in kr.compiled[:3])}" \
                f"{'; …' if len(specs) > 3 else ''})"
            print(f"{_rel(report.path)}::{kr.kernel.display_name} {shown}{_captures_note(kr)}")
        for f in found:
            message = f.message
            for d in set(specs):
                message = message.replace(f" [{d}]", "")
            seen = " (in the baseline)" if f.data.get("baseline_state") == "unchanged" else ""
            print(f"{_rel(f.path)}:{f.line}:{f.column}: {f.code} [{f.severity}] {message}{seen}")
    if quiet:
        return
    from .report.cost import spec_cost
    from .pipeline import find_workspace_root

    root = find_workspace_root(report.path)
    for kr in report.kernels:
        for cs in kr.compiled:
            art = cs.artifacts
            head = f"  {_rel(report.path)}::{kr.kernel.display_name} [{cs.spec.describe()}]"
            if art is None:
                print(f"{head} not compiled")
            elif art.error:
                print(f"{head} {'not compiled' if art.error.ours else 'FAILED'} ({art.error.kind})")
            else:
                r = art.resources
                spill = r.spill_stores + r.spill_loads
                cost = spec_cost(root, cs.spec)
                print(f"{head} {art.compile_time:.2f}s{' (cached)' if art.cached else ''}, "
                      f"{r.registers if r.registers is not None else '?'} regs, "
                      f"{fmt_bytes(spill)} spilled, {fmt_bytes(r.shared)} shared{'; ' + cost if cost else ''}")
        if not kr.compiled:
            print(f"  {_rel(report.path)}::{kr.kernel.display_name}: not compiled (no complete spec; see SRC002)")
        elif _captures_note(kr):
            print(f"  {_rel(report.path)}::{kr.kernel.display_name}{_captures_note(kr)}")


def _captures_note(kr) -> str:
    c = kr.captures
    if not c or c["compiled"] >= c["captured"]:
        return ""
    trials = f", {c['trials']} of them autotuner trials" if c.get("trials") else ""
    outside = " outside the autotuner's trials" if c.get("trials") else ""
    missing = c.get("left_out") or []
    if not missing:
        return (f" — {c['compiled']} of {c['captured']} captured specs compiled{trials} (a representative set: every "
                f"value launched{outside}; --all-captures for all)")
    shown = ", ".join(missing[:6]) + (f" and {len(missing) - 6} more" if len(missing) > 6 else "")
    return (f" — {c['compiled']} of {c['captured']} captured specs compiled{trials} (a representative set of at most "
            f"{c.get('limit', c['compiled'])}; launched{outside} but left out: {shown}; --all-captures compiles every "
            f"one)")


# ---------------------------------------------------------------- ir
def cmd_ir(args) -> int:
    from .pipeline import Checker

    path, sep, name = args.kernel.rpartition("::")
    if not sep or not path or not name:
        print("tritonlens ir: expected PATH::KERNEL, e.g. examples/softmax.py::softmax_kernel", file=sys.stderr)
        return EXIT_ERROR
    if not os.path.exists(path):
        print(f"tritonlens ir: {path}: no such file", file=sys.stderr)
        return EXIT_ERROR
    settings = _settings_from(args)
    with Checker(settings) as checker:
        report = checker.check_file(path, kernels={name})
    for msg in report.problems:
        print(f"tritonlens: {msg}", file=sys.stderr)
    kr = next((k for k in report.kernels if k.name == name), None)
    if kr is None:
        names = ", ".join(k.name for k in report.kernels) or "none"
        print(f"tritonlens ir: no kernel {name!r} in {path} (kernels: {names})", file=sys.stderr)
        return EXIT_ERROR
    if not kr.compiled:
        for f in kr.findings:
            print(f"{_rel(f.path)}:{f.line}:{f.column}: {f.code} {f.message}", file=sys.stderr)
        print(f"tritonlens ir: {name} has no complete spec to compile", file=sys.stderr)
        return EXIT_ERROR
    if not 1 <= args.spec <= len(kr.compiled):
        print(f"tritonlens ir: --spec must be 1..{len(kr.compiled)}", file=sys.stderr)
        return EXIT_ERROR
    cs = kr.compiled[args.spec - 1]
    art = cs.artifacts
    if art is None or art.error:
        print(f"tritonlens ir: {name} did not compile: {art.error.message if art else 'cancelled'}", file=sys.stderr)
        return EXIT_FINDINGS
    text = art.asm.get(args.stage)
    if text is None:
        have = ", ".join(s for s in art.asm if s in ("ttir", "ttgir", "llir", "ptx", "sass", "amdgcn"))
        print(f"tritonlens ir: no {args.stage} for target {art.target} (have: {have})", file=sys.stderr)
        return EXIT_ERROR
    print(f"// {name} [{cs.spec.describe()}] {args.stage}", file=sys.stderr)
    if args.line is None:
        sys.stdout.write(text)
        return EXIT_OK
    from .checks import CheckContext

    ctx = CheckContext(kr.kernel, cs.spec, art, settings)
    parsed = getattr(ctx, args.stage if args.stage != "ttir" else "ttir")
    lines = text.splitlines()
    for ir_line in parsed.linemap.lines_for(args.line, os.path.abspath(path)):
        print(f"{ir_line:6d}  {lines[ir_line - 1]}")
    return EXIT_OK


# ---------------------------------------------------------------- baseline, diff
def _compile_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", type=_target_arg, default="auto", help="as for check")
    p.add_argument("--extra-target", action="append", type=_target_arg, default=[], dest="extra_targets")
    p.add_argument("--captures", metavar="FILE", help="captured launches (default: .tritonlens/captures.jsonl)")
    p.add_argument("--all-captures", action="store_true",
                   help="compile every captured spec, autotuner trials included (default: a representative set)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per compile (default 60)")
    _memory_flag(p)
    p.add_argument("--workers", type=int, default=None, help="compile processes (default: the cores available, up to 16, about 2 GB of memory each)")
    p.add_argument("--module-execution", choices=("definitions", "full"), default="definitions")
    _device_flags(p)


def _baseline_root(baseline_file: str) -> str:
    """Paths in a baseline are relative to the folder holding its `.tritonlens/` (else to the file's own folder)."""
    folder = os.path.dirname(os.path.abspath(baseline_file))
    return os.path.dirname(folder) if os.path.basename(folder) == ".tritonlens" else folder


def _default_baseline(paths: list[str]) -> str:
    from .pipeline import find_workspace_root

    return os.path.join(find_workspace_root(paths[0]), ".tritonlens", "baseline.json")


def _rel_to(root: str):
    return lambda path: os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")


def _sidecar_dir(baseline_file: str) -> str:
    """`.tritonlens/baseline.json` keeps its normalised IR in `.tritonlens/baseline/`."""
    return os.path.splitext(os.path.abspath(baseline_file))[0]


def _file_reports(args) -> list | None:
    """Check the files of `args.paths` (problems to stderr); None when none of them exists."""
    from .pipeline import Checker

    files, problems = _collect_files(args.paths)
    for msg in problems:
        print(f"tritonlens: {msg}", file=sys.stderr)
    if problems and not files:
        return None
    with Checker(_settings_from(args), capture_file=args.captures) as checker:
        reports = list(checker.check_files(files))
    for report in reports:
        for msg in report.problems:
            print(f"tritonlens: {msg}", file=sys.stderr)
    return reports


def _current_state(reports: list, root: str, settings) -> tuple[dict, dict[str, str]]:
    from .report.baseline import build_baseline, tool_versions
    from .device.virtual_gpu import compile_target

    targets = [compile_target(settings.target, settings.gpu)] + list(settings.extra_targets)
    return build_baseline(reports, _rel_to(root), tool_versions(targets))


def _load_baseline(path: str) -> dict | None:
    from .report.baseline import read_baseline

    data, problem = read_baseline(path)
    if problem:
        hint = "; save one with `tritonlens baseline save PATH...`" if "cannot read" in problem else ""
        print(f"tritonlens: {problem}{hint}", file=sys.stderr)
    return data


def cmd_baseline_save(args) -> int:
    from .report.baseline import IR_STAGES

    out = args.output or _default_baseline(args.paths)
    reports = _file_reports(args)
    if reports is None:
        return EXIT_ERROR
    data, sidecar = _current_state(reports, _baseline_root(out), _settings_from(args))
    if args.profile:
        _profile_into(data, reports, _baseline_root(out))
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    _write_if_changed(out, json.dumps(data, indent=1, sort_keys=True) + "\n")
    ir_dir = _sidecar_dir(out)
    stale = set()
    for folder, _, names in os.walk(ir_dir):
        stale.update(os.path.join(folder, n) for n in names if n.rsplit(".", 1)[-1] in IR_STAGES)
    keep = {s.strip() for s in args.ir.split(",")}
    for name, text in sidecar.items():
        if name.rsplit(".", 1)[-1] not in keep:
            continue
        target = os.path.join(ir_dir, *name.split("/"))
        stale.discard(target)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        _write_if_changed(target, text)
    for path in stale:  # IR of specs no longer saved; only files of our own stage suffixes are removed
        os.remove(path)
    for folder, dirs, names in sorted(os.walk(ir_dir), reverse=True):
        if not dirs and not names and folder != ir_dir:
            os.rmdir(folder)
    n_specs = sum(len(k["specs"]) for f in data["files"].values() for k in f["kernels"].values())
    n_kernels = sum(len(f["kernels"]) for f in data["files"].values())
    print(f"baseline of {n_kernels} kernel(s), {n_specs} spec(s) in {len(data['files'])} file(s) written to "
          f"{_rel(out)} (normalised IR in {_rel(ir_dir)}/)")
    return EXIT_OK


def _profile_into(data: dict, reports: list, root: str) -> None:
    """ncu's metrics of each kernel's first replayable captured launch, under the kernel's `ncu` (measurements: they
    vary a little from run to run, so they live apart from the compiler's deterministic numbers)."""
    from .gpu.profile import can_profile, profile_kernel

    ok, why = can_profile()
    if not ok:
        print(f"tritonlens baseline: --profile: {why}; no ncu metrics kept", file=sys.stderr)
        return
    rel = _rel_to(root)
    for report in reports:
        kernels = data["files"].get(rel(report.path), {}).get("kernels", {})
        for kr in report.kernels:
            if kr.kernel.key not in kernels:
                continue
            result = profile_kernel(report.path, kr.kernel.name, workspace_root=root)
            if result.ok:
                kernels[kr.kernel.key]["ncu"] = {"metrics": {k: round(v, 4) for k, v in sorted(result.metrics.items())},
                                                 "ncu_metrics": dict(sorted(result.ncu_metrics.items()))}
            else:
                print(f"tritonlens baseline: --profile {kr.kernel.name}: {result.error}", file=sys.stderr)


def _write_if_changed(path: str, text: str) -> None:
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def cmd_diff(args) -> int:
    from .report.baseline import compare, ir_diff, ir_name

    base_file = args.baseline or _default_baseline(args.paths)
    base = _load_baseline(base_file)
    if base is None:
        return EXIT_ERROR
    reports = _file_reports(args)
    if reports is None:
        return EXIT_ERROR
    now, texts = _current_state(reports, _baseline_root(base_file), _settings_from(args))
    cmp = compare(base, now)
    ir_dir = _sidecar_dir(base_file)
    diffs: dict[tuple[str, str, str], str] = {}
    for kd in cmp.kernels if args.stage else []:
        for sd in kd.specs:
            if sd.old_key and sd.new_key:
                name_old = ir_name(kd.path, kd.kernel, sd.old_key, args.stage)
                name_new = ir_name(kd.path, kd.kernel, sd.new_key, args.stage)
                try:
                    with open(os.path.join(ir_dir, *name_old.split("/")), encoding="utf-8") as f:
                        old_text = f.read()
                except OSError:
                    old_text = None
                diffs[(kd.path, kd.kernel, sd.new_key)] = (
                    f"(the baseline keeps no {args.stage} text of this spec: `baseline save --ir` chooses the layers; "
                    f"{args.stage} {'changed' if args.stage in sd.ir_changed else 'is unchanged'} by its hash)\n"
                    if old_text is None else
                    ir_diff(old_text, texts.get(name_new, ""), f"baseline/{name_old}", f"now/{name_new}"))
    if args.format == "json":
        json.dump(_diff_json(cmp, diffs), sys.stdout, indent=2, sort_keys=True)
        print()
    else:
        _print_diff(cmp, diffs, base_file)
    return EXIT_OK


def _diff_json(cmp, diffs: dict) -> dict:
    def changes(items):
        return [{"name": c.name, "baseline": c.old, "now": c.new, "regressed": c.regressed} for c in items]

    kernels = []
    for kd in cmp.kernels:
        specs = [{"baseline": (sd.old or {}).get("describe"), "now": (sd.new or {}).get("describe"),
                  "matched_by": sd.matched_by or None, "knobs": changes(sd.knobs), "metrics": changes(sd.metrics),
                  "appeared": sd.appeared, "gone": sd.gone, "ir_changed": sd.ir_changed,
                  **({"ir_diff": diffs[(kd.path, kd.kernel, sd.new_key)]}
                     if (kd.path, kd.kernel, sd.new_key) in diffs else {})} for sd in kd.specs]
        kernels.append({"path": kd.path, "kernel": kd.kernel, "status": kd.status, "appeared": kd.appeared,
                        "gone": kd.gone, "specs": specs})
    return {"versions": changes(cmp.versions), "kernels": kernels,
            "files": {p: {"appeared": a, "gone": g} for p, (a, g, _) in cmp.files.items() if a or g}}


def _print_diff(cmp, diffs: dict, base_file: str) -> None:
    def findings(appeared, gone, indent):
        for r in appeared:
            print(f"{indent}+ {r['code']} line {r['line']}: {r['message']}")
        for r in gone:
            print(f"{indent}- {r['code']} line {r['line']}: {r['message']}")

    print(f"compared with {_rel(base_file)}")
    if cmp.versions:
        print("  versions changed (deltas below may be the compiler's, not your edit's): " +
              ", ".join(c.text() for c in cmp.versions))
    for path, (appeared, gone, _) in cmp.files.items():
        if appeared or gone:
            print(f"{path}")
            findings(appeared, gone, "  ")
    n_changed = n_specs = 0
    for kd in cmp.kernels:
        if kd.status != "same":
            print(f"{kd.path}::{kd.kernel}: {'not in the baseline' if kd.status == 'new' else 'gone'}")
        findings(kd.appeared, kd.gone, "  ")
        for sd in kd.specs:
            n_specs += 1
            if not sd.changed:
                continue
            n_changed += 1
            if kd.status == "same" and not sd.matched_by:
                print(f"{kd.path}::{kd.kernel} [{sd.describe}]: "
                      f"{'spec not in the baseline' if sd.new else 'spec no longer compiled'}")
            else:
                print(f"{kd.path}::{kd.kernel} [{sd.describe}]")
            if sd.knobs:
                knobs = [c for c in sd.knobs if c.name != "target"]
                how = f" (paired with the baseline's spec by {sd.matched_by})" if sd.matched_by != "key" else ""
                print(f"  spec: {', '.join(c.text() for c in knobs)}{how}")
                if len(knobs) > 1:
                    print(f"  {len(knobs)} knobs changed at once: the deltas cannot be pinned on one of them")
            for c in sd.metrics:
                flag = f"  (regressed{': ' + c.why if c.why else ''})" if c.regressed else ""
                print(f"  {c.text()}{flag}")
            findings(sd.appeared, sd.gone, "  ")
            if sd.ir_changed:
                print(f"  IR changed: {', '.join(sd.ir_changed)}")
            text = diffs.get((kd.path, kd.kernel, sd.new_key))
            if text:
                print("".join("    " + ln for ln in text.splitlines(keepends=True)), end="")
    print(f"\n{n_changed} of {n_specs} spec(s) changed since the baseline")


# ---------------------------------------------------------------- report
def cmd_report(args) -> int:
    from .report.html import write_report

    changes = None
    if args.baseline:
        from .report.baseline import read_baseline, since_baseline

        base, why = read_baseline(args.baseline)
        if base is None:
            print(f"tritonlens report: {why}", file=sys.stderr)
            return EXIT_ERROR
    reports = _file_reports(args)
    if reports is None:
        return EXIT_ERROR
    if args.baseline:
        rel = _rel_to(_baseline_root(args.baseline))
        changes = {}
        for report in reports:
            for kr in report.kernels:
                said = since_baseline(base, rel(report.path), kr)
                changes[f"{_rel(report.path)}::{kr.kernel.name}"] = [said] if said else []
    stats = write_report(reports, args.output, _settings_from(args), title=args.title, baseline=changes)
    print(f"report of {stats.kernels} kernel(s), {stats.specs} spec(s) written to {_rel(args.output)} "
          f"({fmt_bytes(stats.bytes)})")
    return EXIT_OK


# ---------------------------------------------------------------- explain
def cmd_doctor(args) -> int:
    from .doctor import diagnose

    diagnosis = diagnose(workspace=args.workspace)
    print(json.dumps(diagnosis.to_json(), indent=2) if args.format == "json" else diagnosis.text())
    return EXIT_OK if diagnosis.ok else EXIT_FINDINGS


def cmd_explain(code: str) -> int:
    from .checks import load_rules, rule_doc

    code = code.upper()
    rules = load_rules()
    doc = rule_doc(code)
    if doc is None and code not in rules:
        print(f"tritonlens explain: unknown code {code}; known: {', '.join(sorted(rules))}", file=sys.stderr)
        return EXIT_ERROR
    if doc is None:
        r = rules[code]
        doc = f"# {r.code} {r.name}\n\n{r.summary}\n\nDefault severity: {r.severity}\n"
    sys.stdout.write(doc if doc.endswith("\n") else doc + "\n")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
