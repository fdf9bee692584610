"""The examples' driver (`examples/driver.py`: one GPT-2-small-sized layer on CPU tensors, full and ragged batches)
captured with `tritonlens capture --no-gpu`, then `check` compiling exactly the specs that capture recorded. Nothing
is mocked: the driver runs with torch CPU tensors and the real Triton, whose launch path --no-gpu replaces.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import require_module

from tritonlens.pipeline import Checker
from tritonlens.settings import Settings

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(os.path.dirname(HERE), "examples")

require_module("torch", "the driver makes torch CPU tensors (pip install -e '.[test]')")
pytestmark = pytest.mark.slow


def _key(kernel: str, signature: dict, constants: dict, attrs: dict, options: dict) -> str:
    div = {k: 16 for k, v in attrs.items() if isinstance(v, dict) and v.get("divisibility") == 16}
    return json.dumps([kernel, signature, constants, div, options.get("num_warps"), options.get("num_stages")],
                      sort_keys=True)


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    ws = tmp_path_factory.mktemp("ws")
    shutil.copytree(EXAMPLES, ws / "examples", ignore=shutil.ignore_patterns("bad", "__pycache__"))
    env = {**os.environ}
    env.pop("DEVICE", None)
    proc = subprocess.run([sys.executable, "-m", "tritonlens", "capture", "--no-gpu", "--", sys.executable,
                           "examples/driver.py"], cwd=ws, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "launches recorded, kernels not run" in proc.stdout
    lines = (ws / ".tritonlens" / "captures.jsonl").read_text().splitlines()
    records = [r for r in map(json.loads, filter(str.strip, lines)) if r.get("record", "compile") == "compile"]
    return ws, records


def test_driver_records_both_specializations_of_a_real_layer(captured):
    _, records = captured
    assert {r["kernel"] for r in records} == {"add_kernel", "softmax_kernel", "layer_norm_fwd", "matmul_kernel",
                                              "attn_fwd"}
    assert all(r["no_gpu"] and r["target"] == "cuda:90" for r in records)
    # the ragged batch (1000 tokens): seqlen, M and the softmax's row length lose divisibility by 16
    attn = [r for r in records if r["kernel"] == "attn_fwd"]
    assert sorted("seqlen" in r["attrs"] for r in attn) == [False, True]
    mm = [r for r in records if r["kernel"] == "matmul_kernel"]
    assert all(r["autotune"] == "trial" for r in mm)  # without a GPU nothing is chosen between two configs
    assert sorted({("M" in r["attrs"], r["constants"]["ACTIVATION"], r["constants"]["BLOCK_M"]) for r in mm}) == [
        (False, "", 64), (False, "", 128), (False, "leaky_relu", 64), (False, "leaky_relu", 128),
        (True, "", 64), (True, "", 128), (True, "leaky_relu", 64), (True, "leaky_relu", 128)]


def test_check_compiles_exactly_the_captured_specs(captured):
    ws, records = captured
    files = sorted(glob.glob(str(ws / "examples" / "*.py")))
    settings = Settings(target="cuda:90", max_workers=2, compile_timeout=300)
    settings.all_captures = True
    with Checker(settings) as checker:
        reports = list(checker.check_files(files))
    compiled = []
    for report in reports:
        for kr in report.kernels:
            assert kr.captures["compiled"] == kr.captures["captured"]
            for cs in kr.compiled:
                assert cs.spec.label.startswith("capture"), (kr.kernel.name, cs.spec.label)
                assert cs.artifacts is not None and cs.artifacts.ok, (kr.kernel.name, cs.artifacts.error)
                compiled.append(_key(kr.kernel.name, cs.spec.signature, cs.spec.constants, cs.spec.attrs,
                                     cs.spec.options))
    assert sorted(compiled) == sorted(_key(r["kernel"], r["signature"], r["constants"], r["attrs"], r["options"])
                                      for r in records)
    assert not [f for r in reports for f in r.all_findings() if f.code == "SRC003"]  # every capture still fits
