"""Baselines: what the compiler did to each kernel, saved so that a later change can be compared against it.

A baseline is a plain dict (written as `.tritonlens/baseline.json`, meant to be committed): tool versions, and per
file, kernel and spec the metrics `checks/metrics.py` computed, the findings (messages without the parts that change
when nothing changed), and a hash of each IR layer after `normalise_ir`. The current state is built into the same
shape (`build_baseline`), and `compare` pairs two of them. Everything here is pure except `tool_versions`.

Specs are paired by `Spec.key()` (the exact specialization), then by `Spec.describe()` (same visible assumptions,
e.g. a pointer's element type changed), then by label (`hint line 7`, `autotune config 2/8`), then, per target, in
order when both sides have the same number left: editing the one hint of a kernel (num_warps 4 → 8) changes its key
and description, and it is still the spec to compare with — the knobs that changed are listed with the deltas.
"""
from __future__ import annotations

import difflib
import hashlib
import os
import re
import subprocess
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..launch_values import encode, show_stored
from ..model import STAGES, CompiledSpec, Finding, KernelReport
from ..source import split_lines

FORMAT = 1
_VOLATILE_METRICS = {"compile_time"}
_GATING = {"error", "warning"}


# ---------------------------------------------------------------- IR normalisation
def _strip_mlir_locs(line: str) -> str:
    """Remove every ` loc(...)` (nested parentheses and quoted paths included) from one MLIR line."""
    out, i = [], 0
    while True:
        j = line.find("loc(", i)
        if j < 0 or (j > 0 and (line[j - 1].isalnum() or line[j - 1] in "_#")):
            if j < 0:
                out.append(line[i:])
                return "".join(out).rstrip()
            out.append(line[i:j + 4])
            i = j + 4
            continue
        out.append(line[i:j].rstrip(" "))
        depth, k, quoted = 0, j + 3, False
        while k < len(line):
            ch = line[k]
            if quoted:
                if ch == "\\":
                    k += 1
                elif ch == '"':
                    quoted = False
            elif ch == '"':
                quoted = True
            elif ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        i = k + 1


_MLIR_LOC_DEF = re.compile(r"^#loc\d*\s*=\s*loc\(")
_MLIR_SSA_NUM = re.compile(r"%\d+\b")
_MLIR_SSA_SUFFIX = re.compile(r"(%[A-Za-z_][\w$.]*?)_\d+\b")
_PTX_REG = re.compile(r"%([a-z]+)\d+\b")
_PTX_REG_DECL = re.compile(r"(%[a-z]+)<\d+>")
_PTX_LABEL = re.compile(r"(\$L__\w+?_)\d+\b")
_PTX_DEBUG_LABEL = re.compile(r"^\$L__(tmp|func_begin|func_end)\d+:$")
_SASS_ADDR = re.compile(r"/\*[0-9a-f]{4,}\*/\s*")
_SASS_ENCODING = re.compile(r"/\* 0x[0-9a-f]+ \*/")
_SASS_REG = re.compile(r"\b(U?R|U?P)\d+\b")
_SASS_LABEL = re.compile(r"(\.L_x_)\d+\b")
_LL_VALUE = re.compile(r"%\d+\b")
_LL_DBG = re.compile(r",\s*!dbg !\d+")
_LL_META_REF = re.compile(r"!\d+\b")
_AMD_REG = re.compile(r"\b([vsa])\[?\d+(:\d+)?\]?")


