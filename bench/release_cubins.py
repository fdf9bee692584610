"""The binaries another Triton release makes of a file's captured specs, compiled here on the CPU, for timing on a GPU
machine that has only the installed release (bench/gpu_time_release_cubins.py swaps each into the installed Triton's
launch of the same spec).

A GPU machine without network access cannot install a second Triton release (its wheel is about 200 MB); the
binaries it makes are a few KB each. Each record: the spec's capture identity, the cubin, the shared memory and kernel
name the launch needs, and what ptxas reported.

    PYTHONPATH=server python3 bench/release_cubins.py --triton 3.9.0 FILE.py [--kernel NAME] [--label "capture N" ...] \
        -o OUT.jsonl
"""
from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "server"))

from tritonlens.compare.envs import ensure_release  # noqa: E402
from tritonlens.compiler.pool import CompileService  # noqa: E402
from tritonlens.compiler.cache import ArtifactCache  # noqa: E402
from tritonlens.pipeline import Checker, find_workspace_root  # noqa: E402
from tritonlens.settings import Settings  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="+")
    p.add_argument("--triton", required=True, help="the other release")
    p.add_argument("--kernel")
    p.add_argument("--label", action="append", help='only these captured specs ("capture 73", as check names them)')
    p.add_argument("-o", "--output", required=True)
    args = p.parse_args()
    release, _ = ensure_release(args.triton, say=lambda m: print(m, file=sys.stderr))
    settings = Settings(target="cuda:90", all_captures=True, max_workers=2)
    cache_dir = os.path.join(os.path.dirname(os.path.abspath(args.output)), f".cache-triton-{args.triton}")
    n = 0
    with CompileService(2, python=release.python) as service, \
            Checker(settings, service=service, cache=ArtifactCache(cache_dir)) as checker, \
            open(args.output, "w", encoding="utf-8") as out:
        for path in args.paths:
            report = checker.check_file(path, workspace_root=find_workspace_root(path),
                                        kernels={args.kernel} if args.kernel else None)
            for kr in report.kernels:
                for cs in kr.compiled:
                    ident = cs.spec.capture_id
                    art = cs.artifacts
                    if not ident or (args.label and cs.spec.label not in args.label) or art is None or not art.ok:
                        continue
                    cubin = art.asm.get("cubin64")
                    md = art.metadata or {}
                    if not cubin or "shared" not in md or "name" not in md:
                        continue
                    out.write(json.dumps({"identity": ident, "kernel": kr.kernel.name, "label": cs.spec.label,
                                          "triton": args.triton, "name": md["name"], "shared": md["shared"],
                                          "num_warps": md.get("num_warps"), "cubin64": cubin,
                                          "spill_bytes": cs.metrics.get("spill_bytes"),
                                          "registers": cs.metrics.get("registers")}) + "\n")
                    n += 1
    print(f"{n} binaries of triton {args.triton} in {args.output}", file=sys.stderr)
    return 0 if n else 1


if __name__ == "__main__":
    sys.exit(main())
