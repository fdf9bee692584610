"""`tritonlens ir PATH::KERNEL --stage S`: one layer of a kernel's compile, whole or the lines of one source line."""
from __future__ import annotations

import os
import sys

from ..model import STAGES
from .common import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, compile_flags, rel, settings_from
from ..source import split_lines


def add_parser(sub) -> None:
    i = sub.add_parser("ir", help="print one layer of a kernel's compile: tritonlens ir FILE::KERNEL --stage ptx")
    i.add_argument("kernel", metavar="PATH::KERNEL")
    i.add_argument("--stage", choices=STAGES, default="ttgir")
    i.add_argument("--spec", type=int, default=1, help="which spec of the kernel (1-based; see `check`)")
    i.add_argument("--line", type=int, default=None, help="only the IR lines that came from this source line")
    compile_flags(i, several_files=False)


def run(args) -> int:
    from ..pipeline import Checker

    path, sep, name = args.kernel.rpartition("::")
    if not sep or not path or not name:
        print("tritonlens ir: expected PATH::KERNEL, e.g. examples/softmax.py::softmax_kernel", file=sys.stderr)
        return EXIT_ERROR
    if not os.path.exists(path):
        print(f"tritonlens ir: {path}: no such file", file=sys.stderr)
        return EXIT_ERROR
    settings = settings_from(args)
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
            print(f"{rel(f.path)}:{f.line}:{f.column}: {f.code} {f.message}", file=sys.stderr)
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
        have = ", ".join(s for s in art.asm if s in STAGES)
        print(f"tritonlens ir: no {args.stage} for target {art.target} (have: {have})", file=sys.stderr)
        return EXIT_ERROR
    print(f"// {name} [{cs.spec.describe()}] {args.stage}", file=sys.stderr)
    if args.line is None:
        sys.stdout.write(text)
        return EXIT_OK
    from ..checks import CheckContext

    ctx = CheckContext(kr.kernel, cs.spec, art, settings)
    parsed = getattr(ctx, args.stage if args.stage != "ttir" else "ttir")
    lines = split_lines(text)
    for ir_line in parsed.linemap.lines_for(args.line, os.path.abspath(path)):
        print(f"{ir_line:6d}  {lines[ir_line - 1]}")
    return EXIT_OK
