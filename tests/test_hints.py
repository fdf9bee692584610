"""Hint comments: `# tritonlens: x_ptr=*fp16, n=i32%16, BLOCK=1024, num_warps=4`."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "server"))

from tritonlens.frontend.hints import HintValue, hint_lines_above, parse_hint, parse_value  # noqa: E402

PARAMS = ["x_ptr", "n", "BLOCK", "MODE"]
CONSTEXPRS = ["BLOCK", "MODE"]


def test_values_of_every_kind():
    h = parse_hint('# tritonlens: x_ptr=*fp16, n=i32%16, BLOCK=1024, MODE="a,b", num_warps=4, num_stages=3',
                   5, 1, PARAMS, CONSTEXPRS)
    assert h.errors == []
    assert h.values == {"x_ptr": "*fp16", "n": "i32%16", "BLOCK": "1024", "MODE": '"a,b"', "num_warps": "4",
                        "num_stages": "3"}


@pytest.mark.parametrize("raw, expected", [
    ("*fp16", HintValue("pointer", "fp16", 16)),
    ("*bf16%1", HintValue("pointer", "bf16", 1)),
    ("*fp32%16", HintValue("pointer", "fp32", 16)),
    ("i32", HintValue("scalar", "i32", None)),
    ("i64%16", HintValue("scalar", "i64", 16)),
    ("u32", HintValue("scalar", "u32", None)),
    ("fp32", HintValue("scalar", "fp32", None)),
    ("1", HintValue("literal", value=1)),
    ("None", HintValue("literal", value=None)),
])
def test_runtime_argument_values(raw, expected):
    assert parse_value(raw) == expected


def test_constexpr_values_are_python_literals():
    assert parse_value("True", is_constexpr=True).value is True
    assert parse_value("'leaky'", is_constexpr=True).value == "leaky"
    assert parse_value("0.5", is_constexpr=True).value == 0.5
    with pytest.raises(ValueError):
        parse_value("i32", is_constexpr=True)


def test_errors_point_at_the_bad_token_and_keep_the_rest():
    text = "    # tritonlens: x_ptr=*fq16, nn=i32, BLOCK=12 34, n=i32%16"
    h = parse_hint(text[4:], 3, 5, PARAMS, CONSTEXPRS)
    assert h.values == {"n": "i32%16"}
    assert len(h.errors) == 3
    tokens = [text[a - 1:b - 1] for a, b in h.error_spans]
    assert tokens == ["*fq16", "nn", "12 34"]
    assert "fq16" in h.errors[0] and "unknown parameter `nn`" in h.errors[1] and "literal" in h.errors[2]


def test_bad_divisibility_and_missing_equals():
    h = parse_hint("# tritonlens: n=i32%8, BLOCK", 1, 1, PARAMS, CONSTEXPRS)
    assert len(h.errors) == 2 and "%1 or %16" in h.errors[0] and "name=value" in h.errors[1]


def test_hint_lines_above_stop_at_code():
    lines = [
        "x = 1",
        "# tritonlens: BLOCK=64",
        "# unrelated note",
        "# tritonlens: BLOCK=128, num_warps=8",
        "@triton.jit",
        "def k(x_ptr, n, BLOCK: tl.constexpr, MODE: tl.constexpr): pass",
    ]
    hints = hint_lines_above(lines, 5, PARAMS, CONSTEXPRS)
    assert [(h.line, h.values) for h in hints] == [(2, {"BLOCK": "64"}), (4, {"BLOCK": "128", "num_warps": "8"})]
    lines.insert(1, "y = 2")
    assert [h.line for h in hint_lines_above(["x = 1", "", "# tritonlens: BLOCK=1", "@jit"], 4)] == [3]
    assert hint_lines_above(["# tritonlens: BLOCK=1", "", "@jit"], 3) == []


def test_dtype_constexprs():
    from tritonlens.frontend.hints import parse_hint

    h = parse_hint("# tritonlens: OUT=tl.bfloat16, ACC=triton.language.float32, BAD=tl.float17", 3,
                   params=["OUT", "ACC", "BAD"], constexprs=["OUT", "ACC", "BAD"])
    assert set(h.values) == {"OUT", "ACC"}
    assert len(h.errors) == 1 and "unknown triton dtype" in h.errors[0]