def normalise_ir(stage: str, text: str, paths: Iterable[str] = ()) -> str:
    """`text` of one IR layer with what changes when the code did not: source locations (MLIR `loc(...)`, PTX `.loc`/
    `.file`, SASS `//## File` lines and addresses, LLVM `!dbg` and metadata, debug sections), SSA value numbers and
    register numbers (`%12` -> `%N`, `%offsets_3` -> `%offsets`, `%r17` -> `%r`, `R12` -> `R`), label numbers, and
    any of `paths`. What is left changes only when the compiler emitted something different."""
    out: list[str] = []
    in_debug = 0
    for raw in split_lines(text):
        line = raw.rstrip()
        for p in paths:
            if p:
                line = line.replace(p, "")
        if stage in ("ttir", "ttgir"):
            if _MLIR_LOC_DEF.match(line):
                continue
            line = _strip_mlir_locs(line)
            line = _MLIR_SSA_SUFFIX.sub(r"\1", _MLIR_SSA_NUM.sub("%N", line))
        elif stage == "ptx":
            s = line.strip()
            if in_debug:
                in_debug += s.count("{") - s.count("}")
                continue
            if s.startswith(".section") and ".debug" in s:
                in_debug = s.count("{") - s.count("}")
                if in_debug == 0 and "{" not in s:
                    in_debug = 1  # the block's brace is on the next line
                continue
            if s.startswith((".loc", ".file")) or _PTX_DEBUG_LABEL.match(s) or s.startswith("//"):
                continue
            line = line.split("//", 1)[0].rstrip()
            line = _PTX_LABEL.sub(r"\1N", _PTX_REG_DECL.sub(r"\1<N>", _PTX_REG.sub(r"%\1", line)))
        elif stage == "sass":
            if line.strip().startswith("//##"):
                continue
            line = _SASS_ENCODING.sub("", _SASS_ADDR.sub("", line)).rstrip()
            line = _SASS_LABEL.sub(r"\1N", _SASS_REG.sub(r"\1", line))
        elif stage == "llir":
            if line.startswith("!") and "=" in line and not line.startswith("!llvm"):
                continue  # metadata: locations, the file and its folder
            if line.startswith(("source_filename", "; ModuleID")):
                continue
            line = _LL_META_REF.sub("!N", _LL_VALUE.sub("%N", _LL_DBG.sub("", line)))
        elif stage == "amdgcn":
            s = line.strip()
            if s.startswith((".loc", ".file", ";")) or s.startswith(".section") and ".debug" in s:
                continue
            line = _AMD_REG.sub(r"\1", line.split(";", 1)[0]).rstrip()
        if line.strip():
            out.append(line)
    return "\n".join(out) + ("\n" if out else "")


def ir_hash(normalised: str) -> str:
    return "sha256:" + hashlib.sha256(normalised.encode()).hexdigest()[:16]


def ir_diff(old: str, new: str, old_name: str, new_name: str, context: int = 3) -> str:
    """A unified diff of two normalised IR texts ("" when equal)."""
    return "".join(difflib.unified_diff(split_lines(old, keepends=True), split_lines(new, keepends=True),
                                        old_name, new_name, n=context))


# ---------------------------------------------------------------- building
_CONFIG_SUFFIX = re.compile(r" \(in (all \d+ configs|\d+ of \d+ configs: )")


def stable_message(message: str, describe: str | None = None, paths: Iterable[str] = ()) -> str:
    """A finding's message without what varies while the finding does not: the `[spec]` it was compiled under (the
    spec is the key it is filed under), the "(in 1 of 2 configs: ...)" that depends on the other specs, and paths."""
    cut = list(_CONFIG_SUFFIX.finditer(message))
    if cut:
        message = message[:cut[-1].start()]
    if describe:
        message = message.replace(f" [{describe}]", "")
    for p in paths:
        if p:
            message = message.replace(p, "")
    return message.strip()


def finding_record(f: Finding, describe: str | None = None, paths: Iterable[str] = ()) -> dict[str, Any]:
    """`describe`: the spec the finding was made under (default: its own `config`)."""
    # the cost said in the line varies with the launch's estimate or measurement while the finding does not
    message = f.message.replace(f.data.get("message_cost") or "\0", "")
    return {"code": f.code, "line": f.line, "severity": f.severity,
            "message": stable_message(message, describe or f.config, paths)}


def _sorted_records(records: list[dict]) -> list[dict]:
    return sorted(records, key=lambda r: (r["line"], r["code"], r["message"]))


