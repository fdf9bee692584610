"""The "Profile this kernel" lens. Whether a GPU and ncu are present is the one thing that cannot exist here, so the
lens function takes it as an argument; the kernel report comes from a real CPU compile."""
import os

from tritonlens.lsp.profiling import PROFILE, profile_lens

from conftest import EXAMPLES


def capture(launch=True):
    cap = {"version": 1, "path": "examples/vector_add.py", "kernel": "add_kernel",
           "signature": {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32",
                         "BLOCK_SIZE": "constexpr"},
           "constants": {"BLOCK_SIZE": 1024}, "attrs": {}, "options": {"num_warps": 4, "num_stages": 3}}
    if launch:
        t = {"tensor": {"shape": [4096], "stride": [1], "dtype": "float32"}}
        cap["launch"] = {"grid": [4, 1, 1], "args": {"x_ptr": t, "y_ptr": t, "out_ptr": t,
                                                      "n_elements": {"value": 4096}}}
    return cap


def test_profile_lens_needs_gpu_and_a_replayable_capture(checker):
    report = checker.check_file(os.path.join(EXAMPLES, "vector_add.py"))
    kr = report.kernels[0]
    uri = "file:///x/vector_add.py"
    lens = profile_lens(uri, kr, [capture()], gpu_ready=True)
    assert lens is not None and lens.command.command == PROFILE
    assert lens.command.arguments == [{"uri": uri, "kernel": "add_kernel"}]
    assert lens.range.start.line == kr.kernel.decorator_line - 1
    assert profile_lens(uri, kr, [capture()], gpu_ready=False) is None
    assert profile_lens(uri, kr, [capture(launch=False)], gpu_ready=True) is None
    assert profile_lens(uri, kr, [], gpu_ready=True) is None
