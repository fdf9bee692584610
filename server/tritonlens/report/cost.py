"""What a launch costs: the bytes a captured launch's tensors hold, the static floor of the virtual GPU for them,
the times `tritonlens bench` measured (`.tritonlens/bench.jsonl`), and findings weighed by those times.

Read by check, the editor and the report; nothing here runs on a GPU (gpu/bench.py measures, this reads).
"""
from __future__ import annotations

import os
from typing import Any

from ..checks.costmodel import tensor_bytes
from ..checks.verdict import measure
from ..units import fmt_bytes, fmt_flops, fmt_us
from ..device import virtual_gpu
from ..model import clean_launch
from ..sidecar import BENCH, sidecar_path
from ..source import split_lines



# ---------------------------------------------------------------- what a launch moves
def launch_bytes(capture: dict[str, Any]) -> int:
    """Bytes the tensors of a capture's launch hold, read as the cost model reads them (model.clean_launch: a host
    tensor descriptor as the tensor it addresses): its most launched one when it kept its distribution
    (captures.fold_captures)."""
    args = (clean_launch(capture.get("launch")) or {}).get("args") or {}
    return sum(tensor_bytes(a["tensor"]) for a in args.values() if "tensor" in a)


def static_floor_us(nbytes: int, gpu: virtual_gpu.GpuModel) -> float:
    return nbytes / gpu.memory_bandwidth * 1e6


def bench_file(root: str) -> str:
    return sidecar_path(root, BENCH)


def load_bench(root: str) -> dict[str, dict[str, Any]]:
    """The latest measured result per spec identity in `.tritonlens/bench.jsonl` (empty when none); read again only
    when the file changed (the editor asks on every lens)."""
    path = bench_file(root)
    try:
        st = os.stat(path)
    except OSError:
        return {}
    key = (path, st.st_mtime_ns, st.st_size)
    if _LOADED.get(path, (None,))[0] == key:
        return _LOADED[path][1]
    from ..frontend.untrusted import UntrustedFile, has_controls, loads, read_text

    latest: dict[str, dict[str, Any]] = {}
    try:  # a workspace file: regular and bounded only (a link to /dev/zero is not read), each line shallow
        text = read_text(path, root=root)
    except (OSError, UntrustedFile):
        text = ""
    for line in split_lines(text):
        try:
            rec = loads(line, path) if len(line) <= 1 << 20 else None
        except UntrustedFile:
            continue
        if isinstance(rec, dict) and rec.get("measured") and isinstance(rec.get("identity"), str) \
                and isinstance(rec.get("time_us"), (int, float)) and not has_controls(rec):
            latest[rec["identity"]] = rec
    _LOADED[path] = (key, latest)
    return latest


# bench.jsonl path -> ((path, mtime, size), results): the file is the owner's record; this only spares re-reading it
_LOADED: dict[str, tuple[Any, dict[str, dict[str, Any]]]] = {}


def spec_cost(root: str, spec: Any, brief: bool = False, metrics: dict[str, Any] | None = None) -> str:
    """cost_text for a spec checked in the workspace `root`: its bench results, the virtual GPU of its target, the
    spec's metrics."""
    if not getattr(spec, "capture_id", ""):
        return ""
    try:
        gpu = virtual_gpu.for_target(spec.target)
    except ValueError:
        gpu = None
    return cost_text(spec, load_bench(root), gpu, brief, metrics)


