"""`tritonlens check --fix` / `--diff`: the preferred proven fixes of examples/bad/ kernels (copied into a temporary
folder), compiled for cuda:90 on the CPU. The diff shows the edit and writes nothing; `--fix` writes it, and checking
the written file again no longer has the finding; a hint edit (tritonlens's own assumption) is never applied."""
import json
import os
import shutil
import textwrap

from conftest import EXAMPLES
from tritonlens.cli import main as cli_main

BAD = os.path.join(EXAMPLES, "bad")


def _copy(tmp_path, name: str) -> str:
    path = tmp_path / name
    shutil.copy(os.path.join(BAD, name), path)
    return str(path)


def _launched(tmp_path, call: str):
    """matmul_spill.py without its hint, launched from its own file by `call` (the launch's lines, dedented)."""
    text = open(os.path.join(BAD, "matmul_spill.py"), encoding="utf-8").read()
    path = tmp_path / "mm.py"
    path.write_text(text[:text.index("# tritonlens:")] + text[text.index("@triton.jit"):] +
                    "\n\ndef matmul(a, b, c, K):\n    grid = (a.shape[0] // 128, b.shape[1] // 128)\n" +
                    textwrap.indent(textwrap.dedent(call), "    "))
    return path


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = cli_main(["check", *argv, "--target", "cuda:90", "--workers", "1"])
    out, err = capsys.readouterr()
    return code, out, err


def test_diff_shows_the_full_block_path_and_writes_nothing(tmp_path, capsys):
    path = _copy(tmp_path, "vector_add_unaligned.py")
    before = open(path, encoding="utf-8").read()
    code, out, err = _run(capsys, path, "--diff")
    assert open(path, encoding="utf-8").read() == before  # a dry run
    assert code == 1  # a file would change
    assert out.startswith("--- a/") and "+++ b/" in out, out
    assert "-    x = tl.load(x_ptr + offsets, mask=mask)\n" in out
    assert "+    if (pid + 1) * BLOCK_SIZE <= n_elements:  # a full block: every lane is in bounds, no mask\n" in out
    assert "+        x = tl.load(x_ptr + offsets)\n" in out
    assert "+        tl.store(out_ptr + offsets, x + y, mask=mask)\n" in out  # the last block keeps its mask
    # one fix, said on stderr with what its re-compile proved
    assert ":13: PTX001 would fix: Add an unmasked path for full blocks — loads 32 → 128-bit and stores 32 → " \
        "128-bit on the fast path (re-compiled)" in err, err
    assert "1 fix(es) to apply in 1 file(s)" in err


def test_fix_writes_it_and_the_fast_path_is_no_longer_narrow(tmp_path, capsys):
    path = _copy(tmp_path, "vector_add_unaligned.py")
    code, out, _ = _run(capsys, path, "--fix")
    fixed = open(path, encoding="utf-8").read()
    assert "    if (pid + 1) * BLOCK_SIZE <= n_elements:" in fixed and "    else:  # the last, partial block" in fixed
    assert "1 fix(es) applied in 1 file(s)" in out, out
    # checked again from the written file: the fast path's loads and store (lines 14-16) are 128-bit; the masked
    # copy of the last block keeps its findings (lines 18-20), by design, as infos (one program of the launch runs
    # it) — so the check passes
    code, out, _ = _run(capsys, path, "--format", "json")
    lines = sorted((f["code"], f["line"], f["severity"]) for f in json.loads(out) if f["code"].startswith("PTX"))
    assert lines == [("PTX001", 18, "info"), ("PTX001", 19, "info"), ("PTX002", 20, "info")], lines
    assert code == 0
    # nothing left to fix: the masked copy is not offered the fix again
    code, out, err = _run(capsys, path, "--diff")
    assert out == "" and "0 fix(es) to apply" in err


def test_select_limits_the_fixes_to_those_codes(tmp_path, capsys):
    path = _copy(tmp_path, "vector_add_unaligned.py")
    code, out, err = _run(capsys, path, "--diff", "--select", "SASS001")
    assert out == "" and "0 fix(es) to apply in 0 file(s)" in err, err
    assert code == 0  # nothing selected is left at warning or above


