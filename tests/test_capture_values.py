"""Every value a launch can pass is recorded and read back exactly (gpu/capture_record, frontend/captures,
launch_values): non-finite floats as runtime scalars and as constexprs, integers past int64, tuples and nested tuples,
dtypes, strings with any characters — each through a real `tritonlens capture --no-gpu -- python driver.py` of a small
kernel launched with it, and then `check`, which compiles that kernel with the value as Triton specialized it. Capture
files stay strict JSON; a value nothing can say is marked in the record and said by SRC003; old files still load.
Nothing is mocked: torch CPU tensors and the real Triton, whose launch path --no-gpu replaces.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from conftest import require_module, evidence

from tritonlens.device.targets import has_local_gpu
from tritonlens.frontend.captures import load_captures, load_tunings
from tritonlens.pipeline import Checker
from tritonlens.settings import Settings

torch = require_module("torch", "the drivers make torch CPU tensors (pip install -e '.[test]')")

KERNELS = '''
import triton, triton.language as tl


@triton.jit
def clamp_rt(x_ptr, out_ptr, n, lo, hi, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, tl.minimum(tl.maximum(x, lo), hi), mask=offs < n)


@triton.jit
def clamp_ce(x_ptr, out_ptr, n, HI: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, tl.minimum(x, HI), mask=offs < n)


@triton.jit
def clamp_limits(x_ptr, out_ptr, n, dt_limit, LIMITS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    x = tl.minimum(tl.maximum(x, dt_limit[0]), dt_limit[1])
    x = tl.minimum(tl.maximum(x, LIMITS[0][0]), LIMITS[1][1])
    tl.store(out_ptr + offs, x, mask=offs < n)


@triton.jit
def cast_to(x_ptr, out_ptr, n, OUT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x.to(OUT).to(tl.float32), mask=offs < n)


@triton.jit
def by_mode(x_ptr, out_ptr, n, MODE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if MODE == "relu\\x1b\\n":
        x = tl.maximum(x, 0.0)
    tl.store(out_ptr + offs, x, mask=offs < n)


@triton.jit
def wide(x_ptr, out_ptr, n, seed, BIG: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x + (seed % 7).to(tl.float32) + (BIG % 5), mask=offs < n)


@triton.jit
def relu(x):
    return tl.maximum(x, 0.0)


@triton.jit
def apply(x_ptr, out_ptr, n, ACT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, ACT(x), mask=offs < n)
'''

PRELUDE = "import torch, triton.language as tl, kern\nx = torch.rand(1000); o = torch.empty_like(x)\n"


@pytest.fixture(scope="module")
def checker():
    with Checker(Settings(target="cuda:90", max_workers=1)) as c:
        yield c


def _strict(text: str):
    """JSON as `JSON.parse` and jq read it: NaN and Infinity are no tokens."""
    def refuse(token):
        raise ValueError(f"not strict JSON: {token}")

    return json.loads(text, parse_constant=refuse)


def _capture(tmp_path, launches: str, prelude: str = PRELUDE, flags: tuple[str, ...] = ("--no-gpu",)):
    """`tritonlens capture --no-gpu -- python driver.py` in a workspace holding kern.py; the raw capture lines."""
    (tmp_path / "kern.py").write_text(KERNELS)
    (tmp_path / "driver.py").write_text(prelude + launches)
    proc = subprocess.run([sys.executable, "-m", "tritonlens", "capture", *flags, "--", sys.executable,
                           "driver.py"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "could not record" not in proc.stderr, proc.stderr
    text = (tmp_path / ".tritonlens" / "captures.jsonl").read_text()
    assert text.isascii()  # every character a terminal could act on is escaped or tagged
    return [_strict(line) for line in text.splitlines() if line.strip()]


def _check(checker, tmp_path, kernel: str):
    report = checker.check_file(str(tmp_path / "kern.py"))
    (kr,) = [k for k in report.kernels if k.kernel.name == kernel]
    return kr


def _compiled(kr) -> dict[str, str]:
    """describe() -> TTIR of each spec compiled, every one of them compiled without an error."""
    assert kr.compiled and all(cs.artifacts is not None and cs.artifacts.ok for cs in kr.compiled), \
        [(cs.spec.describe(), cs.artifacts and cs.artifacts.error) for cs in kr.compiled]
    return {cs.spec.describe(): cs.artifacts.asm["ttir"] for cs in kr.compiled}


def _launch_values(tmp_path, kernel: str, arg: str) -> list:
    caps, problems = load_captures(str(tmp_path), str(tmp_path / "kern.py"))
    assert not problems
    return [c["launch"]["args"][arg]["value"] for c in caps if c["kernel"] == kernel]


def test_a_non_finite_runtime_scalar_is_recorded_and_its_kernel_checked(tmp_path, checker):
    lines = _capture(tmp_path, 'kern.clamp_rt[(4,)](x, o, 1000, float("-inf"), float("inf"), BLOCK=256)\n'
                               'kern.clamp_rt[(4,)](x, o, 1000, 0.0, float("nan"), BLOCK=256)\n')
    (rec,) = [r for r in lines if r.get("record", "compile") == "compile"]  # one compile: both are fp32 scalars
    assert rec["launch"]["args"]["hi"] == {"value": {"$float": "inf"}}
    assert rec["signature"]["lo"] == rec["signature"]["hi"] == "fp32"
    caps, _ = load_captures(str(tmp_path), str(tmp_path / "kern.py"))
    launched = sorted((c["launch"]["args"]["lo"]["value"], c["launch"]["args"]["hi"]["value"])
                      for cap in caps for c in cap["launch_counts"])
    assert launched[0] == (-math.inf, math.inf) and launched[1][0] == 0.0 and math.isnan(launched[1][1])
    kr = _check(checker, tmp_path, "clamp_rt")
    assert list(_compiled(kr)) == ["cuda:90, num_warps=4, num_stages=3, BLOCK=256, n=i32"]
    assert kr.compiled[0].spec.label == "capture 1"


def test_a_non_finite_constexpr_compiles_as_triton_specializes_it(tmp_path, checker):
    lines = _capture(tmp_path, "".join(f'kern.clamp_ce[(4,)](x, o, 1000, float("{v}"), BLOCK=256)\n'
                                       for v in ("inf", "-inf", "nan")))
    assert [r["constants"]["HI"] for r in lines if r.get("record", "compile") == "compile"] == \
        [{"$float": "inf"}, {"$float": "-inf"}, {"$float": "nan"}]
    ttir = _compiled(_check(checker, tmp_path, "clamp_ce"))
    base = "cuda:90, num_warps=4, num_stages=3, HI={}, BLOCK=256, n=i32"
    assert set(ttir) == {base.format(v) for v in ("inf", "-inf", "nan")}
    assert "dense<0x7F800000>" in ttir[base.format("inf")]  # the constant Triton folds inf into
    assert "dense<0xFF800000>" in ttir[base.format("-inf")]
    assert "0x7F800000" not in ttir[base.format("nan")]  # min(x, nan) is x: folded away, no inf left


def test_integers_past_int64_are_recorded_and_read_back(tmp_path, checker):
    lines = _capture(tmp_path, "kern.wide[(4,)](x, o, 1000, 2**63 + 5, 2**64 + 3, BLOCK=256)\n")
    (rec,) = [r for r in lines if r.get("record", "compile") == "compile"]
    assert rec["constants"]["BIG"] == 2**64 + 3 and rec["signature"]["seed"] == "u64"
    assert _launch_values(tmp_path, "wide", "seed") == [2**63 + 5]
    ttir = _compiled(_check(checker, tmp_path, "wide"))
    assert list(ttir) == [f"cuda:90, num_warps=4, num_stages=3, BIG={2**64 + 3}, BLOCK=256, n=i32, seed=u64"]


def test_tuples_and_nested_tuples_with_inf_in_them(tmp_path, checker):
    # the state-space-model clamp: dt_limit=(0.0, inf) as a runtime tuple, and a nested constexpr tuple
    lines = _capture(tmp_path, 'kern.clamp_limits[(4,)](x, o, 1000, (0.0, float("inf")), '
                               '((float("-inf"), 1), (2, float("inf"))), BLOCK=256)\n')
    (rec,) = [r for r in lines if r.get("record", "compile") == "compile"]
    assert rec["constants"]["LIMITS"] == [[{"$float": "-inf"}, 1], [2, {"$float": "inf"}]]
    assert _launch_values(tmp_path, "clamp_limits", "dt_limit") == [[0.0, math.inf]]
    ttir = _compiled(_check(checker, tmp_path, "clamp_limits"))
    assert list(ttir) == ["cuda:90, num_warps=4, num_stages=3, LIMITS=((-inf, 1), (2, inf)), BLOCK=256, n=i32"]


def test_dtype_constexprs_compile_as_the_dtype_they_name(tmp_path, checker):
    lines = _capture(tmp_path, "kern.cast_to[(4,)](x, o, 1000, tl.float16, BLOCK=256)\n"
                               "kern.cast_to[(4,)](x, o, 1000, tl.bfloat16, BLOCK=256)\n")
    assert [r["constants"]["OUT"] for r in lines if r.get("record", "compile") == "compile"] == \
        ["fp16", "bf16"]  # Triton's own names for them, as its specialization data gives them
    ttir = _compiled(_check(checker, tmp_path, "cast_to"))
    fp16, bf16 = (f"cuda:90, num_warps=4, num_stages=3, OUT=tl.{t}, BLOCK=256, n=i32" for t in ("fp16", "bf16"))
    assert "tensor<256xf16>" in ttir[fp16] and "tensor<256xbf16>" in ttir[bf16]


def test_strings_with_any_characters_are_kept_exactly(tmp_path, checker):
    # a string with control characters (the kernel compares it) and one that reads like a dtype's name
    lines = _capture(tmp_path, 'kern.by_mode[(4,)](x, o, 1000, "relu\\x1b\\n", BLOCK=256)\n'
                               'kern.by_mode[(4,)](x, o, 1000, "fp16", BLOCK=256)\n')
    assert [r["constants"]["MODE"] for r in lines if r.get("record", "compile") == "compile"] == \
        [{"$str": [ord(c) for c in "relu\x1b\n"]}, {"$str": [ord(c) for c in "fp16"]}]
    ttir = _compiled(_check(checker, tmp_path, "by_mode"))
    relu = "cuda:90, num_warps=4, num_stages=3, MODE='relu\\x1b\\n', BLOCK=256, n=i32"
    plain = "cuda:90, num_warps=4, num_stages=3, MODE='fp16', BLOCK=256, n=i32"
    assert set(ttir) == {relu, plain}
    assert "arith.maxnumf" in ttir[relu] and "arith.maxnumf" not in ttir[plain]  # the branch each string takes


def test_a_value_that_cannot_be_recorded_is_marked_and_said(tmp_path, checker):
    # a @triton.jit function passed as a constexpr: the program runs on under capture, its compile is kept marked
    lines = _capture(tmp_path, "kern.apply[(4,)](x, o, 1000, kern.relu, BLOCK=256)\n")
    (rec,) = [r for r in lines if r.get("record", "compile") == "compile"]
    assert rec["constants"]["ACT"] == {"$unrecorded": "triton.runtime.jit.JITFunction"}
    kr = _check(checker, tmp_path, "apply")
    assert not kr.compiled
    (f,) = [f for f in kr.findings if f.code == "SRC003"]
    assert f.severity == "info" and f.data["unrecorded"] == {"ACT": "triton.runtime.jit.JITFunction"}
    assert "could not record ACT" in evidence(f) and "that compile is not checked" in evidence(f)


def test_old_captures_still_load(tmp_path, checker):
    """Lines written before the tags: a dtype as its bare name, an int past int64 (refused until now) as a plain
    number, a tuple as a list, an argument the recorder did not know as unknown."""
    (tmp_path / "kern.py").write_text(KERNELS)
    (tmp_path / ".tritonlens").mkdir()
    old = {"version": 2, "path": "kern.py", "target": "cuda:90", "triton_version": "3.6.0",
           "attrs": {"x_ptr": {"divisibility": 16}, "out_ptr": {"divisibility": 16}},
           "options": {"num_warps": 4, "num_stages": 3}}
    lines = [
        {**old, "kernel": "cast_to", "constants": {"OUT": "fp16", "BLOCK": 256},
         "signature": {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "OUT": "constexpr", "BLOCK": "constexpr"},
         "launch": {"grid": [4], "args": {"n": {"value": 1000}, "x_ptr": {"unknown": "TensorDescriptor"}}}},
        {**old, "kernel": "wide", "constants": {"BIG": 2**64 + 3, "BLOCK": 256},
         "signature": {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "seed": "u64", "BIG": "constexpr",
                       "BLOCK": "constexpr"}},
        {**old, "kernel": "clamp_limits", "constants": {"LIMITS": [[0.0, 1], [2, 3.0]], "BLOCK": 256},
         "signature": {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "dt_limit": "('fp32', 'fp32')",
                       "LIMITS": "constexpr", "BLOCK": "constexpr"}},
    ]
    (tmp_path / ".tritonlens" / "captures.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    caps, problems = load_captures(str(tmp_path), str(tmp_path / "kern.py"))
    assert not problems and len(caps) == 3
    assert _compiled(_check(checker, tmp_path, "cast_to")) and \
        list(_compiled(_check(checker, tmp_path, "cast_to"))) == [
            "cuda:90, num_warps=4, num_stages=3, OUT=tl.fp16, BLOCK=256, n=i32"]
    assert list(_compiled(_check(checker, tmp_path, "wide"))) == [
        f"cuda:90, num_warps=4, num_stages=3, BIG={2**64 + 3}, BLOCK=256, n=i32, seed=u64"]
    assert list(_compiled(_check(checker, tmp_path, "clamp_limits"))) == [
        "cuda:90, num_warps=4, num_stages=3, LIMITS=((0.0, 1), (2, 3.0)), BLOCK=256, n=i32"]


def test_tuning_lines_keep_non_finite_config_values(tmp_path):
    """A tuning line (written on a GPU, where the autotuner measures) lists each config's kwargs as launch values."""
    import triton

    from tritonlens.gpu.capture_record import config_fields

    cfg = config_fields(triton.Config({"HI": float("inf"), "OUT": triton.language.float16, "BLOCK": 256},
                                      num_warps=4))
    (tmp_path / ".tritonlens").mkdir()
    line = {"version": 3, "record": "tuning", "path": "kern.py", "kernel": "clamp_ce",
            "key": [{"$float": "nan"}, 1000], "configs": [{**cfg, "time_us": 3.5}], "chosen": 0}
    (tmp_path / ".tritonlens" / "captures.jsonl").write_text(json.dumps(line, allow_nan=False) + "\n")
    (tuning,) = load_tunings(str(tmp_path))
    assert tuning["configs"][0]["kwargs"] == {"HI": math.inf, "OUT": {"dtype": "fp16"}, "BLOCK": 256}
    assert math.isnan(tuning["key"][0])


