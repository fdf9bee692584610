"""Rules: one small pure function per code, registered with `@rule`. Input: a `CheckContext` (the parsed artefacts of
one (kernel, spec, target) compile, and the run's device for its target). Output: findings. No I/O, no pygls, no
triton import: the GPU model and the local GPU's SM count come from the run (device/run.py), and the rules run in the
compile workers (`analyse`); only an artefact whose SASS text is still to be made (`ir.sass.LazyAsm`) runs the
disassembler when a rule reads it."""
from __future__ import annotations

import importlib
import logging
import pkgutil
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..model import Artifacts, Finding, KernelInfo, Spec, Target, backend_of
from ..settings import Settings
from .registry import DOCS_URL, RULES, Rule, register_meta, rule, rule_doc  # noqa: F401 — the catalogue
from .verdict import explicit_severity, propose

if TYPE_CHECKING:
    from ..device.run import RunDevice

log = logging.getLogger(__name__)


@dataclass
class CheckContext:
    kernel: KernelInfo
    spec: Spec
    artifacts: Artifacts
    settings: Settings
    source: str | None = None  # the text compiled (an editor's unsaved buffer too): lets rules anchor on tokens
    costs: list | None = None  # (launch, costmodel.Cost) of each recorded launch, once the checks have run
    device: "RunDevice | None" = None  # the run's device for this target (device/run.py), handed in by the run

    @property
    def launches(self) -> list[dict]:
        """The captured launches of this spec (grid and argument values; with the launch distribution each distinct
        launch once, with its `count`, the most launched first), validated again: a spec may come back from a cache
        or a worker."""
        from ..model import MAX_LAUNCH_RECORDS, clean_launch

        records = self.spec.launch_records if isinstance(self.spec.launch_records, list) else []
        return [r for r in map(clean_launch, records[:MAX_LAUNCH_RECORDS]) if r is not None]

    @property
    def run(self) -> "RunDevice":
        """The run's device for the spec's target, worked out once where the run started. A context made outside a
        run (the `ir` command's views) reads the IR only; a rule needs the device."""
        if self.device is None:
            raise ValueError("this CheckContext was made without the run's device (device/run.py): pass `device`")
        return self.device

    @property
    def gpu(self):
        """The GPU the findings are for: tritonlens.gpu when it is of the spec's arch, else the local GPU when the
        target is its, else the target's default — the one the imports saw."""
        return self.run.gpu

    @property
    def gpu_sms(self) -> int | None:
        """SMs of the local GPU as its driver counts them, when the spec's target is that GPU's (None otherwise), as
        the run read them where it started."""
        return self.run.sms

    @property
    def arch(self) -> Target:
        """The target as the compiler took it (backend, arch, warp size)."""
        return self.run.arch

    @property
    def hip(self) -> bool:
        """An AMD target: read off the spec's canonical target (IR views outside a run ask it too)."""
        return backend_of(self.spec.target) == "hip"

    @property
    def path(self) -> str:
        return self.kernel.path

    def _text(self, stage: str) -> str:
        return self.artifacts.asm.get(stage, "")

    @cached_property
    def ttgir(self):
        from ..ir.mlir import parse_mlir
        return parse_mlir(self._text("ttgir"), self.path)

    @cached_property
    def ttir(self):
        from ..ir.mlir import parse_mlir
        return parse_mlir(self._text("ttir"), self.path)

    @cached_property
    def ptx(self):
        from ..ir.ptx import parse_ptx
        return parse_ptx(self._text("ptx"), self.path)

    @cached_property
    def sass(self):
        from ..ir.sass import parse_sass
        return parse_sass(self._text("sass"), self.path)

    @cached_property
    def local_accesses(self) -> list:
        """The kernel's local loads and stores (`LDL` / `STL`, SASS instructions): from the SASS text when it is
        there, else from the worker's read of the cubin (`metadata["local_accesses"]`, see ir.cubin; these have no
        SASS line: `ir_line` 0), else from the SASS disassembled now."""
        from ..ir.linemap import SrcLoc
        from ..ir.sass import SassInstr

        sites = self.artifacts.metadata.get("local_accesses")
        if not dict.__contains__(self.artifacts.asm, "sass") and isinstance(sites, list):
            out = []
            for site in sites:
                try:
                    at, kind, file, line = site
                except (TypeError, ValueError):
                    continue
                # one frame (the cubin's line table has no inlining): it is both the outer and the inner location
                loc = SrcLoc(file, line, 0) if isinstance(file, str) and isinstance(line, int) and line > 0 else None
                out.append(SassInstr(0, kind.upper(), "", loc, kind, None, at, False, "", loc))
            return out
        return [i for i in self.sass.instrs if i.kind in ("ldl", "stl")]

    @cached_property
    def llir(self):
        from ..ir.llir import parse_llir
        return parse_llir(self._text("llir"), self.path)

    @cached_property
    def amdgcn(self):
        from ..ir.amdgcn import parse_amdgcn
        return parse_amdgcn(self._text("amdgcn"), self.path)

    @cached_property
    def remarks(self):
        from ..ir.remarks import parse_remarks
        return parse_remarks(self.artifacts.remarks)


_loaded = False


def load_rules() -> dict[str, Rule]:
    """Import every module of this package (once) so each registers its rules."""
    global _loaded
    if not _loaded:
        for info in pkgutil.iter_modules(__path__):
            if not info.name.startswith("_"):
                importlib.import_module(f"{__name__}.{info.name}")
        _loaded = True
    return RULES


