"""Re-exports triton the way projects that run without it do (imported under a guard)."""
from importlib.util import find_spec

HAS_TRITON = find_spec("triton") is not None

if HAS_TRITON:
    import triton
    import triton.language as tl
else:
    triton = None
    tl = None
