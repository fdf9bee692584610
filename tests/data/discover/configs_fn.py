import torch
import triton
import triton.language as tl


def is_hip():
    return triton.runtime.driver.active.get_current_target().backend == "hip"


def get_configs():
    if is_hip():
        return [triton.Config({"BLOCK": 64}, num_warps=4)]
    major, _ = torch.cuda.get_device_capability()
    stages = 4 if major >= 9 else 2
    return [triton.Config({"BLOCK": b}, num_warps=w, num_stages=stages) for b in [64, 128] for w in (4, 8)]


@triton.autotune(configs=get_configs(), key=["n"])
@triton.jit
def tuned(x_ptr, n, BLOCK: tl.constexpr):
    pass


@triton.autotune(configs=load_from_disk(), key=["n"])
@triton.jit
def unknowable(x_ptr, n, BLOCK: tl.constexpr):
    pass


def spin():
    while True:
        pass


@triton.autotune(configs=spin(), key=["n"])
@triton.jit
def endless(x_ptr, n, BLOCK: tl.constexpr):
    pass


@triton.autotune(configs=[triton.Config({"BLOCK": ().__class__})], key=["n"])
@triton.jit
def escape(x_ptr, n, BLOCK: tl.constexpr):
    pass
