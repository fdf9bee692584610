"""Advice judged like with like: an autotuner trial counts against LAUNCH004's smaller tile only when it differs from
the chosen config in that tile dimension alone. The tutorial matmul's decode key as the H200 recorded it
(tests/data/autotune/h200-captures.jsonl: chosen 32×64×32, 2 warps, 5 stages, 65.3 µs), with the three 16-row configs
the same H200 timed on that launch (bench/results/autotune/proposals.jsonl) added to the key's trials: 16×64 with the
chosen N, K, warps and stages (67.2 µs), and 16×128 / 16×256 with 4 warps and 4 stages (78.2, 88.1 µs). The kernel is
compiled for real on the CPU; the GPU exists only in those recorded times."""
import json
import os

from test_tuning import FIXTURE, _workspace

from tritonlens.checks.tuning import KeyTuning, MeasuredAdvice, candidate_parts, measured_advice
from tritonlens.pipeline import Checker
from tritonlens.settings import Settings
from conftest import evidence

LIKE = ({"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, 2, 5, 67.17, [128])
UNLIKE = [({"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, 4, 4, 78.18, [64]),
          ({"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, 4, 4, 88.06, [32])]


def _with_trials(ws, trials: list) -> None:
    """The capture with `trials` appended to the decode key's timed configs (its choice unchanged)."""
    path = ws / ".tritonlens" / "captures.jsonl"
    out = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("record") == "tuning" and rec["key"][0] == 16:
            rec["configs"] += [{"kwargs": kw, "num_warps": w, "num_stages": s, "num_ctas": 1, "time_us": t, "grid": g}
                               for kw, w, s, t, g in trials]
        out.append(json.dumps(rec))
    path.write_text("\n".join(out) + "\n")


def _tile_finding(ws):
    with Checker(Settings(target="cuda:90", gpu="h200")) as checker:
        kr = checker.check_file(str(ws / "bench" / "autotune" / "tutorial_matmul.py")).kernels[0]
    return next(f for f in kr.findings if f.code == "LAUNCH004")


def test_unlike_trials_do_not_judge_the_smaller_tile(tmp_path):
    """Two 16-row trials, both slower, both with another N, warps and stages: they say nothing of the 16-row tile with
    the chosen N and K. LAUNCH004 stays a warning, its message is the rule's, and its data says why the trials were
    not used."""
    ws = _workspace(tmp_path)
    _with_trials(ws, UNLIKE)
    tile = _tile_finding(ws)
    advice = MeasuredAdvice.from_data(tile.data)
    assert advice.outcome == "none alike" and advice.unlike == 2 and advice.measured == 0
    assert tile.severity == "warning", tile.message
    assert "slower" not in tile.message and "not judged" not in tile.message, tile.message
    text = tile.data["measured_advice"]["text"]
    assert "it timed no config that differs from the chosen one only in BLOCK_SIZE_M" in text, text
    assert "the 2 configs with BLOCK_SIZE_M ≤ 16 it timed differ in other values too" in text, text


def test_a_like_for_like_slower_trial_still_judges_it(tmp_path):
    """The 16×64 trial with the chosen N, K, warps and stages measured slower (67.2 against 65.3 µs): the advice is
    contradicted by a trial of itself — LAUNCH004 is an info and says so; the unlike trials are counted apart."""
    ws = _workspace(tmp_path)
    _with_trials(ws, [LIKE, *UNLIKE])
    tile = _tile_finding(ws)
    advice = MeasuredAdvice.from_data(tile.data)
    assert advice.outcome == "slower" and advice.measured == 1 and advice.unlike == 2
    assert tile.message.endswith("; the autotuner measured that way slower"), tile.message
    assert tile.severity == "info", tile.message
    assert ("the one config with BLOCK_SIZE_M ≤ 16 was slower — best 67.2 µs (BLOCK_SIZE_M=16, BLOCK_SIZE_N=64, "
            "BLOCK_SIZE_K=32, GROUP_SIZE_M=8, num_warps=2, num_stages=5) vs 65.3 µs chosen") in evidence(tile), \
        evidence(tile)


def test_a_proposed_config_counts_though_it_changes_more():
    """A config proposed for the finding (its labels, as the fixes write them) is judged by its own trial even when it
    re-balances other dimensions; other unlike trials still are not."""
    with open(FIXTURE, encoding="utf-8") as f:
        rec = next(r for r in map(json.loads, f) if r.get("record") == "tuning" and r["key"][0] == 16)
    rec["configs"] += [{"kwargs": kw, "num_warps": w, "num_stages": s, "time_us": t, "grid": g}
                       for kw, w, s, t, g in UNLIKE]
    decode = KeyTuning.from_record(rec)
    assert measured_advice(decode, "smaller:BLOCK_SIZE_M:16").outcome == "none alike"
    proposed = candidate_parts(["BLOCK_SIZE_M=16, BLOCK_SIZE_N=128, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, num_warps=4, "
                                "num_stages=4"])
    advice = measured_advice(decode, "smaller:BLOCK_SIZE_M:16", proposed)
    assert advice.outcome == "slower" and advice.measured == 1 and advice.best_us == 78.18 and advice.unlike == 1
