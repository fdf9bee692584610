"""Captures keep the launch distribution, and the launch rules, the specs and bench use it.

A program launches one kernel at a rare edge shape once and at a big shape many times (and, in a second compile,
the other way round); `tritonlens capture --no-gpu` records it with the real Triton on this CPU (nothing mocked: the
program runs with torch CPU tensors, the kernels are specialized for cuda:90 and not run). The capture file then
lists each distinct launch with its count, `Spec.launch_records` holds them most-launched first, and LAUNCH001 /
LAUNCH002 weigh their findings by the launches that run: a finding of the one edge launch is milder and says so, one
of the launch that runs most stays a warning. A file written before distributions (no `launch_counts`) still reads,
and the rules then behave as before. The GPU tests (`capture --time`, bench against the real run) run on a GPU only.
These are the rules' own severities (severity_from_cost off): what a launch's cost does to them, test_costmodel.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import require_module, evidence
from test_checks_launch import KERNELS

from tritonlens.device import virtual_gpu
from tritonlens.device.targets import has_local_gpu
from tritonlens.frontend.captures import fold_captures, load_captures
from tritonlens.gpu import bench, capture
from tritonlens.model import clean_launch, merge_launch_records
from tritonlens.pipeline import Checker
from tritonlens.settings import Settings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

torch = require_module("torch", "the programs make torch tensors (pip install -e '.[test]')")

# row_scale and tiled_add (test_checks_launch's kernels) with launchers
ROWS = KERNELS + '''

import torch  # noqa: E402


def scale(x, block):
    y = torch.empty_like(x)
    row_scale[(x.shape[0],)](x, y, x.stride(0), x.shape[1], BLOCK_SIZE=block)
    return y


def add_one(x, block):
    tiled_add[(triton.cdiv(x.numel(), block),)](x, x.numel(), BLOCK=block)
'''

# row_scale: one validation launch of 1 row × 160 columns in 256 lanes (37% of the lanes idle, 1 program), then 50
# launches of 2112 rows × 256 (every lane used; 2112 = 132 SMs × 16 programs each: full waves). tiled_add: 20 launches
# of 1,040 elements in blocks of 1024 (the shape that runs most is the wasteful one: 2 programs, half the lanes idle),
# one of 2112 blocks' worth. Every stride and size is a multiple of 16, so each kernel is one compile.
PROGRAM = '''
import sys, torch
sys.path.insert(0, {ws!r})
import rows
rows.scale(torch.rand(1, 160), 256)
big = torch.rand(2112, 256)
for _ in range(50):
    rows.scale(big, 256)
small = torch.rand(1040)
for _ in range(20):
    rows.add_one(small, 1024)
rows.add_one(torch.rand(2112 * 1024), 1024)
'''


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """The workspace (rows.py, .tritonlens/captures.jsonl) of one `capture --no-gpu` run of PROGRAM."""
    ws = tmp_path_factory.mktemp("dist")
    (ws / "rows.py").write_text(ROWS)
    (ws / "driver.py").write_text(PROGRAM.format(ws=str(ws)))
    proc = subprocess.run([sys.executable, "-m", "tritonlens.gpu.capture", "--no-gpu", "--workspace", str(ws), "--",
                           sys.executable, str(ws / "driver.py")], capture_output=True, text=True, timeout=300,
                          cwd=str(ws))
    assert proc.returncode == 0, proc.stderr
    assert "2 new compile(s)" in proc.stderr, proc.stderr
    return ws


def _lines(ws):
    return [json.loads(ln) for ln in (ws / ".tritonlens" / "captures.jsonl").read_text().splitlines() if ln.strip()]


def _shape(item):
    launch = item["launch"] if "launch" in item else item
    args = launch["args"]
    return launch["grid"], (args.get("n_cols") or args.get("n_elements"))["value"], item["count"]


def test_the_capture_file_holds_each_distinct_launch_with_its_count(captured):
    summed: dict[str, dict] = {}  # kernel -> (grid, size) -> count, over the summary lines (readers sum them)
    totals: dict[str, int] = {}
    for line in _lines(captured):
        if line.get("record") != "summary":
            continue
        kernel = line["kernel"]
        totals[kernel] = totals.get(kernel, 0) + line["launches"]
        assert sum(c["count"] for c in line["launch_counts"]) == line["launches"]  # every launch is in a shape here
        for item in line["launch_counts"]:
            grid, size, count = _shape(item)
            mine = summed.setdefault(kernel, {})
            mine[(tuple(grid), size)] = mine.get((tuple(grid), size), 0) + count
            tensor = item["launch"]["args"]["x_ptr"]["tensor"]
            assert tensor["dtype"] == "float32" and tensor["align16"]
            if kernel == "row_scale":
                assert tensor["shape"] == [grid[0], size] and tensor["stride"] == [size, 1]
    assert totals == {"row_scale": 51, "tiled_add": 21}
    assert summed == {"row_scale": {((1,), 160): 1, ((2112,), 256): 50},
                      "tiled_add": {((2,), 1040): 20, ((2112,), 2112 * 1024): 1}}


def test_specs_hold_the_launches_most_launched_first(captured):
    caps, problems = load_captures(str(captured), str(captured / "rows.py"))
    assert not problems
    folded = next(c for c in caps if c["kernel"] == "row_scale")
    assert [_shape(c) for c in folded["launch_counts"]] == [([2112], 256, 50), ([1], 160, 1)]
    assert folded["launch"]["grid"] == [2112]  # what a replay makes: the most launched, not the first
    assert fold_captures(caps) == caps  # folding again changes nothing

    with Checker(Settings(target="cuda:90", max_workers=1, severity_from_cost=False)) as checker:
        report = checker.check_file(str(captured / "rows.py"))
    specs = {kr.kernel.name: cs.spec for kr in report.kernels for cs in kr.compiled}
    assert specs["row_scale"].launches == 51 and specs["tiled_add"].launches == 21
    assert [(r["grid"], r["count"]) for r in specs["row_scale"].launch_records] == [([2112], 50), ([1], 1)]
    assert [(r["grid"], r["count"]) for r in specs["tiled_add"].launch_records] == [([2], 20), ([2112], 1)]


@pytest.fixture(scope="module")
def findings(captured):
    with Checker(Settings(target="cuda:90", max_workers=1, severity_from_cost=False)) as checker:
        report = checker.check_file(str(captured / "rows.py"))
    found = report.all_findings()
    assert not [f for f in found if f.code == "SRC001"]
    return {(f.code, f.kernel): f for f in found if f.code.startswith("LAUNCH")}


def test_a_rare_edge_launch_is_milder_and_says_so(findings):
    lanes = findings[("LAUNCH001", "row_scale")]  # the one 1 × 160 launch of 256 lanes
    assert lanes.severity == "info", lanes.message
    assert "n_cols = 160 of BLOCK_SIZE = 256: 38% of each program's lanes idle" in evidence(lanes), evidence(lanes)
    assert "in 1 of 51 counted launches (rare: under 10% of this spec's launches" in evidence(lanes), evidence(lanes)
    assert lanes.data["count_over"] == 1 and lanes.data["counted"] == 51 and lanes.data["rare"] is True
    grid = findings[("LAUNCH002", "row_scale")]  # its 1 program on 132 SMs
    assert grid.severity == "hint", grid.message  # LAUNCH002 is an info by default: one step milder
    assert grid.message.startswith("1 program on 132 SMs"), grid.message
    assert "in 1 of 51 counted launches (rare" in evidence(grid), evidence(grid)


def test_the_launch_that_runs_most_keeps_its_weight(findings):
    lanes = findings[("LAUNCH001", "tiled_add")]  # 20 launches of 1,040 elements over 2 × 1024 lanes
    assert lanes.severity == "warning", lanes.message
    assert "n_elements = 1040 over 2 programs × BLOCK = 1024 (2048 lanes): 49% of the lanes idle" in evidence(lanes)
    assert "in 20 of 21 counted launches —" in evidence(lanes) and "rare" not in evidence(lanes), evidence(lanes)
    grid = findings[("LAUNCH002", "tiled_add")]
    assert grid.severity == "info" and grid.message.startswith("2 programs on 132 SMs"), grid.message
    assert "in 20 of 21 counted launches —" in evidence(grid), evidence(grid)
    assert sorted(findings) == [("LAUNCH001", "row_scale"), ("LAUNCH001", "tiled_add"), ("LAUNCH002", "row_scale"),
                                ("LAUNCH002", "tiled_add")]


def test_a_file_without_distributions_reads_and_weighs_as_before(captured, tmp_path):
    """The same run as an older tritonlens wrote it: summary lines without `launch_counts`. Each spec then has its
    first launch only, uncounted; the rules judge it as one captured launch."""
    ws = tmp_path
    (ws / "rows.py").write_text(ROWS)
    (ws / ".tritonlens").mkdir()
    old = [{k: v for k, v in line.items() if k != "launch_counts"} for line in _lines(captured)]
    (ws / ".tritonlens" / "captures.jsonl").write_text("".join(json.dumps(x) + "\n" for x in old))
    caps, problems = load_captures(str(ws), str(ws / "rows.py"))
    assert not problems and all("launch_counts" not in c for c in caps)
    assert sorted(c["launches"] for c in caps) == [21, 51]
    with Checker(Settings(target="cuda:90", max_workers=1, severity_from_cost=False)) as checker:
        report = checker.check_file(str(ws / "rows.py"))
    spec = next(cs.spec for kr in report.kernels for cs in kr.compiled if kr.kernel.name == "row_scale")
    assert [(r["grid"], "count" in r) for r in spec.launch_records] == [([1], False)]  # the first launch
    lanes = next(f for f in report.all_findings() if f.code == "LAUNCH001" and f.kernel == "row_scale")
    assert lanes.severity == "warning" and "in 1 of 1 captured launch —" in evidence(lanes), evidence(lanes)


def test_distribution_lines_are_validated_and_summed(tmp_path):
    base = {"version": 2, "path": "rows.py", "kernel": "row_scale", "signature": {"x_ptr": "*fp32"},
            "target": "cuda:90"}
    launch = {"grid": [4], "args": {"x_ptr": {"tensor": {"shape": [4, 16], "stride": [16, 1], "dtype": "float32",
                                                         "align16": True}}}}
    other = {"grid": [1], "args": {}}
    good = [dict(base, record="summary", launches=5, launch_counts=[{"launch": launch, "count": 4, "time_us": 2.0,
                                                                     "timed": 1}, {"launch": other, "count": 1}]),
            dict(base, record="summary", launches=6, launch_counts=[{"launch": launch, "count": 6, "time_us": 4.0,
                                                                     "timed": 3}])]
    bad = [dict(base, record="summary", launches=1, launch_counts=[{"launch": launch, "count": True}]),
           dict(base, record="summary", launches=1, launch_counts=[{"launch": launch, "count": -1}]),
           dict(base, record="summary", launches=1, launch_counts=[{"launch": launch, "count": 1, "time_us": 1.0}]),
           dict(base, record="summary", launches=1, launch_counts=[{"launch": {"grid": [1, 1, 1, 1]}, "count": 1}]),
           dict(base, record="summary", launches=1, launch_counts=[{"launch": launch, "count": 1}] * 65),
           dict(base, record="summary", launches=1, launch_counts={"launch": launch})]
    (tmp_path / "rows.py").write_text(ROWS)
    (tmp_path / ".tritonlens").mkdir()
    text = "".join(json.dumps(x) + "\n" for x in good + bad).replace('"time_us": 4.0', '"time_us": NaN')
    (tmp_path / ".tritonlens" / "captures.jsonl").write_text(text)
    caps, problems = load_captures(str(tmp_path))
    assert len(problems) == 7 and all("launch_counts" in p for p in problems), problems  # NaN: the second good one
    (cap,) = caps
    assert cap["launches"] == 5 and [(c["count"], c.get("time_us")) for c in cap["launch_counts"]] == [(4, 2.0),
                                                                                                     (1, None)]
    (tmp_path / ".tritonlens" / "captures.jsonl").write_text("".join(json.dumps(x) + "\n" for x in good))
    (cap,) = load_captures(str(tmp_path))[0]
    # counts add up; the times are the lines' medians weighed by how many launches each timed: (2 + 3 × 4) / 4
    assert cap["launches"] == 11 and cap["launch_counts"][0] == {"launch": launch, "count": 10, "time_us": 3.5,
                                                                 "timed": 4}
    assert cap["launch"] == launch


def test_launch_records_keep_counts_and_times_only_when_sound():
    rec = clean_launch({"grid": [2], "args": {}, "count": 7, "time_us": 3.25, "timed": 5})
    assert rec == {"grid": [2], "args": {}, "count": 7, "time_us": 3.25, "timed": 5}
    assert "count" not in clean_launch({"grid": [2], "args": {}, "count": "7"})
    assert clean_launch({"grid": [2], "args": {}, "count": 7, "time_us": float("inf"), "timed": 5}) == \
        {"grid": [2], "args": {}, "count": 7}
    assert clean_launch({"grid": [2], "args": {}, "count": 7, "time_us": 1.0, "timed": True}) == \
        {"grid": [2], "args": {}, "count": 7}
    a = [{"grid": [1], "args": {}, "count": 1}, {"grid": [9], "args": {}, "count": 3, "time_us": 2.0, "timed": 2}]
    b = [{"grid": [9], "args": {}, "count": 5, "time_us": 5.0, "timed": 1}]
    assert merge_launch_records(a, b) == [{"grid": [9], "args": {}, "count": 8, "time_us": 3.0, "timed": 3},
                                          {"grid": [1], "args": {}, "count": 1}]


def test_launch_keys_tell_apart_what_a_description_tells_apart():
    x, y = torch.rand(4, 8), torch.rand(8, 4)
    key = capture.launch_key
    assert key((4,), (x, 8), {"B": 16}) == key([4], (torch.rand(4, 8), 8), {"B": 16})  # another tensor, same geometry
    assert key((4,), (x, 8), {}) != key((4,), (y, 8), {})  # shape
    assert key((4,), (x, 8), {}) != key((4,), (x.t(), 8), {})  # strides
    assert key((4,), (x, 8), {}) != key((4,), (x.half(), 8), {})  # dtype
    assert key((4,), (x, 8), {}) != key((4,), (torch.rand(40)[1:33].view(4, 8), 8), {})  # 16-byte alignment
    assert key((4,), (x, 8), {}) != key((4,), (x, 8.0), {})  # an int and a float of one value
    assert key((4,), (x, 8), {}) != key((5,), (x, 8), {})  # grid
    assert key(None, (x,), {}) is None


def test_launches_of_shapes_not_listed_are_said_and_not_judged(captured, tmp_path):
    """A kernel launched with more distinct values than a capture lists (a step counter, a varying length): the
    launches of unlisted shapes are counted, said, and not taken for unaffected ones."""
    ws = tmp_path
    (ws / "rows.py").write_text(ROWS)
    (ws / ".tritonlens").mkdir()
    lines = _lines(captured)
    for line in lines:  # tiled_add: 2000 more launches, of shapes the file does not list
        if line.get("record") == "summary" and line["kernel"] == "tiled_add":
            line["launches"] += 2000
            break
    (ws / ".tritonlens" / "captures.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    with Checker(Settings(target="cuda:90", max_workers=1, severity_from_cost=False)) as checker:
        found = checker.check_file(str(ws / "rows.py")).all_findings()
    lanes = next(f for f in found if f.code == "LAUNCH001" and f.kernel == "tiled_add")
    assert lanes.severity == "warning", lanes.message  # 20 of the 21 listed launches: not rare
    assert "in 20 of 2,021 counted launches (2,000 of them in shapes the capture did not list) —" in evidence(lanes)
    assert lanes.data["listed"] == 21 and lanes.data["rare"] is False


def test_a_summary_line_lists_the_most_launched_shapes_and_every_timed_one():
    dist = {("k", n): [n, {"grid": [n], "args": {}}] for n in range(1, 21)}  # 20 distinct launches, n launched n times
    times = {("k", 1): ({"grid": [1], "args": {}}, 2.5, 1), ("k", 99): ({"grid": [99], "args": {}}, 1.0, 5)}
    listed = capture._launch_counts(dist, times)
    assert [x["launch"]["grid"][0] for x in listed] == list(range(20, 4, -1)) + [1, 99]  # 16 most launched, then timed
    assert listed[-2] == {"launch": {"grid": [1], "args": {}}, "count": 1, "time_us": 2.5, "timed": 1}
    assert listed[-1]["count"] == 0  # timed in an earlier window: a time, no launches since the last line


class _StandInEvents:
    """What `torch.cuda` gives the launch timer — timing events — made on the CPU: there is no GPU here. An event's
    time is the number of events recorded before it (in ms), and it completes only when `done` says so (or it is
    waited for), as a GPU's would when its kernel ends."""

    def __init__(self):
        self.recorded = 0
        self.done = False
        self.cuda = self

    def is_current_stream_capturing(self):
        return False

    def Event(self, enable_timing=False):  # noqa: N802 — torch.cuda.Event
        outer = self

        class Event:
            def record(self):
                outer.recorded += 1
                self.at, self.waited = outer.recorded, False

            def query(self):
                return outer.done

            def synchronize(self):
                self.waited = True

            def elapsed_time(self, end):
                assert end.query() or end.waited, "read before it completed"
                return float(end.at - self.at)

        return Event()


