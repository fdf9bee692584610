"""The compile stage: a spec in, the compiler's artefacts out.

Takes a kernel, its `Spec` and a target; gives `Artifacts` (TTIR, TTGIR, LLIR, PTX or AMDGCN, cubin and SASS,
resource usage, Triton's remarks, compile time) or a structured compile error. `pool` keeps persistent worker
processes (`python -m tritonlens.compiler.worker`) with time-outs, a memory bound, crash restarts and cancellation;
`worker` imports the user's module (the front end's slice) and calls `triton.compile`; `cache` keeps artefacts on
disk so an unchanged kernel is not compiled again.
"""
