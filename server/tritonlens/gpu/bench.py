"""`tritonlens bench PATH[::KERNEL]...`: replay captured launches standalone and time them on the local GPU.

Each captured spec that came with a launch (grid, scalars, tensor shapes/strides/dtypes: see capture.py) is
re-launched with synthesized inputs (profile.prepare_replay: random, never all zeros; integer tensors small, so an
index stays inside the tensors it indexes) and timed with `triton.testing.do_bench`: warm-up, then the median of
the runs, with the L2 cache flushed before each run (L2 cold). For each spec: time, the bytes its tensors hold (each
read or written once: a lower bound of the traffic), achieved bandwidth and its share of the GPU's peak, the launches
the capture counted and their total time. Results are appended to `.tritonlens/bench.jsonl` with the GPU's name
and clocks.

Which launch: when the capture kept its launch distribution, the most launched distinct launch of each spec is the
one replayed and shown (with its count), and up to MAX_SHAPES distinct launches — the most launched, until they cover
COVER of the spec's counted launches — are timed: the spec's captured time is Σ count × time over those (`covered`
says how many launches that is). When `capture --time` recorded the real run's time of the replayed launch, the
table adds "real µs" and "replay/real", and a line says how many specs agree within AGREEMENT. The two differ in
what they include: the replay is L2-cold and alone on the GPU; the real time is the run's own (warm caches,
neighbours, and on an idle GPU the launch's submission: see capture.LaunchTimer).

Replays run in a child process per file; a replay that faults (an illegal address poisons the CUDA context) ends
that child, is reported, and the next spec goes on in a fresh one.

Without a GPU nothing is timed: each spec gets the static floor of the virtual GPU (virtual_gpu) — "≥ 3.1 µs at
4.8 TB/s for the bytes its tensors hold" — labelled as such, never passed off as a measurement.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from ..compiler import sandbox
from ..device import virtual_gpu
from ..frontend.captures import identity, load_captures
from ..frontend.untrusted import printable
from ..model import timing_reliable
from ..report.cost import bench_file, launch_bytes, static_floor_us
from ..units import fmt_bytes, fmt_us
from ..settings import target_arg
from ..source import split_lines

EXIT_OK, EXIT_ERROR = 0, 2
DEFAULT_PER_KERNEL = 12
MAX_SHAPES = 3  # distinct launches timed per spec
COVER = 0.9  # ... until they cover this share of its counted launches
AGREEMENT = 0.15  # replay and real run agree when within this of each other
METHOD = "triton.testing.do_bench: warm-up 25 ms, median of 100 ms of runs, L2 flushed before each run (L2 cold)"
# --warm-l2: as a program that just wrote its inputs sees a kernel (the real run of a test or a training step): the
# launch repeated with nothing in between, each timed alone by events after a GPU spin, so that the start event fires
# when the kernel can start rather than when the host began submitting it (as capture --time does).
WARM_REPS = 50
METHOD_WARM = (f"CUDA events around each of {WARM_REPS} launches after a GPU spin, median, inputs left in L2 by the "
               "previous launch (L2 warm)")


@dataclass
class BenchResult:
    path: str
    kernel: str
    identity: str  # captures.identity of the spec: what check and the editor join on
    label: str  # "capture 3: BLOCK_SIZE=1024, num_warps=4"
    grid: list[int] = field(default_factory=list)
    bytes: int = 0  # what the launch's tensors hold
    launches: int = 0  # launches the capture counted
    count: int | None = None  # launches of the replayed (most launched) launch; None: the capture did not say
    real_us: float | None = None  # the real run's time of that launch (capture --time), median of `real_timed`
    real_timed: int = 0
    # each distinct launch timed: {"grid", "count", "bytes", "time_us" (replay), "real_us", "error"}, the replayed first
    shapes: list[dict[str, Any]] = field(default_factory=list)
    time_us: float | None = None  # measured median
    time_min_us: float | None = None  # ... and the fastest of those launches
    timed: int = 0  # launches the median is of (after an untimed first one)
    floor_us: float | None = None  # static: bytes / peak bandwidth
    gpu: dict[str, Any] = field(default_factory=dict)
    measured: bool = False
    error: str | None = None
    method: str = ""

    @property
    def bandwidth(self) -> float | None:
        return self.bytes / (self.time_us * 1e-6) if self.time_us else None

    @property
    def pct_of_peak(self) -> float | None:
        peak = self.gpu.get("memory_bandwidth")
        bw = self.bandwidth
        return 100.0 * bw / peak if bw and peak else None

    @property
    def total_us(self) -> float | None:
        """The spec's captured time: Σ count × time over the distinct launches timed, when the capture counted them;
        else time × its launches (one when it counted none)."""
        if self.time_us is None:
            return None
        if self.count is not None:
            return sum(sh["count"] * t for sh, t in self._timed_shapes())
        return self.time_us * max(self.launches, 1)

    @property
    def covered(self) -> int | None:
        """Launches of the distinct launches that were timed (what total_us covers), when counted."""
        if self.count is None or self.time_us is None:
            return None
        return sum(sh["count"] for sh, _ in self._timed_shapes())

    def _timed_shapes(self) -> list[tuple[dict[str, Any], float]]:
        out = []
        for i, sh in enumerate(self.shapes or [{"count": self.count}]):
            t = sh.get("time_us", self.time_us if i == 0 else None)
            if t is not None:
                out.append((sh, t))
        return out

    @property
    def replay_vs_real(self) -> float | None:
        return self.time_us / self.real_us if self.time_us is not None and self.real_us else None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(version=1, bandwidth=self.bandwidth, pct_of_peak=self.pct_of_peak, total_us=self.total_us,
                   covered=self.covered, replay_vs_real=self.replay_vs_real)
        return out


# ---------------------------------------------------------------- labels
def spec_label(index: int, capture: dict[str, Any]) -> str:
    consts = capture.get("constants") or {}
    opts = capture.get("options") or {}
    parts = [f"{k}={v}" for k, v in consts.items() if k.startswith("BLOCK")][:3]
    parts += [f"{k}={opts[k]}" for k in ("num_warps", "num_stages") if k in opts]
    return f"capture {index}" + (f": {', '.join(parts)}" if parts else "")


# ---------------------------------------------------------------- which specs
@dataclass
class Job:
    path: str
    kernel: str
    capture: dict[str, Any]
    label: str
    shapes: list[dict[str, Any]] = field(default_factory=list)  # the distinct launches to time (replay_shapes)

    def __post_init__(self) -> None:
        self.shapes = self.shapes or replay_shapes(self.capture)


def replay_shapes(capture: dict[str, Any]) -> list[dict[str, Any]]:
    """The distinct launches of a capture to time, the most launched first: from its `launch_counts` as many as cover
    COVER of its counted launches, at most MAX_SHAPES; without a distribution its one launch, uncounted."""
    counts = [c for c in capture.get("launch_counts") or () if isinstance(c, dict) and isinstance(c.get("launch"),
                                                                                                 dict)]
    if not counts:
        return [{"launch": capture.get("launch") or {}}]
    total = max(int(capture.get("launches") or 0), sum(int(c.get("count") or 0) for c in counts))
    out, covered = [], 0
    for c in counts[:MAX_SHAPES]:
        out.append(c)
        covered += int(c.get("count") or 0)
        if covered >= COVER * total:
            break
    return out


def select(paths: Iterable[str], kernel: str | None, root: str, captures_file: str | None, every: bool,
           per_kernel: int = DEFAULT_PER_KERNEL) -> tuple[list[Job], list[str]]:
    """The replayable captures of the files (of one kernel when given): per kernel the most launched first and no
    autotuner trial, at most `per_kernel` unless `every`. Also a line per capture that cannot be replayed."""
    from .profile import replay_capture

    jobs: list[Job] = []
    skipped: list[str] = []
    for path in paths:
        caps, _ = load_captures(root, path, captures_file)
        by_kernel: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        for i, cap in enumerate(caps, 1):
            if kernel and cap.get("kernel") != kernel:
                continue
            by_kernel.setdefault(str(cap.get("kernel")), []).append((i, cap))
        for name, mine in by_kernel.items():
            usable = []
            for i, cap in mine:
                why = replay_capture(cap)
                if why is not None:
                    skipped.append(f"{path}::{name} capture {i}: {why}")
                elif every or cap.get("autotune") != "trial":
                    usable.append((i, cap))
            usable.sort(key=lambda ic: -int(ic[1].get("launches") or 0))
            for i, cap in (usable if every else usable[:per_kernel]):
                jobs.append(Job(path, name, cap, spec_label(i, cap)))
    return jobs, skipped


# ---------------------------------------------------------------- the replaying child
def _child_main(job_file: str) -> int:
    """Replays the jobs of one file in order; prints one JSON line per job as it finishes. A fault kills the
    process: the parent sees how far it got."""
    import torch
    import triton.testing

    from .profile import prepare_replay

    with open(job_file, encoding="utf-8") as f:
        spec = json.load(f)
    warm = bool(spec.get("warm_l2"))
    for n, job in enumerate(spec["jobs"]):
        started = time.perf_counter()
        try:
            launch = prepare_replay(job, torch)
            launch()
            torch.cuda.synchronize()
            if warm:
                times = _warm_times_us(launch, torch)
            else:
                times = [ms * 1000.0 for ms in triton.testing.do_bench(launch, warmup=25, rep=100, return_mode="all")]
            times.sort()
            out = {"n": n, "time_us": times[len(times) // 2], "time_min_us": times[0], "timed": len(times)}
        except Exception as exc:  # noqa: BLE001 — one spec's failure is reported, the others go on
            out = {"n": n, "error": f"{type(exc).__name__}: {split_lines(str(exc))[0] if str(exc) else ''}"[:300]}
            if "CUDA" in str(exc) or "illegal" in str(exc).lower():
                print(json.dumps(out), flush=True)
                return 3  # the context may be poisoned: the parent restarts from the next spec
        out["wall_s"] = round(time.perf_counter() - started, 3)
        print(json.dumps(out), flush=True)
    return 0


def _warm_times_us(launch, torch) -> list[float]:
    """The times of WARM_REPS launches, each between two events with a GPU spin queued before the first (L2 warm):
    the spin capture --time queues before a timed launch, for the same reason."""
    from .capture_hook import SLEEP_CYCLES

    spin = getattr(torch.cuda, "_sleep", None)
    times = []
    for _ in range(WARM_REPS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if spin is not None:
            spin(SLEEP_CYCLES)
        start.record()
        launch()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    return times


def replay_main(argv: list[str]) -> None:
    """The replay process (compiler.sandbox.boot runs it confined): `JOB_FILE`."""
    sys.exit(_child_main(argv[0]))


def replay_record(line: str, jobs: int) -> dict[str, Any] | None:
    """One line the replay printed, as data: the module's code runs in that process and may print anything, so
    only {"n": job index, "time_us": a finite positive number} or {"n", "error": a short string} is taken."""
    import math

    if len(line) > 4096:
        return None
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(rec, dict) or type(rec.get("n")) is not int or not 0 <= rec["n"] < jobs:
        return None
    t = rec.get("time_us")
    if type(t) in (int, float) and math.isfinite(t) and t > 0:
        out: dict[str, Any] = {"n": rec["n"], "time_us": float(t)}
        low = rec.get("time_min_us")
        if type(low) in (int, float) and math.isfinite(low) and 0 < low <= t:
            out["time_min_us"] = float(low)
        if type(rec.get("timed")) is int and 0 < rec["timed"] <= 1_000_000:
            out["timed"] = rec["timed"]
        return out
    if isinstance(rec.get("error"), str):
        return {"n": rec["n"], "error": printable(rec["error"][:300])}
    return None


def run_on_gpu(jobs: list[Job], root: str, timeout: float, progress=None, warm_l2: bool = False) -> list[BenchResult]:
    """Replay each job's distinct launches (Job.shapes), file by file; the first one's time is the spec's. `warm_l2`:
    time as the real run sees a kernel whose inputs were just written (METHOD_WARM), not L2-cold."""
    gpu = local_gpu()
    results = [_result(j, gpu, measured=False) for j in jobs]
    by_file: dict[str, list[tuple[int, int]]] = {}  # path -> (job, shape) replays
    for i, j in enumerate(jobs):
        by_file.setdefault(j.path, []).extend((i, k) for k in range(len(j.shapes)))
    for path, units in by_file.items():
        pending = list(units)
        while pending:
            batch = [Job(jobs[i].path, jobs[i].kernel, {**jobs[i].capture, "launch": jobs[i].shapes[k]["launch"]},
                         jobs[i].label) for i, k in pending]
            done = _replay_batch(path, batch, root, timeout, warm_l2)
            for n, out in done.items():
                _take(results, pending[n], out, progress, warm_l2)
            finished = max(done) + 1 if done else 1  # a child that died before any answer: the first one faulted
            if not done:
                _take(results, pending[0], {"error": "the replay process died before answering (a fault or a crash "
                                                     "of the driver)"}, progress)
            pending = pending[finished:]
    return results


def _take(results: list[BenchResult], unit: tuple[int, int], out: dict[str, Any], progress,
          warm_l2: bool = False) -> None:
    r, k = results[unit[0]], unit[1]
    shape = r.shapes[k]
    if "time_us" in out:
        shape["time_us"] = out["time_us"]
        for key in ("time_min_us", "timed"):
            if key in out:
                shape[key] = out[key]
    else:
        shape["error"] = out.get("error", "the replay failed")
    if k == 0:
        if "time_us" in out:
            r.time_us, r.measured, r.method = out["time_us"], True, METHOD_WARM if warm_l2 else METHOD
            r.time_min_us, r.timed = out.get("time_min_us"), int(out.get("timed") or 0)
        else:
            r.error = shape["error"]
        if progress:
            progress(r)


def _replay_batch(path: str, jobs: list[Job], root: str, timeout: float,
                  warm_l2: bool = False) -> dict[int, dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="tritonlens-bench-") as tmp:
        job_file = os.path.join(tmp, "jobs.json")
        with open(job_file, "w", encoding="utf-8") as f:
            json.dump({"jobs": [{"path": os.path.abspath(j.path), "qualname": j.kernel, "capture": j.capture,
                                 "workspace_root": root} for j in jobs], "warm_l2": warm_l2}, f)
        # the replay imports the kernel's module: sandboxed as a compile worker is, with the GPU it times; it reads
        # jobs.json in tmp
        argv, env = sandbox.command(sys.executable, "tritonlens.gpu.bench:replay_main", [job_file],
                                    os.path.join(tmp, "box"), cwd=os.getcwd(), gpu=True,
                                    reads=[root, tmp, *{os.path.dirname(os.path.abspath(j.path)) for j in jobs}])
        env["PYTHONUNBUFFERED"] = "1"
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                text=True, env=env, cwd=tmp, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout * max(1, len(jobs)))
        except subprocess.TimeoutExpired:
            sandbox.kill_group(proc)
            out, err = proc.communicate()
            err = f"timed out after {timeout * len(jobs):.0f} s\n" + err
    done: dict[int, dict[str, Any]] = {}
    for line in split_lines(out)[:4 * len(jobs) + 16]:
        if (rec := replay_record(line, len(jobs))) is not None:
            done[rec["n"]] = rec
    if len(done) < len(jobs) and proc.returncode not in (0, 3):
        last = (split_lines(err.strip()) or ["no message"])[-1][:300]
        done.setdefault(max(done) + 1 if done else 0, {"error": f"the replay process died: {last}"})
    return done


def local_gpu() -> dict[str, Any]:
    """The local GPU's model (name, SMs, peaks) and clocks, asked without creating a context in this process."""
    from ..device.targets import local_gpu_target

    target = local_gpu_target() or "cuda:90"
    name = ""
    try:
        name = subprocess.run(["nvidia-smi", "--query-gpu=name,clocks.max.sm,clocks.max.memory",
                               "--format=csv,noheader,nounits", "-i", "0"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    parts = [p.strip() for p in name.split(",")]
    gpu = virtual_gpu.from_local_name(parts[0] if parts and parts[0] else "", target)
    info = gpu.describe()
    info.update(name=parts[0] or gpu.name, virtual=False)
    if len(parts) == 3 and parts[1].isdigit():
        info.update(clock_mhz=int(parts[1]), memory_clock_mhz=int(parts[2]))
    return info


def _result(job: Job, gpu: dict[str, Any], measured: bool) -> BenchResult:
    """The result of a job before any time: the replayed launch (the most launched) and the real run's time of it."""
    shapes = []
    for sh in job.shapes:
        launch = sh.get("launch") or {}
        shapes.append({"grid": [int(g) for g in launch.get("grid", [])], "count": sh.get("count"),
                       "bytes": launch_bytes({"launch": launch}), "real_us": sh.get("time_us"),
                       "real_timed": int(sh.get("timed") or 0)})
    top = shapes[0]
    counted = all(isinstance(sh["count"], int) for sh in shapes)
    return BenchResult(path=job.path, kernel=job.kernel, identity=identity(job.capture), label=job.label,
                       grid=top["grid"], bytes=top["bytes"], launches=int(job.capture.get("launches") or 0),
                       count=top["count"] if counted else None, real_us=top["real_us"],
                       real_timed=top["real_timed"], shapes=shapes if counted else [top], gpu=gpu,
                       measured=measured, method=METHOD if measured else "")


def static_results(jobs: list[Job], gpu: virtual_gpu.GpuModel) -> list[BenchResult]:
    """Without a GPU: each launch's floor on the run's GPU model, what its tensors hold over its bandwidth."""
    info = dict(gpu.describe(), virtual=True)
    out = []
    for j in jobs:
        r = _result(j, info, measured=False)
        r.floor_us = static_floor_us(r.bytes, gpu)
        r.method = f"static floor: bytes its tensors hold / {gpu.memory_bandwidth / 1e12:.2f} TB/s ({gpu.label()})"
        out.append(r)
    return out


# ---------------------------------------------------------------- output
def save(results: list[BenchResult], root: str, out: str | None = None) -> str:
    from ..writes import open_append

    path = out or bench_file(root)
    with open_append(path, root if out is None else None) as f:  # never through a link out of the workspace
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        for r in results:
            rec = r.to_json()
            rec["path"] = os.path.relpath(os.path.abspath(r.path), root).replace(os.sep, "/")
            rec["when"] = stamp
            f.write((json.dumps(rec) + "\n").encode("utf-8"))
    return path


def render(results: list[BenchResult]) -> str:
    if not results:
        return "nothing to replay"
    measured = any(r.measured for r in results)
    g = results[0].gpu
    head = (f"{g.get('name')} ({g.get('sms')} SMs, {g.get('memory_bandwidth', 0) / 1e12:.2f} TB/s peak"
            + (f", SM clock {g['clock_mhz']} MHz" if g.get("clock_mhz") else "") + ")")
    method = next((r.method for r in results if r.measured and r.method), METHOD)
    lines = [head + (f" — {method}" if measured else
                     " — virtual GPU: static floors, nothing measured (no GPU here)")]
    real = measured and any(r.real_us for r in results)
    rows = [("kernel", "spec", "grid", "bytes", "time" if measured else "floor", "% HBM peak", "launches",
             "total") + (("real µs", "replay/real") if real else ())]
    for r in sorted(results, key=lambda r: -(r.total_us or r.floor_us or 0)):
        if r.error:
            rows.append((r.kernel, r.label, "x".join(map(str, r.grid)), fmt_bytes(r.bytes), "FAILED: " + r.error,
                         "", _launches_text(r), "") + (("", "") if real else ()))
            continue
        t = r.time_us if r.measured else r.floor_us
        total = "-"
        if r.measured:
            total = fmt_us(r.total_us)
            if r.covered is not None and r.covered < r.launches:
                total += f" ({r.covered:,} of {r.launches:,} launches timed)"
        shown = fmt_us(t) if r.measured else "≥ " + fmt_us(t)
        if r.measured and r.time_min_us is not None:
            shown += f" (min {fmt_us(r.time_min_us)})"
            if not timing_reliable({"time_us": r.time_us, "timed": r.timed, "time_min_us": r.time_min_us}):
                shown += " unreliable"
        row = (r.kernel, r.label, "x".join(map(str, r.grid)), fmt_bytes(r.bytes), shown,
               f"{r.pct_of_peak:.0f}%" if r.pct_of_peak is not None else "-", _launches_text(r), total)
        if real:
            ratio = r.replay_vs_real
            row += (f"{r.real_us:.2f}" if r.real_us else "-", f"{ratio:.2f}" if ratio is not None else "-")
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    if measured:
        ok = sum(1 for r in results if r.measured)
        lines.append(f"{ok} of {len(results)} specs replayed, {sum(1 for r in results if r.error)} failed")
    if real:
        lines.append(agreement(results))
    return "\n".join(lines)


def _launches_text(r: BenchResult) -> str:
    """`20,000 of 20,001`: the replayed launch's count of the spec's; the spec's count alone when not counted."""
    if r.count is not None and r.count != r.launches:
        return f"{r.count:,} of {r.launches:,}"
    return f"{r.launches:,}"


def agreement(results: list[BenchResult]) -> str:
    """`agreement: N of M specs within 15%`: replay against the real run's time, over the specs that have both."""
    both = [r.replay_vs_real for r in results if r.measured and r.replay_vs_real is not None]
    close = sum(1 for x in both if abs(x - 1.0) <= AGREEMENT)
    return (f"agreement: {close} of {len(both)} specs within {AGREEMENT:.0%} of the real run's time "
            f"(replay L2-cold and alone; real: the captured run's own launches, capture --time)")


# ---------------------------------------------------------------- CLI
DESCRIPTION = __doc__.split("\n\n")[0]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tritonlens bench", description=DESCRIPTION)
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("targets", nargs="*", metavar="PATH[::KERNEL]")
    p.add_argument("--captures", metavar="FILE", help="capture file (default: .tritonlens/captures.jsonl)")
    p.add_argument("--all-captures", action="store_true",
                   help=f"every captured spec, autotuner trials included (default: at most {DEFAULT_PER_KERNEL} "
                        "per kernel, the most launched first)")
    p.add_argument("--target", default="auto", type=target_arg,
                   help="without a GPU: the target whose virtual GPU gives the floors")
    p.add_argument("--gpu", default=None, help="without a GPU: the virtual GPU (h100, h200, b200, a100, ...)")
    p.add_argument("--static", action="store_true", help="static floors only, even on a GPU machine")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per spec before a replay is stopped")
    p.add_argument("--warm-l2", action="store_true",
                   help="time with the inputs left in L2 by the previous launch, as a program that just wrote them "
                        "sees the kernel (default: L2 flushed before each run)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("-o", "--output", metavar="FILE", help="append results here (default .tritonlens/bench.jsonl)")


def main(argv: list[str] | None = None) -> int:
    return run(_parser().parse_args(argv))


def run(args: argparse.Namespace) -> int:
    if not args.targets:
        print("tritonlens bench: give PATH or PATH::KERNEL", file=sys.stderr)
        return EXIT_ERROR
    from ..sidecar import find_workspace_root
    from ..device.targets import has_local_gpu

    paths, kernel = [], None
    for t in args.targets:
        path, _, k = t.partition("::")
        if not os.path.exists(path):
            print(f"tritonlens bench: {path}: no such file", file=sys.stderr)
            return EXIT_ERROR
        paths.append(path)
        kernel = k or kernel
    root = find_workspace_root(paths[0])
    jobs, skipped = select(paths, kernel, root, args.captures, args.all_captures)
    for s in skipped:
        print(f"not replayable: {s}", file=sys.stderr)
    if not jobs:
        print("tritonlens bench: no captured launch to replay — run `tritonlens capture -- python your_program.py` "
              "first", file=sys.stderr)
        return EXIT_ERROR
    if has_local_gpu() and not args.static:
        def progress(r: BenchResult) -> None:
            print(f"  {r.kernel} {r.label}: {fmt_us(r.time_us) if r.measured else 'FAILED ' + str(r.error)}",
                  file=sys.stderr, flush=True)

        results = run_on_gpu(jobs, root, args.timeout, progress, warm_l2=args.warm_l2)
        saved = save(results, root, args.output)
    else:
        from ..device.run import run_devices

        try:
            results = static_results(jobs, run_devices(args.target, args.gpu or "", strict=True)[0].gpu)
        except ValueError as exc:
            print(f"tritonlens bench: {exc}", file=sys.stderr)
            return EXIT_ERROR
        saved = None
    if args.format == "json":
        print(json.dumps([r.to_json() for r in results], indent=1))
    else:
        print(render(results))
        if saved:
            print(f"results appended to {saved}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
