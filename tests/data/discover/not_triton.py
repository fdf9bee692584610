import cutlass.cute as cute
import numba
import torch
from numba import jit


@cute.jit
def cute_kernel(a):
    pass


@numba.jit
def numba_kernel(a):
    pass


@jit
def numba_bare(a):
    pass


@torch.jit.script
def scripted(a):
    return a
