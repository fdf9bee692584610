"""Which GPU this library runs on, decided once at import: Triton's driver for the backend, then torch."""
import torch
import triton

BACKEND = triton.runtime.driver.active.get_current_target().backend

if BACKEND == "cuda":
    NAME = torch.cuda.get_device_name(0)
    CAPABILITY = torch.cuda.get_device_capability()
    PROPS = torch.cuda.get_device_properties(0)
    IS_HOPPER = CAPABILITY[0] == 9
    IS_TMA_SUPPORTED = CAPABILITY >= (9, 0) and "H" in NAME
    SHARED_MEM = PROPS.shared_memory_per_block_optin
    NUM_SMS = PROPS.multi_processor_count
else:
    NAME, CAPABILITY, IS_HOPPER, IS_TMA_SUPPORTED, SHARED_MEM, NUM_SMS = "cpu", (0, 0), False, False, 0, 1


def check_shared_mem(needed: int = 200 * 1024) -> bool:
    return SHARED_MEM >= needed


BLOCK_LIST = [64, 128] if check_shared_mem() else [16, 32]
