"""The values a Triton launch passes, as tritonlens writes them into its JSON files (captures, tuning lines,
baselines) and reads them back — exactly, and in strict JSON (no `NaN` / `Infinity` tokens, which `JSON.parse` and
jq reject). The one encoding every writer and reader of those files uses.

A value is written as itself when JSON can say it exactly:

    null, true, false, a finite float, an int of any size, a string of printable characters, an array (a tuple,
    nested tuples too: Triton 3.x takes tuples as arguments), and a `triton.language` dtype as the bare name Triton's
    own specialization data gives it (`"fp16"` for `tl.float16`: what captures always held)

and otherwise as an object of one key that starts with `$`:

    {"$float": "inf"} / {"$float": "-inf"} / {"$float": "nan"}   a non-finite float (a clamp's bound, a -inf max)
    {"$str": [102, 112, 49, 54]}  a string that is a dtype's name ("fp16" passed as a string), or that holds a
                                character a terminal acts on (control, format, a lone surrogate), as its code
                                points: the file stays printable and the string exact
    {"$dtype": "float32"}       a dtype by a name Triton does not print (a hint's `tl.float32`, in a baseline)
    {"$unrecorded": "TypeName"} a value none of the above can say (a function passed as a constexpr, an object):
                                the argument is kept, marked, never dropped; its checks say what that costs

Older files read the same way (the tags are new; a string that was a dtype's name was read as that dtype then, as
now), and Triton's own forms {"dtype": name} and {"constexpr": v} are read too.

Decoded, a value is the Python value Triton was given, in the form specs carry (JSON that travels to the compile
workers): floats, ints and strings as themselves, arrays as lists (the worker makes them tuples), a dtype as
{"dtype": name} (see frontend/hints.dtype_value), an unrecorded value as {"unrecorded": "TypeName"}.
"""
from __future__ import annotations

import math
import re
from typing import Any

MAX_TEXT = 4096  # characters of one string value (the capture reader's bound)
MAX_ITEMS = 256  # elements of one tuple
MAX_DEPTH = 5  # nesting of tuples (the reader's bound before the tags)
_MAX_DIGITS = 4000  # an int beyond this is unrecorded (Python's JSON refuses ints of more than 4300 digits)
_DTYPE_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}\Z")  # fp16, bf16, float32: a `tl` name or Triton's str(dtype)
_FLOATS = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}

# The dtype names triton's `serialize_specialization_data` writes for a `tl.dtype` constexpr (str(dtype)), and that
# its cache preload turns back into `tl.dtype(name)` (triton 3.6 `JITFunction.preload`, `tl.dtype.is_dtype`).
TRITON_DTYPE_NAMES = frozenset({
    "int8", "int16", "int32", "int64", "int1", "uint8", "uint16", "uint32", "uint64", "fp8e4b15", "fp8e4nv",
    "fp8e4b8", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32", "fp64", "void",
})


def unrecorded(type_name: str) -> dict[str, str]:
    return {"$unrecorded": type_name[:128]}


def encode(value: Any, _depth: int = 0) -> Any:
    """A launch value as strict JSON (see the module doc). Never raises: what it cannot say is `$unrecorded`.
    Never calls str() or repr() of an unknown object (a host TensorDescriptor's repr reads its whole base tensor
    from the GPU)."""
    t = type(value)
    if t.__name__ == "constexpr" and hasattr(value, "value"):  # tl.constexpr(v): v is what the kernel sees
        value = value.value
        t = type(value)
    if value is None or t is bool:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        value = int(value)
        return value if value.bit_length() < _MAX_DIGITS * 3 else unrecorded("int")
    if isinstance(value, float):
        value = float(value)
        if math.isfinite(value):
            return value
        return {"$float": "nan" if value != value else ("inf" if value > 0 else "-inf")}
    if isinstance(value, str):
        value = str(value)
        if len(value) > MAX_TEXT:
            return unrecorded("str")
        if value.isprintable() and value not in TRITON_DTYPE_NAMES:
            return value
        return {"$str": [ord(c) for c in value]}
    if isinstance(value, (tuple, list)):
        if _depth >= MAX_DEPTH or len(value) > MAX_ITEMS:
            return unrecorded(t.__name__)
        return [encode(v, _depth + 1) for v in value]
    if isinstance(value, dict) and set(value) == {"dtype"} and _DTYPE_NAME.match(str(value["dtype"])):
        name = value["dtype"]  # a spec's dtype (decoded, or a hint's `tl.float32`)
        return name if name in TRITON_DTYPE_NAMES else {"$dtype": name}
    if isinstance(value, dict) and set(value) == {"unrecorded"}:
        return unrecorded(str(value["unrecorded"]))
    if _is_triton_dtype(value):
        name = str(value)
        if name in TRITON_DTYPE_NAMES:
            return name
    return unrecorded(t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}")


