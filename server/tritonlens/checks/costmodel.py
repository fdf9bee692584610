"""What a captured launch costs, and what each finding's cause costs in it: a roofline with the parallelism a grid
really has, estimated from the compiled kernel and the captured launch against the GPU the check stands for.

Pure: reads the CheckContext (the IR's loops, dots and accesses — ir/counts —, the TTGIR layouts, the PTX access
widths, ptxas's spill bytes, the occupancy, the kernel's AST for lane strides) and one captured launch (grid, scalars,
tensor shapes and strides). No GPU, no I/O. What the kernel does is read from its IR, not its Python: each loop's
trips are its `scf.for` bounds evaluated with the launch's values (ir/counts; the AST's `range` only where the IR has
no line). A launch's time is

    launch latency + max(memory time, tile time, dot time, program time) + instruction time + spill time
        + conversion time

(a GEMM's instructions issue while its tensor cores work: for it the instruction time joins the max instead, and
what its software pipeline cannot hide — `pipeline_overlap` — is added in turn, unless the loop is latency-bound: too
few programs keep copies in flight to reach the DRAM bandwidth, the memory time is already those copies' latency, and
a trip's dots and instructions run while they are in flight).

- tile time: the bytes every program's tiles move between L2 and the SMs, each program's own copy of data it shares
  with others included (a GEMM's A and B tiles, fetched again by every program of a row or column of output tiles:
  programs · K · (BLOCK_M + BLOCK_N) · element bytes), at L2_BW of the DRAM peak on the SMs the grid occupies. It is
  what makes small tiles slow at large shapes (a 64×32 tile moves 5× the bytes of a 128×256 one), which the DRAM
  traffic, counted once per tensor, cannot see.

- memory time: each tensor's footprint once per pass that walks it — the accesses of one loop (and arm) of the
  kernel, at most its footprint (programs re-reading the same data hit L2; a gated GEMM's gate and up halves of one
  weight are one pass); of alternatives a program takes one of (an early `return`, the arms of an `if`), the
  largest; a second pass over what the running programs just read at L2's bandwidth when it fits there
  (L2_BW, L2_FIT), the bytes an uncoalesced access walks (LAUNCH003) times its sectors per byte used, at the DRAM
  bandwidth the access width reaches (EFF_WIDE / EFF_NARROW of the peak; EFF_SECTOR for a tensor whose load tiles
  hold under a 128-byte line of each of rows a line apart: its requests take a sector or two of many lines, which
  DRAM serves at half its peak) — or at what the grid's programs can keep
  in flight, when fewer than the GPU needs are running: each program moves `in_flight` bytes per loop trip and waits
  LATENCY_US plus the time its warps take to issue them (Little's law), or, when a software pipeline keeps
  asynchronous copies in flight stages ahead, PIPE_LATENCY_US for them; a grid of one program on a 132-SM GPU runs at
  one program's rate, however large the data.
- dot time: 2·M·N·K per dot per loop trip per program (ir/counts), at the tensor-core rate of its operand type (fp8,
  bf16/fp16, tf32) when it is lowered to mma/wgmma, else at the FP32 FMA rate; DOT_EFF of the peak, on the share of
  the SMs the grid occupies.
- pipeline overlap (GEMMs): the copies a K loop keeps in flight — its stages less one — cover the copy latency
  PIPE_LATENCY_US only when that many trips of one program's dots last as long: a trip's dot FLOPs at the SM's
  share of its operand type's rate (DOT_EFF), shared with the programs resident beside it; and the first stages
  less one of each tile's trips wait for their copies whatever the depth (a K loop of 4 trips in 3 stages hides
  half). The share not hidden of the smaller of memory, dot and instruction time is added to the largest.
  Measured: 2-stage grouped GEMMs ran at the sum of their parts, a 4-trip batched GEMM halfway, 3-stage GEMMs
  over long K at their largest part.
- program time: the waves of resident programs the grid makes, PROGRAM_US each at least.
- instruction time: the PTX instructions of each source line × the trips of the loops around it × warps × programs,
  at PTX_PER_CLOCK per SM clock on the SMs the grid keeps busy.
- spill time: ptxas's spill bytes per thread × threads × programs × the trips of the loops around the spill code,
  through the cache hierarchy at SPILL_BW of the DRAM bandwidth.
- conversion time: each `ttg.convert_layout` whose line's PTX goes through shared memory writes and reads its tensor
  once per trip, at the SMs' shared-memory bandwidth (128 B per clock per SM); one that stays in registers is free.

Each estimate says how far to trust it (`Cost.confidence`): against a trusted measured time of the launch
(model.timing_reliable), and whether the calibration covers the kernel's class (`kernel_class`, from the IR).

A finding's estimated gain is the launch's time less the time with its cause removed (`Cost.without(cause)`): a
narrow access at full width, an uncoalesced one coalesced, a grid that fills the GPU, no spill, a dot on tensor cores,
no conversion. Idle lanes move no bytes (a masked lane issues no memory request), so in a memory-bound launch they
cost nearly nothing — the model says so rather than guess.

The constants are what the IR cannot know — latencies and achieved fractions of peaks — fitted on an H200, by class,
never per kernel: the latency and per-warp issue rate on a one-program reduction and a 64-program column sum, the
efficiencies on flat elementwise kernels, the spill rate on a spilling softmax (bench/cost_calibration.py), the dot
efficiency and the pipelined copies' latency on the calibration suite's GEMMs (bench/cost_by_class.py;
bench/results/cost-by-class.md).
"""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field, replace
from typing import Any

from ..model import timing_reliable
from ._common import dtype_bits, in_kernel_file, numel, tensor_shape_dtype, threads
from .facts import callee, eval_int, kernel_def, launch_env, pointer_param, tensor_accesses
from .registry import cost_cause, cost_weighed
from .resources import occupancy
from ..units import fmt_us
from .cost.dots import RATE_KEY as _RATE_KEY, peak_rate
from .cost.floor import Floor, physical_floor
from .cost.tensors import launch_tensors, tensor_bytes  # noqa: F401 — tensor_bytes: report/cost reads it here
from .verdict import limit

