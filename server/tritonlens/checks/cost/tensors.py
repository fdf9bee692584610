"""What a captured launch's tensors hold: bytes of a torch dtype's element, bytes a tensor's storage spans."""
from __future__ import annotations

from typing import Any

_DTYPE_BYTES = {"float64": 8, "int64": 8, "uint64": 8, "float32": 4, "int32": 4, "uint32": 4, "float16": 2,
                "bfloat16": 2, "int16": 2, "uint16": 2, "int8": 1, "uint8": 1, "bool": 1}


def elem_bytes(dtype: str) -> float:
    """Bytes of one element of a torch dtype name: float8_e4m3fn and the other 8-bit floats 1, float4 packed 0.5."""
    name = dtype.replace("torch.", "")
    if name in _DTYPE_BYTES:
        return _DTYPE_BYTES[name]
    if name.startswith("float8"):
        return 1
    if name.startswith("float4"):
        return 0.5
    if name.startswith("complex"):
        return 16 if "128" in name else 8
    return 4


def tensor_bytes(t: dict[str, Any]) -> int:
    """Bytes of the storage a captured tensor spans (its shape and strides; a broadcast stride-0 axis spans one)."""
    shape, stride = list(t.get("shape") or []), list(t.get("stride") or [])
    size = elem_bytes(str(t.get("dtype", "float32")))
    if any(int(s) == 0 for s in shape):
        return 0
    return int((1 + sum((int(n) - 1) * abs(int(st)) for n, st in zip(shape, stride))) * size)


def launch_tensors(launch: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The captured tensors of a launch's arguments, by argument name."""
    return {name: a["tensor"] for name, a in (launch.get("args") or {}).items()
            if isinstance(a, dict) and isinstance(a.get("tensor"), dict)}
