"""What a kernel does, counted from the compiler's TTIR / TTGIR text: its `scf.for` loops (nesting, and bounds as
expressions over the kernel's arguments, constants, program ids and program counts), its dots (M×N×K and operand
types) and its global loads and stores (element type and tile), each placed in the loop that runs it.

The Python hides trip counts: `range(K, 0, -BK)`, a local bound `range(lo, hi, BLOCK_N)`, a loop in an inlined
`@jit` helper and a persistent tile loop `range(pid, tiles, num_programs)` all reach the IR as one normalized
`scf.for` whose bounds are SSA values. `count_ir` reads them once per compile; `IrCounts.trips` evaluates them
for one launch (its scalar arguments and grid): how many times, on average over the grid's programs, each loop's body
runs per program, and the most any program runs it.

Pure and linear in the text; no triton import.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ..source import split_lines
from .mlir import MlirModule, _strip_loc, _top_matches, split_top

_INT_TYPES = ("i1", "i8", "i16", "i32", "i64", "index")
_BINARY = {"arith.addi", "arith.subi", "arith.muli", "arith.divsi", "arith.divui", "arith.ceildivsi",
           "arith.ceildivui", "arith.floordivsi", "arith.remsi", "arith.remui", "arith.minsi", "arith.maxsi",
           "arith.minui", "arith.maxui", "arith.andi", "arith.ori", "arith.xori", "arith.shli", "arith.shrsi",
           "arith.shrui"}
_CASTS = {"arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui"}
_LOADS = ("tt.load", "tt.descriptor_load", "tt.descriptor_gather", "ttg.async_copy_global_to_local",
          "ttng.async_tma_copy_global_to_local", "ttng.async_tma_gather", "amdgpu.buffer_load",
          "amdgpu.buffer_load_to_local")
_STORES = ("tt.store", "tt.descriptor_store", "tt.descriptor_scatter", "ttng.async_tma_copy_local_to_global",
           "ttng.async_tma_scatter", "amdgpu.buffer_store")
_ATOMICS = ("tt.atomic_rmw", "tt.atomic_cas", "tt.descriptor_reduce", "ttng.async_tma_reduce")
DOT_OPS = ("tt.dot", "ttng.warp_group_dot", "tt.dot_scaled", "ttng.tc_gen5_mma", "ttng.tc_gen5_mma_scaled")
_ELEM_BITS = {"i1": 8, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "f16": 16, "bf16": 16, "f32": 32, "f64": 64,
              "tf32": 32}
ENTRY = "^bb0"  # the kernel body's first CFG block
_BLOCK = re.compile(r"^(\^[\w.$-]+)(?:\([^)]*\))?:")
_BLOCK_REF = re.compile(r"\^[\w.$-]+")
MAX_SAMPLES = 16  # program ids (per grid axis) or loop iterations an evaluation tries where a bound depends on them

_DEF = re.compile(r"^(%[\w.$-]+)(?::\d+)?\s*=\s*(\"?[\w.]+\"?)\s*(.*)$")
_FOR = re.compile(r"scf\.for (%[\w.$-]+) = (%[\w.$#-]+) to (%[\w.$#-]+) step (%[\w.$#-]+)")
_CARRIED = re.compile(r"(%[\w.$-]+) = (%[\w.$#-]+)")
MAX_CARRIED_TRIPS = 1024  # trips of a loop walked one by one because a value it carries bounds a loop inside it
MAX_ARM_TRIPS = 512  # trips of a loop walked to see how often the ifs in it take each arm ...
MAX_ARM_WALKS = 2  # ... in this many of its runs (the first programs'): the share is the loop's, not the program's
_SSA = re.compile(r"%[\w.$-]+(?:#\d+)?")  # `%5#1`: the second result of `%5:2 = ...`
_IF_RESULTS = re.compile(r"^(%[\w.$-]+)(?::(\d+))?\s*=\s*scf\.if (%[\w.$#-]+) -> \(?([^{]*?)\)?\s*\{$")
_IF_COND = re.compile(r"scf\.if (%[\w.$#-]+)")
_FROM_FIRST = ("tt.addptr", "tt.advance", "tt.make_block_ptr", "tt.make_tensor_descriptor")  # a pointer (or a
# descriptor) made from its first operand: what it addresses is what that one does, whatever the offsets
_LOC_NAME = re.compile(r'loc\("([^"]+)"')
_CONST = re.compile(r"^(-?\d+|true|false) : (i\d+|index)$")
_PTR_TENSOR = re.compile(r"tensor<((?:\d+x)*)!tt\.ptr<(\w+)>")
_BLOCK_PTR = re.compile(r"!tt\.ptr<tensor<((?:\d+x)+)(\w+)")
_DESC = re.compile(r"!tt\.tensordesc<tensor<((?:\d+x)+)(\w+)")
_SCALAR_PTR = re.compile(r"!tt\.ptr<(\w+)>")
_SHAPED = re.compile(r"(?:tensor|memdesc)<((?:\d+x)+)(\w+)")
_PRECISION = re.compile(r"inputPrecision = (\w+)")
_SCALED = re.compile(r"lhs = (\w+) rhs = (\w+)")


def elem_bits(elem: str) -> int:
    """Bits of an MLIR element type name (f8E4M3FN: 8, bf16: 16, f32: 32, ...)."""
    if elem in _ELEM_BITS:
        return _ELEM_BITS[elem]
    if elem.startswith("f8") or elem.startswith("i8") or elem in ("e4m3", "e5m2"):
        return 8
    if elem.startswith(("f4", "e2m1", "f6")):
        return 4 if elem.startswith(("f4", "e2m1")) else 6
    m = re.match(r"[if](\d+)", elem)
    return int(m.group(1)) if m else 32


@dataclass
class Loop:
    index: int
    parent: int | None  # the enclosing loop's index
    ir_line: int
    iv: str
    lower: str  # SSA names of the bounds
    upper: str
    step: str
    line: int = 0  # source line (the kernel file's outermost frame), 0 when unknown
    carried: list = field(default_factory=list)  # (SSA name, initial value's SSA name) of each loop-carried value
    yields: list = field(default_factory=list)  # what the body yields for each, in order (the next trip's value)


@dataclass
class Dot:
    ir_line: int
    op: str
    loop: int | None
    m: int
    n: int
    k: int
    batch: int
    a_type: str
    b_type: str
    acc_type: str
    precision: str = ""  # tf32 / tf32x3 / ieee for fp32 operands (inputPrecision)
    line: int = 0
    chained: bool = False  # an operand (A or B) is computed from another dot's result in the same loop (attention's
    # P·V after softmax(Q·Kᵀ)), not two independent dots of one tile (a gated GEMM's gate and up projections)
    a_args: tuple = ()  # the tensor arguments operand A is loaded from (its loads' pointers traced to the kernel's
    b_args: tuple = ()  # arguments, sorted); empty when it is not loaded from one
    on_dot: bool = False  # an operand is computed from a dot's result anywhere in the kernel (not only this loop's)

    @property
    def flops(self) -> float:
        return 2.0 * self.batch * self.m * self.n * self.k

    @property
    def operand_kind(self) -> str:
        """The tensor-core rate class of the operands: fp8, bf16, fp16, tf32, fp32 (IEEE fp32: FMA), int8, fp4, fp64."""
        a = self.a_type
        if a.startswith("f8") or a in ("e4m3", "e5m2"):
            return "fp8"
        if a in ("e2m1", "f4E2M1FN") or a.startswith("f4"):
            return "fp4"
        if a == "bf16":
            return "bf16"
        if a == "f16":
            return "fp16"
        if a in ("i8", "ui8"):
            return "int8"
        if a == "f64":
            return "fp64"
        if a == "f32":
            return "fp32" if self.precision in ("ieee", "2") else "tf32"
        return "fp32"


@dataclass
class Access:
    ir_line: int
    op: str
    kind: str  # "load", "store", "atomic"
    loop: int | None
    elems: int  # elements one execution moves (the whole tile, all threads)
    elem: str  # element type name
    line: int = 0
    col: int = 0  # the source column Triton stamped on it
    block: str = ENTRY  # the kernel body's CFG block it is in (an early `return` splits the body into blocks)
    arms: tuple = ()  # (scf.if, arm) of each `scf.if` around it, outermost first: arms of one if exclude each other
    args: tuple = ()  # the tensor arguments its pointer is traced to (sorted)

    @property
    def bytes(self) -> float:
        return self.elems * elem_bits(self.elem) / 8


@dataclass
class Trips:
    """One launch's evaluation of the loops: executions of each loop's body per program (the mean over the grid's
    programs, each loop's count already multiplied by its enclosing loops'), the most any program made, and the
    loops whose bounds could not be evaluated (counted once)."""

    mean: dict[int, float]
    most: dict[int, float]
    unknown: set[int] = field(default_factory=set)
    arm_share: dict[tuple, float] = field(default_factory=dict)  # (scf.if, arm) -> the share of its loop's trips
    # that take the arm (a flattened persistent loop stores its tile once every k_tiles trips); 1 when unknown

    def of(self, loop: int | None) -> float:
        return 1.0 if loop is None else self.mean.get(loop, 1.0)

    def busiest(self) -> "Trips":
        """The same loops counted at the most any program runs them."""
        return Trips(dict(self.most), self.most, self.unknown, self.arm_share)

    def share(self, arm: tuple | None) -> float:
        return 1.0 if arm is None else self.arm_share.get(arm, 1.0)

    def most_of(self, loop: int | None) -> float:
        return 1.0 if loop is None else self.most.get(loop, 1.0)


@dataclass
class IrCounts:
    args: list[str]  # the kernel's runtime arguments by name, in order (constexprs and those specialized away are not)
    loops: list[Loop]
    dots: list[Dot]
    accesses: list[Access]
    values: dict[str, tuple] = field(default_factory=dict, repr=False)  # SSA scalar -> (op, operands...)
    lines: dict[int, set] = field(default_factory=dict)  # source line -> the loops (None: none) its ops run in
    successors: dict[str, list] = field(default_factory=dict)  # CFG block -> the blocks it branches to
    ifs: dict[int, tuple] = field(default_factory=dict)  # scf.if -> (its condition's SSA name, the loop it is in)
    arm_lines: dict[int, set] = field(default_factory=dict)  # source line -> (loop, (scf.if, arm)) of its ops that
    # run in an arm of an if inside their loop (counted at the arm's share of the loop's trips)

    def placement(self, pos: tuple[int, int]) -> tuple[str, tuple, int | None] | None:
        """(CFG block, scf.if arms, loop) of the access Triton stamped at a source (line, column); None when the
        counts have none there."""
        where = self.__dict__.get("_placement")
        if where is None:
            where = self.__dict__["_placement"] = {}
            for a in self.accesses:
                if a.line:
                    where.setdefault((a.line, a.col), (a.block, a.arms, a.loop))
        return where.get(pos)

    def most_on_one_path(self, items: list[tuple[tuple[int, int], float]]) -> float:
        """The most of `items` ((source line, column) of an access, its weight) that one program runs: a program
        takes one arm of each `scf.if` and one path through the kernel body's blocks (`if y == ignore: ...; return`
        makes one block that zeroes the row and another that reads it), so alternatives count their largest, not
        their sum. An item the counts do not place runs on every path; without branches this is the sum."""
        per_block: dict[str, list] = {}
        for pos, w in items:
            block, arms, _ = self.placement(pos) or (ENTRY, (), None)
            per_block.setdefault(block, []).append((arms, w))
        value = {b: _arms_most(v) for b, v in per_block.items()}
        reach: dict[str, float] = {}  # block -> the most a program runs from it on (a back edge is not followed)

        def best(b: str, open_: frozenset) -> float:
            if b not in reach:
                nxt = [best(s, open_ | {b}) for s in self.successors.get(b, []) if s not in open_ and s != b]
                reach[b] = value.get(b, 0.0) + max(nxt, default=0.0)
            return reach[b]

        most = best(ENTRY, frozenset())
        if set(value) - set(reach):  # a block the branches read here do not reach: count everything, the safe side
            return sum(w for _, w in items)
        return most

    def line_trips(self, trips: Trips) -> dict[int, float]:
        """How many times each source line's ops run per program (the most-run of its ops): what per-line costs
        (instructions, spill code) multiply by. An op in an arm of an `if` in its loop runs on the arm's share of
        the loop's trips."""
        out = {ln: max(trips.of(lp) for lp in loops) for ln, loops in self.lines.items()}
        for ln, places in self.arm_lines.items():
            out[ln] = max([out.get(ln, 0.0)] + [trips.of(lp) * trips.share(arm) for lp, arm in places])
        return out

    # ------------------------------------------------ evaluation
    def _deps(self) -> dict[str, frozenset]:
        """For each SSA scalar the program-id axes and loop induction variables it depends on."""
        memo: dict[str, frozenset] = {}
        ivs = {lp.iv: lp.index for lp in self.loops}
        ivs.update({name: lp.index for lp in self.loops for name, _ in lp.carried})

        def dep(name: str, depth: int = 0) -> frozenset:
            if name in memo:
                return memo[name]
            if depth > 200:
                return frozenset()
            node = self.values.get(name)
            out: frozenset = frozenset()
            if name in ivs:
                out = frozenset({("iv", ivs[name])})
            elif node is not None:
                if node[0] == "pid":
                    out = frozenset({("pid", node[1])})
                elif node[0] in ("op", "cmp"):
                    out = frozenset().union(*(dep(o, depth + 1) for o in node[2:]))
                elif node[0] in ("load", "addptr"):
                    out = frozenset().union(*(dep(o, depth + 1) for o in node[1:]))
            memo[name] = out
            return out

        for lp in self.loops:
            for n in (lp.lower, lp.upper, lp.step):
                dep(n)
        for cond, _ in self.ifs.values():
            dep(cond)
        return memo

    def trips(self, args: dict[str, int], grid: list[int] | tuple[int, ...],
              data: dict[str, list[int]] | None = None) -> Trips:
        """Evaluate every loop's trip count for a launch: `args` the kernel's scalar arguments by name, `grid` the
        launch's grid, `data` the contents of small integer tensor arguments the capture kept (a bound loaded from
        memory, an MoE kernel's expert offsets, is then known). A bound that depends on the program id is evaluated
        for up to MAX_SAMPLES programs per axis (spread over the grid) and averaged; one that depends on an enclosing
        loop's variable, over up to MAX_SAMPLES of that loop's iterations, and one that depends on a value the loop
        carries, over every iteration in order (up to MAX_CARRIED_TRIPS)."""
        grid3 = [max(1, int(g)) for g in (list(grid) + [1, 1, 1])[:3]]
        deps = self._deps()
        children: dict[int | None, list[Loop]] = {}
        for lp in self.loops:
            children.setdefault(lp.parent, []).append(lp)
        bound_deps = {lp.index: deps.get(lp.lower, frozenset()) | deps.get(lp.upper, frozenset())
                      | deps.get(lp.step, frozenset()) for lp in self.loops}
        # a loop's subtree depends on its variable when a loop below it has a bound that does
        below: dict[int, set] = {}

        def collect(lp: Loop) -> set:
            s = set(bound_deps[lp.index])
            for ch in children.get(lp.index, ()):
                s |= collect(ch)
            below[lp.index] = s
            return s

        for lp in children.get(None, ()):
            collect(lp)
        axes = sorted({d[1] for ds in bound_deps.values() for d in ds if d[0] == "pid"})
        samples = [[0]] * 3
        for a in axes:
            n = grid3[a]
            samples[a] = list(range(n)) if n <= MAX_SAMPLES else \
                sorted({round(i * (n - 1) / (MAX_SAMPLES - 1)) for i in range(MAX_SAMPLES)})
        pids = [(x, y, z) for x in samples[0] for y in samples[1] for z in samples[2]]
        total: dict[int, float] = {}
        most: dict[int, float] = {}
        unknown: set[int] = set()
        # ifs in a loop whose condition changes from trip to trip (`if ki == k_tiles - 1` on a carried counter)
        ifs_in: dict[int, list] = {}
        for i, (cond, loop) in self.ifs.items():
            if loop is not None and any(d == ("iv", loop) for d in deps.get(cond, ())):
                ifs_in.setdefault(loop, []).append((i, cond))
        runs: dict[int, float] = {}
        hits: dict[int, float] = {}
        walks: dict[int, int] = {}
        for pid in pids:
            execs: dict[int, float] = {}
            env = {"args": args, "grid": grid3, "pid": pid, "iv": {}, "data": data or {}, "ifs_in": ifs_in,
                   "if_runs": runs, "if_hits": hits, "arm_walks": walks}
            self._walk(children, None, env, 1.0, execs, unknown, below)
            for k, v in execs.items():
                total[k] = total.get(k, 0.0) + v
                most[k] = max(most.get(k, 0.0), v)
        mean = {k: v / len(pids) for k, v in total.items()}
        share: dict[tuple, float] = {}
        for i, r in runs.items():
            if r > 0:
                share[(i, 0)] = hits.get(i, 0.0) / r
                share[(i, 1)] = 1.0 - share[(i, 0)]
        return Trips(mean, most, unknown, share)

    def _walk(self, children, parent, env, weight, execs, unknown, below) -> None:
        for lp in children.get(parent, ()):
            lo, hi, st = (self.value(n, env) for n in (lp.lower, lp.upper, lp.step))
            if lo is None or hi is None or not st:
                unknown.add(lp.index)
                n = 1
            elif st > 0:
                n = max(0, -(-(hi - lo) // st))
            else:
                n = max(0, -(-(lo - hi) // -st))
            execs[lp.index] = execs.get(lp.index, 0.0) + weight * n
            carried = lp.carried if len(lp.yields) == len(lp.carried) else []
            if n and lo is not None and st and lp.index in env["ifs_in"] and \
                    env["arm_walks"].get(lp.index, 0) < MAX_ARM_WALKS:
                env["arm_walks"][lp.index] = env["arm_walks"].get(lp.index, 0) + 1
                self._arm_walk(lp, carried, env, lo, st, n, weight)
            if not n or not children.get(lp.index):
                continue
            if carried and ("iv", lp.index) in below.get(lp.index, ()) and lo is not None and st \
                    and n <= MAX_CARRIED_TRIPS:
                # a value the loop carries from trip to trip bounds a loop inside it (a persistent grouped GEMM's
                # running tile count): walk every trip in order, each with the values the previous one yielded
                for _ in self._in_order(lp, carried, env, lo, st, n):
                    self._walk(children, lp.index, env, weight, execs, unknown, below)
            elif ("iv", lp.index) in below.get(lp.index, ()) and lo is not None and st:
                ks = list(range(n)) if n <= MAX_SAMPLES else \
                    sorted({round(i * (n - 1) / (MAX_SAMPLES - 1)) for i in range(MAX_SAMPLES)})
                for k in ks:
                    env["iv"][lp.iv] = lo + k * st
                    self._walk(children, lp.index, env, weight * n / len(ks), execs, unknown, below)
                env["iv"].pop(lp.iv, None)
            else:
                self._walk(children, lp.index, env, weight * n, execs, unknown, below)

    def _in_order(self, lp: Loop, carried: list, env: dict, lo: int, st: int, count: int):
        """The loop's first `count` trips in order, `env` holding at each its variable and the values it carries
        (what the trip before yielded); both taken out of `env` after the last."""
        now = [self.value(init, env) for _, init in carried]
        for k in range(count):
            env["iv"][lp.iv] = lo + k * st
            for (name, _), v in zip(carried, now):
                if v is None:
                    env["iv"].pop(name, None)
                else:
                    env["iv"][name] = v
            yield k
            now = [self.value(y, env) for y in lp.yields] if carried else []
        env["iv"].pop(lp.iv, None)
        for name, _ in carried:
            env["iv"].pop(name, None)

    def _arm_walk(self, lp: Loop, carried: list, env: dict, lo: int, st: int, n: int, weight: float) -> None:
        """How often the ifs in `lp` whose condition changes from trip to trip take their first arm: the loop's
        first MAX_ARM_TRIPS trips walked in order, each with the values the previous one yielded (a flattened
        persistent GEMM's `ki` wraps to 0 every k_tiles trips), the share of them extended to all `n`."""
        ifs = env["ifs_in"][lp.index]
        seen = dict.fromkeys((i for i, _ in ifs), 0)
        true = dict(seen)
        for _ in self._in_order(lp, carried, env, lo, st, min(n, MAX_ARM_TRIPS)):
            for i, cond in ifs:
                c = self.value(cond, env)
                if c is not None:
                    seen[i] += 1
                    true[i] += bool(c)
        for i, _ in ifs:
            if seen[i]:
                env["if_runs"][i] = env["if_runs"].get(i, 0.0) + weight * n
                env["if_hits"][i] = env["if_hits"].get(i, 0.0) + weight * n * true[i] / seen[i]

    def _address(self, name: str, env: dict, depth: int) -> tuple[str, int] | None:
        """(tensor argument, element offset) a scalar pointer holds in `env`; None when unknown."""
        node = self.values.get(name)
        if node is None or depth > 200:
            return None
        if node[0] == "argptr":
            return node[1], 0
        if node[0] == "addptr":
            base, off = self._address(node[1], env, depth + 1), self.value(node[2], env, depth + 1)
            return (base[0], base[1] + off) if base is not None and off is not None else None
        return None

    def value(self, name: str, env: dict, depth: int = 0) -> int | None:
        """The integer an SSA scalar holds in `env` (args, grid, pid, loop variables); None when unknown."""
        if name in env["iv"]:
            return env["iv"][name]
        node = self.values.get(name)
        if node is None or depth > 200:
            return None
        kind = node[0]
        if kind == "const":
            return node[1]
        if kind == "arg":
            v = env["args"].get(node[1])
            return int(v) if isinstance(v, (int, bool)) else None
        if kind == "pid":
            return env["pid"][node[1]]
        if kind == "load":
            at = self._address(node[1], env, depth + 1)
            data = env.get("data", {}).get(at[0]) if at else None
            return int(data[at[1]]) if data is not None and 0 <= at[1] < len(data) else None
        if kind == "nprog":
            return env["grid"][node[1]]
        if kind == "cmp":
            a, b = self.value(node[2], env, depth + 1), self.value(node[3], env, depth + 1)
            f = _CMP.get(node[1])
            return int(f(a, b)) if f and a is not None and b is not None else None
        if kind != "op":
            return None
        if node[1] == "arith.select":  # only the chosen side must be known
            c = self.value(node[2], env, depth + 1)
            return None if c is None else self.value(node[3] if c else node[4], env, depth + 1)
        vals = [self.value(o, env, depth + 1) for o in node[2:]]
        if any(v is None for v in vals):
            return None
        return _apply(node[1], vals)


def _apply(op: str, vals: list[int]) -> int | None:
    a = vals[0]
    b = vals[1] if len(vals) > 1 else 0
    if op in _CASTS:
        return a
    if op == "arith.addi":
        return a + b
    if op == "arith.subi":
        return a - b
    if op == "arith.muli":
        return a * b
    if op in ("arith.divsi", "arith.divui"):
        return int(a / b) if b else None  # truncates toward zero
    if op in ("arith.ceildivsi", "arith.ceildivui"):
        return -(-a // b) if b else None
    if op == "arith.floordivsi":
        return a // b if b else None
    if op in ("arith.remsi", "arith.remui"):
        return int(math.fmod(a, b)) if b else None
    if op in ("arith.minsi", "arith.minui"):
        return min(a, b)
    if op in ("arith.maxsi", "arith.maxui"):
        return max(a, b)
    if op == "arith.andi":
        return a & b
    if op == "arith.ori":
        return a | b
    if op == "arith.xori":
        return a ^ b
    if op == "arith.shli":
        return a << b if 0 <= b < 64 else None
    if op in ("arith.shrsi", "arith.shrui"):
        return a >> b if 0 <= b < 64 else None
    return None


_CMP = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "slt": lambda a, b: a < b, "sle": lambda a, b: a <= b,
        "sgt": lambda a, b: a > b, "sge": lambda a, b: a >= b, "ult": lambda a, b: a < b, "ule": lambda a, b: a <= b,
        "ugt": lambda a, b: a > b, "uge": lambda a, b: a >= b}


def _signature(body: str) -> str:
    """The type part of an op (after its last top-level ` : `)."""
    colons = _top_matches(body, r"(?<= ):(?= )") if " : " in body else []
    return body[colons[-1] + 1:].strip() if colons else ""


def _shape(dims: str) -> int:
    n = 1
    for d in dims.strip("x").split("x"):
        if d:
            n *= int(d)
    return n


def _access_tile(op: str, sig: str) -> tuple[int, str] | None:
    """(elements, element type) one execution of a load/store moves, from its type signature."""
    if op in ("tt.descriptor_load", "tt.descriptor_gather"):
        sig = sig.split("->")[-1]
        m = _SHAPED.search(sig)
        return (_shape(m.group(1)), m.group(2)) if m else None
    for rx in (_DESC, _BLOCK_PTR, _PTR_TENSOR):
        m = rx.search(sig)
        if m:
            return _shape(m.group(1)), m.group(2)
    m = _SCALAR_PTR.search(sig)
    if m:
        return 1, m.group(1)
    return None


def _dot(op: str, body: str, sig: str) -> tuple[int, int, int, int, str, str, str, str] | None:
    shapes = [(m.group(1), m.group(2)) for m in _SHAPED.finditer(sig)]
    if op in ("ttng.tc_gen5_mma", "ttng.tc_gen5_mma_scaled"):
        # operands a, b and the accumulator (in tensor memory), all memdescs: a is M×K, b K×N, d M×N
        shapes = [s for s in shapes][:3]
        if len(shapes) < 3:
            return None
        a, b, d = shapes
    else:
        if len(shapes) < 3:
            return None
        a, b, d = shapes[0], shapes[1], shapes[-1]
    ad = [int(x) for x in a[0].strip("x").split("x")]
    dd = [int(x) for x in d[0].strip("x").split("x")]
    if len(ad) < 2 or len(dd) < 2:
        return None
    batch = 1
    for x in dd[:-2]:
        batch *= x
    a_type, b_type = a[1], b[1]
    precision = ""
    m = _PRECISION.search(body)
    if m:
        precision = {"0": "tf32", "1": "tf32x3", "2": "ieee"}.get(m.group(1), m.group(1))
    if op in ("tt.dot_scaled", "ttng.tc_gen5_mma_scaled"):
        s = _SCALED.search(body)
        if s:
            a_type, b_type = s.group(1), s.group(2)
    k = ad[-1] * (2 if a_type == "e2m1" and a[1] == "i8" else 1)  # fp4 packs two values in an i8
    return dd[-2], dd[-1], k, batch, a_type, b_type, d[1], precision


def count_ir(text: str, module: MlirModule | None = None) -> IrCounts:
    """The loops, dots and global accesses of the public kernel function in a TTIR or TTGIR text. `module`: the
    same text parsed by parse_mlir, to give each its source line."""
    lines_of: dict[int, int] = {}
    cols_of: dict[int, int] = {}
    src_lines: dict[int, set] = {}
    if module is not None:
        for op in module.ops:
            if op.loc is not None:
                lines_of[op.ir_line] = op.loc.line
                cols_of[op.ir_line] = op.loc.col
    args: list[str] = []
    values: dict[str, tuple] = {}
    loops: list[Loop] = []
    dots: list[Dot] = []
    accesses: list[Access] = []
    stack: list[int | None] = []  # per open region: the loop index it belongs to (None: not a loop's body)
    arms: list[tuple[int, int] | None] = []  # per open region: (scf.if, arm) when it is an arm of an scf.if
    n_ifs = 0
    block = ENTRY
    successors: dict[str, list] = {}
    from_dot: dict[str, int | None] = {}  # SSA value -> the loop of the dot whose result it is computed from
    origin: dict[str, frozenset] = {}  # SSA value -> the tensor arguments a pointer addresses or a value is loaded from
    if_results: dict[int, tuple] = {}  # scf.if -> (its result names, its condition, their types)
    if_yields: dict[tuple[int, int], list] = {}  # (scf.if, arm) -> what the arm yields
    ifs: dict[int, tuple] = {}
    arm_lines: dict[int, set] = {}

    def _of(table: dict, u: str, default=None):
        """`table`'s entry for an SSA name; `%5#1` falls back to `%5`'s (one entry for all results of an op)."""
        return table[u] if u in table else table.get(u.split("#", 1)[0], default)
    in_kernel = False
    done = False
    for n, raw in enumerate(split_lines(text), 1):
        if done:
            break
        line = raw.strip()
        if not line or line.startswith("#") or line.startswith("//"):
            continue
        if not in_kernel:
            if line.startswith("tt.func public @") or (line.startswith("tt.func @") and not args):
                in_kernel = True
                stack = [None]
                arms = [None]
                for part in split_top(_arg_list(line), ","):
                    name, _, rest = part.partition(":")
                    ty = re.split(r" \{| loc\(", rest.strip(), maxsplit=1)[0].strip()
                    loc_name = _LOC_NAME.search(rest)
                    key = loc_name.group(1) if loc_name else name.strip().lstrip("%")
                    args.append(key)
                    if ty in _INT_TYPES:
                        values[name.strip()] = ("arg", key)
                    elif _SCALAR_PTR.fullmatch(ty):
                        values[name.strip()] = ("argptr", key)  # a tensor argument's base pointer
                        origin[name.strip()] = frozenset({key})
                    elif ty.startswith("!tt.tensordesc"):
                        origin[name.strip()] = frozenset({key})
            continue
        body, _ = _strip_loc(line)
        body = body.strip()
        closes = body.startswith("}")
        opens = body.endswith("{")
        popped = None
        if closes:
            popped = stack.pop() if stack else None
            arm = arms.pop() if arms else None
            if not stack:
                done = True
                continue
            if opens:  # `} else {`, `} do {`: the next region of the same op
                stack.append(popped)
                arms.append((arm[0], arm[1] + 1) if arm else None)
            continue
        if len(stack) == 1:  # the kernel body's own CFG: its blocks and branches
            bm = _BLOCK.match(body)
            if bm:
                block = bm.group(1)
                continue
            if body.startswith("cf."):
                successors.setdefault(block, []).extend(_BLOCK_REF.findall(body))
                continue
        current = next((x for x in reversed(stack) if x is not None), None)
        if n in lines_of:
            arm = None  # the innermost arm of an if around the op inside its loop
            for lp_i, arm_i in zip(reversed(stack), reversed(arms)):
                if arm_i or lp_i is not None:
                    arm = arm_i
                    break
            if arm and current is not None:
                arm_lines.setdefault(lines_of[n], set()).add((current, arm))
            else:
                src_lines.setdefault(lines_of[n], set()).add(current)
        fm = _FOR.search(body) if "scf.for " in body else None
        if fm or (opens and " scf.while " in f" {body}"):
            # a while loop's trips are unknown: its bounds are no SSA values (counted once)
            lp = Loop(len(loops), current, n, *(fm.groups() if fm else ("", "", "", "")), line=lines_of.get(n, 0))
            if fm and "iter_args(" in body:
                inner = body.split("iter_args(", 1)[1]
                lp.carried = _CARRIED.findall(inner[:inner.find(")")] if ")" in inner else inner)
                for name, init in lp.carried:  # a pointer advanced from trip to trip addresses what its first did
                    if _of(origin, init):
                        origin[name] = _of(origin, init)
            loops.append(lp)
            if opens:
                stack.append(lp.index)
                arms.append(None)
            continue
        if opens:
            stack.append(None)
            if " scf.if " in f" {body}":
                n_ifs += 1
                arms.append((n_ifs, 0))
                cm = _IF_COND.search(body)
                if cm:
                    ifs[n_ifs] = (cm.group(1), current)
                im = _IF_RESULTS.match(body)
                if im:  # `%2 = scf.if %c -> (i32) {`: each result is what the arm taken yields
                    count = int(im.group(2) or 1)
                    names = [im.group(1)] if count == 1 else [f"{im.group(1)}#{i}" for i in range(count)]
                    if_results[n_ifs] = (names, im.group(3), [t.strip() for t in split_top(im.group(4), ",")])
            else:
                arms.append(None)
        if body.startswith("scf.yield") and stack and stack[-1] is not None and loops[stack[-1]].carried:
            loops[stack[-1]].yields = _SSA.findall(body.split(" : ")[0])  # directly in the loop's body
            continue
        if body.startswith("scf.yield") and arms and arms[-1] and arms[-1][0] in if_results:
            if_yields[arms[-1]] = _SSA.findall(body.split(" : ")[0])  # directly in an arm of an if with results
            continue
        d = _DEF.match(body)
        name, op, rest = (d.group(1), d.group(2).strip('"'), d.group(3)) if d else (None, body.split(" ", 1)[0],
                                                                                     body.split(" ", 1)[-1])
        uses = _SSA.findall(rest.split(" : ")[0]) if "%" in rest else []
        if op in DOT_OPS:
            got = _dot(op, rest, _signature(body))
            if got:
                made = [_of(from_dot, u, False) for u in uses[:2]]
                chained = any(m is not False and m == current for m in made)
                a_args, b_args = (tuple(sorted(_of(origin, u, ()))) for u in (uses + ["", ""])[:2])
                dots.append(Dot(n, op, current, *got, line=lines_of.get(n, 0), chained=chained, a_args=a_args,
                                b_args=b_args, on_dot=any(m is not False for m in made)))
            if name is not None:
                from_dot[name] = current
            continue
        if name is not None and uses:
            made = next((m for m in (_of(from_dot, u, False) for u in uses) if m is not False), False)
            if made is not False:
                from_dot[name] = made
            src = _of(origin, uses[0]) if op in _FROM_FIRST or op in _LOADS else \
                frozenset().union(*(_of(origin, u, frozenset()) for u in uses))
            if src:
                origin[name] = src
        if op == "tt.load" and name is not None and uses and _SCALAR_PTR.fullmatch(_signature(body)):
            # one element read through a scalar pointer (an expert's row offset): a value a loop bound may use,
            # known when the capture kept the tensor's contents
            values[name] = ("load", uses[0])
        if op in _LOADS or op in _STORES or op in _ATOMICS:
            tile = _access_tile(op, _signature(body))
            if tile:
                kind = "load" if op in _LOADS else "store" if op in _STORES else "atomic"
                accesses.append(Access(n, op, kind, current, tile[0], tile[1], lines_of.get(n, 0), cols_of.get(n, 0),
                                       block, tuple(a for a in arms if a),
                                       tuple(sorted(_of(origin, uses[0], ()))) if uses else ()))
            continue
        if name is None:
            continue
        sig = _signature(body)
        if op == "tt.addptr" and len(uses) == 2 and _SCALAR_PTR.match(sig) and not sig.startswith("tensor"):
            values[name] = ("addptr", uses[0], uses[1])  # a scalar pointer: base + offset in elements
            continue
        scalar = sig.split(" to ")[-1].strip() in _INT_TYPES
        if op == "arith.constant":
            c = _CONST.match(rest.strip())
            if c:
                v = c.group(1)
                values[name] = ("const", 1 if v == "true" else 0 if v == "false" else int(v))
        elif op in ("tt.get_program_id", "tt.get_num_programs") and scalar:
            axis = {"x": 0, "y": 1, "z": 2}.get(rest.split()[0] if rest.split() else "", 0)
            values[name] = ("pid" if op == "tt.get_program_id" else "nprog", axis)
        elif scalar and (op in _BINARY or op in _CASTS or op in ("arith.select", "arith.cmpi")):
            operands = rest.split(" : ")[0]
            if op == "arith.cmpi":
                pred, _, operands = operands.partition(",")
                ops_ = [o.strip() for o in operands.split(",")]
                if len(ops_) == 2 and all(o.startswith("%") for o in ops_):
                    values[name] = ("cmp", pred.strip(), *ops_)
                continue
            ops_ = [o.strip().split(" ")[0] for o in operands.split(",")]
            if all(o.startswith("%") for o in ops_):
                values[name] = ("op", op, *ops_)
    for i, (names, cond, types) in if_results.items():
        then, other = if_yields.get((i, 0)), if_yields.get((i, 1))
        if then is None or other is None or not len(then) == len(other) == len(names):
            continue
        for name, ty, a, b in zip(names, types, then, other):
            if ty in _INT_TYPES:
                values[name] = ("op", "arith.select", cond, a, b)
    return IrCounts(args, loops, dots, accesses, values, src_lines, successors, ifs, arm_lines)


def _arms_most(items: list[tuple[tuple, float]]) -> float:
    """The most of (arms, weight) items one program runs inside one block: each `scf.if` adds its heaviest arm."""
    total = sum(w for arms, w in items if not arms)
    by_if: dict[int, dict[int, list]] = {}
    for arms, w in items:
        if arms:
            by_if.setdefault(arms[0][0], {}).setdefault(arms[0][1], []).append((arms[1:], w))
    return total + sum(max(_arms_most(v) for v in arm.values()) for arm in by_if.values())


def _arg_list(line: str) -> str:
    """The text between the parentheses of a `tt.func` line's argument list."""
    start = line.index("(")
    depth = 0
    for i in range(start, len(line)):
        c = line[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return line[start + 1:i]
    return line[start + 1:]
