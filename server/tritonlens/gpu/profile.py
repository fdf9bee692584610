"""`tritonlens profile`: measure a kernel on the local GPU with Nsight Compute and confirm findings (PROF001).

Two ways to get a launch to measure:

    tritonlens profile --kernel add_kernel -- python train.py      # the user's own run, filtered to that kernel
    tritonlens profile kernels/add.py::add_kernel [--capture N]    # replay a captured launch with random inputs

A replay needs a capture that recorded the launch (grid, scalar values, tensor shapes/strides/dtypes: see
capture.py); inputs are synthesized on the GPU with torch, random and never all zeros. Either way ncu runs with
`--clock-control none` (the clocks the kernel really gets) and a small fixed metric set; its `--csv` report is
parsed into `ProfileResult.metrics` and joined to the kernel's findings from `check` as PROF001 findings.

API for the language server (code lens "Profile this kernel"): `can_profile()`, `profile_kernel(...)`,
`confirm_findings(...)`. Nothing here imports torch or triton in the calling process.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable

from ..checks.registry import facts as rule_facts
from ..compiler import sandbox
from ..model import Finding, KernelReport
from ..source import read_source, split_lines

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

# friendly name -> ncu metric candidates (the first one this ncu knows is used)
METRICS: dict[str, tuple[str, ...]] = {
    "local_loads": ("smsp__sass_inst_executed_op_local_ld.sum",),
    "local_stores": ("smsp__sass_inst_executed_op_local_st.sum",),
    "shared_bank_conflicts_ld": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",),
    "shared_bank_conflicts_st": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",),
    "barrier_stall_ratio": ("smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
                            "smsp__average_warp_latency_issue_stalled_barrier.ratio"),
    "warp_cycles_per_issue": ("smsp__average_warp_latency_per_inst_issued.ratio",),
    "achieved_occupancy_pct": ("sm__warps_active.avg.pct_of_peak_sustained_active",),
    "dram_throughput_pct": ("dram__throughput.avg.pct_of_peak_sustained_elapsed",),
    "duration_ns": ("gpu__time_duration.sum",),
    "registers_per_thread": ("launch__registers_per_thread",),
}



@dataclass
class ProfileResult:
    kernel: str
    metrics: dict[str, float] = field(default_factory=dict)  # friendly name -> mean over the profiled launches
    launches: int = 0
    ncu_metrics: dict[str, str] = field(default_factory=dict)  # friendly name -> the ncu metric measured
    command: list[str] = field(default_factory=list)
    error: str | None = None
    log: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None and self.launches > 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------- environment
def find_ncu() -> str | None:
    found = shutil.which("ncu")
    if found:
        return found
    for cand in ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu"):
        if os.path.exists(cand):
            return cand
    return None


def can_profile() -> tuple[bool, str]:
    """(True, "") when an NVIDIA GPU and ncu are here; else (False, why) — what the code lens and the CLI show."""
    from ..device.targets import local_gpu_target

    target = local_gpu_target()
    if target is None:
        return False, "no GPU visible here (nvidia-smi found none); profiling needs a local NVIDIA GPU"
    if not target.startswith("cuda"):
        return False, f"the local GPU is {target}; profiling uses Nsight Compute, NVIDIA only"
    if find_ncu() is None:
        return False, "Nsight Compute (ncu) not found on PATH or in /usr/local/cuda/bin"
    return True, ""


_available_cache: dict[str, set[str] | None] = {}


def available_metrics(ncu: str) -> set[str] | None:
    """Base metric names this ncu knows for the local GPU (None when it cannot say: then all are tried)."""
    if ncu in _available_cache:
        return _available_cache[ncu]
    names: set[str] | None = None
    try:
        out = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120).stdout
        found = {m.group(1) for m in re.finditer(r"^([a-z0-9_]+__[a-z0-9_]+)\s", out, re.M)}
        names = found or None
    except (OSError, subprocess.SubprocessError):
        names = None
    _available_cache[ncu] = names
    return names


def choose_metrics(available: set[str] | None) -> dict[str, str]:
    chosen: dict[str, str] = {}
    for friendly, candidates in METRICS.items():
        for metric in candidates:
            base = metric.split(".")[0]
            # launch__* values are launch statistics that --query-metrics does not always list
            if available is None or base in available or metric in available or metric.startswith("launch__"):
                chosen[friendly] = metric
                break
    return chosen


# ---------------------------------------------------------------- ncu output
def _number(text: str) -> float | None:
    text = text.strip().replace(",", "")
    if not text or text.lower() in ("n/a", "nan"):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def parse_ncu_csv(text: str, metric_names: dict[str, str] | None = None,
                  kernel: str | None = None) -> tuple[dict[str, float], int]:
    """Mean of each metric over the launches in an `ncu --csv` (details page) report, and how many launches.

    ncu writes one row per (launch, metric): "ID","Process ID",...,"Kernel Name",...,"Metric Name","Metric Unit",
    "Metric Value". `metric_names` maps friendly names to ncu names; unknown metrics keep their ncu name."""
    lines = split_lines(text)
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"') and "Metric Name" in ln), None)
    if start is None:
        return {}, 0
    reader = csv.DictReader(io.StringIO("\n".join(ln for ln in lines[start:] if not ln.startswith("=="))))
    by_ncu = {v: k for k, v in (metric_names or {}).items()}
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    launches: set[str] = set()
    for row in reader:
        name = (row.get("Kernel Name") or "").strip()
        if kernel and not _same_kernel(name, kernel):
            continue
        value = _number(row.get("Metric Value") or "")
        metric = (row.get("Metric Name") or "").strip()
        if value is None or not metric:
            continue
        launches.add(row.get("ID", ""))
        key = by_ncu.get(metric, metric)
        sums[key] = sums.get(key, 0.0) + value
        counts[key] = counts.get(key, 0) + 1
    return {k: sums[k] / counts[k] for k in sums}, len(launches)


def _same_kernel(ncu_name: str, kernel: str) -> bool:
    return ncu_name == kernel or ncu_name.split("(")[0].strip() == kernel


# ---------------------------------------------------------------- running ncu
def ncu_command(ncu: str, kernel: str, metrics: Iterable[str], log_file: str, cmd: list[str],
                launch_count: int = 1, launch_skip: int = 0) -> list[str]:
    return [ncu, "--clock-control", "none", "--target-processes", "all", "--csv", "--print-units", "base",
            "--kernel-name", kernel, "--launch-skip", str(launch_skip), "--launch-count", str(launch_count),
            "--metrics", ",".join(metrics), "--log-file", log_file, *cmd]


def run_ncu(kernel: str, cmd: list[str], *, launch_count: int = 1, launch_skip: int = 0, timeout: float = 600,
            env: dict[str, str] | None = None, cwd: str | None = None) -> ProfileResult:
    result = ProfileResult(kernel=kernel, command=list(cmd))
    ok, why = can_profile()
    ncu = find_ncu()
    if not ok or ncu is None:
        result.error = why
        return result
    chosen = choose_metrics(available_metrics(ncu))
    result.ncu_metrics = chosen
    for attempt in range(2):
        with tempfile.TemporaryDirectory(prefix="tritonlens-ncu-") as tmp:
            log_file = os.path.join(tmp, "ncu.csv")
            full = ncu_command(ncu, kernel, chosen.values(), log_file, cmd, launch_count, launch_skip)
            try:
                proc = subprocess.run(full, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
            except subprocess.TimeoutExpired:
                result.error = f"ncu did not finish in {timeout:.0f} s"
                return result
            except OSError as exc:
                result.error = f"could not run ncu: {exc}"
                return result
            try:
                with open(log_file, encoding="utf-8", errors="replace") as f:
                    report = f.read()
            except OSError:
                report = ""
        # an ncu that rejects a metric name measures nothing: drop the names it complains about, try once more
        complaint = "\n".join(ln for ln in split_lines(proc.stdout + proc.stderr + report) if "ERROR" in ln)
        rejected = [k for k, v in chosen.items() if v in complaint or v.split(".")[0] in complaint]
        if attempt == 0 and rejected and len(rejected) < len(chosen):
            chosen = {k: v for k, v in chosen.items() if k not in rejected}
            result.ncu_metrics = chosen
            continue
        break
    result.log = (report + "\n--- stdout\n" + proc.stdout[-4000:] + "\n--- stderr\n" + proc.stderr[-4000:])
    result.metrics, result.launches = parse_ncu_csv(report, chosen, kernel)
    if result.launches == 0:
        tail = "\n".join(split_lines((proc.stderr or proc.stdout or report).strip())[-8:])
        result.error = (f"ncu measured no launch of {kernel} (exit {proc.returncode})" +
                        (f":\n{tail}" if tail else ""))
    return result


# ---------------------------------------------------------------- replay of a captured launch
def replay_capture(capture: dict[str, Any]) -> str | None:
    """None when `capture` can be replayed, else why not."""
    launch = capture.get("launch")
    if not isinstance(launch, dict) or not isinstance(launch.get("grid"), list) or not launch["grid"]:
        return "the capture has no launch (grid and arguments); re-capture with this version of tritonlens"
    args = launch.get("args")
    if not isinstance(args, dict):
        return "the capture's launch has no arguments"
    for name, ty in capture.get("signature", {}).items():
        if ty == "constexpr":
            continue
        a = args.get(name)
        if not isinstance(a, dict) or not ("tensor" in a or "value" in a or "descriptor" in a):
            return f"argument {name} of the captured launch was not recorded"
        if "descriptor" in a and not isinstance((a["descriptor"] or {}).get("base"), dict):
            return f"argument {name} of the captured launch is a tensor descriptor without its base tensor"
    return None


def _replay_main(spec_file: str) -> int:
    """Runs under ncu: load the kernel's module (definitions only), synthesize inputs, launch once."""
    import torch

    with open(spec_file, encoding="utf-8") as f:
        job = json.load(f)
    launch = prepare_replay(job, torch)
    for _ in range(int(job.get("repeat", 1))):
        launch()
    torch.cuda.synchronize()
    return 0


