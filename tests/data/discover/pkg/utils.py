import triton
from triton import jit as triton_jit  # noqa: F401

my_jit = triton.jit
