"""The types every stage of the pipeline passes to the next.

discover -> KernelInfo; specs -> Spec; compiler -> Artifacts; checks -> Finding; report -> KernelReport.
Nothing here imports triton or pygls.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from .launch_values import show

SEVERITIES = ("error", "warning", "info", "hint")
SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITIES)}  # 0 = most severe
STAGES = ("ttir", "ttgir", "llir", "ptx", "sass", "amdgcn")


# ---------------------------------------------------------------- targets
MESSAGE_AIM, MESSAGE_MAX = 120, 200  # a finding's message is one line: aimed at 120 characters, never over 200


def one_line(text: str, aim: int = MESSAGE_AIM) -> str:
    """The head of a long account for a finding's one-line message: the first clause (up to " — ", "; " or the end of
    a sentence) that says something on its own, cut at a word only when no clause fits `MESSAGE_MAX`. The whole text
    stays in the finding's details; this is the squiggle's line, not the evidence."""
    text = " ".join(text.split())
    if len(text) <= aim:
        return text
    heads: set[str] = set()
    for seps, enough in (((". ", " — ", "; "), 60), ((": ", ", ", " ("), 40)):  # a clause's end first, a phrase's next
        for sep in seps:
            at = text.find(sep, 30)
            while at != -1 and at <= MESSAGE_MAX:
                heads.add(text[:at].rstrip(" .;:,—"))
                at = text.find(sep, at + 1)
        fits = [h for h in heads if enough <= len(h) <= aim]
        if fits:
            return max(fits, key=len)
    over = [h for h in heads if len(h) <= MESSAGE_MAX]
    if over:
        return min(over, key=len)
    return text[:aim].rsplit(" ", 1)[0].rstrip(" .;:,—") + " …"


def compiled_under(describe: str) -> str:
    """The detail line naming the spec a finding was compiled under."""
    return f"compiled under [{describe}]"


def backend_of(target: str) -> str:
    """The backend of a target the run already made canonical (`Target.parse` where it started: "cuda:90", "hip:gfx942")
    — read off, not parsed again on the way."""
    return target.partition(":")[0]


@dataclass(frozen=True)
class Target:
    """A compile target: `cuda:90`, `cuda:80`, `hip:gfx942`."""

    backend: str  # "cuda" | "hip"
    arch: int | str  # 90 for cuda, "gfx942" for hip
    warp_size: int = 32

    @classmethod
    def parse(cls, text: str) -> "Target":
        text = text.strip().lower()
        backend, _, arch = text.partition(":")
        if backend in ("cuda", "sm", "nvidia") and arch:
            arch = arch.removeprefix("sm_").removeprefix("sm").rstrip("a")
            if not arch.isdigit():
                raise ValueError(f"bad CUDA target {text!r}: expected cuda:80, cuda:90, cuda:100 ...")
            return cls("cuda", int(arch), 32)
        if backend in ("hip", "amd", "rocm") and arch.startswith("gfx"):
            # CDNA (gfx9xx) runs 64-wide wavefronts; RDNA (gfx10+/11/12) runs 32.
            return cls("hip", arch, 64 if arch.startswith("gfx9") else 32)
        raise ValueError(f"bad target {text!r}: expected cuda:NN or hip:gfxNNN")

    def __str__(self) -> str:
        return f"{self.backend}:{self.arch}"

    @property
    def is_cuda(self) -> bool:
        return self.backend == "cuda"


@dataclass(frozen=True)
class SpecVariant:
    """One spec of one kernel with one value changed: what a quick fix is proven on (the spec the finding came from,
    with the launch option or constexpr the fix sets, nothing else)."""

    kernel: str
    spec_key: str  # Spec.key() of the spec the finding came from
    options: tuple[tuple[str, Any], ...] = ()
    constants: tuple[tuple[str, Any], ...] = ()

    def apply(self, spec: "Spec") -> "Spec":
        from dataclasses import replace

        change = ", ".join(f"{k}={v}" for k, v in self.options + self.constants)
        return replace(spec, options={**spec.options, **dict(self.options)},
                       constants={**spec.constants, **dict(self.constants)},
                       origins={**spec.origins, **{k: "quick fix" for k, _ in self.options + self.constants}},
                       label=f"{spec.label or 'spec'} with {change}")


# ---------------------------------------------------------------- kernels
@dataclass
class Param:
    name: str
    index: int
    line: int  # 1-based
    col: int  # 1-based
    end_col: int
    is_constexpr: bool = False
    annotation: str | None = None  # source text of the annotation
    default: Any = None  # literal default value (only when has_default)
    has_default: bool = False
    default_text: str | None = None
    default_known: bool = False  # default is a value tritonlens could evaluate (literal or module constant)
    is_pointer: bool | None = None  # inferred from use (tl.load/tl.store base) or annotation; None = unknown
    pointee: str | None = None  # element type inferred from use ("i32": loaded values index or bound loops)
    pointer_if: tuple[str, bool] | None = None  # a pointer only when constexpr FLAG is True/False (else an int)
    is_descriptor: bool = False  # used as a host tensor descriptor (`desc.load([...])`): its type comes from the launch


@dataclass
class KernelInfo:
    """One kernel found in a file by `discover` (AST only)."""

    name: str  # the name the kernel is bound to in the module
    func_name: str  # the `def` name
    path: str
    def_line: int  # line of `def` (1-based)
    decorator_line: int  # first decorator line (= def_line when made by a call)
    end_line: int
    col: int  # column of `def` (1-based)
    params: list[Param] = field(default_factory=list)
    do_not_specialize: list[str] = field(default_factory=list)
    hints: list["HintLine"] = field(default_factory=list)
    autotune_configs: list[dict[str, Any]] | None = None  # [{"kwargs": {...}, "num_warps": 4, ...}]
    autotune_error: str | None = None  # configs exist but could not be evaluated
    heuristics: dict[str, str] = field(default_factory=dict)  # name -> lambda source
    # name -> what evaluating that lambda needs of its module (config_eval.Program), when it reads module names
    heuristic_programs: dict[str, Any] = field(default_factory=dict)
    class_name: str | None = None  # for @staticmethod kernels
    qualname: str | None = None  # attribute path to reach the JITFunction in the module ("Cls.k")
    source_hash: str = ""  # hash of the kernel's source and its helpers'
    do_not_specialize_on_alignment: list[str] = field(default_factory=list)
    autotune_key: list[str] = field(default_factory=list)
    helpers: list[str] = field(default_factory=list)  # same-file functions called (transitively), workspace modules
    returns_value: bool = False  # `return <value>` in its body: a device function, never launched from the host
    # The module-level `if`/`try` branches the definition sits in, outermost first ("if HAS_TLE:",
    # "else: (of if HAS_TLE:)", "except ImportError:" joined by " > "); None for an unconditional definition. Several
    # kernels of a file may share a `name` when each branch defines its own; this tells them apart.
    branch: str | None = None

    @property
    def key(self) -> str:
        """Unique within a file: the name, or `name@def_line` for a definition under a module-level branch (two
        branches may define the same name)."""
        return f"{self.name}@{self.def_line}" if self.branch else self.name

    @property
    def display_name(self) -> str:
        """`name`, plus the branch it is defined under when there is one: "k (under `if HAS_TLE:`)"."""
        return f"{self.name} (under `{self.branch}`)" if self.branch else self.name

    @property
    def is_autotuned(self) -> bool:
        """Under `@triton.autotune`, whether its configs could be read (literal) or not (built by code)."""
        return bool(self.autotune_key or self.autotune_configs is not None or self.autotune_error)

    @property
    def constexpr_names(self) -> list[str]:
        return [p.name for p in self.params if p.is_constexpr]

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


@dataclass
class HintLine:
    """One `# tritonlens: ...` comment (a spec each)."""

    line: int
    col: int
    text: str
    values: dict[str, str] = field(default_factory=dict)  # name -> raw value text
    errors: list[str] = field(default_factory=list)
    error_spans: list[tuple[int, int]] = field(default_factory=list)  # 1-based, end-exclusive columns per error


# ---------------------------------------------------------------- specs
@dataclass
class Spec:
    """Everything one `triton.compile` needs besides the function: a specialization of a kernel."""

    signature: dict[str, str]  # param -> "*fp32" | "i32" | "fp32" | "constexpr" | "*fp16"...
    constants: dict[str, Any]  # constexpr (and ==1 / None specialised) values
    attrs: dict[str, dict[str, Any]]  # param -> {"divisibility": 16}
    options: dict[str, Any]  # num_warps, num_stages, num_ctas, maxnreg...
    target: str  # "cuda:90"
    origins: dict[str, str] = field(default_factory=dict)  # param/option -> where its value came from
    label: str = ""  # "hint line 3", "autotune config 2/8", "capture 1"
    missing: list[str] = field(default_factory=list)  # constexprs with no value: the spec cannot compile
    launches: int = 0  # captured: how many launches used this spec (0 when not counted)
    autotune: str | None = None  # captured: "chosen" (the autotuner's pick for a key) or "trial"; None otherwise
    # captured: the launches recorded with this compile ({"grid": [...], "args": {name: {"value": v} | {"tensor":
    # {...}}}}, cleaned by `clean_launch`) — what LAUNCH001/LAUNCH002 read. Not part of key(): a launch is no compile.
    # When the capture kept its distribution, each distinct launch once with its "count" (and "time_us"/"timed" when
    # the run was timed), the most launched first; `launches` stays the total (it also counts launches not listed).
    launch_records: list[dict[str, Any]] = field(default_factory=list)
    capture_id: str = ""  # captured: captures.identity of the line it came from, what bench results are keyed by
    # captured: the tuning lines (see frontend/captures.load_tunings) of the keys for which the autotuner chose this
    # spec's config — every config it timed for them; read by checks/tuning. Not part of key().
    tuning: list[dict[str, Any]] = field(default_factory=list)

    def key(self) -> str:
        blob = json.dumps(
            [self.signature, self.constants, self.attrs, self.options, self.target],
            sort_keys=True,
            default=repr,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def describe(self, full: bool = False) -> str:
        """`cuda:90, num_warps=4, BLOCK_SIZE=1024, n_elements=i32%16` — the assumptions a finding was made under."""
        parts = [self.target]
        for opt in ("num_warps", "num_stages"):
            if opt in self.options:
                parts.append(f"{opt}={self.options[opt]}")
        for name, value in self.constants.items():
            if name in self.options and self.options[name] == value:
                continue  # a parameter named like an option (num_stages): shown once, above
            if self.signature.get(name) == "constexpr":
                parts.append(f"{name}={show(value)}")  # inf, (1, 2.0), tl.fp16: as the launch passed it
        for name, ty in self.signature.items():
            if ty == "constexpr":
                continue
            if name in self.constants:
                parts.append(f"{name}={show(self.constants[name])}")
                continue
            div = self.attrs.get(name, {}).get("divisibility")
            if ty.startswith("*"):
                if full or div != 16:
                    parts.append(f"{name}={ty}" + ("" if div == 16 else "%1"))
            elif ty[0] in "iu":
                parts.append(f"{name}={ty}%{div}" if div else f"{name}={ty}")
        return ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Spec":
        return cls(**data)


MAX_LAUNCH_RECORDS = 64  # launches kept per spec: enough for a worst case, bounded for the cache and the workers
_MAX_LAUNCH_ARGS = 1024
_MAX_LAUNCH_INT = 1 << 62


def _launch_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and -_MAX_LAUNCH_INT < v < _MAX_LAUNCH_INT


def _dims(dims: Any, most: int = 8) -> list[int] | None:
    if isinstance(dims, list) and len(dims) <= most and all(_launch_int(d) for d in dims):
        return list(dims)
    return None


_MAX_INDEX_VALUES = 512  # the most a capture keeps of an integer tensor (gpu/capture_record.MAX_INDEX_VALUES)


def _clean_tensor(t: dict[str, Any]) -> dict[str, Any]:
    tensor: dict[str, Any] = {}
    for key in ("shape", "stride"):
        dims = _dims(t.get(key))
        if dims is not None:
            tensor[key] = dims
    if isinstance(t.get("dtype"), str) and len(t["dtype"]) <= 64 and t["dtype"].isprintable():
        tensor["dtype"] = t["dtype"]
    if isinstance(t.get("align16"), bool):
        tensor["align16"] = t["align16"]
    values = t.get("values")
    if isinstance(values, list) and len(values) <= _MAX_INDEX_VALUES and all(_launch_int(v) for v in values):
        tensor["values"] = values  # a small integer tensor's contents (gpu/capture_record.index_values)
    return tensor


def clean_descriptor(raw: Any) -> dict[str, Any] | None:
    """A captured host tensor descriptor (`{"base": {tensor}, "shape", "strides", "block_shape", "padding"}`, see
    gpu/capture_record.descriptor_fields), every field checked; None unless all of it is usable: a base tensor with a
    dtype, and shape, strides and block shape of one rank from 1 to 5 — a shape of positive ints, a block of ints
    from 1 to 65536."""
    if not isinstance(raw, dict) or not isinstance(raw.get("base"), dict):
        return None
    base = _clean_tensor(raw["base"])
    shape, strides, block = _dims(raw.get("shape"), 5), _dims(raw.get("strides"), 5), _dims(raw.get("block_shape"), 5)
    if "dtype" not in base or shape is None or strides is None or block is None:
        return None
    if not 1 <= len(shape) == len(strides) == len(block) or any(d <= 0 for d in shape) \
            or any(not 1 <= b <= 1 << 16 for b in block):
        return None
    out: dict[str, Any] = {"base": base, "shape": shape, "strides": strides, "block_shape": block}
    padding = raw.get("padding")
    if isinstance(padding, str) and len(padding) <= 16 and padding.isprintable():
        out["padding"] = padding
    return out


def clean_launch(raw: Any) -> dict[str, Any] | None:
    """A captured `launch` object reduced to what the launch rules read, every field checked (capture files are
    untrusted): a grid of at most 3 non-negative ints, and per argument a scalar `value` (int, float, bool), a
    `tensor` with a shape and stride of at most 8 ints, a short dtype name and `align16`, or a host tensor
    `descriptor` (clean_descriptor), kept with a `tensor` view of what it addresses. Wrong types are dropped
    field by field; None when no grid is left. A record of a launch distribution keeps its `count` (a non-negative
    int) and, when timed, `time_us` (a finite non-negative number) with `timed` (how many launches it is the median
    of)."""
    if not isinstance(raw, dict):
        return None
    grid = raw.get("grid")
    if not (isinstance(grid, list) and 1 <= len(grid) <= 3 and all(_launch_int(g) and g >= 0 for g in grid)):
        return None
    args: dict[str, Any] = {}
    raw_args = raw.get("args")
    for name, arg in (raw_args.items() if isinstance(raw_args, dict) else ()):
        if len(args) >= _MAX_LAUNCH_ARGS or not isinstance(name, str) or len(name) > 256 or not isinstance(arg, dict):
            continue
        value = arg.get("value")
        if _launch_int(value) or isinstance(value, bool) or (isinstance(value, float) and value == value
                                                              and abs(value) != float("inf")):
            args[name] = {"value": value}
            continue
        t = arg.get("tensor")
        if isinstance(t, dict):
            tensor = _clean_tensor(t)
            if tensor:
                args[name] = {"tensor": tensor}
            continue
        desc = clean_descriptor(arg.get("descriptor"))
        if desc is not None:
            # what the kernel addresses through the descriptor, read as a tensor argument is (its bytes for the cost
            # model): the descriptor's shape and strides, the base tensor's dtype and alignment
            view = {"shape": desc["shape"], "stride": desc["strides"], **{
                k: desc["base"][k] for k in ("dtype", "align16") if k in desc["base"]}}
            args[name] = {"tensor": view, "descriptor": desc}
    out: dict[str, Any] = {"grid": list(grid), "args": args}
    count = raw.get("count")
    if _launch_int(count) and count >= 0:
        out["count"] = count
        t, timed = raw.get("time_us"), raw.get("timed")
        if (isinstance(t, (int, float)) and not isinstance(t, bool) and 0 <= t < 1e12 and _launch_int(timed)
                and timed > 0):
            out["time_us"], out["timed"] = float(t), timed
            low = raw.get("time_min_us")
            if isinstance(low, (int, float)) and not isinstance(low, bool) and 0 <= low <= t:
                out["time_min_us"] = float(low)
    return out


MIN_TIMED = 5  # launches a measured time must be the median of to be trusted
MAX_SPREAD = 1.5  # ... and the most its median may exceed its minimum by (a launch that waited on the host, a cold
# first run: a layer norm of 8 x 1024 recorded at 31.2 µs when ten identical launches took 3.6-4.1 µs)


def timing_reliable(rec: dict[str, Any]) -> bool:
    """Whether a launch record's measured time (`time_us`, the median of `timed` launches, with their minimum
    `time_min_us` where the capture kept it) can be trusted: timed at least MIN_TIMED times, and where the minimum
    is known, a median within MAX_SPREAD of it. An unreliable time is shown, never used to scale an estimate or to
    calibrate."""
    t, n, low = rec.get("time_us"), rec.get("timed"), rec.get("time_min_us")
    if not isinstance(t, (int, float)) or not isinstance(n, int) or n < MIN_TIMED:
        return False
    return not (isinstance(low, (int, float)) and low > 0 and t > MAX_SPREAD * low)


def merge_launch_records(*groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Launch records of one compile from several captures as one list: the same launch (grid and args) once, its
    counts added; the most launched first (records without a count keep their order, after counted ones of more
    launches); at most MAX_LAUNCH_RECORDS."""
    merged: dict[str, dict[str, Any]] = {}
    for rec in (r for group in groups for r in group):
        key = json.dumps([rec.get("grid"), rec.get("args")], sort_keys=True, default=repr)
        kept = merged.get(key)
        if kept is None:
            merged[key] = dict(rec)
        elif "count" in rec and "count" in kept:
            kept["count"] += rec["count"]
            if rec.get("timed"):
                n = kept.get("timed", 0) + rec["timed"]
                kept["time_us"] = (kept.get("time_us", 0.0) * kept.get("timed", 0) + rec["time_us"] * rec["timed"]) / n
                if "time_min_us" in rec and ("time_min_us" in kept or not kept.get("timed")):
                    kept["time_min_us"] = min(rec["time_min_us"], kept.get("time_min_us", rec["time_min_us"]))
                else:
                    kept.pop("time_min_us", None)
                kept["timed"] = n
    return sorted(merged.values(), key=lambda r: -r.get("count", 0))[:MAX_LAUNCH_RECORDS]


