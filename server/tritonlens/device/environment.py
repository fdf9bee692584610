"""What code of the checked files sees of the checking process's environment — the compile workers' imports and
the config evaluator alike: a few variables that locate Python, its packages and the compiler tools, plus what the
user names in `tritonlens.env`. Never the rest (tokens, keys, CI secrets)."""
from __future__ import annotations

import os

# Variables of the checking process a worker keeps: what locates Python, its packages and the compiler tools, and
# the locale. Everything else (tokens, keys, CI secrets) stays out unless the user names it (tritonlens.env).
KEEP_ENV = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "VIRTUAL_ENV", "CONDA_PREFIX", "LD_LIBRARY_PATH",
            "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "ROCM_PATH", "HIP_VISIBLE_DEVICES", "TRITONLENS_NO_GPU",
            "TRITONLENS_DEBUG")
# Triton's own knobs (which ptxas, which backend, debug dumps) are configuration, not secrets; its home and caches
# are the worker's own.
KEEP_PREFIXES = ("TRITON_",)
OWN_TRITON = ("TRITON_HOME", "TRITON_CACHE_DIR", "TRITON_DUMP_DIR", "TRITON_OVERRIDE_DIR")


def passed_environ(extra: dict[str, str | None] | None = None) -> dict[str, str]:
    """What code of the checked files sees of this process's environment: the kept variables and `extra`
    (tritonlens.env: a value, or None for this process's own)."""
    env = {k: v for k, v in os.environ.items()
           if (k in KEEP_ENV or k.startswith(KEEP_PREFIXES)) and k not in OWN_TRITON}
    env.update(named_env(extra))
    return env


def named_env(extra: dict[str, str | None] | None) -> dict[str, str]:
    """tritonlens.env with its None values (pass this process's own) resolved; unset ones left out."""
    out = {}
    for key, value in (extra or {}).items():
        value = os.environ.get(key) if value is None else value
        if value is not None:
            out[str(key)] = str(value)
    return out