LAUNCH_US = 3.0  # a launch's fixed cost on the GPU (measured 3.4–3.9 µs for kernels of a few thousand elements)
EFF_WIDE = 0.90  # share of the DRAM peak a streaming kernel reaches with 128-bit accesses
EFF_NARROW = 0.80  # ... with 32-bit (or narrower) coalesced accesses
EFF_SECTOR = 0.50  # ... with loads whose tiles hold under a 128-byte line of each of rows a line or more apart (a
# sector or two of each of many lines a request; coalescing.ShortRun): fitted on 12 such launches of a row walk on an
# H200 (16-64 bytes of each row a trip, 1 and 4 KB rows, 1-8 warps a program: 2.0-3.3 TB/s, ncu's DRAM throughput
# 39-68% of peak for the same bytes), bench/results/cost/strided-sweep.md
LATENCY_US = 0.074  # a loop trip's fixed wait (DRAM latency not hidden by the trip's own requests), fitted
WARP_ISSUE_BPS = 2.7e9  # bytes per second one warp keeps in flight at most, fitted
SPILL_BW = 1.3  # spill traffic's bandwidth as a multiple of the DRAM peak (most stays in L1/L2), fitted on a softmax
SPILL_BW_LOOP = 4.0  # ... of spill code inside a loop, whose slots stay in L1 from trip to trip (fitted on Liger's
# cross entropy under two releases: 24 B and 240 B spilled in its loops measured 841 and 975 µs on an H200)
DOT_EFF = 0.70  # share of its operand type's peak FLOP rate a tiled dot reaches (fitted on the suite's GEMMs: bf16
# 0.66-0.79 of 989 TFLOP/s, fp8 0.51-0.58 of 1979, bench/results/cost-by-class.md)
PIPE_LATENCY_US = 1.5  # a software-pipelined loop's wait for the copies it keeps in flight (cp.async / TMA: the
# stages ahead), fitted on the decode GEMMs (64 programs moving 64-128 MB at 2.4-3.4 TB/s)
PROGRAM_US = 1.5  # the shortest life of a program (its loads' round trip, its stores): a wave of resident programs
# takes at least this (49,152 one-row programs of a norm: a flat 33 µs whatever they move)
L2_BW = 2.5  # the L2's bandwidth as a multiple of the DRAM peak: re-reads of data that stays in L2 move at it
L2_FIT = 0.5  # share of the L2 a launch's re-read working set may fill and still be re-read from it
SHARED_BYTES_PER_CLOCK = 128
MIO_PER_CLOCK = 1.0  # wavefronts an SM's memory-I/O pipe serves a clock (a shared-memory access takes one per
# bank conflict way, ir/banks.py; a shuffle or a barrier one): the pipe's peak, not fitted
PTX_PER_CLOCK = 6.0  # PTX instructions an SM retires per clock, fitted (four schedulers; a PTX line is often fewer
# SASS instructions, and predicated-off paths cost little)
_DOT_OPS = ("tt.dot", "ttng.warp_group_dot", "tt.dot_scaled", "ttng.tc_gen5_mma", "ttng.tc_gen5_mma_scaled")
_LOAD_OPS = ("tt.load", "ttg.async_copy_global_to_local", "tt.descriptor_load", "ttng.async_tma_copy_global_to_local")
_ASYNC_LOADS = ("ttg.async_copy_global_to_local", "ttng.async_tma_copy_global_to_local")
CALIBRATED = frozenset({"gemm", "gemm-fp8", "attention", "rows", "elementwise"})  # classes the suite covers
DISAGREE = 1.5  # an estimate this far from a trusted measured time (either way) is not trusted