def prepare_replay(job: dict[str, Any], torch: Any) -> Any:
    """A function that makes the captured launch of `job` ({path, qualname, capture, workspace_root}) once: the
    kernel's module loaded (definitions only), inputs synthesized on the GPU, the captured grid and options."""
    from ..compiler.worker import find_jit_function, load_module
    from ..frontend.loader import slice_module

    cap = job["capture"]
    text, problem = read_source(job["path"], root=job.get("workspace_root"))
    if text is None:
        raise OSError(problem)
    text = slice_module(text, [job["qualname"].split(".")[0]]).text
    module = load_module(job["path"], text, job.get("workspace_root"))
    fn = find_jit_function(module, job["qualname"])
    gen = torch.Generator(device="cuda").manual_seed(0)
    kwargs: dict[str, Any] = {}
    launch = cap["launch"]
    for name in fn.arg_names:
        rec = launch["args"].get(name)
        if cap["signature"].get(name) == "constexpr" and name in cap.get("constants", {}):
            kwargs[name] = _constant(cap["constants"][name])
        elif isinstance(rec, dict) and "descriptor" in rec:  # before "tensor": a read capture has both (model.py)
            kwargs[name] = _synth_descriptor(torch, rec["descriptor"], gen)
        elif isinstance(rec, dict) and "tensor" in rec:
            kwargs[name] = _synth_tensor(torch, rec["tensor"], gen)
        elif isinstance(rec, dict) and "value" in rec:
            kwargs[name] = rec["value"]
    opts = {k: v for k, v in cap.get("options", {}).items() if k in ("num_warps", "num_stages", "num_ctas", "maxnreg")}
    grid = tuple(int(g) for g in launch["grid"])

    def run() -> None:
        fn[grid](**kwargs, **opts)

    return run


