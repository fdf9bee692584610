"""A library that asks torch alone about its device, at import."""
import torch

if not torch.cuda.is_available() or torch.cuda.device_count() < 1:
    raise RuntimeError("this library needs a CUDA device")
if torch.version.cuda is None:
    raise RuntimeError("this library needs a CUDA build of torch")
torch.cuda.set_device(0)
with torch.cuda.device(torch.cuda.current_device()):
    MAJOR, MINOR = torch.cuda.get_device_capability()
    FREE, TOTAL = torch.cuda.mem_get_info()
SM_ARCH = f"sm_{MAJOR}{MINOR}"
assert SM_ARCH in torch.cuda.get_arch_list(), torch.cuda.get_arch_list()
BLOCK = 1024 if TOTAL > 40 * 2**30 and MAJOR >= 8 else 256
