"""Baselines, diffs and the `check --baseline` gate, on real compiles of the examples in a throwaway workspace."""
import json
import os
import re
import shutil

import pytest

from tritonlens.cli import main as cli_main

from conftest import EXAMPLES, verbose_findings

CUDA = ("--target", "cuda:90", "--workers", "1")


def run(capsys, *argv):
    code = cli_main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A workspace root (pyproject.toml marks it, and the current folder) holding `name` copied from the examples;
    returns (root, path)."""
    (tmp_path / "pyproject.toml").write_text("")
    monkeypatch.chdir(tmp_path)

    def copy(example: str, name: str = "k.py"):
        dst = tmp_path / name
        shutil.copy(os.path.join(EXAMPLES, example), dst)
        return tmp_path, dst
    return copy


def edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def baseline_of(root):
    return str(root / ".tritonlens" / "baseline.json")


def test_narrowed_loads_fail_the_gate_and_reverting_passes(capsys, workspace):
    root, k = workspace("vector_add.py")
    code, out, _ = run(capsys, "baseline", "save", str(k), *CUDA)
    assert code == 0 and "1 kernel(s), 1 spec(s) in 1 file(s)" in out
    base = baseline_of(root)

    code, out, _ = run(capsys, "check", str(k), "--baseline", base, *CUDA)
    assert code == 0 and "BASE001" not in out

    # The hint's divisibility removed: the mask can no longer be proven aligned, loads and stores fall to 32 bits.
    edit(k, "n_elements=i32%16", "n_elements=i32")
    code, out, _ = run(capsys, "check", str(k), "--baseline", base, "--verbose", *CUDA)
    assert code == 1
    base001 = verbose_findings(out, " BASE001 ")
    assert all(ln.startswith("k.py:9:1: BASE001 [warning]") for ln in base001)  # the def line
    assert any("ld.global widths 4×128-bit → 16×32-bit since the baseline (mean width 128 → 32 bits)" in ln
               for ln in base001)
    assert any("st.global widths 2×128-bit → 8×32-bit" in ln for ln in base001)
    assert any("findings new since the baseline: PTX001 0 → 2 (new on lines 13, 14); PTX002 0 → 1" in ln
               for ln in base001)
    assert all("changed: n_elements i32%16 → i32" in ln for ln in base001)  # the one knob that changed
    [ptx001] = [ln for ln in out.splitlines() if ln.startswith("k.py:13:9: PTX001 [warning] 32-bit loads")]
    assert not ptx001.endswith("(in the baseline)")  # new

    code, out, _ = run(capsys, "diff", str(k), *CUDA)
    assert code == 0
    assert "spec: n_elements i32%16 → i32" in out
    assert "ld.global widths 4×128-bit → 16×32-bit  (regressed: mean width 128 → 32 bits)" in out
    assert "+ PTX001 line 13: 32-bit loads" in out and "+ PTX002 line 15: 32-bit stores" in out
    assert "IR changed: ttir, ttgir, llir, ptx, sass" in out
    assert out.rstrip().endswith("1 of 1 spec(s) changed since the baseline")

    code, out, _ = run(capsys, "check", str(k), "--baseline", base, "--format", "json", *CUDA)
    states = {(d["code"], d["line"]): d["baseline_state"] for d in json.loads(out)}
    assert states[("PTX001", 13)] == "new" and states[("BASE001", 9)] == "new"

    edit(k, "n_elements=i32,", "n_elements=i32%16,")
    code, out, _ = run(capsys, "check", str(k), "--baseline", base, *CUDA)
    assert code == 0 and "BASE001" not in out and "PTX001" not in out


def test_spill_regression_names_both_numbers_and_known_findings_do_not_fail(capsys, workspace):
    root, k = workspace(os.path.join("bad", "matmul_spill.py"))
    edit(k, "num_warps=4", "num_warps=8")  # the fixed version: 184 registers, no spill
    assert run(capsys, "baseline", "save", str(k), *CUDA)[0] == 0
    base = baseline_of(root)

    # TTGIR002 (FMA, not tensor cores) is a warning the baseline already has: shown as such, exit 0.
    code, out, _ = run(capsys, "check", str(k), "--baseline", base, *CUDA)
    assert code == 0
    assert re.search(r"^k\.py:23:15: TTGIR002 \[warning\] .* \(in the baseline\)$", out, re.M)

    edit(k, "num_warps=8", "num_warps=4")
    code, out, _ = run(capsys, "check", str(k), "--baseline", base, *CUDA)
    assert code == 1
    assert re.search(r"^k\.py:10:1: BASE001 \[warning\] registers 184 → 255 since the baseline; changed: "
                     r"num_warps 8 → 4\b", out, re.M)
    assert "[cuda:90, num_warps=4, num_stages=3, BLOCK_M=128" in out  # the spec it was compiled under
    assert "BASE001 [warning] spill bytes 0 B → 296 B since the baseline" in out
    assert "findings new since the baseline: SASS001 0 → 1" in out
    # The FMA finding's numbers changed with the warps (2048 → 4096 fma on its line); it is the same finding.
    assert re.search(r"^k\.py:23:15: TTGIR002 .*4096 fma.* \(in the baseline\)$", out, re.M)

    code, out, _ = run(capsys, "check", str(k), "--baseline", base, "--format", "sarif", *CUDA)
    results = json.loads(out)["runs"][0]["results"]
    states = {(r["ruleId"], r["baselineState"]) for r in results}
    assert ("BASE001", "new") in states and ("SASS001", "new") in states and ("TTGIR002", "unchanged") in states


def test_diff_stage_ptx_shows_only_real_changes(capsys, workspace):
    root, k = workspace("vector_add.py")
    assert run(capsys, "baseline", "save", str(k), *CUDA)[0] == 0

    # Lines moved (every .loc, every TTGIR location changes), the code did not: nothing to show.
    edit(k, "    pid = tl.program_id(axis=0)", "    # moved down by two lines\n\n    pid = tl.program_id(axis=0)")
    code, out, _ = run(capsys, "diff", str(k), "--stage", "ptx", *CUDA)
    assert code == 0 and "@@" not in out and "0 of 1 spec(s) changed" in out

    edit(k, "n_elements=i32%16", "n_elements=i32")
    code, out, _ = run(capsys, "diff", str(k), "--stage", "ptx", *CUDA)
    hunk = [ln[4:] for ln in out.splitlines() if ln.startswith("    ") and ln[4:5] in "+-"]
    assert "--- baseline/k.py/add_kernel/" in hunk[0] and "+++ now/k.py/add_kernel/" in hunk[1]
    changed = hunk[2:]
    assert "-\t@%p ld.global.v4.b32 { %r, %r, %r, %r }, [ %rd + 0 ];" in changed
    assert "+\t@%p ld.global.b32 { %r }, [ %rd + 0 ];" in changed
    # No location or register-number noise in what is shown.
    assert not [ln for ln in changed if ".loc" in ln or re.search(r"%r[d]?\d", ln) or "/" in ln]
    # Only instructions changed: no line was removed and re-added unchanged.
    assert not set(ln[1:] for ln in changed if ln[0] == "-") & set(ln[1:] for ln in changed if ln[0] == "+")


def test_two_saves_are_byte_identical_and_hold_no_paths(capsys, workspace):
    root, k = workspace("softmax.py")
    base = baseline_of(root)

    def snapshot():
        out = {}
        for folder, _, names in os.walk(root / ".tritonlens"):
            for n in names:
                p = os.path.join(folder, n)
                with open(p, "rb") as f:
                    out[os.path.relpath(p, root)] = f.read()
        return out

    assert run(capsys, "baseline", "save", str(k), *CUDA)[0] == 0
    first = snapshot()
    assert run(capsys, "baseline", "save", str(k), *CUDA)[0] == 0
    assert snapshot() == first
    assert sorted(os.path.basename(p).rsplit(".", 1)[1] for p in first if "baseline/" in p) == \
        ["ptx", "sass", "ttgir", "ttir"]  # llir only hashed by default
    data = json.loads(first[os.path.join(".tritonlens", "baseline.json")])
    assert data["versions"]["triton"] and data["versions"]["targets"] == ["cuda:90"]
    [spec] = data["files"]["k.py"]["kernels"]["softmax_kernel"]["specs"].values()
    assert set(spec["ir"]) == {"ttir", "ttgir", "llir", "ptx", "sass"} and "compile_time" not in spec["metrics"]
    assert spec["metrics"]["registers"] > 0 and "global_widths" in spec["metrics"]
    assert all(str(root) not in blob.decode() for blob in first.values())


def test_two_knobs_changed_at_once_is_said(capsys, workspace):
    root, k = workspace("vector_add.py")
    assert run(capsys, "baseline", "save", str(k), *CUDA)[0] == 0
    edit(k, "BLOCK_SIZE=1024, num_warps=4", "BLOCK_SIZE=2048, num_warps=8")
    code, out, _ = run(capsys, "diff", str(k), *CUDA)
    assert "spec: num_warps 4 → 8, BLOCK_SIZE 1024 → 2048 (paired with the baseline's spec by label)" in out
    assert "2 knobs changed at once: the deltas cannot be pinned on one of them" in out


NO_SPEC = """