def _plain(value: Any) -> Any:
    """JSON-safe and deterministic: tuples to lists, unknown objects to their repr."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def spec_record(cs: CompiledSpec, paths: list[str], with_ir: bool = True) -> tuple[dict[str, Any], dict[str, str]]:
    """One compiled spec as stored, and its normalised IR texts by stage (none without `with_ir`)."""
    spec, art = cs.spec, cs.artifacts
    rec: dict[str, Any] = {
        "describe": spec.describe(), "label": spec.label, "target": spec.target,
        "spec": _plain({"signature": spec.signature, "constants": {k: encode(v) for k, v in spec.constants.items()},
                        "attrs": spec.attrs, "options": spec.options}),
        "compiled": "not compiled" if art is None else art.error.kind if art.error else "ok",
        "metrics": _plain({k: v for k, v in cs.metrics.items() if k not in _VOLATILE_METRICS}),
        "findings": _sorted_records([finding_record(f, spec.describe(), paths) for f in cs.findings]),
    }
    texts: dict[str, str] = {}
    if art is not None and art.ok and with_ir:
        for stage in STAGES:
            if art.asm.get(stage):
                texts[stage] = normalise_ir(stage, art.asm[stage], paths)
        rec["ir"] = {stage: ir_hash(t) for stage, t in texts.items()}
    return rec, texts


def kernel_record(kr: KernelReport, paths: list[str],
                  with_ir: bool = True) -> tuple[dict[str, Any], dict[str, dict[str, str]]]:
    """A kernel as stored (its specs by key, the findings that belong to no spec) and its IR texts by spec key."""
    specs, texts = {}, {}
    for cs in kr.compiled:
        key = cs.spec.key()
        specs[key], texts[key] = spec_record(cs, paths, with_ir)
    own = [f for f in kr.findings if "specs" not in f.data]  # SRC002, SRC003, ...: from specs, not from compiles
    return {"def_line": kr.kernel.def_line, "specs": specs,
            "findings": _sorted_records([finding_record(f, None, paths) for f in own])}, texts


def build_baseline(reports: Iterable, rel_path, versions: dict[str, Any],
                   with_ir: bool = True) -> tuple[dict[str, Any], dict[str, str]]:
    """The baseline dict of some `FileReport`s, and the sidecar texts (`relpath/kernel/speckey.stage` -> normalised
    IR). `rel_path(abs_path)` gives the path to file a report under (relative to the workspace root). Without
    `with_ir` no IR is normalised or hashed (the gate compares metrics and findings only)."""
    files: dict[str, Any] = {}
    sidecar: dict[str, str] = {}
    for report in reports:
        rel = rel_path(report.path)
        paths = _paths_to_strip(report.path, rel)
        kernels = {}
        for kr in report.kernels:
            kernels[kr.kernel.key], texts = kernel_record(kr, paths, with_ir)
            for spec_key, by_stage in texts.items():
                for stage, text in by_stage.items():
                    sidecar[ir_name(rel, kr.kernel.key, spec_key, stage)] = text
        files[rel] = {"kernels": kernels,
                      "findings": _sorted_records([finding_record(f, None, paths) for f in report.findings])}
    return {"format": FORMAT, "versions": _plain(versions), "files": files}, sidecar


def ir_name(rel: str, kernel: str, spec_key: str, stage: str) -> str:
    """Where a spec's normalised IR lives under the sidecar folder."""
    return f"{rel}/{kernel}/{spec_key}.{stage}"


def _paths_to_strip(abs_path: str, rel: str) -> list[str]:
    """The file's folder as IR and messages spell it (with the separator), longest first."""
    folder = os.path.dirname(abs_path)
    root = abs_path[: len(abs_path) - len(rel)] if abs_path.endswith(rel) else folder + os.sep
    return sorted({folder + os.sep, root, abs_path}, key=len, reverse=True)


# ---------------------------------------------------------------- comparing
@dataclass
class Change:
    name: str
    old: Any
    new: Any
    regressed: bool = False
    why: str = ""  # for regressions: what got worse, in words

    def text(self) -> str:
        return f"{_LABELS.get(self.name, self.name)} {_show(self.name, self.old)} → {_show(self.name, self.new)}"


