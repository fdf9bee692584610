"""profile: ncu CSV parsing, metric choice, PROF001 joining, the no-GPU path. No GPU here: ncu's output is given as
text in the format ncu 2025.3 writes with `--csv --print-units base` (checked on an H200), and findings are built by
hand — nothing is measured in these tests (see test_gpu_capture_profile.py for the real run)."""
import json

import pytest

from tritonlens.gpu import profile
from tritonlens.device import targets
from tritonlens.model import Artifacts, CompiledSpec, Finding, KernelInfo, KernelReport, Resources, Spec

NCU_CSV = '''==PROF== Connected to process 4242 (/usr/bin/python3.12)
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","python3.12","127.0.0.1","tile_spill","1","7","(32, 1, 1)","(1024, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","ns","265,120"
"0","4242","python3.12","127.0.0.1","tile_spill","1","7","(32, 1, 1)","(1024, 1, 1)","0","9.0","Command line profiler metrics","launch__registers_per_thread","register/thread","255"
"0","4242","python3.12","127.0.0.1","tile_spill","1","7","(32, 1, 1)","(1024, 1, 1)","0","9.0","Command line profiler metrics","smsp__sass_inst_executed_op_local_ld.sum","inst","2,323,456"
"0","4242","python3.12","127.0.0.1","tile_spill","1","7","(32, 1, 1)","(1024, 1, 1)","0","9.0","Command line profiler metrics","smsp__sass_inst_executed_op_local_st.sum","inst","1,809,408"
"1","4242","python3.12","127.0.0.1","tile_spill","1","7","(32, 1, 1)","(1024, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","ns","264,880"
"1","4242","python3.12","127.0.0.1","tile_spill","1","7","(32, 1, 1)","(1024, 1, 1)","0","9.0","Command line profiler metrics","smsp__sass_inst_executed_op_local_ld.sum","inst","2,323,456"
"2","4242","python3.12","127.0.0.1","other_kernel","1","7","(128, 1, 1)","(8, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","ns","1,000"
==PROF== Disconnected from process 4242
'''


def test_parse_ncu_csv_means_over_launches_of_the_kernel():
    metrics, launches = profile.parse_ncu_csv(NCU_CSV, {k: v[0] for k, v in profile.METRICS.items()}, "tile_spill")
    assert launches == 2
    assert metrics["duration_ns"] == pytest.approx(265000.0)
    assert metrics["local_loads"] == 2323456 and metrics["local_stores"] == 1809408
    assert metrics["registers_per_thread"] == 255


def test_parse_ncu_csv_without_a_report():
    assert profile.parse_ncu_csv("==PROF== No kernels were profiled.\n") == ({}, 0)


def test_choose_metrics_uses_names_this_ncu_knows():
    known = {"smsp__sass_inst_executed_op_local_ld", "smsp__average_warp_latency_issue_stalled_barrier",
             "gpu__time_duration"}
    chosen = profile.choose_metrics(known)
    assert chosen["local_loads"] == "smsp__sass_inst_executed_op_local_ld.sum"
    assert chosen["barrier_stall_ratio"] == "smsp__average_warp_latency_issue_stalled_barrier.ratio"
    assert "dram_throughput_pct" not in chosen and chosen["registers_per_thread"] == "launch__registers_per_thread"
    assert len(profile.choose_metrics(None)) == len(profile.METRICS)


def test_ncu_runs_without_clock_control():
    cmd = profile.ncu_command("ncu", "k", ["gpu__time_duration.sum"], "/tmp/log.csv", ["python", "x.py"])
    assert cmd[1:3] == ["--clock-control", "none"] and cmd[-2:] == ["python", "x.py"]
    assert "--csv" in cmd and cmd[cmd.index("--kernel-name") + 1] == "k"


