"""For every narrow access (PTX001 / PTX002) of a corpus check: is the full-block fix (fixes/tail) offered, and
does its re-compile prove it, as the editor would (fixes.search.prove)? Prints one line per finding and the totals:
offered and proven, offered but not proven (what the fast path's re-compile still showed), not offered (why: the
cause is not the mask, or what in the kernel made dropping the mask unsound or unreadable).

    PYTHONPATH=server python3 bench/corpus_tail_fixes.py COPY_OF_CORPUS/src/liger_kernel/ops/*.py [--target cuda:90]
        [--all-captures]

Run it on a copy of the corpus: the check finds `.tritonlens/captures.jsonl` from the files.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "server"))

from tritonlens.checks.registry import fix_strategies  # noqa: E402
from tritonlens.fixes import search, tail as fix_tail  # noqa: E402
from tritonlens.pipeline import Checker  # noqa: E402
from tritonlens.settings import Settings  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--target", default="cuda:90")
    ap.add_argument("--all-captures", action="store_true", help="every captured spec, not the representative set")
    args = ap.parse_args()
    settings = Settings(target=args.target, compile_timeout=300, all_captures=args.all_captures)
    totals: Counter = Counter()
    why: Counter = Counter()
    with Checker(settings) as checker:
        for report in checker.check_files(sorted(args.paths)):
            text = open(report.path, encoding="utf-8").read()
            for kr in report.kernels:
                for f in kr.findings:
                    if "tail" not in fix_strategies(f.code):
                        continue
                    where = f"{os.path.basename(report.path)}:{f.line} {f.code} {kr.name}"
                    cause = f.data.get("cause")
                    got = fix_tail.planned(text, kr.kernel.def_line, f.line) if cause == "mask" else None
                    if not isinstance(got, fix_tail.Plan):
                        reason = f"cause: {cause}" if cause != "mask" else f"mask: {got}"
                        totals["not offered"] += 1
                        why[reason] += 1
                        print(f"{where}: not offered — {reason}")
                        continue
                    (cand,) = fix_tail.candidates(kr, f, text)
                    said, traded = search.prove(checker, settings, report.path, text, kr, f, cand)
                    state = "proven" if said else "not proven"
                    totals[f"offered, {state}"] += 1
                    print(f"{where}: {cand.label} — {said or 'not proven'}" + (" [trade]" if traded else ""))
    print()
    for k, n in totals.most_common():
        print(f"{n:4d}  {k}")
    print("why not offered:")
    for k, n in why.most_common():
        print(f"{n:4d}  {k}")


if __name__ == "__main__":
    main()
