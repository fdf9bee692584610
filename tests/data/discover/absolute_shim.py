from pkg.utils import triton_jit


@triton_jit
def via_absolute(p):
    pass