def test_the_timer_times_a_few_launches_per_shape_and_writes_their_median(tmp_path):
    """capture --time's bookkeeping, run through the hook's launch wrapper and Triton's own launch-hook chains
    (triton.knobs), with a stand-in for the launcher (it calls the chains as Triton's C launcher does) and for CUDA's
    events: no GPU here. The GPU test below times real launches."""
    from triton import knobs

    hook = capture._Hook(capture.CaptureWriter(str(tmp_path / "c.jsonl")), str(tmp_path), None)
    events = _StandInEvents()
    timer = hook.timer = capture.LaunchTimer(hook)
    timer.torch = events
    assert timer.install()
    rec = {"version": 2, "path": "k.py", "kernel": "k", "signature": {"x": "*fp32", "n": "i32"}, "constants": {},
           "attrs": {}, "options": {}, "target": "cuda:90"}
    hook.note_compile(rec)
    kernel = object()
    hook._kernels[id(kernel)] = (kernel, capture.identity(rec))
    between = []

    def launcher(jit_self, *args, grid, warmup, **kwargs):  # Triton's run: the grid, then the hooks around the launch
        grid = grid({"n": args[1]}) if callable(grid) else grid
        knobs.runtime.launch_enter_hook({"name": "k"})
        between.append(events.recorded)
        knobs.runtime.launch_exit_hook({"name": "k"})
        return kernel

    class Jit:
        arg_names = ["x", "n"]

    run = hook.wrap_run(launcher)
    try:
        x = torch.rand(64)
        for n in (64,) * 12 + (32,) * 2:
            run(Jit(), x, n, grid=lambda meta: (meta["n"] // 32,), warmup=False)
        hook.flush()  # nothing has completed yet: counts, no times
        events.done = True
        hook.flush()  # the 10 timed launches of n=64 have ended: their median and minimum
        events.done = False
        hook.flush(final=True)  # at exit: the n=32 launch is waited for
    finally:
        knobs.runtime.launch_enter_hook.remove(timer.enter)
        knobs.runtime.launch_exit_hook.remove(timer.exit)
    # the first launch of each distinct launch is not timed, nor those past TIMED_PER_LAUNCH
    assert capture.TIMED_PER_LAUNCH == 10 and events.recorded == 2 * (capture.TIMED_PER_LAUNCH + 1)
    assert between == [0, *range(1, 20, 2), 20, 20, 21]  # untimed launches record nothing
    lines = [json.loads(ln) for ln in (tmp_path / "c.jsonl").read_text().splitlines()]
    news, first, second, last = lines  # a compile's first launch is written at once
    assert [(c["launch"]["grid"], c["count"]) for c in news["launch_counts"]] == [([2], 1)]
    assert [(c["launch"]["grid"], c["count"], c.get("timed")) for c in first["launch_counts"]] == \
        [([2], 11, None), ([1], 2, None)]
    assert second["launches"] == 0 and second["launch_counts"] == [
        {"launch": first["launch_counts"][0]["launch"], "count": 0, "time_us": 1000.0, "timed": 10,
         "time_min_us": 1000.0}]
    assert [(c["launch"]["grid"], c["count"], c["time_us"], c["timed"]) for c in last["launch_counts"]] == \
        [([1], 0, 1000.0, 1)]
    (tmp_path / "k.py").write_text("")
    (cap,) = load_captures(str(tmp_path), None, str(tmp_path / "c.jsonl"))[0]
    assert [(c["launch"]["grid"], c["count"], c["time_us"], c["timed"], c.get("time_min_us"))
            for c in cap["launch_counts"]] == [([2], 12, 1000.0, 10, 1000.0), ([1], 2, 1000.0, 1, 1000.0)]


def test_a_measured_time_is_trusted_only_when_timed_enough_with_a_narrow_spread():
    """A launch timed once (or with its median far above its fastest run: one launch waited on the host) is shown
    but trusted by nothing; a capture from before minimums were kept is judged by its count alone."""
    from tritonlens.model import clean_launch, timing_reliable

    rec = clean_launch({"grid": [8], "args": {}, "count": 12, "time_us": 4.0, "timed": 10, "time_min_us": 3.6})
    assert rec["time_min_us"] == 3.6 and timing_reliable(rec)
    assert not timing_reliable(dict(rec, timed=1))
    assert not timing_reliable(dict(rec, time_us=31.2))  # 31.2 µs when the fastest took 3.6
    old = clean_launch({"grid": [8], "args": {}, "count": 12, "time_us": 4.0, "timed": 5})
    assert "time_min_us" not in old and timing_reliable(old)


def test_time_needs_a_gpu(capsys):
    assert capture.main(["--no-gpu", "--time", "--", sys.executable, "-c", "pass"]) == 2
    assert "--time measures real launches: it needs a GPU" in capsys.readouterr().err


def test_bench_replays_the_most_launched_and_sums_count_times_time(captured):
    caps, _ = load_captures(str(captured), str(captured / "rows.py"))
    cap = next(c for c in caps if c["kernel"] == "row_scale")
    job = bench.Job("rows.py", "row_scale", cap, "capture 1")
    assert [sh["launch"]["grid"] for sh in job.shapes] == [[2112]]  # 50 of 51 launches: 90% covered by one shape
    (r,) = bench.static_results([job], virtual_gpu.lookup("h200"))
    assert r.grid == [2112] and r.count == 50 and r.launches == 51 and r.bytes == 2 * 2112 * 256 * 4
    assert "50 of 51" in bench.render([r])
    measured = bench._result(job, r.gpu, measured=True)
    measured.time_us = measured.shapes[0]["time_us"] = 10.0
    assert measured.total_us == 500.0 and measured.covered == 50 and measured.replay_vs_real is None
    # with the real run's time (capture --time) the table compares the two
    timed = dict(cap, launch_counts=[dict(cap["launch_counts"][0], time_us=11.0, timed=5), cap["launch_counts"][1]])
    job = bench.Job("rows.py", "row_scale", timed, "capture 1")
    r = bench._result(job, r.gpu, measured=True)
    r.time_us = r.shapes[0]["time_us"] = 10.0
    assert r.real_us == 11.0 and r.replay_vs_real == pytest.approx(10 / 11)
    text = bench.render([r])
    assert "real µs" in text and "replay/real" in text and "0.91" in text
    assert "agreement: 1 of 1 specs within 15%" in text


# ---------------------------------------------------------------- on a GPU
GPU_PROGRAM = '''
import sys, torch
sys.path.insert(0, {ws!r})
import vector_add
small = [torch.rand(4096, device="cuda") for _ in range(2)]
big = [torch.rand(1 << 26, device="cuda") for _ in range(2)]
vector_add.add(*small)
for _ in range(30):
    vector_add.add(*big)
torch.cuda.synchronize()
'''


def _gpu_capture(tmp_path):
    import shutil

    shutil.copy(os.path.join(ROOT, "examples", "vector_add.py"), tmp_path / "vector_add.py")
    (tmp_path / "driver.py").write_text(GPU_PROGRAM.format(ws=str(tmp_path)))
    proc = subprocess.run([sys.executable, "-m", "tritonlens.gpu.capture", "--time", "--workspace", str(tmp_path),
                           "--", sys.executable, str(tmp_path / "driver.py")], capture_output=True, text=True,
                          timeout=600, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    caps, problems = load_captures(str(tmp_path), str(tmp_path / "vector_add.py"))
    assert not problems
    return caps


@pytest.mark.gpu
@pytest.mark.skipif(not has_local_gpu(), reason="needs a local NVIDIA GPU")
def test_capture_time_records_the_real_launches_time(tmp_path):
    caps = _gpu_capture(tmp_path)
    # 4096 and 2^26 elements are both multiples of 16: one compile, two distinct launches
    (cap,) = caps
    assert cap["launches"] == 31
    big, small = cap["launch_counts"]
    assert (big["launch"]["grid"], big["count"], big["timed"]) == ([1 << 16], 30, capture.TIMED_PER_LAUNCH)
    # the run's first launch (the compile's) is never timed: what it includes varies
    assert (small["launch"]["grid"], small["count"], small.get("timed")) == ([4], 1, None)
    # 768 MB moved: at most the H200's 4.8 TB/s, so at least 160 µs; far under a second
    assert 100.0 < big["time_min_us"] <= big["time_us"] < 100_000.0, big


@pytest.mark.gpu
@pytest.mark.skipif(not has_local_gpu(), reason="needs a local NVIDIA GPU")
def test_bench_replay_agrees_with_the_real_run(tmp_path, capsys, monkeypatch):
    _gpu_capture(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert bench.main(["vector_add.py::add_kernel"]) == 0
    out = capsys.readouterr().out
    assert "real µs" in out and "replay/real" in out, out
    # a 768 MB stream is far bigger than L2: the L2-cold replay and the warm real run take the same time
    assert "agreement: 1 of 1 specs within 15%" in out, out
    (rec,) = [json.loads(ln) for ln in (tmp_path / ".tritonlens" / "bench.jsonl").read_text().splitlines()]
    assert rec["grid"] == [1 << 16] and rec["count"] == 30 and rec["launches"] == 31
    assert 0.85 <= rec["replay_vs_real"] <= 1.15, rec
