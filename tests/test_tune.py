"""`tritonlens tune`: candidates made from the findings' causes and proven on the CPU (the tutorial matmul with the
autotuner's choices and times captured on an H200, tests/data/autotune), the verdicts drawn from what the GPU
measured at the real launch, and `check --fix` writing only what was measured faster. The trials themselves run on a
GPU (the last test, skipped without one)."""
import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from tritonlens.cli import main as cli_main
from tritonlens.cli import tune
from tritonlens.device.targets import has_local_gpu
from tritonlens.fixes.measured import verdicts

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
FIXTURE = os.path.join(HERE, "data", "autotune", "h200-captures.jsonl")
KERNEL = os.path.join("bench", "autotune", "tutorial_matmul.py")
TILES = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K")


def _workspace(tmp_path) -> str:
    (tmp_path / ".tritonlens").mkdir()
    (tmp_path / "bench" / "autotune").mkdir(parents=True)
    shutil.copy(os.path.join(REPO, KERNEL), tmp_path / KERNEL)
    shutil.copy(FIXTURE, tmp_path / ".tritonlens" / "captures.jsonl")
    return str(tmp_path)


def _plan(root: str):
    return tune.plan_targets(root, argparse.Namespace(kernels=2, per_kernel=6, target="cuda:90"))


def test_a_decode_tile_comes_with_its_other_dimensions_rebalanced_and_compiled(tmp_path):
    root = _workspace(tmp_path)
    targets, chosen = _plan(root)
    assert [t["kernel"] for t in targets] == ["matmul_kernel", "matmul_kernel"]  # the prefill key, the decode key
    target = next(t for t in targets if any(c["constants"].get("BLOCK_SIZE_M") == 16 for c in t["candidates"]))
    cands = target["candidates"]
    assert 2 <= len(cands) <= 6
    # the launch carrying the time is the decode launch (M = 16), whose 128-row tile LAUNCH004 names
    fits = [c for c in cands if c["constants"].get("BLOCK_SIZE_M") == 16]
    assert fits, cands
    assert any(len(c["constants"]) > 1 for c in fits), "only the one dimension changed"
    listed = {tuple(sorted(c["kwargs"].items())) for c in _literal_configs(root)}
    for c in cands:
        full = {**{k: target["constants"][k] for k in TILES + ("GROUP_SIZE_M",)}, **c["constants"]}
        assert tuple(sorted(full.items())) not in listed or c["options"], "a config the list already has"
    why = chosen[target["id"]]["why"]
    assert all(why[c["label"]][1] is None or why[c["label"]][1][0] in ("LAUNCH004", "LAUNCH002", "SASS001")
               for c in cands)


def _literal_configs(root: str):
    from tritonlens.frontend.discover import discover

    path = os.path.join(root, KERNEL)
    found = discover(path, open(path, encoding="utf-8").read(), root)
    kernels = found.kernels
    k = next(k for k in kernels if k.name == "matmul_kernel")
    return [{"kwargs": c.get("kwargs") or {}} for c in k.autotune_configs]


def _events(target, label, base, time_us, same=True, run=0, key="k1"):
    return [{"event": "baseline", "target": target, "key": key, "times_us": base, "run": run},
            {"event": "result", "target": target, "label": label, "key": key, "time_us": time_us, "same": same,
             "run": run}]


def test_a_candidate_is_kept_only_when_faster_than_the_noise_with_the_same_outputs():
    targets = [{"id": "t", "candidates": [{"label": "a"}, {"label": "b"}, {"label": "c"}, {"label": "d"}]}]
    events = (_events("t", "a", [100.0, 101.0, 102.0], 80.0) + _events("t", "b", [100.0, 101.0, 102.0], 99.5)[1:] +
              _events("t", "c", [100.0], 70.0, same=False)[1:] +
              [{"event": "try", "target": "t", "label": "d", "key": "k1"}, {"event": "fault", "label": "d"}])
    got = {v.label: v for v in verdicts(targets, events)}
    assert got["a"].verdict == "faster" and round(got["a"].speedup, 2) == 1.26
    assert got["b"].verdict == "no faster"  # 101 → 99.5: inside the unchanged launch's 2% spread
    assert got["c"].verdict == "other outputs"
    assert got["d"].verdict == "faulted"


def test_faster_at_one_launch_and_slower_at_another_is_not_kept():
    targets = [{"id": "t", "candidates": [{"label": "a"}]}]
    events = _events("t", "a", [100.0, 100.5, 101.0], 70.0) + _events("t", "a", [50.0, 50.2, 50.4], 60.0, key="k2")
    (v,) = verdicts(targets, events)
    assert v.verdict == "slower" and v.launches == 2


def _check(root, capsys, *extra) -> str:
    """`tritonlens check KERNEL` run from the workspace, as a user would; what it printed."""
    cwd = os.getcwd()
    os.chdir(root)
    try:
        cli_main(["check", KERNEL, "--target", "cuda:90", *extra])
    finally:
        os.chdir(cwd)
    return capsys.readouterr().out


