"""The compile stage: a spec in, the compiler's artefacts out.

Takes a kernel, its `Spec` and the run's device for its target (device/run.py); gives `Artifacts` (TTIR, TTGIR,
LLIR, PTX or AMDGCN, cubin and SASS, resource usage, Triton's remarks, compile time) with their analysis (the checks'
metrics and findings), or a structured compile error. `pool` keeps persistent worker processes
(`python -m tritonlens.compiler.worker`) with time-outs, a memory bound, crash restarts and cancellation; `worker`
imports the user's module (the front end's slice), calls `triton.compile` and runs the analysis — the one place it
runs, for a cached compile too; `cache` keeps artefacts, and each one's last analysis, on disk so an unchanged
kernel is not compiled (or analysed) again.
"""
