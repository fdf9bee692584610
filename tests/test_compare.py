"""`tritonlens compare`: the same specs compiled under the installed Triton and a second release (a real one, made
on demand with pip into TRITONLENS_RELEASES_DIR; .ci/run makes it once and keeps it between runs), or for two
targets; what changed, regressions first, and the gate's exit code.

The judging rules are tested on records (no compile); the rest compiles two small kernels for real.
"""
from __future__ import annotations

import json
import os

import pytest
from conftest import CI

from tritonlens.checks.costmodel import mean_launch_us
from tritonlens.compare import cli as compare_cli
from tritonlens.compare import core, envs, output
from tritonlens.settings import Settings

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "examples")
SPILL = os.path.join(EXAMPLES, "bad", "matmul_spill.py")
ADD = os.path.join(EXAMPLES, "vector_add.py")
OTHER = "3.7.1"  # a release whose LLVM spills more in matmul_spill's loop (296 B under 3.6.0, 368 B under 3.7.1)


# ---------------------------------------------------------------- judging, on records
def _rec(compiled="ok", **metrics):
    base = {"registers": 128, "spill_bytes": 0, "shared": 0, "convert_layout": 0, "dots": 0, "mma": 0, "wgmma": 0,
            "occupancy": {"warps": 16, "occupancy": 0.25}}
    base.update(metrics)
    return {"compiled": compiled, "target": "cuda:90", "metrics": base, "findings": []}


def _judge(a, b, th=None, a_extra=None, b_extra=None):
    p = core.SpecPair("k.py", "k", 3, "hint line 2", "cuda:90, num_warps=4", a, b, a_extra or {}, b_extra or {})
    core.judge(p, th or core.Thresholds())
    return p


def test_spills_that_appear_fail_the_gate_and_name_where_the_spill_code_is():
    p = _judge(_rec(), _rec(spill_bytes=96, registers=255), b_extra={"spill_lines": [20, 21], "spill_in_loop": [21]})
    spill = next(r for r in p.regressions if r.kind == "spills")
    assert spill.gated and p.gated and p.status == "regressed"
    assert spill.text == "spills appeared: 0 B → 96 B; spill code on lines 20, 21, inside a loop (line 21)"
    regs = next(r for r in p.regressions if r.kind == "registers")
    assert not regs.gated  # registers are reported, not gated, by default


def test_thresholds_let_small_growth_pass():
    th = core.Thresholds(spill_bytes=100)
    assert not _judge(_rec(spill_bytes=296), _rec(spill_bytes=368), th).gated
    assert _judge(_rec(spill_bytes=296), _rec(spill_bytes=500), th).gated
    assert not _judge(_rec(), _rec(spill_bytes=8), core.Thresholds(fail_on=frozenset())).gated


def test_a_spec_that_compiled_and_now_fails_is_a_gated_regression():
    p = _judge(_rec(), _rec(compiled="CompilationError"), b_extra={"error": "at 12:4: unsupported layout"})
    assert [(r.kind, r.gated) for r in p.regressions] == [("compile", True)]
    assert "CompilationError: at 12:4: unsupported layout" in p.regressions[0].text
    back = _judge(_rec(compiled="CompilationError"), _rec())
    assert back.status == "improved" and not back.regressions


def test_own_failures_are_not_compared_and_never_gate():
    p = _judge(_rec(), _rec(compiled="Timeout"), b_extra={"error": "the compile did not finish in 60 s"})
    assert p.status == "unverified" and not p.gated and "60 s" in p.unverified


def test_dots_leaving_tensor_cores_and_occupancy():
    p = _judge(_rec(dots=1, wgmma=4, mma=0), _rec(dots=1, wgmma=0, mma=0, fma=4096,
                                                    occupancy={"warps": 8, "occupancy": 0.125}))
    kinds = {r.kind: r for r in p.regressions}
    assert kinds["tensor-cores"].gated
    assert not kinds["occupancy"].gated  # reported; gated only with --fail-on occupancy
    assert kinds["occupancy"].text == "occupancy 25% → 12% (resident warps per SM 16 → 8)"
    # Blackwell's tcgen05.mma is a tensor core too (counted in the PTX): cuda:90 → cuda:100 is no regression
    blackwell = _judge(_rec(dots=1, wgmma=4), _rec(dots=1), b_extra={"tcgen05": 2})
    assert not [r for r in blackwell.regressions if r.kind == "tensor-cores"]
    th = core.Thresholds(fail_on=frozenset({"occupancy"}), occupancy_pct=60)
    assert not _judge(_rec(), _rec(occupancy={"warps": 8, "occupancy": 0.125}), th).gated


def test_estimated_time_from_the_cost_model_gates_past_its_threshold():
    def timed(*costs):
        return _rec(launch_costs=[{"grid": [1], "count": n, "est_us": us} for n, us in costs])

    assert mean_launch_us(timed((3, 10.0), (1, 30.0))["metrics"]) == 15.0  # weighted by launches
    p = _judge(timed((1, 10.0)), timed((1, 12.0)))
    [r] = p.regressions
    assert r.kind == "time" and r.gated and r.text == "estimated time 10 µs → 12 µs (+20%)"
    assert not _judge(timed((1, 10.0)), timed((1, 10.5))).regressions  # within --time-pct 10
    assert not _judge(_rec(), timed((1, 12.0))).regressions  # no estimate on one side: nothing to compare