def _record(root, targets, chosen, label, after_us):
    tid = targets[0]["id"]
    events = _events(tid, label, [100.0, 100.4, 100.8], after_us)
    return tune.record(root, targets, chosen, events)


def test_check_fix_writes_the_config_tune_measured_faster(tmp_path, capsys):
    root = _workspace(tmp_path)
    targets, chosen = _plan(root)
    target = next(t for t in targets if any(c["constants"].get("BLOCK_SIZE_M") == 16 for c in t["candidates"]))
    best = next(c for c in target["candidates"] if c["constants"].get("BLOCK_SIZE_M") == 16)
    rows = _record(root, [target], chosen, best["label"], 79.0)
    assert [r["verdict"] for r in rows if r["proposal"] == best["label"]] == ["faster"]
    before = open(os.path.join(root, KERNEL), encoding="utf-8").read()
    out = _check(root, capsys, "--fix")
    after = open(os.path.join(root, KERNEL), encoding="utf-8").read()
    assert after != before, out
    added = after.count("triton.Config(") - before.count("triton.Config(")
    assert added == 1
    new = after[after.rindex("triton.Config("):]
    for k, v in {**target["constants"], **best["constants"]}.items():
        if k in TILES:
            assert f'"{k}": {v}' in new
    assert "100.4 → 79.0 µs" in out or "1.27×" in out


def test_check_does_not_offer_what_tune_measured_no_faster(tmp_path, capsys):
    root = _workspace(tmp_path)
    targets, chosen = _plan(root)
    for t in targets:
        for c in t["candidates"]:
            _record(root, [dict(t, candidates=[c])], chosen, c["label"], 130.0)
    before = open(os.path.join(root, KERNEL), encoding="utf-8").read()
    launch004 = [f for f in json.loads(_check(root, capsys, "--format", "json")) if f["code"] == "LAUNCH004"]
    _check(root, capsys, "--fix")
    assert launch004 and any("no faster at the real launch" in d and "withheld" in d for d in launch004[0]["details"])
    after = open(os.path.join(root, KERNEL), encoding="utf-8").read()
    timed = {frozenset(c["label"].split(", ")) for t in targets for c in t["candidates"]}
    added = "".join(line[1:] for line in difflib.ndiff(before.splitlines(True), after.splitlines(True))
                    if line.startswith("+ "))
    for cfg in re.findall(r"\{([^}]*)\},\s*num_stages=(\d+), num_warps=(\d+)", added):
        parts = {p.replace('"', "").replace(": ", "=") for p in cfg[0].split(", ")}
        parts |= {f"num_warps={cfg[2]}", f"num_stages={cfg[1]}"}
        assert frozenset(parts) not in timed, "a config tune measured no faster was written"


@pytest.mark.gpu
@pytest.mark.skipif(not has_local_gpu(), reason="needs a local NVIDIA GPU")
def test_tune_times_candidates_at_the_real_launch(tmp_path):
    root = str(tmp_path)
    shutil.copy(os.path.join(REPO, KERNEL), tmp_path / "tutorial_matmul.py")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.join(REPO, "server"),
                                                         os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "tritonlens", "tune", "--budget", "180", "--kernels", "1", "--",
                           sys.executable, "tutorial_matmul.py"], cwd=root, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in open(tmp_path / ".tritonlens" / "proposals.jsonl")]
    assert rows and all(r["source"] == "tune" and r["chosen_us"] > 0 and r["time_us"] > 0 for r in rows)
    assert all(r["verdict"] in ("faster", "no faster", "slower", "other outputs") for r in rows)


def test_a_faster_change_no_finding_carries_is_tune001_with_its_numbers_and_fix(tmp_path, capsys):
    root = _workspace(tmp_path)
    targets, chosen = _plan(root)
    target = targets[0]  # the prefill launch: no finding there, only the option neighbours
    plain = next(c for c in target["candidates"] if chosen[target["id"]]["why"][c["label"]][1] is None)
    _record(root, [dict(target, candidates=[plain])], chosen, plain["label"], 90.0)
    before = open(os.path.join(root, KERNEL), encoding="utf-8").read()
    found = json.loads(_check(root, capsys, "--format", "json"))
    _check(root, capsys, "--fix")
    tuned = [f for f in found if f["code"] == "TUNE001"]
    assert len(tuned) == 1 and tuned[0]["severity"] == "warning"
    assert "100.4 → 90.0 µs (1.12×" in tuned[0]["message"] and len(tuned[0]["message"]) <= 120
    assert any(plain["label"] in d for d in tuned[0]["details"])
    after = open(os.path.join(root, KERNEL), encoding="utf-8").read()
    assert after.count("triton.Config(") == before.count("triton.Config(") + 1
