"""`tritonlens check PATH...`: compile every kernel and report findings (text, JSON, SARIF); `--baseline` gates on
what is new, `--fix` / `--diff` apply the preferred proven fixes."""
from __future__ import annotations

import json
import os
import sys

from ..frontend.untrusted import printable
from ..model import BROKEN_HERE, SEVERITY_RANK, Finding, compiled_under
from ..units import fmt_bytes
from .baseline import baseline_root, load_baseline, rel_to
from ..source import python_files
from .common import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, UsageError, compile_flags, rel, settings_from


def add_parser(sub) -> None:
    c = sub.add_parser("check", help="compile every kernel in the given files/folders and report findings")
    c.add_argument("paths", nargs="+", metavar="PATH")
    compile_flags(c)
    c.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    c.add_argument("--select", help="comma-separated codes or prefixes to report (e.g. PTX,SASS001)")
    c.add_argument("--storm-threshold", type=int, default=3)
    c.add_argument("--quiet", "-q", action="store_true", help="text format: findings only, no compile summary")
    c.add_argument("--verbose", "--show-evidence", "-v", action="store_true", dest="verbose",
                   help="text format: under each finding's line, its evidence (the full account, the spec, the cost, "
                        "the verdict's reason)")
    c.add_argument("--baseline", metavar="FILE",
                   help="report what is new since this baseline (BASE001); findings it already has do not fail")
    c.add_argument("--fix", action="store_true",
                   help="apply the preferred fix of each finding (a program edit, re-compiled and proven; only the "
                        "findings --select keeps) and write the files")
    c.add_argument("--fix-prune", action="store_true",
                   help="with --fix / --diff (implies --fix): also remove the dead configs from literal autotune lists "
                        "(LAUNCH005: never within 10%% of the best at any captured key; only when every key the "
                        "captured launches ran was measured)")
    c.add_argument("--diff", action="store_true",
                   help="print the fixes as a unified diff and write nothing (alone or with --fix)")
    c.set_defaults(run=run)


def run(args) -> int:
    from ..pipeline import Checker

    files, problems = python_files(args.paths)
    for msg in problems:
        print(f"tritonlens: {msg}", file=sys.stderr)
    if problems and not files:
        return EXIT_ERROR
    select = {s.strip().upper() for s in args.select.split(",") if s.strip()} if args.select else None
    settings = settings_from(args)
    if getattr(args, "fix_prune", False) and not args.diff:
        args.fix = True
    fixing = args.fix or args.diff
    if fixing and (args.format != "text" or args.baseline):
        raise UsageError("--fix and --diff print text and take no --baseline")
    base = load_baseline(args.baseline) if args.baseline else None
    if args.baseline and base is None:
        return EXIT_ERROR
    if fixing:
        return _check_fix(args, files, select, settings)
    reports = []
    progress = _Progress() if sys.stderr.isatty() and not args.quiet else None
    with Checker(settings, select=select, capture_file=args.captures) as checker:
        if args.format == "text" and not args.quiet:
            print(gpu_line(checker.devices[0], settings.gpu))
        for report in checker.check_files(files, on_kernel=progress):
            if progress is not None:
                progress.clear()
            for msg in report.problems:
                print(f"tritonlens: {msg}", file=sys.stderr)
            reports.append(report)
            if base is not None:
                _gate(report, base, args.baseline, settings)
            if args.format == "text":
                _print_text(report, select, quiet=args.quiet, verbose=args.verbose)
                if report.auto is not None and report.auto.outcome != "none" and not args.quiet:
                    print(f"  {rel(report.path)}: {report.auto.summary(report.path)}")
    for msg in _unused_captures(files, reports, args.captures):
        print(f"tritonlens: {msg}", file=sys.stderr)
    findings = [f for r in reports for f in r.all_findings() if keep(f, select)]
    if args.format == "json":
        json.dump([{**f.to_json(), **_baseline_state(f)} for f in findings], sys.stdout, indent=2)
        print()
    elif args.format == "sarif":
        from ..report.sarif import to_sarif

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
    from ..fixes.apply import fix_file
    from ..pipeline import Checker, find_workspace_root
    from ..frontend.untrusted import printable
    from ..source import read_source
    from ..writes import write_file

    write = not args.diff
    applied = changed = 0
    left: list[Finding] = []
    with Checker(settings, select=select, capture_file=args.captures) as checker:
        if not args.quiet and write:
            print(gpu_line(checker.devices[0], settings.gpu))
        for report in checker.check_files(files):
            for msg in report.problems:
                print(f"tritonlens: {msg}", file=sys.stderr)
            text, _ = read_source(report.path)
            if text is None or not report.kernels:
                left.extend(f for f in report.all_findings() if keep(f, select))
                continue
            done = fix_file(checker, settings, report, text, lambda f: keep(f, select) and _fix_kept(f, args),
                            find_workspace_root(report.path))
            if write and done.changed:
                try:  # a committed link (kern.py -> ../elsewhere.py) is never written through
                    write_file(report.path, done.text, root=find_workspace_root(report.path))
                except OSError as exc:
                    print(f"tritonlens: {rel(report.path)}: the fixes were not written: {printable(str(exc))}",
                          file=sys.stderr)
                    done = fix_file(checker, settings, report, text, lambda f: False, None, rounds=0)
            for a in done.applied:
                verb = "fixed" if write else "would fix"
                print(f"{rel(report.path)}:{a.finding.line}: {a.finding.code} {verb}: {a.fix.title}",
                      file=sys.stderr if not write else sys.stdout)
            applied += len(done.applied)
            if done.changed:
                changed += 1
                if not write:
                    sys.stdout.write(done.diff(rel(report.path)))
            if write:
                _print_text(done.report, select, quiet=True)
            left.extend(f for f in done.report.all_findings() if keep(f, select))
    gating = [f for f in left if SEVERITY_RANK.get(f.severity, 3) <= 1]
    summary = (f"{applied} fix(es) {'applied' if write else 'to apply'} in {changed} file(s), each re-compiled and "
               f"proven; {len(gating)} finding(s) at warning or above left")
    print(summary, file=sys.stdout if write else sys.stderr)
    return EXIT_FINDINGS if gating or (not write and changed) else EXIT_OK


