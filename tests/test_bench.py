"""`tritonlens bench`: captured launches replayed and timed on a GPU; without one, static floors of the virtual GPU,
labelled as such. The GPU test replays the example kernel's captured launches for real."""
import json
import os
import shutil

import pytest
from conftest import verbose_findings

from tritonlens.gpu import bench
from tritonlens.report import cost
from tritonlens.device import virtual_gpu
from tritonlens.device.targets import has_local_gpu

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CAPTURES = os.path.join(REPO, "bench", "results", "h200-examples-captures-v2.jsonl")


@pytest.fixture()
def workspace(tmp_path):
    """examples/vector_add.py with the launches an H200 run of it captured (98,432 and 1,003 elements)."""
    (tmp_path / "examples").mkdir()
    shutil.copy(os.path.join(REPO, "examples", "vector_add.py"), tmp_path / "examples")
    (tmp_path / ".tritonlens").mkdir()
    with open(CAPTURES, encoding="utf-8") as f:
        lines = [ln for ln in f if '"examples/vector_add.py"' in ln]
    assert len(lines) >= 2
    (tmp_path / ".tritonlens" / "captures.jsonl").write_text("".join(lines))
    return tmp_path


def test_tensor_bytes_follow_shape_and_strides():
    assert cost.tensor_bytes({"shape": [256, 512], "stride": [512, 1], "dtype": "float32"}) == 256 * 512 * 4
    # a row-broadcast (stride 0) spans one row; a padded row stride spans the padding it skips over
    assert cost.tensor_bytes({"shape": [64, 128], "stride": [0, 1], "dtype": "bfloat16"}) == 128 * 2
    assert cost.tensor_bytes({"shape": [4, 100], "stride": [128, 1], "dtype": "float16"}) == (3 * 128 + 100) * 2
    assert cost.tensor_bytes({"shape": [0, 8], "stride": [8, 1], "dtype": "float32"}) == 0


def test_without_gpu_the_floor_is_static_and_says_so(workspace, capsys, monkeypatch):
    monkeypatch.setenv("TRITONLENS_NO_GPU", "1")
    monkeypatch.chdir(workspace)
    from tritonlens.device.targets import local_gpu_target

    local_gpu_target.cache_clear()
    try:
        rc = bench.main(["examples/vector_add.py::add_kernel", "--target", "cuda:90", "--gpu", "h200",
                         "--format", "json"])
    finally:
        local_gpu_target.cache_clear()
    assert rc == 0
    results = json.loads(capsys.readouterr().out)
    big = next(r for r in results if r["grid"] == [97])
    assert big["bytes"] == 3 * 98432 * 4
    h200 = virtual_gpu.lookup("h200")
    assert big["floor_us"] == pytest.approx(3 * 98432 * 4 / h200.memory_bandwidth * 1e6)
    assert big["measured"] is False and big["time_us"] is None
    assert "static floor" in big["method"] and "H200" in big["method"]
    assert not os.path.exists(workspace / ".tritonlens" / "bench.jsonl")  # nothing measured, nothing saved


def test_text_table_labels_floors(workspace, capsys, monkeypatch):
    monkeypatch.chdir(workspace)
    assert bench.main(["examples/vector_add.py", "--static", "--target", "cuda:90"]) == 0
    out = capsys.readouterr().out
    assert "virtual GPU: static floors, nothing measured" in out
    assert "≥ " in out and "add_kernel" in out


def test_no_captures_is_a_clear_error(tmp_path, capsys, monkeypatch):
    shutil.copy(os.path.join(REPO, "examples", "vector_add.py"), tmp_path)
    monkeypatch.chdir(tmp_path)
    assert bench.main(["vector_add.py", "--static"]) == 2
    assert "tritonlens capture" in capsys.readouterr().err


