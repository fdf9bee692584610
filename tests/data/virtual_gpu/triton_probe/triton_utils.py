"""Triton only where it can run, as vLLM decides it: the packages must be found, and exactly one backend's driver
active (Triton's CUDA driver asks torch); otherwise `triton.jit` is a placeholder that returns the function
unchanged."""
import types
from importlib.util import find_spec

# asked before anything imports them (a platform probe looks for torch the same way)
HAS_TRITON = find_spec("torch") is not None and find_spec("triton") is not None
if HAS_TRITON:
    from triton.backends import backends

    active = [b.driver for name, b in backends.items() if name != "cpu" and b.driver and b.driver.is_active()]
    HAS_TRITON = len(active) == 1

if HAS_TRITON:
    import triton
    import triton.language as tl
else:
    triton = types.SimpleNamespace(jit=lambda fn=None, **_: fn if fn is not None else (lambda f: f))
    tl = types.SimpleNamespace(constexpr=lambda v: v)
