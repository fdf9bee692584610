"""A library that is told its device through the environment, and no other way."""
import os

DEVICE = os.environ.get("ENVLIB_DEVICE", "")
if DEVICE not in ("cuda", "hip"):
    raise RuntimeError(f"no device detected (ENVLIB_DEVICE={DEVICE!r}); Unsupported device")