@dataclass
class SpecDiff:
    """One spec of a kernel, before and after. `old`/`new` are stored spec records; either may be None (a spec only
    one side has)."""

    old_key: str | None
    new_key: str | None
    old: dict | None
    new: dict | None
    matched_by: str  # "key" | "describe" | "label" | "position" | "" (unmatched)
    knobs: list[Change] = field(default_factory=list)  # spec values that differ (num_warps 4 → 8)
    metrics: list[Change] = field(default_factory=list)
    appeared: list[dict] = field(default_factory=list)
    gone: list[dict] = field(default_factory=list)
    unchanged: list[dict] = field(default_factory=list)
    ir_changed: list[str] = field(default_factory=list)

    @property
    def describe(self) -> str:
        return (self.new or self.old or {}).get("describe", "")

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.metrics if c.regressed]

    @property
    def changed(self) -> bool:
        return bool(self.knobs or self.metrics or self.appeared or self.gone or self.ir_changed or not self.matched_by)


@dataclass
class KernelDiff:
    path: str
    kernel: str
    status: str  # "same" (present on both sides) | "new" | "gone"
    def_line: int | None
    specs: list[SpecDiff] = field(default_factory=list)
    appeared: list[dict] = field(default_factory=list)  # kernel-level findings (SRC002, ...)
    gone: list[dict] = field(default_factory=list)
    unchanged: list[dict] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.status != "same" or bool(self.appeared or self.gone) or any(s.changed for s in self.specs)


@dataclass
class Comparison:
    versions: list[Change]
    kernels: list[KernelDiff]
    files: dict[str, tuple[list[dict], list[dict], list[dict]]]  # path -> (appeared, gone, unchanged) file findings


def compare(old: dict, new: dict, only_new_files: bool = True) -> Comparison:
    """Pair `new` (the current state) with `old` (the baseline). Files of the baseline that `new` does not hold are
    left out when `only_new_files` (a check of some files says nothing of the others)."""
    versions = [Change(k, old.get("versions", {}).get(k), new.get("versions", {}).get(k))
                for k in sorted(set(old.get("versions", {})) | set(new.get("versions", {})))
                if old.get("versions", {}).get(k) != new.get("versions", {}).get(k)]
    kernels: list[KernelDiff] = []
    files: dict[str, tuple[list[dict], list[dict], list[dict]]] = {}
    old_files, new_files = old.get("files", {}), new.get("files", {})
    paths = sorted(new_files) if only_new_files else sorted(set(old_files) | set(new_files))
    for path in paths:
        of, nf = old_files.get(path, {}), new_files.get(path, {})
        files[path] = match_findings(of.get("findings", []), nf.get("findings", []), None, None)
        ok, nk = of.get("kernels", {}), nf.get("kernels", {})
        for name in sorted(set(ok) | set(nk), key=lambda n: ((nk.get(n) or ok.get(n))["def_line"], n)):
            kernels.append(compare_kernel(path, name, ok.get(name), nk.get(name)))
    return Comparison(versions, kernels, files)


def compare_kernel(path: str, name: str, old: dict | None, new: dict | None) -> KernelDiff:
    status = "same" if old and new else "new" if new else "gone"
    kd = KernelDiff(path, name, status, (new or old or {}).get("def_line"))
    old_line, new_line = (old or {}).get("def_line"), (new or {}).get("def_line")
    kd.appeared, kd.gone, kd.unchanged = match_findings((old or {}).get("findings", []),
                                                        (new or {}).get("findings", []), old_line, new_line)
    for ok, nk, how in pair_specs((old or {}).get("specs", {}), (new or {}).get("specs", {})):
        o = old["specs"][ok] if ok else None
        n = new["specs"][nk] if nk else None
        sd = SpecDiff(ok, nk, o, n, how)
        if o is not None and n is not None:
            sd.knobs = [Change(k, a, b) for k, a, b in _value_changes(_spec_values(o), _spec_values(n))]
            sd.metrics = compare_metrics(o.get("metrics", {}), n.get("metrics", {}), n.get("target", ""))
            if "ir" in o and "ir" in n:  # records made without IR (the gate, the editor) say nothing of it
                sd.ir_changed = [s for s in STAGES if o["ir"].get(s) != n["ir"].get(s)]
        sd.appeared, sd.gone, sd.unchanged = match_findings((o or {}).get("findings", []),
                                                            (n or {}).get("findings", []), old_line, new_line)
        kd.specs.append(sd)
    return kd