# ---------------------------------------------------------------- a real second release
@pytest.fixture(scope="module")
def release():
    try:
        rel, _ = envs.ensure_release(OTHER)
    except envs.ReleaseError as exc:
        if CI:  # .ci/run makes it: under CI its absence is a broken setup, not a reason to skip
            pytest.fail(f"triton {OTHER} could not be made: {exc}", pytrace=False)
        pytest.skip(f"triton {OTHER} cannot be installed here (no network?): {exc}")
    return rel


@pytest.fixture(scope="module")
def outcome(release):
    settings = Settings(target="cuda:90", compile_timeout=300)
    sides = (core.Side(envs.installed(), "cuda:90"), core.Side(release, "cuda:90"))
    return core.run([SPILL, ADD], sides, settings, core.Thresholds(), with_text=True)


def test_the_other_release_compiles_in_its_own_interpreter(release, outcome):
    assert envs.probe(release.python)["triton"] == OTHER
    assert envs.from_python(release.python).triton == OTHER  # --python PATH names the same interpreter
    a, b = outcome.sides
    assert a.release.triton != OTHER and b.release.triton == OTHER
    assert [p.kernel for p in outcome.pairs] == ["matmul_spill", "add_kernel"]  # the regression first


def test_real_spill_regression_is_found_and_gated(outcome):
    spill = outcome.pairs[0]
    assert spill.status == "regressed" and spill.gated
    r = spill.regressions[0]
    assert r.kind == "spills" and r.text.startswith("spill bytes 296 B → 368 B; spill code on lines ")
    assert "inside a loop" in r.text and "ptx" in spill.ir_changed
    assert spill.a["metrics"]["spill_bytes"] == 296 and spill.b["metrics"]["spill_bytes"] == 368
    add = outcome.pairs[1]
    assert add.status in ("same", "changed") and not add.regressions
    assert outcome.counts()["gated"] == 1


def test_text_json_and_sarif_say_the_same(outcome):
    text = output.to_text(outcome)
    assert text.index("Regressions") < text.index("matmul_spill")
    assert f"→ triton {OTHER}: 2 spec(s), 2 compared; 1 regressed (1 past the gate)" in text
    data = json.loads(json.dumps(output.to_json(outcome)))
    assert data["second"]["triton"] == OTHER and data["counts"]["gated"] == 1
    first = data["specs"][0]
    assert first["kernel"] == "matmul_spill" and first["regressions"][0]["kind"] == "spills"
    assert first["first"]["metrics"]["spill_bytes"] == 296 and first["second"]["spill_lines"]
    sarif = output.to_sarif(outcome, os.path.dirname(SPILL))
    res = sarif["runs"][0]["results"]
    assert [(r["ruleId"], r["level"]) for r in res] == [("CMP001", "error")]
    assert res[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == outcome.pairs[0].def_line


def test_side_by_side_page(outcome, tmp_path):
    from tritonlens.compare.html import write_page

    page = tmp_path / "compare.html"
    write_page(outcome, str(page))
    html = page.read_text()
    assert "matmul_spill" in html and f"triton {OTHER}" in html and 'class="diff"' in html  # the IR, side by side
    assert "spill bytes 296 B → 368 B" in html


def test_report_gets_a_comparison_section(outcome, tmp_path):
    from tritonlens.cli import main

    page = tmp_path / "report.html"
    assert main(["report", SPILL, "-o", str(page), "--target", "cuda:90", "--compare-triton", OTHER]) == 0
    html = page.read_text()
    assert html.index("tl-compare") > html.index("matmul_spill")  # after the kernels
    assert "spill bytes 296 B → 368 B" in html and 'class="diff"' in html


def test_cli_exit_codes(release, outcome, capsys, tmp_path):
    """The gate: 1 on the spill; 0 when the threshold allows it; 2 on a usage error. (The compiles are cached.)"""
    args = [SPILL, "--triton", OTHER, "--target", "cuda:90", "--format", "json"]
    assert compare_cli.main(args) == 1
    assert json.loads(capsys.readouterr().out)["counts"]["gated"] == 1
    assert compare_cli.main(args + ["--spill-bytes", "100"]) == 0
    capsys.readouterr()
    assert compare_cli.main([SPILL, "--triton", OTHER, "--python", release.python]) == 2
    assert compare_cli.main([SPILL, "--triton", "latest"]) == 2
    assert "not a Triton release number" in capsys.readouterr().err


def test_two_targets_pair_by_label():
    """cuda:90 against hip:gfx942 under the installed Triton: the AMD backend's own num_stages default makes another
    spec, paired by its label and said so."""
    settings = Settings(target="cuda:90", compile_timeout=300)
    here = envs.installed()
    out = core.run([ADD], (core.Side(here, "cuda:90"), core.Side(here, "hip:gfx942")), settings, core.Thresholds())
    [p] = out.pairs
    assert p.a["target"] == "cuda:90" and p.b["target"] == "hip:gfx942"
    assert p.knobs == ["num_stages 3 → 2"] and "amdgcn" in p.ir_changed
    assert not p.gated