# ---------------------------------------------------------------- compile output
@dataclass
class CompileError:
    kind: str  # "CompilationError", "OutOfResources", "Timeout", "WorkerCrash", "LoadError", ...
    message: str
    line: int | None = None  # absolute, 1-based, in `path`
    col: int | None = None
    path: str | None = None
    end_col: int | None = None

    @property
    def ours(self) -> bool:
        """Whether the failure is tritonlens's own (see OWN_FAILURES), not the kernel's."""
        return self.kind in OWN_FAILURES


# Failures of tritonlens, not of the kernel: its memory bound and time-out, a worker that crashed or was cancelled, a
# compiler tool Triton could not find, a bug of tritonlens, a file, program or call its sandbox refused. The one list
# the CLI, the editor and the cache read: such a failure is SRC007 (info: it never sets `check`'s exit code), never
# SRC001, and never cached.
OWN_FAILURES = frozenset({"MemoryLimit", "Timeout", "WorkerCrash", "Cancelled", "MissingTool", "InternalError",
                          "ImportTimeout", "ImportCrash", "SandboxRefused"})
# The module did not import: one finding for the file (SRC006), not one per kernel; never cached. `LoadRefused`: what
# the import needed was refused by tritonlens's sandbox (a file, a program, a system call), tritonlens's limit.
LOAD_FAILURES = frozenset({"LoadError", "LoadRefused"})
# Of those, the ones that say tritonlens itself is broken here (not a limit it reached): `check` then exits 2, its
# "internal error", so that a broken installation never passes as a clean check.
BROKEN_HERE = frozenset({"MissingTool", "InternalError"})