def run_checks(ctx: CheckContext, select: set[str] | None = None) -> list[Finding]:
    """The findings of every rule the run selects and the user has not turned off, each with its rule's proposal for
    its severity (the rule's own choice, else its default) and the cost evidence of the captured launches. The
    severity itself is the verdict's (checks/verdict.py), once the report has all its evidence."""
    out: list[Finding] = []
    for code, r in load_rules().items():
        if r.fn is None or (select and not _selected(code, select)) or explicit_severity(ctx.settings, code) == "off":
            continue
        try:
            found = list(r.fn(ctx))
        except Exception:  # noqa: BLE001 — a broken rule must not hide the others
            log.exception("rule %s failed on %s", code, ctx.kernel.name)
            continue
        for f in found:
            propose(f, r.severity)
            f.kernel = f.kernel or ctx.kernel.name
            f.config = f.config or ctx.spec.describe()
            f.target = f.target or ctx.spec.target
            f.data.setdefault("doc", r.doc_url)
            f.data.setdefault("origins", dict(ctx.spec.origins))
        out.extend(found)
    # What the autotuner measured in the direction a finding advises: evidence on the finding, no severity.
    from .tuning import judge

    judge(ctx, out)
    # What each cause costs in the captured launches (checks/costmodel), once every rule has spoken.
    from .costmodel import weigh

    ctx.costs = weigh(ctx, out)
    # Where no knob removes the cause, the rewrite that would, with the estimate just made.
    from .resources import say_rewrite

    say_rewrite(out)
    return out


def _selected(code: str, select: set[str]) -> bool:
    return any(code == s or code.startswith(s) for s in select)


IR_PATH_MARK = "\0ir:"  # the stand-in for an IR file's path in findings made before the artefact cache has stored it


def analyse(kernel, spec, artifacts, settings, source: str | None = None,
            select: set[str] | None = None, device: "RunDevice | None" = None) -> tuple[dict, list[Finding]]:
    """Metrics and findings of one compiled spec: what the pipeline does with every compile. Pure. It runs in one
    place, the compile workers (compiler/worker.py): right after a compile, in parallel, while the IR is at hand, and
    for a cache hit whose stored analysis was made for other inputs (`analysis_digest`)."""
    ctx = CheckContext(kernel, spec, artifacts, settings, source=source, device=device)
    metrics = compute_metrics(ctx)
    findings = run_checks(ctx, select)
    if ctx.costs:
        # the model's estimate of each recorded launch: for the kernel lines, hovers and the calibration
        metrics["launch_costs"] = [{"grid": launch.get("grid"), "count": launch.get("count"),
                                    "measured_us": cost.measured_us, **cost.describe()} for launch, cost in ctx.costs]
    return metrics, findings


def analyse_unstored(kernel, spec, artifacts, settings, source: str | None = None,
                     select: set[str] | None = None,
                     device: "RunDevice | None" = None) -> tuple[dict, list[Finding]]:
    """`analyse` for artifacts the cache has not stored yet (a worker's): IR paths in the findings are
    `IR_PATH_MARK + stage`, which `place_ir_paths` turns into the stored files' paths."""
    paths = artifacts.paths
    artifacts.paths = {stage: IR_PATH_MARK + stage for stage in artifacts.asm}
    try:
        return analyse(kernel, spec, artifacts, settings, source, select, device)
    finally:
        artifacts.paths = paths


def analysis_inputs(kernel: KernelInfo, settings: Settings, source: str | None, select: set[str] | None,
                    device: "RunDevice") -> str:
    """A digest of what `analyse` reads besides the compile and its spec: the kernel as discovered, the settings,
    the text around the kernel, the selected codes and the run's device — the same for every spec of the kernel on
    that device, so made once for them all (`analysis_digest`)."""
    return _digest([kernel, settings, source, sorted(select) if select is not None else None, device])


def analysis_digest(spec: Spec, inputs: str) -> str:
    """A digest of everything `analyse` reads besides the compile itself: the spec and the rest (`inputs`, from
    `analysis_inputs`). Two analyses of one compile with the same digest are the same (the artefact cache keeps one
    with its digest)."""
    return _digest([spec, inputs])


def _digest(parts: list) -> str:
    import hashlib
    import json

    text = json.dumps(_canonical(parts), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _canonical(value: Any) -> Any:
    """JSON data that is the same for equal values in any process: dataclasses by field, sets and mappings sorted
    (a set's order follows the process's string hashing), anything else by its type and `repr`."""
    import dataclasses

    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [type(value).__name__, {f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}]
    if isinstance(value, dict):
        return sorted(([_canonical(k), _canonical(v)] for k, v in value.items()), key=repr)
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_canonical(v) for v in value), key=repr)
    return [type(value).__qualname__, repr(value)]


def place_ir_paths(findings: list[Finding], paths: dict[str, str]) -> None:
    for f in findings:
        for r in f.related:
            if r.path.startswith(IR_PATH_MARK):
                r.path = paths.get(r.path[len(IR_PATH_MARK):], "")


def compute_metrics(ctx: CheckContext) -> dict:
    """Per (kernel, spec) numbers for hovers and lenses; the metrics module refines this when present."""
    try:
        from .metrics import metrics  # type: ignore[attr-defined]
    except ImportError:
        metrics = None
    res = ctx.artifacts.resources
    base = {"registers": res.registers, "spill_bytes": res.spill_stores + res.spill_loads, "stack": res.stack,
            "shared": res.shared, "compile_time": round(ctx.artifacts.compile_time, 3)}
    if metrics is not None:
        try:
            base.update(metrics(ctx))
        except Exception:  # noqa: BLE001
            log.exception("metrics failed on %s", ctx.kernel.name)
    return base


load_rules()  # the catalogue is whole wherever checks/ is imported: presenters and fixes read the rules' facts
