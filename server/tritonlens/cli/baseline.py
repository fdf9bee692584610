"""`tritonlens baseline save`, `tritonlens diff` and `tritonlens report`: what the compiler did now, kept as a baseline,
compared with one (the comparison is report/baseline.py, its text report/baseline_text.py), or written as one HTML
page."""
from __future__ import annotations

import json
import os
import sys

from ..frontend.untrusted import printable
from ..model import STAGES
from ..reads import RefusedRead, read_text
from ..units import fmt_bytes
from ..source import python_files
from ..writes import remove_empty_folder, remove_file, resolve, write_file
from .common import EXIT_ERROR, EXIT_OK, compile_flags, rel, settings_from
from ..sidecar import BASELINE, is_sidecar_folder, sidecar_path


def add_parser(sub) -> None:
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
    compile_flags(bs)
    bs.set_defaults(run=run_baseline_save)

    d = sub.add_parser("diff", help="what changed since the baseline: metrics, findings, and with --stage the IR")
    d.add_argument("paths", nargs="+", metavar="PATH")
    d.add_argument("--baseline", metavar="FILE", help="default: .tritonlens/baseline.json in the workspace root")
    d.add_argument("--format", choices=("text", "json"), default="text")
    d.add_argument("--stage", choices=STAGES,
                   help="also a unified diff of this layer (locations, SSA and register numbers normalised)")
    compile_flags(d)
    d.set_defaults(run=run_diff)

    r = sub.add_parser("report", help="write one self-contained HTML page: source with findings, TTGIR/PTX/SASS "
                                      "panes linked to it, metrics, config matrix")
    r.add_argument("paths", nargs="+", metavar="PATH")
    r.add_argument("--output", "-o", metavar="FILE.html", required=True)
    r.add_argument("--title", default="tritonlens report")
    compile_flags(r)
    r.add_argument("--baseline", metavar="FILE", help="show what changed in each kernel since this baseline")
    r.add_argument("--compare-triton", metavar="VERSION",
                   help="add a section comparing each spec with Triton VERSION, its IR side by side (tritonlens compare)")
    r.set_defaults(run=run_report)


def baseline_root(baseline_file: str) -> str:
    """Paths in a baseline are relative to the folder holding its `.tritonlens/` (else to the file's own folder)."""
    folder = os.path.dirname(os.path.abspath(baseline_file))
    return os.path.dirname(folder) if is_sidecar_folder(folder) else folder


def default_baseline(paths: list[str]) -> str:
    from ..pipeline import find_workspace_root

    return sidecar_path(find_workspace_root(paths[0]), BASELINE)


def rel_to(root: str):
    return lambda path: os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")


def sidecar_dir(baseline_file: str) -> str:
    """`.tritonlens/baseline.json` keeps its normalised IR in `.tritonlens/baseline/`."""
    return os.path.splitext(os.path.abspath(baseline_file))[0]


def file_reports(args) -> tuple[list, list[str]] | None:
    """Check the files of `args.paths` (problems to stderr): the reports and the targets compiled for; None when none
    of the files exists."""
    from ..pipeline import Checker

    files, problems = python_files(args.paths)
    for msg in problems:
        print(f"tritonlens: {msg}", file=sys.stderr)
    if problems and not files:
        return None
    with Checker(settings_from(args), capture_file=args.captures) as checker:
        reports = list(checker.check_files(files))
        targets = checker.targets()
    for report in reports:
        for msg in report.problems:
            print(f"tritonlens: {msg}", file=sys.stderr)
    return reports, targets


def current_state(checked: tuple[list, list[str]], root: str) -> tuple[dict, dict[str, str]]:
    from ..report.baseline import build_baseline, tool_versions

    reports, targets = checked
    return build_baseline(reports, rel_to(root), tool_versions(targets))


def load_baseline(path: str) -> dict | None:
    from ..report.baseline import read_baseline

    data, problem = read_baseline(path)
    if problem:
        hint = "; save one with `tritonlens baseline save PATH...`" if "cannot read" in problem else ""
        print(f"tritonlens: {problem}{hint}", file=sys.stderr)
    return data