@dataclass
class Resources:
    registers: int | None = None
    spill_stores: int = 0  # bytes
    spill_loads: int = 0  # bytes
    stack: int = 0  # bytes
    shared: int = 0  # bytes (metadata.shared)
    local: int = 0  # bytes


class StageTexts(dict):
    """A compile's texts by stage: ttir, ttgir, llir, ptx or amdgcn, sass. The compiler may keep a cubin instead of
    its SASS (`nvdisasm` takes about as long as the compile) and hand an `ir.sass.LazyAsm`, a StageTexts whose `sass`
    runs the disassembler when first read; `sass_pending` says whether reading `sass` would still run it (here:
    never). The language server's `Checker` has the SASS made as each compile's results arrive (`sass_ahead`)."""

    @property
    def sass_pending(self) -> bool:
        return False


@dataclass
class Artifacts:
    """What one compile of (kernel, spec, target) produced. Texts are the compiler's own."""

    kernel: str
    spec_key: str
    target: str
    asm: StageTexts = field(default_factory=StageTexts)  # stage -> text; SASS may be made when read (see StageTexts)
    paths: dict[str, str] = field(default_factory=dict)  # stage -> file in the artefact cache
    metadata: dict[str, Any] = field(default_factory=dict)  # name, num_warps, shared, ...
    resources: Resources = field(default_factory=Resources)
    remarks: str = ""  # raw stderr of the compile (MLIR remarks)
    compile_time: float = 0.0
    cached: bool = False
    error: CompileError | None = None
    # (metrics, findings) a worker computed (checks.analyse) right after the compile or for a cached one, or that the
    # artefact cache kept with the compile for the same inputs (checks.analysis_digest)
    analysis: tuple[dict, list] | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.error is None