def test_a_launch_fix_is_applied_and_a_hint_edit_never_is(tmp_path, capsys):
    """matmul_spill.py spills at num_warps=4. Stated in its hint, the only fix is a hint edit ("Tell tritonlens: the
    launch uses num_warps=8"): not preferred, not applied. Launched from its own file, the launch call is edited."""
    path = _copy(tmp_path, "matmul_spill.py")
    code, out, err = _run(capsys, path, "--fix")
    assert "0 fix(es) applied" in out and open(path, encoding="utf-8").read() == open(
        os.path.join(BAD, "matmul_spill.py"), encoding="utf-8").read()
    launch = _launched(tmp_path, """\
        matmul_spill[grid](a, b, c, K, a.stride(0), b.stride(0), c.stride(0),
                           BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, num_warps=4, num_stages=2)
        """)
    code, out, err = _run(capsys, str(launch), "--fix", "--select", "SASS")
    assert "mm.py:9: SASS001 fixed: Use num_warps=8 at the launch on line 30 — removes SASS001 (" in out, out
    assert "BLOCK_K=32, num_warps=8, num_stages=2)" in launch.read_text()
    code, out, _ = _run(capsys, str(launch), "--select", "SASS001", "--format", "json")
    assert out.strip() == "[]" and code == 0


def test_a_keyword_added_to_a_call_with_a_trailing_comma_goes_on_its_own_line(tmp_path, capsys):
    """Formatted as black writes a long call (one argument a line, a trailing comma): the added `num_warps=` gets a
    line of its own, and the written file still parses and no longer spills."""
    path = _launched(tmp_path, """\
        matmul_spill[grid](
            a, b, c, K, a.stride(0), b.stride(0), c.stride(0),
            BLOCK_M=128,
            BLOCK_N=128,
            BLOCK_K=32,
        )
        """)
    code, out, _ = _run(capsys, str(path), "--fix", "--select", "SASS001")
    assert "SASS001 fixed: Use num_warps=8 at the launch on line" in out, out
    assert "        BLOCK_K=32,\n        num_warps=8,\n    )\n" in path.read_text()
    code, out, _ = _run(capsys, str(path), "--select", "SASS001,SRC", "--format", "json")
    assert out.strip() == "[]" and code == 0


def test_a_captured_launch_is_fixed_once(tmp_path, capsys):
    """With the launch captured at 4 warps, the re-check of the fixed file still compiles the captured spec (a capture
    replaces what the launch site says), so it still spills: the finding is not fixed a second time (that would edit
    the edit), and it is still reported."""
    path = _launched(tmp_path, """\
        matmul_spill[grid](a, b, c, K, a.stride(0), b.stride(0), c.stride(0), BLOCK_M=128, BLOCK_N=128, BLOCK_K=32)
        """)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (tmp_path / ".tritonlens").mkdir()
    ints = ("K", "stride_am", "stride_bk", "stride_cm")
    (tmp_path / ".tritonlens" / "captures.jsonl").write_text(json.dumps({
        "version": 1, "path": "mm.py", "kernel": "matmul_spill",
        "signature": {**{p: "*fp32" for p in ("a_ptr", "b_ptr", "c_ptr")}, **{p: "i32" for p in ints},
                      **{p: "constexpr" for p in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}},
        "constants": {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32},
        "attrs": {p: {"divisibility": 16} for p in ("a_ptr", "b_ptr", "c_ptr", *ints)},
        "options": {"num_warps": 4, "num_stages": 3}, "target": "cuda:90", "triton_version": "3.6.0"}) + "\n")
    code, out, _ = _run(capsys, str(path), "--fix", "--select", "SASS001")
    assert out.count("SASS001 fixed: ") == 1, out
    launch = path.read_text().split("def matmul(")[1]
    assert launch.count("num_warps=") == 1 and "BLOCK_K=32, num_warps=8)" in launch
    assert "1 finding(s) at warning or above left" in out and code == 1  # the captured spec, as captured