def run_baseline_save(args) -> int:
    out = args.output or default_baseline(args.paths)
    checked = file_reports(args)
    if checked is None:
        return EXIT_ERROR
    data, sidecar = current_state(checked, baseline_root(out))
    if args.profile:
        _profile_into(data, checked[0], baseline_root(out))
    # the baseline, its IR folder and what is removed there stay inside the workspace: a committed link
    # (baseline.json -> a shell's start-up file, baseline/ -> elsewhere) is refused, never written through
    root = baseline_root(out)
    try:
        write_file(out, json.dumps(data, indent=1, sort_keys=True) + "\n", root, only_if_changed=True)
        ir_dir = resolve(sidecar_dir(out), root)
        _save_sidecar(ir_dir, sidecar, {s.strip() for s in args.ir.split(",")}, root)
    except OSError as exc:
        print(f"tritonlens baseline: {printable(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    n_specs = sum(len(k["specs"]) for f in data["files"].values() for k in f["kernels"].values())
    n_kernels = sum(len(f["kernels"]) for f in data["files"].values())
    print(f"baseline of {n_kernels} kernel(s), {n_specs} spec(s) in {len(data['files'])} file(s) written to "
          f"{rel(out)} (normalised IR in {rel(ir_dir)}/)")
    return EXIT_OK


def _profile_into(data: dict, reports: list, root: str) -> None:
    """ncu's metrics of each kernel's first replayable captured launch, under the kernel's `ncu` (measurements: they
    vary a little from run to run, so they live apart from the compiler's deterministic numbers)."""
    from ..gpu.profile import can_profile, profile_kernel

    ok, why = can_profile()
    if not ok:
        print(f"tritonlens baseline: --profile: {why}; no ncu metrics kept", file=sys.stderr)
        return
    in_base = rel_to(root)
    for report in reports:
        kernels = data["files"].get(in_base(report.path), {}).get("kernels", {})
        for kr in report.kernels:
            if kr.kernel.key not in kernels:
                continue
            result = profile_kernel(report.path, kr.kernel.name, workspace_root=root)
            if result.ok:
                kernels[kr.kernel.key]["ncu"] = {"metrics": {k: round(v, 4) for k, v in sorted(result.metrics.items())},
                                                 "ncu_metrics": dict(sorted(result.ncu_metrics.items()))}
            else:
                print(f"tritonlens baseline: --profile {kr.kernel.name}: {result.error}", file=sys.stderr)


def _save_sidecar(ir_dir: str, sidecar: dict[str, str], keep: set[str], root: str) -> None:
    """Write the normalised IR of the stages in `keep` under `ir_dir` (a real path inside `root`), remove the IR of
    specs no longer saved (only files of our own stage suffixes) and the folders that leaves empty. Links there are
    never followed: a linked folder is not walked, a linked file is removed itself."""
    stale = set()
    for folder, _, names in os.walk(ir_dir):
        stale.update(os.path.join(folder, n) for n in names if n.rsplit(".", 1)[-1] in STAGES)
    for name, text in sidecar.items():
        if name.rsplit(".", 1)[-1] not in keep:
            continue
        target = os.path.join(ir_dir, *name.split("/"))
        stale.discard(target)
        write_file(target, text, root, only_if_changed=True)
    for path in stale:
        remove_file(path, root)
    for folder, dirs, names in sorted(os.walk(ir_dir), reverse=True):
        if not dirs and not names and folder != ir_dir:
            remove_empty_folder(folder, root)


def run_diff(args) -> int:
    from ..report.baseline import compare, ir_diff, ir_name
    from ..report.baseline_text import diff_json, diff_text

    base_file = args.baseline or default_baseline(args.paths)
    base = load_baseline(base_file)
    if base is None:
        return EXIT_ERROR
    checked = file_reports(args)
    if checked is None:
        return EXIT_ERROR
    root = baseline_root(base_file)
    now, texts = current_state(checked, root)
    cmp = compare(base, now)
    ir_dir = sidecar_dir(base_file)
    diffs: dict[tuple[str, str, str], str] = {}
    for kd in cmp.kernels if args.stage else []:
        for sd in kd.specs:
            if sd.old_key and sd.new_key:
                name_old = ir_name(kd.path, kd.kernel, sd.old_key, args.stage)
                name_new = ir_name(kd.path, kd.kernel, sd.new_key, args.stage)
                refused = None
                try:  # a workspace file: a committed link out of it, to /dev/zero or a FIFO is refused (reads)
                    old_text = read_text(os.path.join(ir_dir, *name_old.split("/")), root)
                except RefusedRead as exc:
                    old_text, refused = None, str(exc)
                except OSError:
                    old_text = None
                diffs[(kd.path, kd.kernel, sd.new_key)] = (
                    f"(the baseline's {args.stage} text of this spec is not read: {refused})\n" if refused else
                    f"(the baseline keeps no {args.stage} text of this spec: `baseline save --ir` chooses the layers; "
                    f"{args.stage} {'changed' if args.stage in sd.ir_changed else 'is unchanged'} by its hash)\n"
                    if old_text is None else
                    ir_diff(old_text, texts.get(name_new, ""), f"baseline/{name_old}", f"now/{name_new}"))
    if args.format == "json":
        json.dump(diff_json(cmp, diffs), sys.stdout, indent=2, sort_keys=True)
        print()
    else:
        sys.stdout.write(diff_text(cmp, diffs, rel(base_file)))
    return EXIT_OK


def run_report(args) -> int:
    from ..report.html import write_report

    changes = None
    if args.baseline:
        from ..report.baseline import read_baseline, since_baseline

        base, why = read_baseline(args.baseline)
        if base is None:
            print(f"tritonlens report: {why}", file=sys.stderr)
            return EXIT_ERROR
    checked = file_reports(args)
    if checked is None:
        return EXIT_ERROR
    reports = checked[0]
    if args.baseline:
        in_base = rel_to(baseline_root(args.baseline))
        changes = {}
        for report in reports:
            for kr in report.kernels:
                said = since_baseline(base, in_base(report.path), kr)
                changes[f"{rel(report.path)}::{kr.kernel.name}"] = [said] if said else []
    sections = []
    if args.compare_triton:
        from ..compare.envs import ReleaseError
        from ..compare.html import section_for

        try:
            sections.append(section_for([r.path for r in reports], settings_from(args), args.compare_triton))
        except ReleaseError as exc:
            print(f"tritonlens report: --compare-triton: {exc}", file=sys.stderr)
            return EXIT_ERROR
    stats = write_report(reports, args.output, settings_from(args), title=args.title, baseline=changes,
                         sections=sections)
    print(f"report of {stats.kernels} kernel(s), {stats.specs} spec(s) written to {rel(args.output)} "
          f"({fmt_bytes(stats.bytes)})")
    return EXIT_OK
