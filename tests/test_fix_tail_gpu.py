"""On a GPU: the full-block fix of the unaligned vector add computes the same sums and is no slower. Apart from
tests/test_fix_tail.py so that a GPU machine without the language-server test client collects it."""
import os

import pytest

from tritonlens.device.targets import has_local_gpu
from tritonlens.fixes import tail as fix_tail

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
with open(os.path.join(REPO, "examples", "bad", "vector_add_unaligned.py"), encoding="utf-8") as fh:
    VECTOR_ADD = fh.read()


@pytest.mark.gpu
@pytest.mark.skipif(not has_local_gpu(), reason="needs a local NVIDIA GPU")
def test_on_a_gpu_the_full_block_path_computes_the_same_and_is_not_slower(tmp_path):
    """The example and its fixed copy launched on the GPU with a length that is not a multiple of 16: the same sums,
    element for element, and the fixed kernel (128-bit accesses on every block but the last) no slower."""
    import importlib.util

    import torch
    import triton
    from triton.testing import do_bench

    path = tmp_path / "add.py"
    path.write_text(VECTOR_ADD)
    p = fix_tail.plan(VECTOR_ADD, 9, 13)
    fixed_path = tmp_path / "add_fixed.py"
    fixed_path.write_text(fix_tail.apply_plan(VECTOR_ADD, p)[1])

    def kernel(file, name):
        spec = importlib.util.spec_from_file_location(name, file)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod.add_kernel

    n = (1 << 24) + 3
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    times = {}
    for label, k in (("original", kernel(path, "add_original")), ("fixed", kernel(fixed_path, "add_fixed"))):
        out = torch.empty_like(x)
        launch = lambda: k[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)  # noqa: E731
        launch()
        torch.cuda.synchronize()
        assert torch.equal(out, x + y), label
        times[label] = do_bench(launch)
    print(f"vector add, n = {n}: {times}")
    assert times["fixed"] <= times["original"] * 1.1, times