def test_a_baseline_of_non_finite_constexprs_is_strict_json_and_compares_equal(tmp_path):
    _capture(tmp_path, "".join(f'kern.clamp_ce[(4,)](x, o, 1000, float("{v}"), BLOCK=256)\n'
                               for v in ("inf", "nan")))
    run = [sys.executable, "-m", "tritonlens"]
    saved = subprocess.run(run + ["baseline", "save", "kern.py"], capture_output=True, text=True, cwd=tmp_path,
                           timeout=300)
    assert saved.returncode == 0, saved.stderr
    data = _strict((tmp_path / ".tritonlens" / "baseline.json").read_text())
    (kernel,) = [k for k in data["files"]["kern.py"]["kernels"].values() if "HI" in json.dumps(k)]
    assert sorted(json.dumps(s["spec"]["constants"]["HI"]) for s in kernel["specs"].values()) == \
        ['{"$float": "inf"}', '{"$float": "nan"}']
    again = subprocess.run(run + ["check", "kern.py", "--baseline", ".tritonlens/baseline.json", "--format", "json"],
                           capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert not [f for f in json.loads(again.stdout) if f["code"] == "BASE001"]


ON_GPU = """
import torch, triton.language as tl, kern
x = torch.randn(1000, device="cuda"); o = torch.empty_like(x)
kern.clamp_rt[(4,)](x, o, 1000, 0.0, float("inf"), BLOCK=256)
assert torch.equal(o, x.clamp(min=0.0))
kern.clamp_ce[(4,)](x, o, 1000, float("-inf"), BLOCK=256)
assert bool((o == float("-inf")).all())
kern.clamp_limits[(4,)](x, o, 1000, (0.0, float("inf")), ((float("-inf"), 1), (2, 0.5)), BLOCK=256)
assert torch.equal(o, x.clamp(0.0, 0.5))
kern.apply[(4,)](x, o, 1000, kern.relu, BLOCK=256)
assert torch.equal(o, x.relu())
torch.cuda.synchronize()
print("outputs as computed without capture")
"""


@pytest.mark.gpu
@pytest.mark.skipif(not has_local_gpu(), reason="needs a local NVIDIA GPU")
def test_on_a_gpu_launches_with_inf_and_a_jit_function_run_and_are_recorded(tmp_path, checker):
    """On a GPU the same record path (Triton's own post-compile hook) keeps them: the program runs and computes as it
    does without capture (a @triton.jit function as a constexpr no longer raises in Triton's hook payload)."""
    lines = _capture(tmp_path, "", prelude=ON_GPU, flags=())
    compiles = {r["kernel"]: r for r in lines if r.get("record", "compile") == "compile"}
    assert set(compiles) == {"clamp_rt", "clamp_ce", "clamp_limits", "apply"}
    assert compiles["clamp_rt"]["launch"]["args"]["hi"] == {"value": {"$float": "inf"}}
    assert compiles["clamp_ce"]["constants"]["HI"] == {"$float": "-inf"}
    assert compiles["apply"]["constants"]["ACT"] == {"$unrecorded": "triton.runtime.jit.JITFunction"}
    assert list(_compiled(_check(checker, tmp_path, "clamp_ce"))) == [
        "cuda:90, num_warps=4, num_stages=3, HI=-inf, BLOCK=256, n=i32"]
