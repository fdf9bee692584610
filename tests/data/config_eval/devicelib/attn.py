import torch
import triton
import triton.language as tl

from .utils import IS_HOPPER, SM_COUNT, USE_FAST_PATH, check_shared_mem, max_shared_mem


def local_check_shared_mem(arch=None, i=0):
    return torch.cuda.get_device_properties(i).shared_memory_per_block_optin >= 144 * 1024


BKV_LIST = [32, 64] if local_check_shared_mem() else [16, 32]
IS_SM90 = torch.cuda.get_device_capability()[0] == 9

if IS_SM90:
    STAGES = 4
else:
    STAGES = 2

WIDE_CONFIGS = []
for b in (128, 256) if max_shared_mem() > 200 * 1024 else (64,):
    WIDE_CONFIGS.append(triton.Config({"BKV": b}, num_warps=8, num_stages=STAGES))

try:
    MAX_WARPS = 8 if check_shared_mem() and USE_FAST_PATH else 4
except RuntimeError:
    MAX_WARPS = 4


@triton.autotune(configs=[triton.Config({"BKV": b}, num_warps=w, num_stages=STAGES) for b in BKV_LIST
                          for w in (2, 4)], key=["N"])
@triton.jit
def scale(x_ptr, N, BKV: tl.constexpr):
    offs = tl.program_id(0) * BKV + tl.arange(0, BKV)
    mask = offs < N
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


@triton.autotune(configs=WIDE_CONFIGS, key=["N"])
@triton.jit
def wide(x_ptr, N, BKV: tl.constexpr):
    offs = tl.program_id(0) * BKV + tl.arange(0, BKV)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < N), mask=offs < N)


@triton.autotune(configs=[triton.Config({"BKV": 64}, num_warps=MAX_WARPS if IS_HOPPER else 2)], key=["N"])
@triton.jit
def imported_flags(x_ptr, N, BKV: tl.constexpr):
    offs = tl.program_id(0) * BKV + tl.arange(0, BKV)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < N), mask=offs < N)


@triton.autotune(configs=[triton.Config({"BKV": 64}, num_warps=4 if SM_COUNT >= 132 else 2)], key=["N"])
@triton.jit
def by_sms(x_ptr, N, BKV: tl.constexpr):
    offs = tl.program_id(0) * BKV + tl.arange(0, BKV)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < N), mask=offs < N)