@dataclass
class Cost:
    """The estimate for one launch. Times in µs; `without(cause)` is the same launch with one cause removed."""

    programs: int
    concurrent: int  # programs running at once
    tensor_bytes: int  # bytes the launch's tensors span
    dram_bytes: float  # ... times the sectors per byte of uncoalesced accesses
    narrow_bytes: float  # of dram_bytes, those moved by narrow accesses
    in_flight: float  # bytes one program requests per loop trip
    warps: int
    flops: float
    fma_flops: float  # of flops, those on FMA units
    spill_bytes: float  # spill traffic of the launch
    convert_bytes: float  # shared-memory traffic of layout conversions
    gpu: Any
    warp_instrs: float = 0.0  # warp instructions the launch executes (PTX per line × loop trips × warps × programs)
    spill_in_loop: bool = False  # the spill code runs inside a loop
    per_tensor_inflation: dict[str, float] = field(default_factory=dict)
    measured_us: float | None = None  # the captured run's own time of this launch (capture --time)
    resident: int = 1  # programs an SM holds at once
    tensor_bytes_of: dict[str, int] = field(default_factory=dict)  # DRAM bytes each tensor argument moves
    l2_bytes: float = 0.0  # re-reads of data that stays in L2 (a second pass over a row), at L2_BW
    tc_flops: dict[str, float] = field(default_factory=dict)  # dot FLOPs on tensor cores by operand kind
    fma_by_kind: dict[str, float] = field(default_factory=dict)  # dot FLOPs on FMA units by operand kind
    pipelined: bool = False  # the loads are asynchronous copies a software pipeline keeps in flight
    kernel_class: str = ""  # what the IR says the kernel is (kernel_class): gemm, attention, rows, ...
    unknown_trips: int = 0  # loops whose trip count the launch's values could not give (counted once)
    measured_raw_us: float | None = None  # the captured time even when too few launches or too wide a spread
    timed: int = 0  # launches the captured time is the median of
    overlap: float = 1.0  # share of a GEMM's memory and instruction time its software pipeline hides under the
    # dots (pipeline_overlap); 1 without dots
    tile_bytes: float = 0.0  # bytes every program's tiles move between L2 and the SMs, re-reads included (a GEMM's
    # operand tiles, loaded again by each program of a row or column of output tiles)
    unsized: int = 0  # tensor arguments the capture gives no shape for (tensor descriptors): their bytes are unknown
    mio_instrs: float = 0.0  # wavefronts through the SMs' memory-I/O pipe: shared-memory loads and stores (each as
    # many as its bank conflicts make), shuffles, barriers (a reduction across warps, a layout conversion), per line ×
    # loop trips × warps × programs
    strided_waves: dict[str, float] = field(default_factory=dict)  # L1 wavefronts of uncoalesced requests, by tensor:
    # one for each 128-byte line a request touches (coalesced: one a request, not counted)
    sector_bytes: float = 0.0  # of dram_bytes, those of tensors read in pieces under a line of each row (ShortRun)
    floor: Floor | None = None  # the physical floor from the launch's tensors (cost/floor.py)
    unknown_lines: tuple = ()  # source lines of the loops whose trips are unknown (0: a loop with no line)

    # ------------------------------------------------ times
    @property
    def program_rate(self) -> float:
        """Bytes per second one program moves: what it has in flight over a trip's latency and issue time (a
        pipelined loop's copies are in flight stages ahead, without its warps waiting on each)."""
        if self.in_flight <= 0:
            return math.inf
        if self.pipelined:
            return self.in_flight / (PIPE_LATENCY_US * 1e-6)
        issue = self.in_flight / (WARP_ISSUE_BPS * max(1, self.warps))
        return self.in_flight / (LATENCY_US * 1e-6 + issue)

    @property
    def memory_bw(self) -> float:
        bw = self.gpu.memory_bandwidth
        eff = EFF_WIDE
        if self.dram_bytes:
            sector = min(self.sector_bytes, self.dram_bytes)
            rest = self.dram_bytes - sector  # of which narrow accesses move their share
            narrow = self.narrow_bytes * rest / self.dram_bytes
            eff = (EFF_SECTOR * sector + EFF_WIDE * (rest - narrow) + EFF_NARROW * narrow) / self.dram_bytes
        return min(bw * eff, self.concurrent * self.program_rate)

    @property
    def memory_us(self) -> float:
        t = self.dram_bytes / self.memory_bw * 1e6 if self.dram_bytes else 0.0
        if self.l2_bytes:
            t += self.l2_bytes / (L2_BW * self.gpu.memory_bandwidth * self.sm_share) * 1e6
        return t

    @property
    def tile_us(self) -> float:
        """The programs' tiles through the L2 at L2_BW of the DRAM peak, on the SMs the grid occupies: each program
        fetches its own copy of the data it shares with others (a GEMM's tiles of A and B, re-read by every program
        of a row or column of output tiles), which the DRAM traffic counts once."""
        if not self.tile_bytes:
            return 0.0
        return self.tile_bytes / (L2_BW * self.gpu.memory_bandwidth * self.sm_share) * 1e6

    @property
    def sm_share(self) -> float:
        """The share of the GPU's SMs the grid occupies: the tensor cores and L2 ports it can use."""
        return min(1.0, self.concurrent / max(1, self.gpu.sms))

    @property
    def dot_us(self) -> float:
        """The dots at their operand type's tensor-core rate (or the FP32 FMA rate off tensor cores), DOT_EFF of the
        peak, on the SMs the grid occupies."""
        peaks = self.gpu.peak_flops
        fp32 = peaks.get("fp32") or 0
        t = 0.0
        if self.tc_flops or self.fma_by_kind:
            for kind, f in self.tc_flops.items():
                rate = peaks.get(_RATE_KEY.get(kind, "tf32")) or peaks.get("tf32") or fp32
                t += f / (rate * DOT_EFF) if rate else 0.0
            t += sum(self.fma_by_kind.values()) / (fp32 * DOT_EFF) if fp32 else 0.0
            return t / self.sm_share * 1e6
        tc = peaks.get("tf32") or fp32
        if self.fma_flops and fp32:
            t += self.fma_flops / (fp32 * DOT_EFF)
        if self.flops - self.fma_flops > 0 and tc:
            t += (self.flops - self.fma_flops) / (tc * DOT_EFF)
        return t / self.sm_share * 1e6

    @property
    def program_us(self) -> float:
        """The waves of programs the grid makes, each at least PROGRAM_US long."""
        waves = math.ceil(self.programs / max(1, self.gpu.sms * max(1, self.resident)))
        return waves * PROGRAM_US

    @property
    def issue_us(self) -> float:
        rate = PTX_PER_CLOCK * self.gpu.clock_mhz * 1e6 * self.gpu.sms
        return self.warp_instrs / (rate * self.sm_share) * 1e6 if rate else 0.0  # an idle SM issues nothing

    @property
    def mio_us(self) -> float:
        """The memory-I/O pipe's time: its wavefronts at MIO_PER_CLOCK on the SMs the grid keeps busy. A
        gather-and-reduce kernel whose cross-warp reductions store 16 words apart waits here (measured on an H200:
        L1/TEX throughput at 93%, DRAM at 5%, 8 wavefronts a shared instruction)."""
        rate = MIO_PER_CLOCK * self.gpu.clock_mhz * 1e6 * self.gpu.sms
        waves = self.mio_instrs + sum(self.strided_waves.values())
        return waves / (rate * self.sm_share) * 1e6 if rate and waves else 0.0

    @property
    def spill_us(self) -> float:
        bw = SPILL_BW_LOOP if self.spill_in_loop else SPILL_BW
        return self.spill_bytes / (bw * self.gpu.memory_bandwidth) * 1e6

    @property
    def convert_us(self) -> float:
        rate = SHARED_BYTES_PER_CLOCK * self.gpu.clock_mhz * 1e6 * self.gpu.sms
        return self.convert_bytes / rate * 1e6 if rate else 0.0

    @property
    def time_us(self) -> float:
        # instruction issue is added, not overlapped: a row kernel's loads wait on its reductions (fitted on the
        # corpus's launches, bench/results/cost-calibration.md)
        if self.issue_overlaps:
            m, d, i = max(self.memory_us, self.tile_us, self.mio_us), self.dot_us, self.issue_us
            core = max(m, d, i)
            if not (self.latency_bound and self.memory_us >= core):  # the copies' latency is the time
                core += (1.0 - self.overlap) * (m + d + i - core)  # what the pipeline does not hide runs in turn
            return LAUNCH_US + max(core, self.program_us) + self.spill_us + self.convert_us
        return LAUNCH_US + max(self.memory_us, self.tile_us, self.dot_us, self.program_us, self.mio_us) + \
            self.issue_us + self.spill_us + self.convert_us

    @property
    def latency_bound(self) -> bool:
        """A software-pipelined loop whose programs cannot keep enough copies in flight to reach the DRAM bandwidth
        (too few programs: a decode GEMM's): its memory time is already the copies' latency, stages ahead, and a trip's
        dots and instructions run while those copies are in flight — nothing of them is added."""
        if not self.pipelined or not self.dram_bytes:
            return False
        return self.concurrent * self.program_rate < EFF_WIDE * self.gpu.memory_bandwidth

    @property
    def issue_overlaps(self) -> bool:
        """A GEMM's instructions (addresses, copies, waits) issue while its tensor cores work; attention's softmax
        works on one dot's result and feeds the next, and a kernel without dots has nothing to overlap them with."""
        return bool(self.tc_flops) and self.kernel_class in ("gemm", "gemm-fp8")

    @property
    def unknown(self) -> str | None:
        """Why the model has no estimate of this launch, or None: loops whose trips the launch's values do not give,
        or an estimate below the physical floor (it missed trips or bytes). Such an estimate is never shown as one,
        nor weighs a finding."""
        below = self.floor is not None and self.time_us < self.floor.us
        if self.unknown_trips:
            lines = sorted({ln for ln in self.unknown_lines if ln})
            where = f" (line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))})" if lines else ""
            return (f"the trips of {self.unknown_trips} loop{'s' if self.unknown_trips > 1 else ''}{where} unknown"
                    + (f"; counted once, the launch would be below its physical floor ({self.floor.text()})"
                       if below and self.floor is not None else ""))
        if below and self.floor is not None:
            return f"below the physical floor ({self.floor.text()}): the model missed trips or bytes"
        return None

    # ------------------------------------------------ how far to trust it
    @property
    def ratio(self) -> float | None:
        """The estimate over the trusted measured time; None without one."""
        return self.time_us / self.measured_us if self.measured_us and self.time_us > 0 else None

    @property
    def disagrees(self) -> bool:
        """The estimate is more than DISAGREE off a trusted measured time of the same launch."""
        r = self.ratio
        return r is not None and not 1 / DISAGREE <= r <= DISAGREE

    @property
    def covered(self) -> bool:
        """The kernel is of a class the calibration covers, its loops' trips are known and it runs on NVIDIA."""
        return self.kernel_class in CALIBRATED and not self.unknown_trips and not self.unsized and self.gpu.is_cuda

    @property
    def confidence(self) -> str:
        """"measured" (a trusted time agrees with the estimate), "estimated" (no trusted time, a covered kernel),
        "disagrees" (a trusted time is over DISAGREE off) or "uncovered" (a class the calibration does not cover,
        or loops whose trips are unknown), or "unknown" (no estimate: `unknown` says why). A verdict should raise no
        severity on the last three."""
        if self.unknown:
            return "unknown"
        if self.disagrees:
            return "disagrees"
        if self.ratio is not None:
            return "measured"
        return "estimated" if self.covered else "uncovered"

    def confidence_note(self) -> str:
        """What a finding's message says about an estimate not to rely on, or "" ."""
        if self.confidence == "disagrees":
            return (f"; the estimate is {self.ratio:.2g}x the measured {fmt_us(self.measured_us or 0)}: "
                    "the model does not know this kernel")
        if self.confidence == "uncovered":
            why = f"{self.unsized} tensor argument(s) of unknown shape (no memory term)" if self.unsized else \
                f"a {self.kernel_class or 'kind of'} kernel the calibration does not cover"
            return f"; uncertain: {why}"
        return ""

    @property
    def bound(self) -> str:
        if self.time_us < 2 * LAUNCH_US:
            return "launch-bound"
        if self.program_us > max(self.memory_us, self.tile_us, self.dot_us, self.issue_us, self.mio_us):
            return "program-bound"
        if self.mio_us > max(self.memory_us, self.tile_us, self.dot_us, self.issue_us):
            # the pipe's wavefronts are mostly uncoalesced global requests: the L1's, not shared memory's
            return "l1-bound" if sum(self.strided_waves.values()) > self.mio_instrs else "shared-memory-bound"
        if max(self.dot_us, self.issue_us) > max(self.memory_us, self.tile_us):
            return "compute-bound"
        if self.tile_us > self.memory_us:
            return "l2-bound"
        if self.memory_bw < 0.5 * self.gpu.memory_bandwidth:
            return "parallelism-bound"
        return "memory-bound"

    # ------------------------------------------------ causes removed
    def without(self, cause: str, pointer: str = "") -> "Cost":
        """The launch with `cause` removed (one of CAUSES: what a rule's `cost_cause` names)."""
        if cause == "narrow":
            return replace(self, narrow_bytes=0.0)
        if cause == "uncoalesced":
            inflation = self.per_tensor_inflation.get(pointer, 1.0)
            extra = 0.0
            if pointer in self.per_tensor_inflation:
                extra = self.tensor_bytes_of.get(pointer, 0) * (1 - 1 / inflation)
            left = max(0.0, self.dram_bytes - extra)
            return replace(self, dram_bytes=left, narrow_bytes=min(self.narrow_bytes, left),
                           per_tensor_inflation={k: v for k, v in self.per_tensor_inflation.items() if k != pointer},
                           strided_waves={k: v for k, v in self.strided_waves.items() if k != pointer})
        if cause == "grid":
            return replace(self, concurrent=max(self.concurrent, self.gpu.sms * max(1, self.resident)))
        if cause == "spill":
            return replace(self, spill_bytes=0.0)
        if cause == "fma":
            tc = dict(self.tc_flops)
            for kind, f in self.fma_by_kind.items():
                kind = "tf32" if kind == "fp32" else kind
                tc[kind] = tc.get(kind, 0.0) + f
            return replace(self, fma_flops=0.0, fma_by_kind={}, tc_flops=tc)
        if cause == "convert":
            return replace(self, convert_bytes=0.0)
        return self

    def gain_us(self, cause: str, **kw: Any) -> float:
        return max(0.0, self.time_us - self.without(cause, **kw).time_us)

    def describe(self) -> dict[str, Any]:
        """The estimate and its parts, for the metrics (`launch_costs`) every presenter reads: `est_us` and `bound`
        are None and `unknown` says why when the model has no estimate; `model_us` is the model's sum either way
        (for the calibration, never shown as an estimate)."""
        unknown = self.unknown
        out = {"est_us": None if unknown else round(self.time_us, 2), "model_us": round(self.time_us, 2),
               "floor_us": round(self.floor.us, 2) if self.floor is not None else None,
               "bound": None if unknown else self.bound,
               "programs": self.programs, "concurrent": self.concurrent, "dram_bytes": int(self.dram_bytes),
               "l2_bytes": int(self.l2_bytes), "flops": self.flops,
               "memory_us": round(self.memory_us, 2), "dot_us": round(self.dot_us, 2),
               "issue_us": round(self.issue_us, 2), "program_us": round(self.program_us, 2),
               "spill_us": round(self.spill_us, 2), "convert_us": round(self.convert_us, 2),
               "tile_us": round(self.tile_us, 2), "mio_us": round(self.mio_us, 2),
               "class": self.kernel_class, "confidence": self.confidence,
               "in_flight": int(self.in_flight), "pipelined": self.pipelined}
        if self.sector_bytes:
            out["sector_bytes"] = int(self.sector_bytes)
        if self.overlap < 1.0:
            out["overlap"] = round(self.overlap, 3)
        if self.tc_flops or self.fma_by_kind:
            out["dot_flops"] = {**{k: v for k, v in self.tc_flops.items()},
                                **{f"{k} on FMA": v for k, v in self.fma_by_kind.items()}}
        if self.unknown_trips:
            out["unknown_trips"] = self.unknown_trips
        if unknown:
            out["unknown"] = unknown
        if self.unsized:
            out["unsized_args"] = self.unsized
        if self.measured_raw_us is not None:
            out["timed_us"], out["timed"] = self.measured_raw_us, self.timed
            out["time_reliable"] = self.measured_us is not None
        if self.ratio is not None and not unknown:
            out["ratio"] = round(self.ratio, 3)
        return out


