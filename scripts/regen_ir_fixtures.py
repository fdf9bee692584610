"""Regenerate the real IR fixtures under tests/fixtures/ir/ by compiling the example kernels on the CPU.

Usage: python scripts/regen_ir_fixtures.py

Needs triton (3.6.0 for the committed fixtures); no GPU. Each case writes `<name>.<stage>` for the stages the
target produces (ttir, ttgir, llir, ptx, sass, res, or amdgcn) and `<name>.remarks` (the compiler's stderr with
MLIR_ENABLE_DIAGNOSTICS=remarks). Absolute paths are replaced by stable placeholders so the fixtures do not depend
on the machine they were made on: the repo root becomes `/src` and triton's package dir `/site-packages/triton`.
"""
from __future__ import annotations

import os

# Remarks are printed by MLIR's diagnostic handler only when this is set before triton is imported.
os.environ["MLIR_ENABLE_DIAGNOSTICS"] = "remarks"
# A cache hit skips the passes that print remarks: always compile.
os.environ["TRITON_ALWAYS_COMPILE"] = "1"

import importlib.util  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import types  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
KERNELS = ROOT / "tests" / "fixtures" / "ir" / "kernels"
OUT = ROOT / "tests" / "fixtures" / "ir"
SRC_PLACEHOLDER = "/src"
TRITON_PLACEHOLDER = "/site-packages/triton"
# LLVM IR of the big kernels is 150-470 KB each; it is kept only below this size so the set stays < 2 MB.
# (Cutting a text would lose its debug metadata and `.file` directives, which come at the end.)
MAX_LLIR_BYTES = 100_000

if importlib.util.find_spec("torch") is None:
    # The examples import torch for their launchers only; the kernels never need it.
    sys.modules["torch"] = types.ModuleType("torch")

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

TRITON_DIR = str(Path(triton.__file__).resolve().parent)
NV_BIN = Path(TRITON_DIR) / "backends" / "nvidia" / "bin"


