"""On a GPU machine with one Triton release: each captured spec timed as the installed Triton compiles it, and again
with another release's binary of the same spec (bench/release_cubins.py, compiled on a CPU) swapped into the same
launch — the other release's code measured without installing it.

The swap keeps the installed release's launcher (the argument list is the same: the kernel's parameters and Triton's
two scratch pointers) and replaces the binary, its shared memory and its kernel name. Outputs are not compared: a
binary whose parameters the launcher does not fit faults or fails to load, and is reported.

    PYTHONPATH=server python3 bench/gpu_time_release_cubins.py WORKSPACE FILE.py CUBINS.jsonl [...]
"""
from __future__ import annotations

import base64
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "server"))


def main() -> int:
    import torch
    import triton
    import triton.testing
    from triton.backends.compiler import GPUTarget  # noqa: F401 — the metadata's target type
    from triton.compiler.compiler import make_backend

    from tritonlens.frontend.captures import identity, load_captures
    from tritonlens.gpu.profile import prepare_replay

    root, path, *files = sys.argv[1:]
    caps = {identity(c): c for c in load_captures(root, path)[0]}
    rows = []
    for f in files:
        for line in open(f, encoding="utf-8"):
            rec = json.loads(line)
            cap = caps.get(rec["identity"])
            if cap is None:
                rows.append((rec, None, None, "capture not found"))
                continue
            job = {"path": os.path.abspath(path), "qualname": rec["kernel"], "capture": cap, "workspace_root": root}
            try:
                launch = prepare_replay(job, torch)
                fn = _jit(job)
                device = torch.cuda.current_device()
                if device in fn.device_caches:
                    fn.device_caches[device][0].clear()  # the one kernel of this spec, below
                launch()  # compiled by the installed release
                torch.cuda.synchronize()
                base = triton.testing.do_bench(launch, warmup=25, rep=100, return_mode="median") * 1000
                cache = fn.device_caches[device][0]
                kernel = next(k for k in cache.values() if k.metadata.num_warps == rec.get("num_warps", k.metadata
                                                                                              .num_warps))
                old = (kernel.kernel, kernel.metadata, kernel.packed_metadata, kernel.name)
                kernel.kernel = base64.b64decode(rec["cubin64"])
                kernel.metadata = kernel.metadata._replace(shared=rec["shared"], name=rec["name"])
                kernel.packed_metadata = make_backend(kernel.metadata.target).pack_metadata(kernel.metadata)
                kernel.name = rec["name"]
                kernel.module = kernel.function = kernel._run = None
                launch()
                torch.cuda.synchronize()
                other = triton.testing.do_bench(launch, warmup=25, rep=100, return_mode="median") * 1000
                kernel.kernel, kernel.metadata, kernel.packed_metadata, kernel.name = old
                kernel.module = kernel.function = kernel._run = None
                rows.append((rec, base, other, ""))
                cache.clear()
            except Exception as exc:  # noqa: BLE001 — one spec's failure is reported, the others go on
                rows.append((rec, None, None, f"{type(exc).__name__}: {str(exc)[:200]}"))
    print(f"| kernel | spec | triton {triton.__version__} µs | other | other µs | other / {triton.__version__} | "
          f"spill bytes (other) | note |")
    print("|---|---|---|---|---|---|---|---|")
    for rec, a, b, note in rows:
        ratio = f"{b / a:.2f}" if a and b else ""
        print(f"| {rec['kernel']} | {rec['label']} | {a and round(a, 1)} | {rec['triton']} | {b and round(b, 1)} | "
              f"{ratio} | {rec.get('spill_bytes')} | {note} |")
    print(f"\n{torch.cuda.get_device_name()}; do_bench median, L2 flushed before each run")
    return 0


def _jit(job):
    from tritonlens.compiler.worker import find_jit_function

    # prepare_replay loaded the module under a name of its own: its JITFunction holds the kernel cache
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        if f and os.path.abspath(f) == job["path"]:
            return find_jit_function(mod, job["qualname"])
    raise LookupError("the replayed module is not loaded")


if __name__ == "__main__":
    sys.exit(main())