def _constant(value: Any) -> Any:
    """A captured constexpr as the kernel takes it: a dtype name (`fp32`) is a `tl.dtype`, as Triton's own cache
    preload rebuilds it (specs._replayed)."""
    from ..frontend.specs import _replayed

    value = _replayed(value)
    if isinstance(value, dict) and set(value) == {"dtype"}:
        import triton.language as tl

        return tl.dtype(value["dtype"])
    return value


def _synth_descriptor(torch, d: dict[str, Any], gen):
    """A host tensor descriptor as captured (capture_record.descriptor_fields): a synthesized base tensor, and the
    shape, strides, block shape and padding the kernel's launch gave it."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    padding = d.get("padding") if d.get("padding") in ("zero", "nan") else "zero"
    return TensorDescriptor(_synth_tensor(torch, d["base"], gen), [int(s) for s in d["shape"]],
                            [int(s) for s in d["strides"]], [int(s) for s in d["block_shape"]], padding)


def _synth_tensor(torch, t: dict[str, Any], gen):
    dtype = getattr(torch, str(t.get("dtype", "float32")).replace("fp", "float").replace("bf16", "bfloat16"), None)
    if dtype is None or not isinstance(dtype, torch.dtype):
        dtype = {"bfloat16": torch.bfloat16}.get(str(t.get("dtype")), torch.float32)
    shape, stride = list(t.get("shape", [1])), list(t.get("stride", [1]))
    x = torch.empty_strided(shape, stride, dtype=dtype, device="cuda")
    storage = x.as_strided((x.untyped_storage().nbytes() // x.element_size(),), (1,))
    if dtype.is_floating_point:
        # random and never zero: uniform in [0.5, 1.5) with random signs
        vals = torch.rand(storage.shape, generator=gen, device="cuda", dtype=torch.float32) + 0.5
        sign = torch.randint(0, 2, storage.shape, generator=gen, device="cuda") * 2 - 1
        storage.copy_((vals * sign).to(dtype))
    elif dtype == torch.bool:
        storage.fill_(True)
    else:
        storage.copy_(torch.randint(1, 4, storage.shape, generator=gen, device="cuda").to(dtype))
    return x


def replay_command(path: str, qualname: str, capture: dict[str, Any], workspace_root: str, job_dir: str,
                   python: str | None = None) -> tuple[list[str], dict[str, str]]:
    """(argv, environment) of the replay process ncu runs: it imports the kernel's module, so it starts isolated
    and confined as a compile worker does (compiler.sandbox.command), with the GPU's nodes and driver; start it in
    `job_dir`."""
    job = {"path": os.path.abspath(path), "qualname": qualname, "capture": capture, "workspace_root": workspace_root}
    spec_file = os.path.join(job_dir, "replay.json")
    with open(spec_file, "w", encoding="utf-8") as f:
        json.dump(job, f)
    return sandbox.command(python or sys.executable, "tritonlens.gpu.profile:replay_main", [spec_file],
                           os.path.join(job_dir, "box"), cwd=os.getcwd(), gpu=True,
                           reads=[workspace_root, os.path.dirname(os.path.abspath(path)), job_dir])


def replay_main(argv: list[str]) -> None:
    """The replay process (compiler.sandbox.boot runs it confined): `JOB_FILE`."""
    sys.exit(_replay_main(argv[0]))


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    pkg_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join([pkg_root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


# ---------------------------------------------------------------- the API
def profile_kernel(path: str | None, kernel: str, *, command: list[str] | None = None,
                   workspace_root: str | None = None, capture_index: int | None = None,
                   captures_file: str | None = None, launch_count: int = 1, launch_skip: int = 0,
                   timeout: float = 600) -> ProfileResult:
    """Measure `kernel` with ncu: run `command` (the user's program) when given, else replay a captured launch of
    `kernel` from `path` (the capture `capture_index`, 1-based among that kernel's replayable captures; default the
    first). Never raises for an unusable setup: `result.error` says what is missing."""
    if command:
        return run_ncu(kernel, command, launch_count=launch_count, launch_skip=launch_skip, timeout=timeout,
                       env=_child_env())
    if path is None:
        return ProfileResult(kernel, error="give the kernel's file (PATH::KERNEL) to replay a capture, "
                                           "or a command after --")
    from ..frontend.captures import load_captures
    from ..sidecar import find_workspace_root

    root = workspace_root or find_workspace_root(path)
    caps, _ = load_captures(root, path, captures_file)
    mine = [c for c in caps if c.get("kernel") == kernel]
    if not mine:
        return ProfileResult(kernel, error=f"no capture of {kernel} for {path}: run `tritonlens capture -- "
                                           "python your_program.py` on a GPU first")
    usable = [c for c in mine if replay_capture(c) is None]
    if not usable:
        return ProfileResult(kernel, error=f"no capture of {kernel} can be replayed: {replay_capture(mine[0])}")
    index = (capture_index or 1) - 1
    if not 0 <= index < len(usable):
        return ProfileResult(kernel, error=f"--capture must be 1..{len(usable)}")
    ok, why = can_profile()
    if not ok:
        return ProfileResult(kernel, error=why)
    with tempfile.TemporaryDirectory(prefix="tritonlens-replay-") as tmp:
        cmd, env = replay_command(path, kernel, usable[index], root, tmp)
        return run_ncu(kernel, cmd, launch_count=1, timeout=timeout, env=env, cwd=tmp)


def confirm_findings(report: KernelReport, result: ProfileResult) -> list[Finding]:
    """PROF001 findings: one per finding the measurement confirms (on its line, with its severity), and one on the
    def line with the kernel's numbers."""
    if not result.ok:
        return []
    m = result.metrics
    out: list[Finding] = []
    kinfo = report.kernel
    target = next((cs.spec.target for cs in report.compiled), None)
    for f in report.findings:
        rule = rule_facts(f.code)
        if rule is None or not any(k in m for k in rule.profile_metrics):  # the metrics its rule says confirm it
            continue
        msg = _confirmation(f, m)
        if msg is None:
            continue
        out.append(Finding(f.path, f.line, f.column, f.end_line, f.end_column, "PROF001", f.severity,
                           f"{f.code} at line {f.line} confirmed: {msg} (ncu)", kernel=f.kernel, config=f.config,
                           target=f.target or target, data={"confirms": f.code, "metrics": m}))
    spilled = max((cs.artifacts.resources.spill_stores + cs.artifacts.resources.spill_loads
                   for cs in report.compiled if cs.artifacts is not None and cs.artifacts.ok), default=0)
    local = m.get("local_loads", 0) + m.get("local_stores", 0)
    if spilled and local > 0 and not any(f.code == "SASS001" for f in report.findings):
        # the compile spilled but no SASS001 finding is there to confirm (rule off or filtered): say it anyway
        out.append(Finding(kinfo.path, kinfo.def_line, kinfo.col, kinfo.def_line,
                           kinfo.col + 4 + len(kinfo.func_name), "PROF001", "warning",
                           f"register spill ({spilled:,} bytes per ptxas) confirmed: {m.get('local_loads', 0):,.0f} "
                           f"local-load and {m.get('local_stores', 0):,.0f} local-store instructions executed (ncu)",
                           kernel=kinfo.name, target=target, data={"confirms": "spill", "metrics": m}))
    summary = _summary(m, result.launches)
    severity = "warning" if m.get("local_loads", 0) + m.get("local_stores", 0) > 0 else "info"
    if severity == "warning" and not spilled and not any(f.code == "SASS001" for f in report.findings):
        summary = "local memory traffic the compile did not report as a spill (a stack frame?): " + summary
    out.append(Finding(kinfo.path, kinfo.def_line, kinfo.col, kinfo.def_line, kinfo.col + 4 + len(kinfo.func_name),
                       "PROF001", severity, f"{kinfo.name} measured: {summary} (ncu)", kernel=kinfo.name,
                       target=target, data={"metrics": m, "launches": result.launches}))
    return out


def _confirmation(f: Finding, m: dict[str, float]) -> str | None:
    if f.code == "SASS001":
        ld, st = m.get("local_loads", 0), m.get("local_stores", 0)
        if ld + st <= 0:
            return None
        return f"{ld:,.0f} local-load and {st:,.0f} local-store instructions executed"
    if f.code == "TTGIR001":
        conf = m.get("shared_bank_conflicts_ld", 0) + m.get("shared_bank_conflicts_st", 0)
        stall = m.get("barrier_stall_ratio")
        if conf <= 0 and not stall:
            return None
        parts = [f"{conf:,.0f} shared-memory bank conflicts"]
        if stall:
            parts.append(f"barrier stalls {stall:.2f} cycles per issued instruction")
        return ", ".join(parts)
    if f.code == "RES002":
        occ = m.get("achieved_occupancy_pct")
        return None if occ is None else f"achieved occupancy {occ:.1f}%"
    return None


def _summary(m: dict[str, float], launches: int) -> str:
    parts = []
    if "duration_ns" in m:
        parts.append(f"{m['duration_ns'] / 1000:,.1f} µs")
    if "registers_per_thread" in m:
        parts.append(f"{m['registers_per_thread']:.0f} registers/thread")
    parts.append(f"{m.get('local_loads', 0):,.0f} local loads, {m.get('local_stores', 0):,.0f} local stores")
    conf = m.get("shared_bank_conflicts_ld", 0) + m.get("shared_bank_conflicts_st", 0)
    parts.append(f"{conf:,.0f} shared bank conflicts")
    if "barrier_stall_ratio" in m:
        parts.append(f"barrier stall {m['barrier_stall_ratio']:.2f}")
    if "achieved_occupancy_pct" in m:
        parts.append(f"occupancy {m['achieved_occupancy_pct']:.1f}%")
    if "dram_throughput_pct" in m:
        parts.append(f"DRAM {m['dram_throughput_pct']:.1f}% of peak")
    if launches > 1:
        parts.append(f"mean of {launches} launches")
    return ", ".join(parts)


def kernel_file_from_captures(kernel: str, root: str, captures_file: str | None = None) -> str | None:
    from ..frontend.captures import load_captures

    caps, _ = load_captures(root, None, captures_file)
    for c in caps:
        if c.get("kernel") == kernel:
            p = c["path"]
            return p if os.path.isabs(p) else os.path.join(root, p)
    return None


# ---------------------------------------------------------------- the command
DESCRIPTION = ("Measure a kernel on the local GPU with Nsight Compute: `profile --kernel NAME -- CMD...` runs your "
               "program; `profile PATH::KERNEL` replays a captured launch.")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tritonlens profile", description=DESCRIPTION)
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("target_kernel", nargs="?", metavar="PATH::KERNEL")
    p.add_argument("--kernel", help="kernel name to measure in the command's run")
    p.add_argument("--file", help="the kernel's source file (for findings; default: from the captures)")
    p.add_argument("--capture", type=int, default=None, help="which replayable capture of the kernel (1-based)")
    p.add_argument("--captures", metavar="FILE", help="capture file (default: .tritonlens/captures.jsonl)")
    p.add_argument("--launch-count", type=int, default=1)
    p.add_argument("--launch-skip", type=int, default=0)
    p.add_argument("--target", default="auto", help="target to check the kernel for (default: the local GPU)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--no-check", action="store_true", help="only measure; do not compile the kernel for findings")
    p.add_argument("--timeout", type=float, default=600)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    cmd: list[str] | None = None
    if "--" in argv:
        cut = argv.index("--")
        argv, cmd = argv[:cut], argv[cut + 1:]
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return EXIT_ERROR if exc.code else EXIT_OK
    return run(args, cmd)


def run(args: argparse.Namespace, cmd: list[str] | None = None,
        check: Callable[[str, str, str, str | None], KernelReport | None] | None = None) -> int:
    """The command, its arguments parsed (`cmd`: what followed `--`). `check(file, kernel, target, captures)` gives the
    kernel's report to join the numbers to (the `tritonlens profile` command hands in the pipeline's; this module
    does not import the pipeline, which imports the GPU edges): without it, the numbers alone."""
    ok, why = can_profile()
    if not ok:
        print(f"tritonlens profile: {why}", file=sys.stderr)
        return EXIT_ERROR
    path: str | None = None
    if args.target_kernel:
        path, sep, kernel = args.target_kernel.rpartition("::")
        if not sep or not path or not kernel:
            print("tritonlens profile: expected PATH::KERNEL, e.g. kernels/add.py::add_kernel", file=sys.stderr)
            return EXIT_ERROR
    elif args.kernel and cmd:
        kernel = args.kernel
    else:
        print("tritonlens profile: usage: profile --kernel NAME -- python train.py ...  |  profile PATH::KERNEL",
              file=sys.stderr)
        return EXIT_ERROR
    from ..sidecar import find_workspace_root

    root = find_workspace_root(path or os.getcwd())
    result = profile_kernel(path, kernel, command=cmd if not path else None, workspace_root=root,
                            capture_index=args.capture, captures_file=args.captures,
                            launch_count=args.launch_count, launch_skip=args.launch_skip, timeout=args.timeout)
    if not result.ok:
        print(f"tritonlens profile: {result.error}", file=sys.stderr)
        return EXIT_ERROR
    findings: list[Finding] = []
    file = path or args.file or kernel_file_from_captures(kernel, root, args.captures)
    if file and not args.no_check and check is not None:
        kr = check(file, kernel, args.target, args.captures)
        findings = confirm_findings(kr, result) if kr is not None else []
    if args.format == "json":
        json.dump({"kernel": kernel, "launches": result.launches, "metrics": result.metrics,
                   "ncu_metrics": result.ncu_metrics, "findings": [f.to_json() for f in findings]},
                  sys.stdout, indent=2)
        print()
    else:
        print(f"{kernel}: {result.launches} launch(es) measured with ncu --clock-control none")
        for name, value in result.metrics.items():
            print(f"  {name:26s} {value:,.2f}   ({result.ncu_metrics.get(name, name)})")
        for f in findings:
            print(f"{_rel(f.path)}:{f.line}:{f.column}: {f.code} [{f.severity}] {f.message} [{f.target}]")
    return EXIT_FINDINGS if any(f.severity in ("error", "warning") for f in findings) else EXIT_OK


def _rel(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


if __name__ == "__main__":
    sys.exit(main())
