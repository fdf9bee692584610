"""On a GPU: a config tritonlens proposes for the tutorial matmul's decode launch (LAUNCH004, BLOCK_SIZE_M = 16 from
the H200 capture in tests/data/autotune) is timed on that launch against the autotuner's chosen config, with the
same inputs: bench/autotune/time_proposals.py launches both, compares every tensor and keeps a proposal only when it
computes the same and is faster."""
import json
import os
import shutil
import sys

import pytest

from tritonlens.device.targets import has_local_gpu

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
FIXTURE = os.path.join(HERE, "data", "autotune", "h200-captures.jsonl")


@pytest.mark.gpu
@pytest.mark.skipif(not has_local_gpu(), reason="needs a local NVIDIA GPU")
def test_a_proposed_config_is_timed_on_the_captured_launch(tmp_path):
    (tmp_path / ".tritonlens").mkdir()
    (tmp_path / "bench" / "autotune").mkdir(parents=True)
    shutil.copy(os.path.join(REPO, "bench", "autotune", "tutorial_matmul.py"), tmp_path / "bench" / "autotune")
    shutil.copy(FIXTURE, tmp_path / ".tritonlens" / "captures.jsonl")
    sys.path.insert(0, os.path.join(REPO, "bench", "autotune"))
    try:
        import time_proposals
    finally:
        sys.path.pop(0)
    out = tmp_path / "proposals.jsonl"
    assert time_proposals.main([str(tmp_path), "bench/autotune/tutorial_matmul.py", "tutorial_matmul",
                                "-o", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    timed = [r for r in rows if r.get("verdict") in ("offered", "withheld")]
    assert timed, rows
    for r in timed:
        assert r["proposal"].startswith("BLOCK_SIZE_M=16") and r["proven_on_cpu"]
        assert r["outputs_close"], r  # the same product, whichever tile computes it
        assert r["time_us"] > 0 and r["chosen_us"] > 0
        assert (r["verdict"] == "offered") == (r["outputs_close"] and r["time_us"] < r["chosen_us"])
    # the captured decode grid (M = 16 in one row of tiles) holds every 16-row proposal
    assert all(r["grid"][0] == 8192 // int(r["proposal"].split("BLOCK_SIZE_N=")[1].split(",")[0]) for r in timed)
