import triton.language as tl

from . import helpers
from .utils import my_jit, triton_jit


def _square(x):
    return _cube(x) // x


def _cube(x):
    return x * x * x


@triton_jit
def via_from_import(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr + tl.arange(0, BLOCK), _square(helpers.twice(x)))


@my_jit
def via_assignment(x_ptr):
    pass