@triton.jit
def nospec(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)
"""


def test_a_kernel_added_since_the_baseline_counts_as_new(capsys, workspace):
    root, k = workspace("vector_add.py")
    k.write_text(k.read_text().split("\n\ndef add(")[0] + NO_SPEC)  # the kernel, and one with no BLOCK value
    assert run(capsys, "baseline", "save", str(k), *CUDA)[0] == 0
    unaligned = open(os.path.join(EXAMPLES, "bad", "vector_add_unaligned.py")).read()
    k.write_text(k.read_text() + "\n\n" + unaligned.split("\n\n\n", 1)[1].replace("add_kernel", "add_unaligned"))
    code, out, _ = run(capsys, "check", str(k), "--baseline", baseline_of(root), "-q", "--verbose", *CUDA)
    assert code == 1
    assert re.search(r"^k\.py:\d+:19: SRC002 \[info\] BLOCK has no value.* \(in the baseline\)$", out, re.M)
    assert any(re.match(r"k\.py:\d+:1: BASE001 \[warning\] kernel not in the baseline, its findings count as new: "
                        r"PTX001 0 → 2", block) and
               re.search(r"PTX001 0 → 2 \(new on lines \d+, \d+\); PTX002 0 → 1", block)
               for block in verbose_findings(out, " BASE001 ")), out
    code, out, _ = run(capsys, "diff", str(k), *CUDA)
    assert "k.py::add_unaligned: not in the baseline" in out and "1 of 2 spec(s) changed" in out


def test_missing_baseline_is_a_usage_error_and_base001_is_explained(capsys, tmp_path):
    k = tmp_path / "k.py"
    shutil.copy(os.path.join(EXAMPLES, "vector_add.py"), k)
    code, _, err = run(capsys, "check", str(k), "--baseline", str(tmp_path / "none.json"), *CUDA)
    assert code == 2 and "cannot read the baseline" in err and "tritonlens baseline save" in err
    code, out, _ = run(capsys, "explain", "BASE001")
    assert code == 0 and out.startswith("# BASE001 regressed-from-baseline")


# ---------------------------------------------------------------- the editor: lens and def-line hover
def test_lens_and_hover_show_what_the_last_save_changed_and_since_the_baseline(capsys, workspace, checker):
    from lsprotocol import types

    from tritonlens.lsp.compiling import DocState
    from tritonlens.lsp.server import create_server

    root, k = workspace("vector_add.py")
    assert run(capsys, "baseline", "save", str(k), *CUDA)[0] == 0
    server = create_server()  # the real wiring; its compiles are stood in for by the shared checker (same pipeline)
    uri = k.as_uri()
    fm = server.protocol.fm.features

    def save():
        """What the server does after a save: compile, keep the reports, publish (listeners see it); then the client
        asks for lenses and the def-line hover."""
        [kr] = checker.check_file(str(k)).kernels
        st = server.scheduler.docs[uri] = DocState(uri, str(k), kernels={kr.kernel.key: kr}, text=k.read_text())
        for listener in server.scheduler.listeners:
            listener(st)
        doc = types.TextDocumentIdentifier(uri)
        lenses = fm[types.TEXT_DOCUMENT_CODE_LENS](types.CodeLensParams(doc))
        hover = fm[types.TEXT_DOCUMENT_HOVER](types.HoverParams(doc, types.Position(kr.kernel.def_line - 1, 4)))
        return [lens.command.title for lens in lenses], hover.contents.value

    titles, hover = save()
    assert len(titles) == 4 and "since" not in " ".join(titles) + hover  # first save, same as the baseline

    edit(k, "n_elements=i32%16", "n_elements=i32")
    titles, hover = save()
    assert titles[-1] == ("since last save: ld.global widths 4×128-bit → 16×32-bit, st.global widths 2×128-bit → "
                          "8×32-bit, PTX001 +2, PTX002 +1 · vs baseline: ld.global widths 4×128-bit → 16×32-bit, "
                          "st.global widths 2×128-bit → 8×32-bit, PTX001 +2, PTX002 +1")
    assert hover.endswith("since last save: ld.global widths 4×128-bit → 16×32-bit, st.global widths 2×128-bit → "
                          "8×32-bit, PTX001 +2, PTX002 +1\n\nvs baseline: ld.global widths 4×128-bit → 16×32-bit, "
                          "st.global widths 2×128-bit → 8×32-bit, PTX001 +2, PTX002 +1")

    edit(k, "BLOCK_SIZE=1024, num_warps=4", "BLOCK_SIZE=2048, num_warps=2")
    titles, _ = save()
    assert "since last save: registers 26 → " in titles[-1]
    assert "2 knobs changed at once (num_warps, BLOCK_SIZE): not one change's delta" in titles[-1]

    edit(k, "n_elements=i32,", "n_elements=i32%16,")
    edit(k, "BLOCK_SIZE=2048, num_warps=2", "BLOCK_SIZE=1024, num_warps=4")
    titles, _ = save()
    assert titles[-1].startswith("since last save: registers") and "vs baseline" not in titles[-1]