def pair_specs(old: dict[str, dict], new: dict[str, dict]) -> list[tuple[str | None, str | None, str]]:
    """(old key, new key, how they were matched), in the new side's order, then old specs no longer there."""
    left_old = list(old)
    pairs: dict[str, tuple[str | None, str]] = {}
    for how, value in (("key", None), ("describe", "describe"), ("label", "label")):
        for nk, rec in new.items():
            if nk in pairs:
                continue
            for ok in left_old:
                if (ok == nk) if value is None else (rec.get(value) and old[ok].get(value) == rec.get(value)
                                                     and old[ok].get("target") == rec.get("target")):
                    pairs[nk] = (ok, how)
                    left_old.remove(ok)
                    break
    for target in sorted({r.get("target", "") for r in new.values()}):
        n_left = [k for k, r in new.items() if k not in pairs and r.get("target", "") == target]
        o_left = [k for k in left_old if old[k].get("target", "") == target]
        if n_left and len(n_left) == len(o_left):
            for nk, ok in zip(n_left, o_left):
                pairs[nk] = (ok, "position")
                left_old.remove(ok)
    out: list[tuple[str | None, str | None, str]] = []
    for nk in new:
        ok, how = pairs.get(nk, (None, ""))
        out.append((ok, nk, how))
    out.extend((ok, None, "") for ok in left_old)
    return out


def _spec_values(rec: dict) -> dict[str, Any]:
    """A stored spec flattened to the values a user sets: options, constexprs, argument types and divisibility."""
    spec = rec.get("spec", {})
    values: dict[str, Any] = {"target": rec.get("target")}
    values.update({k: v for k, v in spec.get("options", {}).items()})
    for name, ty in spec.get("signature", {}).items():
        if name in spec.get("constants", {}):
            values.setdefault(name, show_stored(spec["constants"][name]))  # inf, nan, tl.fp16: as launched
        elif ty != "constexpr":
            div = spec.get("attrs", {}).get(name, {}).get("divisibility")
            values[name] = f"{ty}%{div}" if div else ty
    return values


def _value_changes(a: dict, b: dict) -> list[tuple[str, Any, Any]]:
    keys = list(a) + [k for k in b if k not in a]
    return [(k, a.get(k), b.get(k)) for k in keys if a.get(k) != b.get(k)]


_LABELS = {"spill_bytes": "spill bytes", "spill_stores": "spill stores", "spill_loads": "spill loads",
           "shared": "shared memory", "convert_layout": "convert_layout ops", "local_alloc": "local_alloc ops",
           "dots": "dot ops", "mma": "mma instructions", "wgmma": "wgmma instructions", "fma": "fma instructions",
           "bar": "barriers", "ldl": "LDL", "stl": "STL", "stack": "stack frame"}
_LOWER_IS_BETTER = ("registers", "spill_bytes", "convert_layout")
_SHOWN_METRICS = ("registers", "spill_bytes", "spill_stores", "spill_loads", "stack", "shared", "occupancy",
                  "convert_layout", "local_alloc", "dots", "mma", "wgmma", "fma", "bar", "ldl", "stl")


