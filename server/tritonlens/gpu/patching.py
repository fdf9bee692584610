"""Replacing a method of Triton's classes once per process: what `capture` (on a GPU) and `capture_nogpu` (without
one) both do to Triton's launch path. A replacement made by tritonlens carries `MARK`, so installing twice wraps
once."""
from __future__ import annotations

from typing import Any, Callable

MARK = "__tritonlens_capture__"


def wrap_once(owner: Any, name: str, wrap: Callable[[Callable], Callable]) -> None:
    current = getattr(owner, name, None)
    if current is not None and not getattr(current, MARK, False):
        setattr(owner, name, wrap(current))