# ---------------------------------------------------------------- reading the kernel and the launch
Loop = tuple[int, int, ast.Call]  # first line, last line, the range(...) call


def kernel_loops(fn: ast.FunctionDef | None) -> list[Loop]:
    """The kernel's `for ... in range / static_range(...)` loops, read once (loop_trips asks them for every line)."""
    out: list[Loop] = []
    for node in ast.walk(fn) if fn is not None else ():
        it = node.iter if isinstance(node, ast.For) else None
        if isinstance(it, ast.Call) and it.args and \
                (it.func.attr if isinstance(it.func, ast.Attribute) else getattr(it.func, "id", "")) \
                in ("range", "static_range"):
            out.append((node.lineno, node.end_lineno or node.lineno, it))
    return out


def loop_trips(loops: list[Loop], line: int, env: dict[str, int]) -> int:
    """How many times a source line of the kernel runs per program: the product of the trips of the `for` loops around
    it (range / tl.static_range with values known in this launch; an unknown loop counts once)."""
    trips = 1
    for first, last, it in loops:
        if not first < line <= last:
            continue
        args = [eval_int(a, env) for a in it.args[:3]]
        if any(a is None for a in args):
            continue
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) > 2 else 1)
        if step and step > 0:
            trips *= max(0, -(-(stop - start) // step))
    return max(trips, 1) if trips else 0


def _line_of(op) -> int:
    return op.loc.line if op.loc is not None else 0


@dataclass
class KernelFacts:
    """What the cost of every launch of a spec reads from its compile alone, read once per spec (a spec holds up to
    16 recorded launches): the kernel's loops and accesses, its tiles, dots, conversions, spill sites and PTX."""

    fn: ast.FunctionDef | None
    loops: list[Loop]
    resident: int
    n_threads: int
    warps: int
    in_flight: float  # bytes one program's loads request per loop trip (the TTGIR loads' tiles)
    dots: list[tuple[int, float, bool]]  # (line, 2·M·N·K of one dot, on FMA units)
    converts: list[tuple[int, float]]  # (line, bytes one conversion moves through shared memory, both ways)
    spill_per_thread: int
    spill_lines: list[int]
    instr_lines: dict[int, int]  # PTX instructions per source line (0: no line)
    access_bits: dict[int, float]  # bits per thread of the global accesses of each line (PTX)
    narrow_lines: set[int]  # lines whose accesses are all narrower than 128 bits though their runs allow 128
    tiles: list[tuple[int, int, int, float]]  # (line, col, elem bits, bytes of the tile) of each TTGIR global access
    counts: Any = None  # ir.counts.IrCounts of the TTIR (else the TTGIR): loops with their bounds, dots, accesses
    fma_lines: set[int] = field(default_factory=set)  # lines of the dots lowered to FMA (TTGIR)
    async_in_flight: float = 0.0  # bytes a software pipeline keeps in flight ahead of its loop (its prologue's
    # asynchronous copies, one per stage ahead); 0 when the loads are not pipelined
    shared_lines: set[int] | None = None  # lines whose PTX goes through shared memory (st.shared and ld.shared);
    # None without PTX
    kernel_class: str = ""
    straight_lines: set[int] = field(default_factory=set)  # lines whose PTX is in no loop of the PTX: the loops
    # around them were unrolled, so their PTX counts are already per program (not to be multiplied by trips)
    mio_lines: dict[int, int] = field(default_factory=dict)  # what each line's PTX takes of the memory-I/O pipe, in
    # wavefronts (a shared access's bank conflicts, ir/banks.py) and one per shuffle or barrier

    @classmethod
    def of(cls, ctx) -> "KernelFacts":
        from ..ir.mlir import layout_kind, layout_of

        gpu = ctx.gpu
        fn = kernel_def(ctx)
        occ = occupancy(ctx)
        n_threads = threads(ctx)
        in_flight = 0.0
        async_in_flight = 0.0
        async_in_loop = False
        dots: list[tuple[int, float, bool]] = []
        converts: list[tuple[int, float]] = []
        for op in ctx.ttgir.ops:
            if not in_kernel_file(ctx, op.loc):
                continue
            if op.name in _LOAD_OPS:
                type_str = op.operand_types[0] if op.name.startswith("ttg.async") and op.operand_types \
                    else op.result_type
                sd = tensor_shape_dtype(type_str)
                if sd:
                    nbytes = numel(sd[0]) * (dtype_bits(sd[1]) or 32) / 8
                    in_flight += nbytes
                    if op.name in _ASYNC_LOADS:
                        if op.loop_depth == 0:
                            async_in_flight += nbytes
                        else:
                            async_in_loop = True
            elif op.name in _DOT_OPS:
                res = tensor_shape_dtype(op.result_type)
                a = tensor_shape_dtype(op.operand_types[0] if op.operand_types else None)
                if res and a and len(res[0]) >= 2 and len(a[0]) >= 2:
                    fma = op.name == "tt.dot" and layout_kind(layout_of(op.result_type), ctx.ttgir.layouts) != "mma"
                    dots.append((_line_of(op), 2.0 * res[0][-2] * res[0][-1] * a[0][-1], fma))
            elif op.name == "ttg.convert_layout":
                sd = tensor_shape_dtype(op.result_type)
                if sd:
                    converts.append((_line_of(op), 2 * numel(sd[0]) * (dtype_bits(sd[1]) or 32) / 8))
        res = ctx.artifacts.resources
        spill = (res.spill_stores or 0) + (res.spill_loads or 0)
        spill_lines = [i.loc.line for i in ctx.local_accesses if i.loc is not None] if spill > 0 else []
        instr_lines: dict[int, int] = {}
        mio_lines: dict[int, int] = {}
        access_bits: dict[int, float] = {}
        widest: dict[int, int] = {}
        if ctx.artifacts.asm.get("ptx") and not ctx.hip:  # AMDGCN has no widths here
            from ..ir.banks import shared_wavefronts

            waves = shared_wavefronts(ctx.ptx.instrs)  # a shared access's wavefronts, its bank conflicts included
            for i in ctx.ptx.kernel_instrs():
                ln = i.loc.line if i.loc is not None else 0
                instr_lines[ln] = instr_lines.get(ln, 0) + 1
                if i.kind in ("ld.shared", "st.shared", "bar") or i.opcode.startswith("shfl") or \
                        (i.kind in ("atom", "red") and ".shared" in i.opcode):
                    mio_lines[ln] = mio_lines.get(ln, 0) + waves.get(i.ir_line, 1)
                if i.kind in ("ld.global", "st.global", "cp.async") and ln and i.bits:
                    access_bits[ln] = access_bits.get(ln, 0.0) + i.bits
                    widest[ln] = max(widest.get(ln, 0), i.bits)
        tiles, narrow = [], set()
        for store in (False, True):
            for acc in tensor_accesses(ctx, store).values():
                tiles.append((acc.line, acc.col, acc.elem_bits, acc.per_thread * n_threads * acc.elem_bits / 8))
                if widest and acc.per_thread * acc.elem_bits >= 128 and 0 < widest.get(acc.line, 128) < 128:
                    narrow.add(acc.line)
        shared_lines = None
        if ctx.artifacts.asm.get("ptx") and not ctx.hip:
            kinds: dict[int, set] = {}
            for i in ctx.ptx.kernel_instrs():
                if i.loc is not None and i.kind in ("st.shared", "ld.shared"):
                    kinds.setdefault(i.loc.line, set()).add(i.kind)
            shared_lines = {ln for ln, ks in kinds.items() if len(ks) == 2}
        counts = _ir_counts(ctx)
        fma_lines = {ln for ln, _, fma in dots if fma}
        return cls(fn, kernel_loops(fn), occ["blocks"] if occ and occ.get("blocks") else 1, n_threads,
                   max(1, n_threads // max(1, gpu.warp_size)), in_flight, dots, converts, spill, spill_lines,
                   instr_lines, access_bits, narrow, tiles, counts, fma_lines,
                   async_in_flight if async_in_loop else 0.0, shared_lines, kernel_class(counts),
                   set(instr_lines) - ctx.ptx.looped_lines() if instr_lines else set(), mio_lines)


def _ir_counts(ctx):
    """The loops, dots and accesses of the compile, from its TTIR (loops as written, before the pipeliner adds
    prologue copies), else its TTGIR; None when neither reads."""
    from ..ir.counts import count_ir

    for stage in ("ttir", "ttgir"):
        text = ctx.artifacts.asm.get(stage)
        if isinstance(text, str) and text:
            try:
                return count_ir(text, getattr(ctx, stage))
            except Exception:  # noqa: BLE001 — an IR this reader does not know: the AST's trips stand
                import logging

                logging.getLogger(__name__).exception("counting the %s of %s failed", stage, ctx.kernel.name)
    return None


def kernel_class(counts) -> str:
    """What the IR says a kernel is, as the calibration groups kernels: "attention" (a dot in a loop that consumes
    another dot's result of the same trip: P·V after softmax(Q·Kᵀ); two independent dots of a gated GEMM are a GEMM),
    "gemm-fp8" / "gemm" (dots), "gemm-scaled" (block-scaled dots), "atomic" (it accumulates with atomics), "rows"
    (loops over its data), "elementwise" (one pass, no loop), "" when unread."""
    if counts is None:
        return ""
    if any(d.op in ("tt.dot_scaled", "ttng.tc_gen5_mma_scaled") for d in counts.dots):
        return "gemm-scaled"
    if counts.dots:
        if any(d.chained and d.loop is not None for d in counts.dots):
            return "attention"
        return "gemm-fp8" if any(d.operand_kind == "fp8" for d in counts.dots) else "gemm"
    if any(a.kind == "atomic" for a in counts.accesses):
        return "atomic"
    return "rows" if counts.loops else "elementwise"


def estimate(ctx, launch: dict[str, Any], facts: KernelFacts | None = None) -> Cost | None:
    """The cost of one captured launch of the spec; None when the launch or the compile says too little. `facts`:
    what the spec's compile says (KernelFacts.of), when the caller estimates several launches."""
    gpu = ctx.gpu
    programs = numel([int(g) for g in launch.get("grid") or []])
    if programs <= 0:
        return None
    k = facts or KernelFacts.of(ctx)
    concurrent = min(programs, gpu.sms * k.resident)
    env = launch_env(ctx, launch)
    # the contents of small integer tensors the capture kept: loop bounds the kernel loads from them (expert offsets)
    data = {name: a["tensor"]["values"] for name, a in (launch.get("args") or {}).items()
            if isinstance(a, dict) and isinstance(a.get("tensor"), dict)
            and isinstance(a["tensor"].get("values"), list)}
    ir_trips = k.counts.trips(env, [int(g) for g in launch.get("grid") or []], data) if k.counts is not None else None
    if ir_trips is not None and programs <= concurrent:
        # one wave: the launch ends with its busiest program (a persistent GEMM's first num_tiles % SMS programs
        # take one tile more), so every program is priced at its trips
        ir_trips = ir_trips.busiest()
    by_line = k.counts.line_trips(ir_trips) if ir_trips is not None else {}

    def trips(line: int) -> float:
        """Runs of a source line per program: from the IR's loops where the IR has the line, else the AST's."""
        if not line:
            return 1
        if line in by_line:
            return by_line[line]
        return loop_trips(k.loops, line, env)

    bytes_of: dict[str, int] = {}
    for name, a in (launch.get("args") or {}).items():
        if isinstance(a, dict) and isinstance(a.get("tensor"), dict):
            bytes_of[name] = tensor_bytes(a["tensor"])

    from .coalescing import lane_strides, short_runs

    inflation: dict[str, float] = {}
    strided = [acc for acc in lane_strides(ctx, launch, k.fn, k.tiles) if acc.pointer and acc.pointer in bytes_of]
    for acc in strided:
        if acc.dram_inflation > 1:
            inflation[acc.pointer] = max(inflation.get(acc.pointer, 1.0), acc.dram_inflation)
    # Alternatives a program takes one of (an early return's row zeroing and the row's real passes) count their
    # largest.
    def one_path(items: list[tuple[tuple[int, int], float]]) -> float:
        return k.counts.most_on_one_path(items) if k.counts is not None else sum(w for _, w in items)

    # Each tensor moves its footprint once per pass that walks it, and at most that a pass: programs re-reading the
    # same data (a weight vector per row) hit L2. A pass is what the accesses of one loop (and arm) move of it: a
    # gated GEMM's gate and up tiles are two halves of one weight in one pass, a norm's second loop over the row
    # another.
    traffic = {p: float(b) for p, b in bytes_of.items()}
    passes: dict[str, dict[tuple, list]] = {}
    accesses = _accesses(ctx, k, bytes_of)
    for line, col, p, tile, _ in accesses:
        where = k.counts.placement((line, col)) if k.counts is not None else None
        one = passes.setdefault(p, {}).setdefault(where or (line, col), [(line, col), 0.0])  # unplaced: its own
        one[1] += tile * trips(line) * programs
    walked = {p: one_path([(pos, min(w, float(bytes_of[p]))) for pos, w in groups.values()])
              for p, groups in passes.items()}
    # what the programs' tiles move between L2 and the SMs, each program's re-reads included
    tile_bytes = one_path([((line, col), tile * trips(line) * programs) for line, col, _, tile, _ in accesses])
    # An uncoalesced request takes the L1 a wavefront for each 128-byte line it touches (a coalesced one, one): what
    # a loop that walks the sectors a few bytes a trip costs, its DRAM traffic being the bytes once.
    strided_waves: dict[str, float] = {}
    for acc in strided:
        moved = sum(tile * trips(line) * programs for line, _, _, tile, at in accesses if at == (acc.line, acc.col))
        if acc.lines > 1 and moved:
            strided_waves[acc.pointer] = strided_waves.get(acc.pointer, 0.0) + moved / acc.useful * acc.lines
    for p, w in walked.items():
        traffic[p] = max(traffic[p], w)
    # An uncoalesced access fetches whole sectors for the bytes it reads: the bytes it walks times its inflation (a
    # column read of a row-major matrix fetches each sector once per column; a stride-2 walk fetches the whole span
    # for half of it).
    for p, f in inflation.items():
        traffic[p] = walked.get(p, float(bytes_of[p])) * f
    # A second pass over data a program just read (a row's normalizing pass after its statistics) finds it in L2 when
    # what the running programs re-read fits there: costed at L2's bandwidth, not DRAM's.
    l2 = 0.0
    for p, w in walked.items():
        again = traffic[p] - float(bytes_of[p])
        if p not in inflation and again > 0 and \
                bytes_of[p] / programs * concurrent <= L2_FIT * gpu.l2_bytes:
            traffic[p] -= again
            l2 += again
    dram = sum(traffic.values())
    # A tensor read in pieces under a line of each row (8 fp32 columns of rows 4 KB apart a trip): DRAM serves its
    # sectors at EFF_SECTOR of its peak
    sector = sum(traffic[p] for p in {r.pointer for r in short_runs(ctx, launch, k.fn)}
                 if p in traffic and p not in inflation)

    # narrow accesses: the share of the accesses' bits moved by lines narrower than 128 bits where the run allows 128
    total_access = sum(k.access_bits.values())
    narrow_share = sum(b for ln, b in k.access_bits.items() if ln in k.narrow_lines) / total_access \
        if total_access else 0.0

    per_program = dram / programs
    in_flight = k.in_flight if 0 < k.in_flight <= per_program else per_program

    tc_flops: dict[str, float] = {}
    fma_by_kind: dict[str, float] = {}
    if k.counts is not None and k.counts.dots and ir_trips is not None:
        for d in k.counts.dots:
            into = fma_by_kind if d.line in k.fma_lines else tc_flops
            into[d.operand_kind] = into.get(d.operand_kind, 0.0) + d.flops * ir_trips.of(d.loop) * programs
        flops = sum(tc_flops.values()) + sum(fma_by_kind.values())
        fma = sum(fma_by_kind.values())
    else:
        flops = sum(f * trips(ln) for ln, f, _ in k.dots) * programs
        fma = sum(f * trips(ln) for ln, f, on_fma in k.dots if on_fma) * programs
    spill_trips = max((trips(ln) for ln in k.spill_lines), default=1)
    spill = k.spill_per_thread * k.n_threads * programs * spill_trips
    # a conversion whose line's PTX never goes through shared memory permutes registers: it costs nothing here
    convert = sum(b * trips(ln) for ln, b in k.converts
                  if k.shared_lines is None or ln in k.shared_lines) * programs
    # instructions and the memory-I/O pipe's wavefronts: the PTX of each source line, run by every warp of every program
    # as often as the loops around it that the PTX still has (an unrolled loop's copies are all in the PTX already)
    def ptx_trips(line: int) -> float:
        return 1 if line in k.straight_lines else trips(line)

    warp_instrs = float(sum(n * ptx_trips(ln) for ln, n in k.instr_lines.items())) * k.warps * programs
    mio = float(sum(n * ptx_trips(ln) for ln, n in k.mio_lines.items())) * k.warps * programs

    overlap = pipeline_overlap(ctx, k, ir_trips, programs) if tc_flops else 1.0
    pipelined = k.async_in_flight > 0
    if pipelined:
        in_flight = min(k.async_in_flight, per_program) if per_program > 0 else k.async_in_flight
    raw = launch.get("time_us") if isinstance(launch.get("time_us"), (int, float)) else None
    measured = raw if raw is not None and timing_reliable(launch) else None
    return Cost(programs, concurrent, sum(bytes_of.values()), dram, dram * narrow_share, in_flight, k.warps, flops,
                fma, spill, convert, gpu, warp_instrs, spill_trips > 1, inflation, measured, resident=k.resident,
                tensor_bytes_of={p: int(t) for p, t in traffic.items()}, l2_bytes=l2, tc_flops=tc_flops,
                fma_by_kind=fma_by_kind, pipelined=pipelined, kernel_class=k.kernel_class,
                unknown_trips=len(ir_trips.unknown) if ir_trips is not None else 0, measured_raw_us=raw,
                timed=int(launch.get("timed") or 0), overlap=overlap, tile_bytes=tile_bytes,
                unsized=_unsized(ctx, launch), mio_instrs=mio, strided_waves=strided_waves, sector_bytes=sector,
                floor=physical_floor(k.counts, launch_tensors(launch), gpu, LAUNCH_US),
                unknown_lines=tuple(k.counts.loops[i].line for i in sorted(ir_trips.unknown))
                if ir_trips is not None else ())


def _unsized(ctx, launch: dict[str, Any]) -> int:
    """Tensor-descriptor parameters of the spec whose launch records no tensor shape: the bytes they move are
    unknown (the memory term leaves them out)."""
    args = launch.get("args") or {}
    return sum(1 for name, ty in (ctx.spec.signature or {}).items()
               if str(ty).startswith("tensordesc") and not isinstance((args.get(name) or {}).get("tensor"), dict))


def pipeline_overlap(ctx, k: KernelFacts, ir_trips, programs: int) -> float:
    """The share of a GEMM's memory and instruction time its software pipeline hides under the dots, from the IR and
    the launch: the K loop (the loop of the most dot FLOPs) keeps `stages - 1` copies in flight; they hide the copy
    latency (PIPE_LATENCY_US) when that many trips of one program's dots last as long — a trip's FLOPs at the SM's
    share of the operand type's tensor-core rate, divided among the programs resident on the SM (as many as the grid
    puts there) — and each tile's
    first `stages - 1` trips wait for their copies whatever the depth. 1 when the IR does not say."""
    if k.counts is None or ir_trips is None or not k.counts.dots:
        return 1.0
    per_loop: dict = {}
    for d in k.counts.dots:
        if d.loop is not None:
            per_loop.setdefault(d.loop, []).append(d)
    if not per_loop:
        return 1.0
    loop, dots = max(per_loop.items(), key=lambda kv: sum(d.flops for d in kv[1]) * ir_trips.of(kv[0]))
    stages = _stages_of(ctx, k.counts.loops[loop].line if loop < len(k.counts.loops) else 0)
    if stages is None:
        return 1.0
    parent = k.counts.loops[loop].parent if loop < len(k.counts.loops) else None
    outer = ir_trips.of(parent) if parent is not None else 1.0
    trips = ir_trips.of(loop) / outer if outer > 0 else ir_trips.of(loop)  # a tile's K trips
    if trips <= 0 or stages < 2:
        return 0.0
    gpu = ctx.gpu
    peaks = gpu.peak_flops
    beside = max(1, min(k.resident, math.ceil(programs / max(1, gpu.sms))))
    trip_s = 0.0
    for d in dots:
        rate = peaks.get(_RATE_KEY.get(d.operand_kind, "tf32")) or peaks.get("tf32") or peaks.get("fp32") or 0
        if rate:
            trip_s += d.flops / (rate * DOT_EFF / max(1, gpu.sms) / beside)
    ahead = stages - 1
    hidden = min(1.0, ahead * trip_s / (PIPE_LATENCY_US * 1e-6)) if trip_s > 0 else 1.0
    steady = max(0.0, trips - ahead) / trips
    return hidden * steady


def _stages_of(ctx, line: int) -> int | None:
    """The software-pipeline depth of the loop on `line`: its `tl.range(..., num_stages=N)`, else the launch's
    num_stages option; None when neither says."""
    from ._common import source_index

    if line:
        for sites in source_index(ctx).by_stamp.values():
            for site in sites:
                v = site.kw.get("num_stages")
                if site.name == "range" and site.node.lineno == line and isinstance(v, ast.Constant) \
                        and isinstance(v.value, int):
                    return v.value
    stages = (ctx.spec.options or {}).get("num_stages")
    return int(stages) if isinstance(stages, int) else None


def mean_launch_us(metrics: dict[str, Any]) -> float | None:
    """The model's time of a spec's captured launches (its metrics' `launch_costs`, one per recorded launch), weighed
    by how often each launched; None without captured launches. What a fix and a release comparison set side by
    side."""
    pairs = [(max(1, int(c.get("count") or 1)), float(c["est_us"])) for c in metrics.get("launch_costs") or ()
             if isinstance(c, dict) and isinstance(c.get("est_us"), (int, float))]
    n = sum(w for w, _ in pairs)
    return sum(w * t for w, t in pairs) / n if n else None


def _accesses(ctx, k: KernelFacts, tensors: dict[str, Any]) -> list[tuple[int, int, str, float, tuple | None]]:
    """(line, column, the tensor argument it addresses, bytes of its tile, its call's (line, 1-based column)) of each
    TTGIR global access in the kernel's file whose pointer the kernel's AST traces to a tensor argument of the launch:
    the call Triton stamped the access with, so that a line of several accesses
    (`tl.store(o + i, tl.load(x + i) + tl.load(y + i))`) gives each its own tensor; where no call has the stamp, the
    first call of the line (a call spread over lines is on its pointer's line too, where the IR places it)."""
    from ._common import source_index, stamped_call

    if k.fn is None:
        return []
    idx = source_index(ctx)
    pointers = set(tensors)
    by_line: dict[int, str] = {}
    for node in ast.walk(k.fn):
        if isinstance(node, ast.Call) and callee(node) in ("load", "store") and node.args:
            p = pointer_param(node.args[0], pointers, idx)
            if p:
                for ln in (node.lineno, node.args[0].lineno):
                    by_line.setdefault(ln, p)
    out = []
    for line, col, _, tile in k.tiles:
        site = stamped_call(ctx, line, col, ("load", "store"))
        p = pointer_param(site.args[0], pointers, idx) if site is not None and site.args else by_line.get(line)
        if p:
            out.append((line, col, p, tile, (site.node.lineno, site.node.col_offset + 1) if site is not None else None))
    return out


# ---------------------------------------------------------------- what each finding's cause costs
CAUSES = frozenset({"narrow", "uncoalesced", "grid", "spill", "fma", "convert", "lanes"})  # what `without` removes


def gain_of(cost: Cost, f) -> float | None:
    """The estimated time a finding's cause costs in the launch; None when the model has no estimate for it."""
    cause = cost_cause(f.code)
    if cause is None or cause not in CAUSES:
        return None
    if cause == "lanes":
        # masked lanes issue no memory requests: only a launch bound by its instructions loses their share
        idle = float(f.data.get("idle") or 0.0)
        return idle * max(0.0, cost.dot_us - cost.memory_us)
    if cause == "fma" and f.data.get("lowering") != "fma":
        return None  # mma.sync instead of wgmma: the model has no rate for it
    if cause == "uncoalesced":
        return cost.gain_us(cause, pointer=f.data.get("pointer", ""))
    return cost.gain_us(cause)


_TAIL_CAUSES = ("narrow", "lanes")  # what the masked branch of the last block has and the full blocks do not


def tail_branch_lines(fn: ast.FunctionDef | None) -> set[int]:
    """Lines of the masked branch of a full/partial block split (`if (pid + 1) * BLOCK <= n: <unmasked> else:
    <masked>`, what the full-block fix writes): both branches access memory, the test compares with `<=` or `<`, and
    only the last block of a launch takes the `else`."""
    out: set[int] = set()
    if fn is None:
        return out

    def accesses(stmts) -> bool:
        return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("load", "store")
                   for s in stmts for n in ast.walk(s))

    for node in ast.walk(fn):
        if isinstance(node, ast.If) and node.orelse and isinstance(node.test, ast.Compare) \
                and len(node.test.ops) == 1 and isinstance(node.test.ops[0], (ast.LtE, ast.Lt)) \
                and accesses(node.body) and accesses(node.orelse):
            first, last = node.orelse[0].lineno, max(s.end_lineno or s.lineno for s in node.orelse)
            out.update(range(first, last + 1))
    return out


def _tail_findings(ctx, findings: list) -> set[int]:
    """Narrow accesses and idle lanes in the masked branch of a full/partial block split: one program of a launch
    runs it, so they are at most infos whatever the launch (checks/verdict: a ceiling; ids of the findings handled)."""
    lines = tail_branch_lines(kernel_def(ctx)) if ctx.source else set()
    done: set[int] = set()
    for f in findings:
        if cost_cause(f.code) in _TAIL_CAUSES and f.line in lines:
            done.add(id(f))
            f.data["tail_branch"] = True
            limit(f, "info", "in the masked branch for the last, partial block — one program of a launch runs it; "
                  "the full blocks take the unmasked path", "tail")
    return done


def launch_costs(ctx) -> list[tuple[dict[str, Any], Cost]]:
    """(launch, cost) for each recorded launch of the spec (the most launched first); empty without captures."""
    out = []
    facts = None
    for launch in ctx.launches:
        try:
            facts = facts or KernelFacts.of(ctx)
            cost = estimate(ctx, launch, facts)
        except Exception:  # noqa: BLE001 — an estimate that fails leaves the findings as the rules made them
            import logging

            logging.getLogger(__name__).exception("cost model failed on %s", ctx.kernel.name)
            return []
        if cost is not None:
            out.append((launch, cost))
    return out


def weigh(ctx, findings: list) -> list[tuple[dict[str, Any], Cost]]:
    """Record on every cost-weighed finding of a spec with captured launches what its cause costs: its estimated gain,
    the share of the spec's time, the launch's time and bound (`data["est_*"]`, and in its message). The gain is
    weighed over the spec's recorded launches by their counts, each launch's estimate scaled to its measured time
    where the capture timed it (capture --time). The severity that follows is the verdict's (checks/verdict.py).
    Returns the launches' costs (for the metrics)."""
    tail = _tail_findings(ctx, findings)
    costs = launch_costs(ctx)
    if not costs:
        return costs
    unknown = next((c.unknown for _, c in costs if c.unknown), None)
    if unknown:  # a launch the model cannot price: no finding is weighed on the others' share of an unknown total
        for f in findings:
            if cost_weighed(f.code) and f.severity != "error" and id(f) not in tail \
                    and any(gain_of(c, f) is not None for _, c in costs):
                f.data["est_unknown"] = unknown
                f.message += f" [cost: unknown — {unknown}]"
        return costs
    weights = [max(1, int(launch.get("count") or 1)) for launch, _ in costs]
    scales = [(c.measured_us / c.time_us) if c.measured_us and c.time_us > 0 else 1.0 for _, c in costs]
    total = sum(w * s * c.time_us for w, s, (_, c) in zip(weights, scales, costs))
    launches = sum(weights)
    measured = all(c.measured_us for _, c in costs)
    main = costs[0][1]
    # an estimate a trusted measured time contradicts, or of a kernel the calibration does not cover, is no ground to
    # raise a severity on (the verdict reads est_trusted)
    trusted = all(c.confidence in ("measured", "estimated") for _, c in costs)
    where = f"{ctx.gpu.short_name}, " + ("measured" if measured else "estimated" if not any(
        c.measured_us for _, c in costs) else "partly measured")
    for f in findings:
        if not cost_weighed(f.code) or f.severity == "error" or id(f) in tail:
            continue
        gains = [gain_of(c, f) for _, c in costs]
        if all(g is None for g in gains):
            continue
        gain = sum(w * s * (g or 0.0) for w, s, g in zip(weights, scales, gains))
        share = gain / total if total > 0 else 0.0
        per_launch = gain / launches
        launch_us = total / launches
        f.data.update({"est_gain_us": round(per_launch, 3), "est_share": round(share, 4),
                       "est_launch_us": round(launch_us, 3), "est_measured": measured, "est_bound": main.bound,
                       "est_short": launch_us < 2 * LAUNCH_US, "est_confidence": main.confidence,
                       "est_trusted": trusted})
        pct = "<1%" if 0 < share < 0.01 else f"{share:.0%}"
        f.message += (f" [cost: ~{fmt_us(per_launch)} of {fmt_us(launch_us)} a launch ({pct}; {where}; {main.bound}"
                      f"{main.confidence_note()})]")
    return costs