@pytest.mark.gpu
@pytest.mark.skipif(not has_local_gpu(), reason="needs a local NVIDIA GPU")
def test_replays_and_times_the_captured_launches(workspace, capsys, monkeypatch):
    monkeypatch.chdir(workspace)
    assert bench.main(["examples/vector_add.py::add_kernel", "--format", "json"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert results and all(r["measured"] and r["error"] is None for r in results)
    big = next(r for r in results if r["grid"] == [97])
    assert 1.0 < big["time_us"] < 1000.0
    assert 0 < big["pct_of_peak"] <= 100
    saved = cost.load_bench(str(workspace))
    assert big["identity"] in saved and saved[big["identity"]]["time_us"] == pytest.approx(big["time_us"])


@pytest.mark.gpu
@pytest.mark.skipif(not has_local_gpu(), reason="needs a local NVIDIA GPU")
def test_warm_l2_replay_is_timed_and_says_so(workspace, capsys, monkeypatch):
    """--warm-l2 times a launch with its inputs left in L2 by the previous one (as a program that just wrote them sees
    it): a small launch is no slower than the L2-cold replay, and the result names its method."""
    monkeypatch.chdir(workspace)
    assert bench.main(["examples/vector_add.py::add_kernel", "--format", "json"]) == 0
    cold = {tuple(r["grid"]): r for r in json.loads(capsys.readouterr().out)}
    assert bench.main(["examples/vector_add.py::add_kernel", "--format", "json", "--warm-l2"]) == 0
    warm = {tuple(r["grid"]): r for r in json.loads(capsys.readouterr().out)}
    assert set(warm) == set(cold)
    for grid, r in warm.items():
        assert r["measured"] and r["method"] == bench.METHOD_WARM, r
        assert r["time_us"] <= cold[grid]["time_us"] * 1.5, (r["time_us"], cold[grid]["time_us"])


def test_check_shows_measured_time_or_static_floor_per_captured_spec(workspace, capsys, monkeypatch):
    """The spec lines of `check` carry what `tritonlens bench` measured for that captured spec, and the static floor
    for one it did not; a finding names the measured time of the specs it holds in and their share of the file's.
    No GPU here: the measurements are written as bench saves them on one."""
    from tritonlens.frontend.captures import load_captures
    from tritonlens.cli import main

    monkeypatch.chdir(workspace)
    caps, _ = load_captures(str(workspace), str(workspace / "examples" / "vector_add.py"))
    big = next(c for c in caps if c["launch"]["grid"] == [97])
    small = next(c for c in caps if c["launch"]["args"]["n_elements"]["value"] == 1003)
    h200 = dict(virtual_gpu.lookup("h200").describe(), name="NVIDIA H200")
    timed = bench._result(bench.Job("examples/vector_add.py", "add_kernel", big, "capture 1"), h200, measured=True)
    timed.time_us = 5.0
    bench.save([timed], str(workspace))
    main(["check", "examples/vector_add.py", "--target", "cuda:90"])
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.startswith("  examples/vector_add.py::add_kernel")]
    assert len(lines) == 2, lines
    share = 100 * (3 * 98432 * 4 / 5e-6) / virtual_gpu.lookup("h200").memory_bandwidth
    assert any(f"5.00 µs on NVIDIA H200 (measured, L2 cold) · {share:.0f}% of HBM peak" in ln for ln in lines)
    assert any("at 3.35 TB/s (H100 SXM; a static floor, not measured)" in ln for ln in lines)
    # The narrow loads hold only in the 1,003-element spec, which nothing measured yet: no time on the finding.
    ptx = next(ln for ln in out.splitlines() if " PTX001 " in ln)
    assert "measured" not in ptx
    slow = bench._result(bench.Job("examples/vector_add.py", "add_kernel", small, "capture 2"), h200, measured=True)
    slow.time_us = 3.0
    bench.save([slow], str(workspace))
    main(["check", "examples/vector_add.py", "--target", "cuda:90", "--verbose"])
    ptx = verbose_findings(capsys.readouterr().out, " PTX001 ")[0]
    assert ptx.splitlines()[0].endswith(" — 3.00 µs (measured, NVIDIA H200)"), ptx  # the measured time in its line
    assert "its specs took 3.00 µs on NVIDIA H200, 38% of this file's measured GPU time" in ptx, ptx
    # a 1,003-element launch: the cost model puts it as bound by the launch itself, an info whatever its share
    assert " PTX001 [info] " in ptx and "a launch this short is bound by the launch itself" in ptx, ptx
    # Measured again, the big spec takes 99.5% of the file's time: the narrow loads of the small one are an info.
    timed.time_us = 600.0
    bench.save([timed], str(workspace))
    main(["check", "examples/vector_add.py", "--target", "cuda:90", "--verbose"])
    ptx = verbose_findings(capsys.readouterr().out, " PTX001 ")[0]
    # (already an info from its cost, so the measured share adds no second reason)
    assert " PTX001 [info] " in ptx and "0% of this file's measured GPU time" in ptx, ptx


def test_time_this_kernel_lens_only_where_a_gpu_and_a_replayable_launch_are(workspace, checker):
    from tritonlens.frontend.captures import load_captures
    from tritonlens.lsp.benching import BENCH, bench_lens

    path = str(workspace / "examples" / "vector_add.py")
    (kr,) = checker.check_file(path, workspace_root=str(workspace)).kernels
    caps, _ = load_captures(str(workspace), path)
    lens = bench_lens("file:///k.py", kr, caps, gpu_ready=True)
    assert lens.command.command == BENCH and lens.command.title.startswith("Time this kernel")
    assert lens.command.arguments == [{"uri": "file:///k.py", "kernel": "add_kernel"}]
    assert bench_lens("file:///k.py", kr, caps, gpu_ready=True, running=True).command.title.endswith("to cancel)")
    assert bench_lens("file:///k.py", kr, caps, gpu_ready=False) is None  # no GPU here: nothing to time
    no_launch = [{k: v for k, v in c.items() if k != "launch"} for c in caps]
    assert bench_lens("file:///k.py", kr, no_launch, gpu_ready=True) is None