def load(path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("fixture_" + path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def attrs_for(signature: dict[str, str], aligned: list[str]) -> dict:
    names = list(signature)
    return {(names.index(n),): [["tt.divisibility", 16]] for n in aligned}


def scrub_str(text: str) -> str:
    return text.replace(TRITON_DIR, TRITON_PLACEHOLDER).replace(str(ROOT), SRC_PLACEHOLDER)


def scrub_b8(text: str) -> str:
    """PTX's DWARF section spells strings (the compile directory) as runs of `.b8 N` lines: scrub those too."""
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if not run:
            return
        data = bytes(int(line.split()[1]) for line in run)
        fixed = scrub_str(data.decode("latin-1")).encode("latin-1")
        if fixed == data:
            out.extend(run)
        else:
            out.extend(f".b8 {b}" for b in fixed)
        run.clear()

    for line in text.split("\n"):
        parts = line.split()
        if len(parts) >= 2 and parts[0] == ".b8" and parts[1].isdigit():
            run.append(line)
            if parts[1] == "0":
                flush()
            continue
        flush()
        out.append(line)
    flush()
    return "\n".join(out)


def scrub(text: str) -> str:
    return scrub_b8(scrub_str(text))


class CaptureStderr:
    """Capture fd 2 (MLIR writes remarks from C++, below Python's sys.stderr)."""

    def __enter__(self):
        sys.stderr.flush()
        self.tmp = tempfile.TemporaryFile(mode="w+b")
        self.saved = os.dup(2)
        os.dup2(self.tmp.fileno(), 2)
        return self

    def __exit__(self, *exc):
        sys.stderr.flush()
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.tmp.seek(0)
        self.text = self.tmp.read().decode("utf-8", "replace")
        self.tmp.close()


def tool(name: str, *args: str, data: bytes) -> str:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(data)
        f.flush()
        res = subprocess.run([str(NV_BIN / name), *args, f.name], capture_output=True, text=True, check=True)
    return res.stdout.replace(f.name, "kernel.cubin")


def compile_case(name, fn, signature, constants, aligned, options, target=GPUTarget("cuda", 90, 32)):
    src = ASTSource(fn, signature, constants, attrs_for(signature, aligned))
    with CaptureStderr() as cap:
        kernel = triton.compile(src, target=target, options=options)
    stages = dict(kernel.asm)
    texts: dict[str, str] = {}
    for stage in ("ttir", "ttgir", "llir", "ptx", "amdgcn"):
        if stage == "llir" and len(stages.get(stage, "")) > MAX_LLIR_BYTES:
            continue
        if stage in stages:
            texts[stage] = stages[stage]
    if "cubin" in stages:
        texts["sass"] = tool("nvdisasm", "-c", "-g", data=stages["cubin"])
        texts["res"] = tool("cuobjdump", "-res-usage", data=stages["cubin"])
    texts["remarks"] = cap.text
    for stage, text in texts.items():
        (OUT / f"{name}.{stage}").write_text(scrub(text))
    print(f"{name}: " + ", ".join(f"{s}={len(t)}" for s, t in texts.items()))


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    cuda90 = GPUTarget("cuda", 90, 32)

    va = load(EXAMPLES / "vector_add.py")
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32", "BLOCK_SIZE": "constexpr"}
    ptrs = ["x_ptr", "y_ptr", "out_ptr"]
    compile_case("vector_add_div16", va.add_kernel, sig, {"BLOCK_SIZE": 1024}, ptrs + ["n_elements"],
                 {"num_warps": 4})
    compile_case("vector_add_nodiv", va.add_kernel, sig, {"BLOCK_SIZE": 1024}, ptrs, {"num_warps": 4})

    sm = load(EXAMPLES / "softmax.py")
    sig = {"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32", "output_row_stride": "i32",
           "n_cols": "i32", "BLOCK_SIZE": "constexpr"}
    compile_case("softmax", sm.softmax_kernel, sig, {"BLOCK_SIZE": 1024}, [n for n in sig if n != "BLOCK_SIZE"],
                 {"num_warps": 4})

    mm = load(EXAMPLES / "matmul.py")
    sig = {n: ("*fp16" if n.endswith("ptr") else "i32") for n in
           "a_ptr b_ptr c_ptr M N K stride_am stride_ak stride_bk stride_bn stride_cm stride_cn".split()}
    for n in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "ACTIVATION", "stride_ak", "stride_bn", "stride_cn"):
        sig[n] = "constexpr"
    consts = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "ACTIVATION": "",
              "stride_ak": 1, "stride_bn": 1, "stride_cn": 1}
    aligned = ["a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm"]
    compile_case("matmul", mm.matmul_kernel.fn, sig, consts, aligned, {"num_warps": 8, "num_stages": 3})
    # ACTIVATION="leaky_relu" inlines the same-file helper `_leaky_relu`: callsite locations.
    compile_case("matmul_leaky", mm.matmul_kernel.fn, sig, dict(consts, ACTIVATION="leaky_relu"), aligned,
                 {"num_warps": 8, "num_stages": 3})

    fa = load(EXAMPLES / "flash_attention.py")
    sig = {n: "*fp16" for n in ("Q", "K", "V", "Out")}
    sig["sm_scale"] = "fp32"
    for n in ("stride_qm", "stride_kn", "stride_vn", "stride_om", "seqlen"):
        sig[n] = "i32"
    for n in ("HEAD_DIM", "BLOCK_M", "BLOCK_N"):
        sig[n] = "constexpr"
    consts = {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64}
    aligned = ["Q", "K", "V", "Out", "stride_qm", "stride_kn", "stride_vn", "stride_om", "seqlen"]
    opts = {"num_warps": 4, "num_stages": 2}
    compile_case("flash_attention", fa.attn_fwd, sig, consts, aligned, opts, cuda90)
    compile_case("flash_attention_gfx942", fa.attn_fwd, sig, consts, aligned, opts, GPUTarget("hip", "gfx942", 64))

    hk = load(KERNELS / "helpers.py")
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    compile_case("helpers", hk.scaled_sin_kernel, sig, {"BLOCK": 256}, ["x_ptr", "out_ptr", "n"], {"num_warps": 4})

    total = sum(p.stat().st_size for p in OUT.iterdir() if p.is_file())
    print(f"fixtures: {total} bytes")
    if total > 2_000_000:
        raise SystemExit("fixtures exceed 2 MB: drop a stage or a case")


if __name__ == "__main__":
    main()
