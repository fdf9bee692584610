"""A kernel jitted by a call, then wrapped again under the same name (the way some projects stack heuristics)."""
import triton
import triton.language as tl


def _scale(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)
    else:
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


_scale = triton.jit(_scale)
_scale = triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})(_scale)