def compare_metrics(old: dict, new: dict, target: str) -> list[Change]:
    """Metrics that differ; `regressed` for the ones the gate fails on: more registers, spill bytes or conversions,
    narrower global accesses (mean width per instruction fell), shared memory newly over the target's limit."""
    out: list[Change] = []
    for name in _SHOWN_METRICS:
        a, b = old.get(name), new.get(name)
        if name == "occupancy":
            a, b = (a or {}).get("warps"), (b or {}).get("warps")
            name = "resident warps"
        if a == b or (a is None and b is None):
            continue
        c = Change(name, a, b)
        if name in _LOWER_IS_BETTER and isinstance(a, int) and isinstance(b, int) and b > a:
            c.regressed = True
        if name == "shared" and isinstance(a, int) and isinstance(b, int):
            from ..device.limits import target_limits

            lim = target_limits(target)
            if lim is not None and b > lim.shared_per_block >= a:
                c.regressed = True
                c.why = f"over the {lim.shared_per_block} B per-block limit of {lim.name}"
        out.append(c)
    ow, nw = old.get("global_widths", {}), new.get("global_widths", {})
    for kind in sorted(set(ow) | set(nw)):
        a, b = ow.get(kind, {}), nw.get(kind, {})
        if a == b:
            continue
        c = Change(f"{kind} widths", a, b)
        ma, mb = _mean_bits(a), _mean_bits(b)
        if ma is not None and mb is not None and mb < ma:
            c.regressed = True
            c.why = f"mean width {ma:g} → {mb:g} bits"
        out.append(c)
    return out


def _mean_bits(widths: dict[str, int]) -> float | None:
    n = sum(widths.values())
    return round(sum(int(b) * c for b, c in widths.items()) / n, 1) if n else None


def _show(name: str, value: Any) -> str:
    if value is None:
        return "none"
    if name.endswith("widths") and isinstance(value, dict):
        return ", ".join(f"{c}×{b}-bit" for b, c in sorted(value.items(), key=lambda kv: -int(kv[0]))) or "none"
    if name in ("shared", "spill_bytes", "spill_stores", "spill_loads", "stack") and isinstance(value, int):
        return f"{value} B"
    return str(value)


def match_findings(old: list[dict], new: list[dict], old_def: int | None,
                   new_def: int | None) -> tuple[list[dict], list[dict], list[dict]]:
    """(appeared, gone, unchanged) between two finding lists. A finding is the same when it has the same code and,
    in this order: the same line relative to the kernel's def and the same message; the same message anywhere (code
    moved); the same relative line (its numbers changed — the metrics say by how much)."""
    def rel(rec: dict, base: int | None) -> int:
        return rec["line"] - (base or 0)

    left = list(old)
    unchanged: list[dict] = []
    pending = list(new)
    for same in (lambda o, n: rel(o, old_def) == rel(n, new_def) and o["message"] == n["message"],
                 lambda o, n: o["message"] == n["message"],
                 lambda o, n: rel(o, old_def) == rel(n, new_def)):
        still = []
        for n in pending:
            hit = next((o for o in left if o["code"] == n["code"] and same(o, n)), None)
            if hit is None:
                still.append(n)
            else:
                left.remove(hit)
                unchanged.append(n)
        pending = still
    return pending, left, unchanged


# ---------------------------------------------------------------- the gate
def mark_findings(report, comparison: Comparison, rel: str, paths: list[str] | None = None) -> None:
    """Set `data["baseline_state"]` ("new" | "unchanged") on each finding of a `FileReport` filed under `rel`."""
    paths = paths if paths is not None else _paths_to_strip(report.path, rel)
    appeared_file = comparison.files.get(rel, ([], [], []))[0]
    _mark(report.findings, appeared_file, paths)
    by_name = {kd.kernel: kd for kd in comparison.kernels if kd.path == rel}
    for kr in report.kernels:
        kd = by_name.get(kr.kernel.key)
        appeared = list(kd.appeared) if kd else []
        for sd in (kd.specs if kd else []):
            appeared.extend(sd.appeared)
        _mark(kr.findings, appeared, paths)


def _mark(findings: list[Finding], appeared: list[dict], paths: list[str]) -> None:
    new = {(r["code"], r["line"], r["message"]) for r in appeared}
    for f in findings:
        record = finding_record(f, f.config, paths)
        rec = (record["code"], record["line"], record["message"])
        f.data["baseline_state"] = "new" if rec in new else "unchanged"


