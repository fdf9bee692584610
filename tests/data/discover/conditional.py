import triton
import triton.language as tl

try:
    import triton_lang_extension as tle
    HAS_TLE = True
except ImportError:
    HAS_TLE = False

if HAS_TLE:
    def _helper(x):
        return tle.fast_exp(x)

    @triton.jit
    def fast_kernel(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, _helper(offs))
else:
    def _helper(x):
        return x

    @triton.jit
    def fast_kernel(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, _helper(offs))

if triton.__version__ >= "3.0":
    @triton.jit
    def k3(x_ptr):
        tl.store(x_ptr, 3)
elif triton.__version__ >= "2.0":
    @triton.jit
    def k3(x_ptr):
        tl.store(x_ptr, 2)

try:
    from fast_ops import fused
except ImportError:
    if True:
        @triton.jit
        def fused(x_ptr):
            tl.store(x_ptr, 0)


def not_module_level():
    @triton.jit
    def inner(x_ptr):
        tl.store(x_ptr, 0)
    return inner


if __name__ == "__main__":
    @triton.jit
    def in_main(x_ptr):
        tl.store(x_ptr, 0)
