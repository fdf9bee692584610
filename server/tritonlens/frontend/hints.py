"""`# tritonlens: x_ptr=*fp16, n_elements=i32%16, BLOCK_SIZE=1024, num_warps=4` — one spec per comment line.

Pure text parsing: no triton import. Errors never raise; they land in `HintLine.errors` with the span of the
bad token in `HintLine.error_spans` so a presenter can underline it.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any, Iterable

from ..model import HintLine
from ..source import split_top_level

HINT_MARKER = "tritonlens:"

# Options `triton.compile` accepts for cuda or hip (CUDAOptions / HIPOptions fields a user would set).
OPTION_NAMES = frozenset({
    "num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "enable_reflect_ftz",
    "launch_cooperative_grid", "launch_pdl", "default_dot_input_precision", "max_num_imprecise_acc_default",
    "debug", "sanitize_overflow", "waves_per_eu", "matrix_instr_nonkdim", "kpack", "allow_flush_denorm",
    "schedule_hint", "ptx_version",
})

SCALAR_TYPES = frozenset({
    "i1", "i8", "i16", "i32", "i64", "u1", "u8", "u16", "u32", "u64",
    "fp8e4nv", "fp8e5", "fp8e4b15", "fp8e4b8", "fp8e5b16", "fp16", "bf16", "fp32", "fp64", "tf32",
})
INT_TYPES = frozenset(t for t in SCALAR_TYPES if t[0] in "iu")

_TYPE_RE = re.compile(r"^(\*)?k?([a-z]+[0-9a-z]*)(?:%([0-9]+))?$")


@dataclass(frozen=True)
class HintValue:
    """What one `name=value` of a hint means.

    kind: "pointer" (`*fp16`, `*fp16%1`), "scalar" (`i32`, `i32%16`, `fp32`), "literal" (a Python literal:
    a constexpr value, or a runtime int/float/None the way a launch would pass it), "option" (num_warps=...).
    """

    kind: str
    type: str | None = None  # "fp16" for `*fp16`, "i32" for `i32%16`
    divisibility: int | None = None  # 16 or None (pointers default to 16)
    value: Any = None  # for literal and option


# A constexpr may be a triton dtype (`X_dtype=tl.float32`). Specs are JSON, so it travels as {"dtype": "float32"};
# the compile worker turns that back into `triton.language.float32`.
TRITON_DTYPES = {"int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float8e4nv",
                 "float8e5", "float8e4b15", "float8e4b8", "float8e5b16", "float16", "bfloat16", "float32", "float64"}
_DTYPE_RE = re.compile(r"(?:tl|triton\.language)\.(\w+)")


def dtype_value(name: str) -> dict[str, str]:
    return {"dtype": name}


def parse_value(raw: str, *, is_option: bool = False, is_constexpr: bool = False) -> HintValue:
    """Parse one value; raises ValueError with a user-facing message (callers turn it into an error)."""
    text = raw.strip()
    if not text:
        raise ValueError("empty value")
    if is_option:
        try:
            return HintValue("option", value=ast.literal_eval(text))
        except (ValueError, SyntaxError):
            raise ValueError(f"`{text}` is not a Python literal") from None
    if not is_constexpr:
        m = _TYPE_RE.match(text)
        if m and (m.group(1) or m.group(2) in SCALAR_TYPES):
            star, ty, div = m.group(1), m.group(2), m.group(3)
            if ty not in SCALAR_TYPES:
                raise ValueError(f"unknown element type `{ty}` in `{text}` (expected fp16, bf16, fp32, i32, ...)")
            if div is not None and int(div) not in (1, 16):
                raise ValueError(f"divisibility in `{text}` must be %1 or %16 (Triton only specializes on 16)")
            if star:
                return HintValue("pointer", type=ty, divisibility=16 if div is None else int(div))
            if div is not None and ty not in INT_TYPES:
                raise ValueError(f"`{text}`: only integer scalars take a divisibility")
            return HintValue("scalar", type=ty, divisibility=int(div) if div and int(div) > 1 else None)
        if text.startswith("*") or re.fullmatch(r"[a-z]+[0-9]+(%\S*)?", text):
            raise ValueError(f"bad type `{text}`: expected *T, *T%1, *T%16, i32, i32%16, fp32, ... ")
    if is_constexpr and (m := _DTYPE_RE.fullmatch(text)):
        if m.group(1) not in TRITON_DTYPES:
            raise ValueError(f"`{text}`: unknown triton dtype (expected tl.float16, tl.bfloat16, tl.float32, ...)")
        return HintValue("literal", value=dtype_value(m.group(1)))
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        what = "a Python literal or a tl dtype" if is_constexpr else "a type (*fp16, i32%16) or a Python literal"
        raise ValueError(f"`{text}` is not {what}") from None
    return HintValue("literal", value=value)


def parse_hint(comment: str, line: int, col: int = 1, params: Iterable[str] | None = None,
               constexprs: Iterable[str] | None = None) -> HintLine:
    """Parse one comment line (`# tritonlens: a=1, ...`, or just the part after the marker).

    `col` is the 1-based column where `comment` starts in the source line; error spans are 1-based,
    end-exclusive columns in that line. `params` (all parameter names) enables unknown-name errors,
    `constexprs` tells which names take Python literals rather than types.
    """
    hint = HintLine(line=line, col=col, text=comment.strip())
    at = comment.find(HINT_MARKER)
    body_offset = at + len(HINT_MARKER) if at >= 0 else 0
    body = comment[body_offset:]
    known = list(params) if params is not None else None
    cexpr = set(constexprs or ())
    for item, off in split_top_level(body):
        lead = len(item) - len(item.lstrip())
        start = col + body_offset + off + lead
        stripped = item.strip()
        end = start + len(stripped)
        name, eq, raw = stripped.partition("=")
        name = name.strip()
        if not eq or not name:
            _error(hint, f"`{stripped}`: expected name=value", start, end)
            continue
        if not name.isidentifier():
            _error(hint, f"`{name}` is not a parameter name", start, start + len(name))
            continue
        if name in hint.values:
            _error(hint, f"`{name}` is given twice", start, start + len(name))
            continue
        is_option = name in OPTION_NAMES and (known is None or name not in known)
        if known is not None and not is_option and name not in known:
            _error(hint, f"unknown parameter `{name}` (the kernel takes {', '.join(known) or 'no parameters'})",
                   start, start + len(name))
            continue
        value_start = start + stripped.index("=") + 1
        value_start += len(raw) - len(raw.lstrip())
        try:
            parse_value(raw, is_option=is_option, is_constexpr=name in cexpr)
        except ValueError as exc:
            _error(hint, f"{name}: {exc}", value_start, value_start + len(raw.strip()))
            continue
        hint.values[name] = raw.strip()
    return hint


def _error(hint: HintLine, message: str, start: int, end: int) -> None:
    hint.errors.append(message)
    hint.error_spans.append((start, max(end, start + 1)))


def hint_lines_above(lines: list[str], first_line: int, params: Iterable[str] | None = None,
                     constexprs: Iterable[str] | None = None) -> list[HintLine]:
    """Hint comments among the consecutive comment lines directly above 1-based `first_line`."""
    found: list[HintLine] = []
    i = first_line - 2
    params = list(params) if params is not None else None
    while i >= 0:
        stripped = lines[i].strip()
        if not stripped.startswith("#"):
            break
        if HINT_MARKER in stripped and stripped.lstrip("#").strip().startswith(HINT_MARKER):
            col = lines[i].index("#") + 1
            found.append(parse_hint(lines[i][col - 1:], i + 1, col, params, constexprs))
        i -= 1
    found.reverse()
    return found