def cost_text(spec: Any, measured: dict[str, dict[str, Any]], gpu: virtual_gpu.GpuModel | None,
              brief: bool = False, metrics: dict[str, Any] | None = None) -> str:
    """What a compiled spec costs, for the kernel lines of check and the editor's lens: the measured time when
    `tritonlens bench` timed this captured spec (`measured` from load_bench), else the floor of `gpu` for its most
    launched captured launch: its GEMM's FLOPs at the operand type's peak where the cost model's physical floor
    (`metrics`' launch_costs, checks/cost/floor.py) is the dots', else the bytes its tensors hold at the DRAM peak;
    empty when neither is known."""
    rec = measured.get(spec.capture_id) if getattr(spec, "capture_id", "") else None
    if rec and isinstance(rec.get("time_us"), (int, float)):
        pct = rec.get("pct_of_peak")
        launches = int(rec.get("launches") or spec.launches or 0)
        count = rec.get("count")
        counted = (f" · {count:,} of {launches:,} launches at this shape"
                   if isinstance(count, int) and count != launches else "")
        return (f"{fmt_us(rec['time_us'])} on {(rec.get('gpu') or {}).get('name', 'the GPU')} (measured, L2 cold)"
                + (f" · {pct:.0f}% of HBM peak" if isinstance(pct, (int, float)) else "")
                + (counted or (f" · {launches:,} launch{'es' if launches != 1 else ''}" if launches else "")))
    records = getattr(spec, "launch_records", None) or []
    if gpu is None or not records:
        return ""
    costs = [c for c in (metrics or {}).get("launch_costs") or () if isinstance(c, dict)]
    if costs and costs[0].get("floor_kind") and isinstance(costs[0].get("floor_us"), (int, float)):
        floor = fmt_us(costs[0]["floor_us"])
        if brief:
            return f"≥ {floor} physical floor ({gpu.short_name})"
        return (f"≥ {floor} for {fmt_flops(float(costs[0].get('floor_flops') or 0))} at {costs[0]['floor_kind']} "
                f"peak ({gpu.short_name}; a physical floor, not measured)")
    nbytes = launch_bytes({"launch": records[0]})
    if not nbytes:
        return ""
    if brief:
        return f"≥ {fmt_us(static_floor_us(nbytes, gpu))} static floor ({gpu.short_name})"
    return (f"≥ {fmt_us(static_floor_us(nbytes, gpu))} for {fmt_bytes(nbytes)} at "
            f"{gpu.memory_bandwidth / 1e12:.2f} TB/s ({gpu.short_name}; a static floor, not measured)")


# ---------------------------------------------------------------- findings weighed by measured time
def file_time_us(measured: dict[str, dict[str, Any]], rel_path: str) -> float:
    """The measured GPU time of a file's captured launches: each measured spec's captured time (see _spec_time)."""
    return sum(_spec_time(rec) for rec in measured.values() if rec.get("path") == rel_path)


def _spec_time(rec: dict[str, Any]) -> float:
    """A measured spec's captured time: bench's `total_us` when the capture counted its distinct launches (Σ count ×
    time over those it timed), else its time × its launches (one when the capture counted none)."""
    if rec.get("count") is not None and isinstance(rec.get("total_us"), (int, float)):
        return float(rec["total_us"])
    return float(rec["time_us"]) * max(int(rec.get("launches") or 0), 1)


def weigh(kr: Any, measured: dict[str, dict[str, Any]], file_total_us: float) -> None:
    """Record on each finding of a kernel report the measured time of the captured specs it holds in and their share
    of the file's measured GPU time: in `data` ("measured_us", "share", "measured_every"), at the end of its
    message, and as a detail line with the share. The severity that follows is the verdict's (checks/verdict.py: a
    cost finding whose specs were all measured at a sliver of the file's time is an info). Findings of specs nothing measured are left as they are."""
    if not measured:
        return
    by_key = {cs.spec.key(): cs.spec for cs in kr.compiled}
    for f in kr.findings:
        recs = [measured.get(by_key[k].capture_id) for k in f.data.get("specs") or () if k in by_key
                and by_key[k].capture_id]
        recs = [r for r in recs if r]
        if not recs:
            continue
        spent = sum(_spec_time(r) for r in recs)
        gpu = (recs[0].get("gpu") or {}).get("name", "the GPU")
        share = 100.0 * spent / file_total_us if file_total_us > 0 else None
        measure(f, spent, share, every=len(recs) == len(f.data.get("specs") or ()))
        # the measured time in place of the estimate's share in the one-line message
        f.message = f.message.replace(f.data.get("message_cost") or "\0", "")
        f.data["message_cost"] = f" — {fmt_us(spent)} (measured, {gpu})"
        f.message += f.data["message_cost"]
        f.add_detail(f"measured: its specs took {fmt_us(spent)} on {gpu}"
                     + (f", {share:.0f}% of this file's measured GPU time" if share is not None else ""),
                     replacing="measured: ")