def is_unrecorded_encoded(value: Any) -> bool:
    """Whether `encode` could say nothing of a value (its parts aside)."""
    return isinstance(value, dict) and "$unrecorded" in value


def _is_triton_dtype(value: Any) -> bool:
    t = type(value)
    return t.__name__ == "dtype" and t.__module__.startswith("triton.language")


def decode(value: Any, _depth: int = 0) -> Any:
    """The value `encode` wrote (see the module doc for the form). ValueError, saying why, for anything else:
    capture files are untrusted input."""
    if value is None or isinstance(value, (bool, int, float)):
        return value  # a float is finite in a strict file; non-finite only from a reader that took the tokens
    if isinstance(value, str):
        if len(value) > MAX_TEXT or not value.isprintable():
            raise ValueError("a string value too long or with control characters")
        return {"dtype": value} if value in TRITON_DTYPE_NAMES else value
    if isinstance(value, list):
        if _depth >= MAX_DEPTH or len(value) > MAX_ITEMS:
            raise ValueError(f"a tuple value nested deeper than {MAX_DEPTH} or longer than {MAX_ITEMS}")
        return [decode(v, _depth + 1) for v in value]
    if isinstance(value, dict) and len(value) == 1:
        (tag, body), = value.items()
        if tag == "$float" and body in _FLOATS:
            return _FLOATS[body]
        if tag == "$str" and isinstance(body, list) and len(body) <= MAX_TEXT and all(
                isinstance(c, int) and not isinstance(c, bool) and 0 <= c <= 0x10FFFF for c in body):
            return "".join(map(chr, body))
        if tag in ("$dtype", "dtype") and isinstance(body, str) and _DTYPE_NAME.match(body):
            return {"dtype": body}
        if tag == "$unrecorded" and isinstance(body, str) and len(body) <= 128 and body.isprintable():
            return {"unrecorded": body}
        if tag == "constexpr":
            return decode(body, _depth + 1)
    raise ValueError("not a value tritonlens writes")


def is_unrecorded(value: Any) -> bool:
    """Whether a decoded value (or an element of a decoded tuple) is one the capture could not record."""
    if isinstance(value, list):
        return any(is_unrecorded(v) for v in value)
    return isinstance(value, dict) and set(value) == {"unrecorded"}


def unrecorded_type(value: Any) -> str | None:
    """The type name of the first unrecorded part of a decoded value, None when it is all recorded."""
    if isinstance(value, list):
        return next((t for t in map(unrecorded_type, value) if t is not None), None)
    return value["unrecorded"] if is_unrecorded(value) else None


def same(a: Any, b: Any) -> bool:
    """Whether two decoded values are the same launch value (NaN is NaN; a list and the tuple it stands for agree)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if isinstance(a, bool) != isinstance(b, bool):  # True == 1 in Python; not as a launch value
        return False
    return bool(a == b)


def show(value: Any) -> str:
    """A decoded value as the launch passed it, for a spec's text: `inf`, `-inf`, `nan`, `(1, (2.0, inf))`,
    `tl.fp16`, a string quoted with its control characters escaped (repr)."""
    if isinstance(value, (list, tuple)):
        inner = ", ".join(map(show, value))
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, dict) and set(value) == {"dtype"}:
        return f"tl.{value['dtype']}"
    if is_unrecorded(value):
        return f"<unrecorded {value['unrecorded']}>"
    return repr(value)


def show_stored(value: Any) -> str:
    """`show` of a value as a file holds it (encoded; a baseline written before the tags holds the spec's own form)."""
    try:
        return show(decode(value))
    except ValueError:
        return show(value)
