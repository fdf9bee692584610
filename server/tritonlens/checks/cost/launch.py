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

Each mechanism has its module: memory (DRAM and L2 traffic, tiles), latency (few programs), dots (tensor cores,
pipeline overlap), issue (instructions), pipe (shared memory, layout conversions), spills, trips (loops), floor (the
physical floor the estimate is checked against); kernel (what the compile says), estimate (one launch), findings
(what each finding's cause costs).

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

from dataclasses import dataclass, field, replace
from typing import Any

from ...units import fmt_us
from . import dots, issue, latency, memory, pipe, spills
from .floor import Floor

LAUNCH_US = 3.0  # a launch's fixed cost on the GPU (measured 3.4–3.9 µs for kernels of a few thousand elements)
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
        return latency.program_rate(self)

    @property
    def memory_bw(self) -> float:
        return memory.memory_bw(self)

    @property
    def memory_us(self) -> float:
        return memory.memory_us(self)

    @property
    def tile_us(self) -> float:
        return memory.tile_us(self)

    @property
    def sm_share(self) -> float:
        """The share of the GPU's SMs the grid occupies: the tensor cores and L2 ports it can use."""
        return min(1.0, self.concurrent / max(1, self.gpu.sms))

    @property
    def dot_us(self) -> float:
        return dots.dot_us(self)

    @property
    def program_us(self) -> float:
        return latency.program_us(self)

    @property
    def issue_us(self) -> float:
        return issue.issue_us(self)

    @property
    def mio_us(self) -> float:
        return pipe.mio_us(self)

    @property
    def spill_us(self) -> float:
        return spills.spill_us(self)

    @property
    def convert_us(self) -> float:
        return pipe.convert_us(self)

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
        return latency.latency_bound(self)

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
        if self.floor is not None and self.floor.flops and self.floor.dot_us >= self.floor.bytes_us:
            out["floor_flops"], out["floor_kind"] = self.floor.flops, self.floor.kind  # the floor is the dots'
        if self.unsized:
            out["unsized_args"] = self.unsized
        if self.measured_raw_us is not None:
            out["timed_us"], out["timed"] = self.measured_raw_us, self.timed
            out["time_reliable"] = self.measured_us is not None
        if self.ratio is not None and not unknown:
            out["ratio"] = round(self.ratio, 3)
        return out