PRUNE_CODES = {"LAUNCH005"}  # fixes that remove configs the autotuner measured: applied only when asked for


def _fix_kept(f: Finding, args) -> bool:
    """Whether `check --fix` applies `f`'s fix: pruning the autotune list only with --fix-prune."""
    return f.code not in PRUNE_CODES or bool(getattr(args, "fix_prune", False))


def gpu_line(device, named: str) -> str:
    """The report's header: the GPU the imports saw and the findings' numbers are for (the run's main device)."""
    from ..device.targets import local_gpu_target

    how = ("the local GPU" if local_gpu_target() == device.target and not named else
           "virtual: the imports' device queries and the findings' limits answer as it; --gpu NAME for another")
    return f"GPU: {device.gpu.label()}, {device.target} ({how})"


class _Progress:
    """One status line on a terminal's stderr while kernels compile: `[12/82] path::kernel (5 specs)`."""

    def __call__(self, kr, done: int, total: int) -> None:
        n = len(kr.compiled)
        text = f"[{done}/{total}] {rel(kr.kernel.path)}::{printable(kr.kernel.display_name)} ({n} spec{'s' if n != 1 else ''})"
        sys.stderr.write("\r\033[K" + text[:160])
        sys.stderr.flush()

    def clear(self) -> None:
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()


def _unused_captures(files: list[str], reports, capture_file: str | None) -> list[str]:
    """Captures that matched no checked file or kernel, said once per workspace (never dropped silently)."""
    from ..frontend.captures import unmatched
    from ..pipeline import find_workspace_root

    checked = {r.path: {n for k in r.kernels for n in (k.kernel.name, k.kernel.func_name)} for r in reports}
    out: list[str] = []
    for root in dict.fromkeys(find_workspace_root(p) for p in files):
        for msg in unmatched(root, capture_file, checked):
            if msg not in out:
                out.append(msg)
    return out


def _gate(report, base: dict, base_file: str, settings) -> None:
    from ..report.baseline import gate_report

    from ..checks.verdict import decide, explicit_severity

    rel = rel_to(baseline_root(base_file))(report.path)
    found = gate_report(report, base, rel, None if explicit_severity(settings, "BASE001") == "off" else "warning")
    decide(found, settings)  # the rule proposes a warning; the user's setting is the verdict's last word


def _baseline_state(f: Finding) -> dict:
    state = f.data.get("baseline_state")
    return {"baseline_state": state} if state else {}


def keep(f: Finding, select: set[str] | None) -> bool:
    return not select or any(f.code == s or f.code.startswith(s) for s in select)


def _print_text(report, select, quiet: bool, verbose: bool = False) -> None:
    """Findings as `path:line:col: CODE [severity] message`, one line each, grouped by kernel under one line that
    names the spec(s) they were compiled under — the spec is said once, not at the end of every finding. `verbose`:
    each finding's evidence under it (its details; the spec only where it differs from the kernel's line)."""
    kept = [f for f in report.all_findings() if keep(f, select)]
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
            print(f"{rel(report.path)}::{printable(kr.kernel.display_name)} {shown}{_captures_note(kr)}")
        said = {compiled_under(d) for d in set(specs)} if len(set(specs)) == 1 else set()
        for f in found:
            seen = " (in the baseline)" if f.data.get("baseline_state") == "unchanged" else ""
            print(f"{rel(f.path)}:{f.line}:{f.column}: {f.code} [{f.severity}] {f.message}{seen}")
            if verbose:
                for d in f.details:
                    if d not in said:
                        print(f"    {printable(d)}")
    if quiet:
        return
    from ..report.cost import spec_cost
    from ..pipeline import find_workspace_root

    root = find_workspace_root(report.path)
    for kr in report.kernels:
        for cs in kr.compiled:
            art = cs.artifacts
            head = f"  {rel(report.path)}::{printable(kr.kernel.display_name)} [{cs.spec.describe()}]"
            if art is None:
                print(f"{head} not compiled")
            elif art.error:
                print(f"{head} {'not compiled' if art.error.ours else 'FAILED'} ({art.error.kind})")
            else:
                r = art.resources
                spill = r.spill_stores + r.spill_loads
                cost = spec_cost(root, cs.spec, metrics=cs.metrics)
                print(f"{head} {art.compile_time:.2f}s{' (cached)' if art.cached else ''}, "
                      f"{r.registers if r.registers is not None else '?'} regs, "
                      f"{fmt_bytes(spill)} spilled, {fmt_bytes(r.shared)} shared{'; ' + cost if cost else ''}")
        if not kr.compiled:
            print(f"  {rel(report.path)}::{printable(kr.kernel.display_name)}: not compiled (no complete spec; see SRC002)")
        elif _captures_note(kr):
            print(f"  {rel(report.path)}::{printable(kr.kernel.display_name)}{_captures_note(kr)}")


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
