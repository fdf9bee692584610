"""Device probes at import, as libraries write them: Triton's driver for the backend, then torch for the rest."""
import functools
import os

import torch
import triton


@functools.lru_cache(maxsize=None)
def get_backend():
    try:
        return triton.runtime.driver.active.get_current_target().backend
    except Exception:
        return "cpu"


def check_shared_mem(arch=None, i=0):
    return torch.cuda.get_device_properties(i).shared_memory_per_block_optin >= 144 * 1024


def max_shared_mem():
    return triton.runtime.driver.active.utils.get_device_properties(0)["max_shared_mem"]


IS_CUDA = get_backend() == "cuda"
IS_HOPPER = IS_CUDA and torch.cuda.get_device_capability()[0] == 9
SM_COUNT = torch.cuda.get_device_properties(0).multi_processor_count
USE_FAST_PATH = os.environ.get("DEVICELIB_FAST", "1") == "1"
