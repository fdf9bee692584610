"""The spill code `check` reads from cubins (ir.cubin) against nvdisasm, over an artefact cache.

    python bench/compare_local_accesses.py CACHE_DIR [--arch 90]

For every cached compile whose worker stored `local_accesses` (its LDL/STL read from the cubin instead of
disassembled) and kept the cubin, disassembles the cubin with nvdisasm and compares the LDL/STL it prints — offsets,
kinds, source lines — with what was stored. Prints a markdown table; exit 1 on any difference. Not a test.
"""
from __future__ import annotations

import argparse
import base64
import glob
import json
import os
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cache")
    args = ap.parse_args()
    from tritonlens.ir.sass import CUBIN_STAGE, disassemble, parse_sass

    rows, bad, disasm_s = [], 0, 0.0
    for meta_path in sorted(glob.glob(os.path.join(args.cache, "artifacts", "*", "*", "meta.json"))):
        with open(meta_path, encoding="utf-8") as f:
            text = f.read()
        if '"local_accesses"' not in text:
            continue
        meta = json.loads(text)
        stored = _find(meta, "local_accesses")
        folder = os.path.dirname(meta_path)
        cubins = [p for p in os.listdir(folder) if p.endswith("." + CUBIN_STAGE)]
        if not cubins or stored is None:
            continue
        with open(os.path.join(folder, cubins[0]), encoding="ascii") as f:
            cubin = base64.b64decode(f.read())
        start = time.perf_counter()
        sass = parse_sass(disassemble(cubin))
        disasm_s += time.perf_counter() - start
        want = [[i.offset, i.kind, i.loc.file if i.loc else None, i.loc.line if i.loc else 0]
                for i in sass.instrs if i.kind in ("ldl", "stl")]
        same = want == stored
        bad += not same
        rows.append((cubins[0].rsplit(".", 1)[0], len(want), same))
    print("| kernel | LDL+STL (nvdisasm) | same in the cubin reader |")
    print("|---|---|---|")
    for name, n, same in rows:
        print(f"| {name} | {n} | {'yes' if same else '**no**'} |")
    print(f"\n{len(rows)} cubins with spill code or a stack frame, {len(rows) - bad} identical; "
          f"nvdisasm took {disasm_s:.1f} s for them")
    return 1 if bad else 0


def _find(obj, key):
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        for v in obj.values():
            got = _find(v, key)
            if got is not None:
                return got
    return None


if __name__ == "__main__":
    sys.exit(main())