def regression_findings(kr: KernelReport, kd: KernelDiff | None, severity: str = "warning") -> list[Finding]:
    """BASE001 on the kernel's def line: one per regressed metric of a spec, and one per spec with findings at
    warning or above that the baseline did not have (a spec or kernel the baseline lacks counts as all new)."""
    k = kr.kernel
    out: list[Finding] = []

    def add(message: str, spec_describe: str | None, data: dict) -> None:
        out.append(Finding(path=k.path, line=k.def_line, column=k.col, end_line=k.def_line, end_column=k.col + 3,
                           code="BASE001", severity=severity, message=message, kernel=k.name, config=spec_describe,
                           target=(data.get("target")), data={"baseline_state": "new", **data}))

    if kd is None:
        return out
    for sd in kd.specs:
        if sd.new is None:
            continue
        where = f" [{sd.new['describe']}]"
        target = sd.new.get("target")
        for c in sd.regressions:
            why = f" ({c.why})" if c.why else ""
            add(f"{c.text()} since the baseline{why}{_knob_note(sd)}{where}", sd.new["describe"],
                {"metric": c.name, "baseline": c.old, "now": c.new, "target": target, "merge_key": c.name})
        gating = [r for r in sd.appeared if r["severity"] in _GATING]
        if gating:
            counts: dict[str, list[int]] = {}
            for r in gating:
                counts.setdefault(r["code"], []).append(r["line"])
            parts = [f"{code} {_count(sd.old, code)} → {_count(sd.new, code)} "
                     f"(new on line{'s' if len(lines) > 1 else ''} {', '.join(map(str, sorted(set(lines))))})"
                     for code, lines in sorted(counts.items())]
            head = ("findings new since the baseline" if sd.old is not None
                    else f"{'kernel' if kd.status == 'new' else 'spec'} not in the baseline, its findings count as new")
            add(f"{head}: {'; '.join(parts)}{_knob_note(sd)}{where}", sd.new["describe"],
                {"metric": "findings", "codes": sorted(counts), "target": target, "merge_key": "findings"})
    return out


def _count(rec: dict | None, code: str) -> int:
    return sum(1 for r in (rec or {}).get("findings", []) if r["code"] == code)


def _knob_note(sd: SpecDiff) -> str:
    """A delta can be pinned on one change only when one knob of the spec changed."""
    knobs = [c for c in sd.knobs if c.name != "target"]
    if not knobs:
        return ""
    shown = ", ".join(c.text() for c in knobs)
    if len(knobs) > 1:
        return f"; {len(knobs)} knobs changed at once ({shown}): the delta cannot be pinned on one of them"
    return f"; changed: {shown}"


# ---------------------------------------------------------------- the editor: what one save changed
_SUMMARY_METRICS = ("registers", "spill_bytes", "shared", "resident warps", "convert_layout", "local_alloc",
                    "mma", "wgmma", "ld.global widths", "st.global widths")


def change_summary(kd: KernelDiff) -> str:
    """`registers 168 → 96, spill bytes 1296 B → 0 B, PTX001 +2` for a kernel's first paired spec; "" when nothing
    a user tunes for changed. Says so when more than one knob of the spec changed at once."""
    sd = next((s for s in kd.specs if s.old is not None and s.new is not None), None)
    if sd is None:
        return ""
    parts = [c.text() for c in sd.metrics if c.name in _SUMMARY_METRICS]
    codes = sorted({r["code"] for r in sd.appeared} | {r["code"] for r in sd.gone})
    for code in codes:
        delta = sum(r["code"] == code for r in sd.appeared) - sum(r["code"] == code for r in sd.gone)
        if delta:
            parts.append(f"{code} {delta:+d}")
    knobs = [c for c in sd.knobs if c.name != "target"]
    if parts and len(knobs) > 1:
        parts.append(f"{len(knobs)} knobs changed at once ({', '.join(c.name for c in knobs)}): "
                     f"not one change's delta")
    return ", ".join(parts)


