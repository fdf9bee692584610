"""Every way a Triton kernel gets made (read by tests; never run)."""
import triton
import triton as tr
import triton.language as tl
from triton import jit
from triton import jit as J
from triton import autotune, heuristics, Config


def libentry():
    return lambda f: f


@triton.jit
def plain(x_ptr, n, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 0.0)


@triton.jit(do_not_specialize=["n", 2])
def no_spec(x_ptr, n, m, BLOCK: tl.constexpr = 128):
    pass


@jit
def bare(x_ptr, BLOCK: triton.language.constexpr):
    pass


@J
def aliased(x_ptr):
    pass


@tr.jit
def aliased_module(x_ptr):
    pass


# tritonlens: BLOCK_N=64
@libentry()
@autotune(configs=[Config({"BLOCK_N": 32}, num_warps=4), Config({"BLOCK_N": 64}, num_warps=8, num_stages=2)],
          key=["n"])
@heuristics({"EVEN": lambda args: args["n"] % args["BLOCK_N"] == 0})
@triton.jit
def stacked(x_ptr, n, BLOCK_N: tl.constexpr, EVEN: tl.constexpr):
    pass


class Ops:
    @staticmethod
    @triton.jit
    def kernel(x_ptr, BLOCK: tl.constexpr):
        pass


def _f(x_ptr, BLOCK: tl.constexpr):
    pass


def _g(x_ptr, n, BLOCK: tl.constexpr):
    pass


def _h(x_ptr, BLOCK: tl.constexpr):
    pass


k_call = triton.jit(_f)
k_heur = triton.heuristics({"BLOCK": lambda args: 256})(triton.jit(_g))
k_tuned = triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=[])(triton.jit(_h))