def _report(findings, spilled=0):
    k = KernelInfo(name="tile_spill", func_name="tile_spill", path="/w/k.py", def_line=13, decorator_line=12,
                   end_line=24, col=1)
    spec = Spec(signature={}, constants={}, attrs={}, options={"num_warps": 1}, target="cuda:90")
    art = Artifacts(kernel="tile_spill", spec_key=spec.key(), target="cuda:90",
                    resources=Resources(registers=255, spill_stores=spilled, spill_loads=0))
    return KernelReport(k, compiled=[CompiledSpec(spec, art)], findings=findings)


def _result(**metrics):
    return profile.ProfileResult("tile_spill", metrics=metrics, launches=1)


def test_prof001_confirms_a_spill_finding_on_its_line_with_its_severity():
    sass = Finding("/w/k.py", 17, 5, 17, 30, "SASS001", "warning", "spill", kernel="tile_spill", target="cuda:90")
    out = profile.confirm_findings(_report([sass], spilled=8000),
                                   _result(local_loads=3085.0, local_stores=1200.0, duration_ns=5000.0))
    conf = [f for f in out if f.data.get("confirms") == "SASS001"]
    assert len(conf) == 1 and conf[0].code == "PROF001" and conf[0].line == 17 and conf[0].severity == "warning"
    assert conf[0].message.startswith("SASS001 at line 17 confirmed: 3,085 local-load")
    summary = [f for f in out if f.line == 13]
    assert len(summary) == 1 and "5.0 µs" in summary[0].message and summary[0].target == "cuda:90"


def test_prof001_without_local_traffic_confirms_nothing():
    sass = Finding("/w/k.py", 17, 5, 17, 30, "SASS001", "warning", "spill", kernel="tile_spill")
    out = profile.confirm_findings(_report([sass]), _result(local_loads=0.0, local_stores=0.0))
    assert [f.severity for f in out] == ["info"]  # only the kernel's numbers


def test_spill_from_ptxas_is_confirmed_when_no_sass001_finding_exists():
    out = profile.confirm_findings(_report([], spilled=16728), _result(local_loads=10.0, local_stores=5.0))
    assert any("register spill (16,728 bytes per ptxas) confirmed" in f.message for f in out)


def test_replay_needs_a_recorded_launch():
    cap = {"signature": {"x": "*fp32", "n": "i32", "B": "constexpr"}, "constants": {"B": 4}}
    assert "no launch" in profile.replay_capture(cap)
    cap["launch"] = {"grid": [4], "args": {"x": {"tensor": {"shape": [4], "stride": [1], "dtype": "float32"}}}}
    assert "n" in profile.replay_capture(cap)
    cap["launch"]["args"]["n"] = {"value": 4}
    assert profile.replay_capture(cap) is None


def test_without_a_gpu_profile_says_so_and_exits_2(monkeypatch, capsys):
    monkeypatch.setenv("TRITONLENS_NO_GPU", "1")
    targets.local_gpu_target.cache_clear()
    try:
        assert profile.main(["--kernel", "k", "--", "python", "x.py"]) == 2
        assert "no GPU" in capsys.readouterr().err
        result = profile.profile_kernel(None, "k", command=["python", "x.py"])
        assert not result.ok and "no GPU" in result.error
        assert targets.resolve_target("auto") == "cuda:90" and not targets.has_local_gpu()
    finally:
        targets.local_gpu_target.cache_clear()


def test_visible_gpu_follows_cuda_visible_devices():
    smi = "0, GPU-aaaa1111-2222-3333, 9.0\n1, GPU-bbbb1111-2222-3333, 8.0\n"
    assert targets._visible_cuda_cap(smi, None) == "9.0"
    assert targets._visible_cuda_cap(smi, "1,0") == "8.0"
    assert targets._visible_cuda_cap(smi, "GPU-bbbb1111") == "8.0"
    assert targets._visible_cuda_cap(smi, "") is None
    assert targets._visible_cuda_cap("", None) is None


def test_result_is_json():
    assert json.loads(json.dumps(_result(duration_ns=1.0).to_json()))["metrics"] == {"duration_ns": 1.0}
