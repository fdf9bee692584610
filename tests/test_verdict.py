"""The verdict (checks/verdict.py): the one step that sets a finding's severity after the rules, in one order — the
rule's proposal, evidence that the finding is not real for the launches that matter, cost, the user's setting last.
On the example kernel with the launches an H200 run captured and times `tritonlens bench` saved there (no GPU here:
the measurements are written as bench saves them on one), compiled for real."""
import os
import shutil
from dataclasses import replace

import pytest

from tritonlens.checks.verdict import decide, limit, outcome
from tritonlens.device import virtual_gpu
from tritonlens.gpu import bench
from tritonlens.model import Finding
from tritonlens.pipeline import Checker
from tritonlens.settings import Settings
from conftest import evidence

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CAPTURES = os.path.join(REPO, "bench", "results", "h200-examples-captures-v2.jsonl")


@pytest.fixture()
def measured_workspace(tmp_path, monkeypatch):
    """examples/vector_add.py, its two captured launches (98,432 and 1,003 elements), both timed: the big one 600 µs,
    the small one (the only spec with narrow loads) 3 µs — 0.5% of the file's measured time."""
    from tritonlens.frontend.captures import load_captures

    monkeypatch.chdir(tmp_path)  # bench saves paths relative to where it runs, the workspace
    (tmp_path / "examples").mkdir()
    shutil.copy(os.path.join(REPO, "examples", "vector_add.py"), tmp_path / "examples")
    (tmp_path / ".tritonlens").mkdir()
    with open(CAPTURES, encoding="utf-8") as f:
        lines = [ln for ln in f if '"examples/vector_add.py"' in ln]
    (tmp_path / ".tritonlens" / "captures.jsonl").write_text("".join(lines))
    caps, _ = load_captures(str(tmp_path), str(tmp_path / "examples" / "vector_add.py"))
    h200 = dict(virtual_gpu.lookup("h200").describe(), name="NVIDIA H200")
    results = []
    for index, cap in enumerate(caps, 1):
        r = bench._result(bench.Job("examples/vector_add.py", "add_kernel", cap, f"capture {index}"), h200,
                          measured=True)
        r.time_us = 600.0 if cap["launch"]["grid"] == [97] else 3.0
        results.append(r)
    bench.save(results, str(tmp_path))
    return tmp_path


def _ptx001(workspace, **settings) -> Finding:
    path = str(workspace / "examples" / "vector_add.py")
    with Checker(Settings(target="cuda:90", max_workers=1, **settings)) as c:
        report = c.check_file(path, workspace_root=str(workspace))
    found = [f for f in report.all_findings() if f.code == "PTX001"]
    assert found, [f.code for f in report.all_findings()]
    return found[0]


def test_the_users_setting_is_last_even_against_a_measured_cost(measured_workspace):
    """`rules: {PTX001: warning}` with `severityFromCost: false`: a spec that bench measured at a sliver of the file
    stays what the user asked for (it came out an info: the measured weighing ignored the user's setting)."""
    f = _ptx001(measured_workspace, rules={"PTX001": "warning"}, severity_from_cost=False)
    assert f.severity == "warning", f.message
    assert "its specs took 3.00 µs on NVIDIA H200, 0% of this file's measured GPU time" in evidence(f)
    # the measured time replaces the estimate's in the one-line message
    assert f.message.endswith(" — 3.00 µs (measured, NVIDIA H200)") and "est." not in f.message, f.message
    assert f.data["decided_by"] == "user"


def test_without_a_setting_the_measured_sliver_is_an_info_and_says_why(measured_workspace):
    f = _ptx001(measured_workspace)
    assert f.severity == "info", f.message
    assert f.data["decided_by"] == "cost"
    assert "verdict: an info: a launch this short is bound by the launch itself, whatever the code" in f.details
    # the user can still turn it up by prefix, and off
    assert _ptx001(measured_workspace, rules={"PTX": "error"}).severity == "error"


def test_order_evidence_caps_cost_and_the_user_overrides_both():
    base = Finding("k.py", 3, 1, 3, 2, "PTX001", "warning", "loads are 32-bit", data={"proposed": "warning"})
    plain = Settings(target="cuda:90")
    assert outcome(base, plain).severity == "warning" and outcome(base, plain).step == "rule"
    # a cost that makes it worth a warning does not lift it over a ceiling of evidence
    costly = replace(base, data=dict(base.data, est_share=0.6, est_gain_us=50.0, est_bound="memory-bound",
                                     est_short=False))
    limit(costly, "info", "only in autotuner trials", "trials")
    v = outcome(costly, plain)
    assert (v.severity, v.step) == ("info", "evidence") and "only in autotuner trials" in v.note
    # the user's own severity wins over both
    v = outcome(costly, Settings(target="cuda:90", rules={"PTX001": "error"}))
    assert (v.severity, v.step) == ("error", "user")
    # an info proposed by the rule, raised by a cost that is worth it, but not by an estimate the GPU contradicts
    hint = replace(costly, severity="info", data={"proposed": "info", "est_share": 0.6, "est_gain_us": 50.0,
                                                   "est_bound": "memory-bound"})
    assert outcome(hint, plain).severity == "warning"
    hint.data["est_trusted"] = False
    assert outcome(hint, plain).severity == "info"
    # off: dropped; and a second verdict does not repeat the note
    assert decide([replace(base)], Settings(target="cuda:90", rules={"PTX001": "off"})) == []
    again = decide(decide([costly], plain), plain)[0]
    assert evidence(again).count("only in autotuner trials") == 1