# ---------------------------------------------------------------- findings
@dataclass
class Related:
    """A place in an IR file that backs a finding (for `relatedInformation` and links)."""

    path: str
    line: int
    message: str


@dataclass
class Finding:
    path: str
    line: int  # 1-based
    column: int  # 1-based
    end_line: int
    end_column: int
    code: str
    severity: str
    message: str
    kernel: str | None = None
    config: str | None = None  # the spec the finding was compiled under (Spec.describe())
    target: str | None = None
    related: list[Related] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)  # machine-readable evidence, for fixes and merging
    # The evidence behind the one-line `message`, a line each: the rule's full account (numbers, lines, remedy), the
    # spec it was compiled under, its cost, the specs it holds in, the verdict's reason. Shown by the hover,
    # `check --verbose`, SARIF's markdown; never folded back into `message`.
    details: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        # A long message from a site that gave no short form (nor any details) keeps its whole text as the first
        # detail line, and its head as the message.
        if not self.details and (len(self.message) > MESSAGE_AIM or "\n" in self.message):
            self.details = [self.message, *self.details]
            self.message = one_line(self.message)

    def keep_one_line(self) -> None:
        """A message that the steps after the rule (its cost, what the autotuner measured) made longer than
        `MESSAGE_MAX` keeps its head, the whole line going first into the details."""
        if len(self.message) > MESSAGE_MAX:
            self.details = [self.message, *self.details]
            self.message = one_line(self.message)

    def add_detail(self, line: str, *, replacing: str = "") -> None:
        """Add one line of evidence (in place of the line `replacing` starts with, when there is one). A new list each
        time: a finding copied with `dataclasses.replace` shares its details with the one it was copied from."""
        kept = [d for d in self.details if not (replacing and d.startswith(replacing))]
        self.details = kept + ([line] if line and line not in kept else [])

    # data keys that name lines of the finding's own file (the masked accesses, the mask, the allocations...)
    _LINE_KEYS = (("accesses", "masked access"), ("mask_lines", "same mask"), ("mask_line", "the mask"),
                  ("allocs", "shared-memory allocation"), ("in_loop", "spill code inside a loop"))

    def named_lines(self) -> list[Related]:
        """Every place the finding names: its related places, then each line of its own file its evidence names
        that none of them is on (for LSP's relatedInformation and SARIF's relatedLocations)."""
        out = list(self.related)
        seen = {(r.path, r.line) for r in out}
        for key, what in self._LINE_KEYS:
            value = self.data.get(key)
            for line in value if isinstance(value, list) else [value]:
                if isinstance(line, int) and not isinstance(line, bool) and line > 0 and (self.path, line) not in seen:
                    seen.add((self.path, line))
                    out.append(Related(path=self.path, line=line, message=f"{what} (line {line})"))
        return out

    def to_json(self) -> dict[str, Any]:
        keys = ("path", "line", "column", "end_line", "end_column", "code", "severity", "message", "kernel",
                "config", "target", "details")
        out = {k: getattr(self, k) for k in keys}
        if "est_gain_us" in self.data:
            # what the cause costs in the captured launches (checks/costmodel): estimated, or scaled to measured times
            out["cost"] = {"gain_us": self.data["est_gain_us"], "share": self.data.get("est_share"),
                           "launch_us": self.data.get("est_launch_us"), "measured": self.data.get("est_measured"),
                           "bound": self.data.get("est_bound")}
        if isinstance(self.data.get("tuning"), dict):  # LAUNCH005: what the autotuner measured (report/tuning)
            out["tuning"] = self.data["tuning"]
        if isinstance(self.data.get("rewrite"), str):  # the rewrite a cause no knob removes needs (SASS001)
            out["rewrite"] = self.data["rewrite"]
        return out

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.column, self.code, self.message)


@dataclass
class CompiledSpec:
    """One spec of a kernel and what compiling it gave."""

    spec: Spec
    artifacts: Artifacts | None
    metrics: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)


@dataclass
class KernelReport:
    """Everything known about one kernel in one file: the object every presenter reads."""

    kernel: KernelInfo
    compiled: list[CompiledSpec] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # merged over specs, sorted
    # With captures: {"compiled": 12, "captured": 134, "trials": 0, "limit": 12, "left_out": ["BLOCK=8192"]} — how
    # many captured specs were compiled (a representative set of at most `limit` unless all_captures) of how many
    # distinct ones were recorded, and the launched values that set has no spec of.
    captures: dict[str, Any] = field(default_factory=dict)
    pending: int = 0  # specs still compiling: a partial report, sent before the kernel's last spec is done
    # What the autotuner measured for the kernel's captured keys (checks.tuning.TuningSummary), None without any
    tuning: Any = None

    @property
    def name(self) -> str:
        return self.kernel.name
