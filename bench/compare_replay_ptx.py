"""Replay captured specs on this machine (no GPU) and compare the PTX with what the JIT produced on the GPU.

    python bench/compare_replay_ptx.py DUMP_DIR [--root REPO]

DUMP_DIR holds `<kernel>-<id>.json` (the capture line) and `<kernel>-<id>.ptx` (the GPU JIT's PTX), written by
`tritonlens capture --dump DUMP_DIR`. Each capture goes through the same road `check` takes (discover ->
build_specs(captures=...) -> the compile worker); PTX is compared after normalising the `.file` paths.
"""
import argparse
import glob
import hashlib
import json
import os
import re
import sys

from tritonlens.compiler.pool import CompileJob
from tritonlens.compiler.worker import compile_job
from tritonlens.frontend.discover import discover
from tritonlens.ir import sass
from tritonlens.frontend.loader import slice_module
from tritonlens.frontend.specs import build_specs

_FILE = re.compile(r'^(\s*\.file\s+\d+\s+)"([^"]*)"', re.M)
_DEBUG_INFO = re.compile(r"^\s*\.section\s+\.debug_info\s*\{.*?^\s*\}", re.M | re.S)


def normalise(ptx: str) -> str:
    """The `.file` paths reduced to file names, and the DWARF `.debug_info` section dropped: it spells the
    compile directory out byte by byte (`.b8 ...`), so it differs between machines and nothing else in it does."""
    return _DEBUG_INFO.sub(".section .debug_info { <compile directory> }",
                           _FILE.sub(lambda m: f'{m.group(1)}"{os.path.basename(m.group(2))}"', ptx))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--root", default=os.getcwd())
    args = ap.parse_args()
    rows, bad = [], 0
    for meta_file in sorted(glob.glob(os.path.join(args.dump, "*.json"))):
        with open(meta_file) as f:
            cap = json.load(f)["capture"]
        gpu_ptx_file = meta_file[:-5] + ".ptx"
        if not os.path.exists(gpu_ptx_file):
            continue
        path = os.path.join(args.root, cap["path"])
        with open(path) as f:
            text = f.read()
        kernel = next(k for k in discover(path, text, args.root).kernels if k.func_name == cap["kernel"])
        specs, findings = build_specs(kernel, cap["target"], captures=[cap])
        assert len(specs) == 1 and not findings, (specs, findings)
        job = CompileJob(path=path, text=slice_module(text, [kernel.name]).text, qualname=kernel.name,
                         spec=specs[0].to_json(), workspace_root=args.root)
        art = compile_job(job.to_wire())  # in this process, as a worker runs it
        if art.error:
            rows.append((cap["kernel"], specs[0].describe(), "COMPILE ERROR " + art.error.message, "", ""))
            bad += 1
            continue
        with open(gpu_ptx_file) as f:
            gpu = normalise(f.read())
        cpu = normalise(art.asm["ptx"])
        h = lambda s: hashlib.sha256(s.encode()).hexdigest()[:16]  # noqa: E731
        same = gpu == cpu
        bad += not same
        gpu_regs = None
        cubin_file = meta_file[:-5] + ".cubin"
        if os.path.exists(cubin_file):  # the GPU JIT's own cubin, read with cuobjdump -res-usage here
            with open(cubin_file, "rb") as f:
                gpu_regs = sass.resource_usage(f.read()).get("REG")
        rows.append((cap["kernel"], specs[0].describe(), "identical" if same else "DIFFERENT", h(gpu), h(cpu),
                     f"{gpu_regs} / {art.resources.registers}"))
    print("| kernel | spec (from the capture) | PTX | sha256 GPU JIT | sha256 CPU replay | registers GPU cubin / CPU replay |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print(f"\n{len(rows) - bad} of {len(rows)} captured compiles replay to identical PTX")
    return 1 if bad or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