class SaveHistory:
    """Per kernel of each document, the record of the previous compiled report and the latest report, so that a
    lens can say what the last save changed. A report counts once: the same object seen again (an unchanged kernel
    is not recompiled) shifts nothing. Only metrics and findings are kept of the previous one, not its IR."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, str], tuple[dict | None, KernelReport]] = {}

    def observe(self, uri: str, kr: KernelReport) -> None:
        if not any(cs.artifacts is not None and cs.artifacts.ok for cs in kr.compiled):
            return  # a failed or cancelled compile is not a state to compare with
        key = (uri, kr.kernel.key)
        held = self._held.get(key)
        if held is None or held[1] is not kr:
            self._held[key] = (kernel_record(held[1], [], with_ir=False)[0] if held else None, kr)

    def since_last_save(self, uri: str, kr: KernelReport) -> str:
        held = self._held.get((uri, kr.kernel.key))
        if held is None or held[0] is None or held[1] is not kr:
            return ""
        return change_summary(compare_kernel("", kr.kernel.key, held[0], kernel_record(kr, [], with_ir=False)[0]))


def since_baseline(baseline: dict, rel: str, kr: KernelReport) -> str:
    """What changed in `kr` since the baseline's record of it ("" when the baseline does not hold it)."""
    old = baseline.get("files", {}).get(rel, {}).get("kernels", {}).get(kr.kernel.key)
    if old is None:
        return ""
    new, _ = kernel_record(kr, [], with_ir=False)
    return change_summary(compare_kernel(rel, kr.kernel.key, old, new))


def read_baseline(path: str) -> tuple[dict | None, str | None]:
    """(the baseline, None) or (None, why it cannot be used)."""
    from ..frontend.untrusted import UntrustedFile, has_controls, loads, printable, read_text

    # a file of the workspace: a pull request may bring any, so regular, bounded, shallow and printable only
    try:
        data = loads(read_text(path), path)
    except OSError as exc:
        return None, f"{printable(path)}: cannot read the baseline ({exc.strerror or exc})"
    except UntrustedFile as exc:
        return None, f"not a baseline: {exc}"
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        return None, f'{printable(path)}: not a baseline (no "files")'
    if has_controls(data):
        return None, f"{printable(path)}: not a baseline (control characters in its names)"
    return data, None


# ---------------------------------------------------------------- versions (the one function here that runs tools)
def tool_versions(targets: list[str]) -> dict[str, Any]:
    """Triton, ptxas (CUDA) and the targets; the GPU model and driver only when one is visible. No timestamps."""
    from importlib import metadata

    out: dict[str, Any] = {"targets": sorted(set(targets))}
    try:
        out["triton"] = metadata.version("triton")
    except metadata.PackageNotFoundError:
        out["triton"] = None
    if any(t.startswith("cuda") for t in targets):
        try:
            from ..ir.sass import tool_path

            text = subprocess.run([str(tool_path("ptxas")), "--version"], capture_output=True, text=True,
                                  timeout=20).stdout
            m = re.search(r"release [\d.]+, V([\d.]+)", text)
            out["ptxas"] = m.group(1) if m else None
        except Exception:  # noqa: BLE001 — a missing tool leaves the version unknown, it does not stop the save
            out["ptxas"] = None
    from ..device.targets import has_local_gpu

    if has_local_gpu():
        import shutil

        smi = shutil.which("nvidia-smi")
        if smi:
            try:
                rows = split_lines(subprocess.run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                                  capture_output=True, text=True, timeout=10).stdout.strip())
                if rows:
                    name, _, driver = rows[0].rpartition(",")
                    out["gpu"], out["driver"] = name.strip(), driver.strip()
            except (OSError, subprocess.SubprocessError):
                pass
    return out


def gate_report(report, baseline: dict, rel: str, severity: str | None = "warning") -> list[Finding]:
    """`check --baseline` for one `FileReport` filed under `rel`: mark each finding new or unchanged, add BASE001 for
    each regression (returned too). `severity` None (the rule is off) marks without adding."""
    paths = _paths_to_strip(report.path, rel)
    now, _ = build_baseline([report], lambda _p: rel, {}, with_ir=False)
    comparison = compare(baseline, now)
    mark_findings(report, comparison, rel, paths)
    added: list[Finding] = []
    by_name = {kd.kernel: kd for kd in comparison.kernels if kd.path == rel}
    for kr in report.kernels:
        found = regression_findings(kr, by_name.get(kr.kernel.key), severity) if severity else []
        kr.findings = sorted(kr.findings + found, key=Finding.sort_key)
        added.extend(found)
    return added
