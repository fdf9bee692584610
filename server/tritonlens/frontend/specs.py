"""The specializations of a kernel to compile: one `Spec` per capture, hint line, launch site or autotune config.

Values come, in order of trust, from: captured launches, hint comments, literal launch sites, defaults in the
`def`, autotune configs, heuristics. What none of them gives stays unknown — a constexpr without a value is listed
in `Spec.missing` and reported (SRC002), never guessed. Unset runtime arguments are typed the way a torch launch
would specialize them: pointers `*fp32` 16-byte aligned, integers `i32` with no known divisibility.
"""
from __future__ import annotations

import ast
import itertools
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

from .captures import identity as capture_identity
from ..device import config_eval
from .hints import OPTION_NAMES, HintValue, parse_value
from .launches import Choices, LaunchSite, Typed
from ..launch_values import same, unrecorded_type
from ..model import Finding, KernelInfo, Param, Spec, backend_of, clean_launch, merge_launch_records, one_line

TRITON_DEFAULT_OPTIONS = {"cuda": {"num_warps": 4, "num_stages": 3}, "hip": {"num_warps": 4, "num_stages": 2}}
ASSUMED = "assumed (torch launch)"
AUTO_CAPTURE = "auto-capture"  # origin prefix of a value the file's own launch code passed, run without a GPU
# Where a spec's value came from (Spec.origins), by kind: what a verdict weighs a finding's evidence by. Facts from a
# run: "capture" (a real one), "auto-capture" (the file's own launch code, no GPU); the user's word: "hint", "launch
# site" (a literal at a launch), "default" (in the def), "autotune config", "heuristics"; ours: "triton default" (an
# option no one set, as Triton would take it), "assumed" (a type no one gave, as a torch launch would make it).
ORIGIN_KINDS = ("capture", "auto-capture", "hint", "launch site", "default", "autotune config", "heuristics",
                "quick fix", "triton default", "assumed")


def origin_kind(origin: str) -> str:
    """The kind (one of ORIGIN_KINDS) of an origin text as `Spec.origins` holds it."""
    for prefix, kind in ((AUTO_CAPTURE, "auto-capture"), ("capture", "capture"), ("hint line", "hint"),
                         ("launch at", "launch site"), ("default in def", "default"), ("autotune config",
                         "autotune config"), ("heuristics", "heuristics"), ("quick fix", "quick fix"),
                         ("triton default", "triton default")):
        if origin.startswith(prefix):
            return kind
    return "assumed"


CONFIG_LABEL = re.compile(r"autotune config (\d+)/(\d+)")  # the label of a spec made from the i-th config


@dataclass
class _Value:
    """A parameter's specialization: a runtime type (with divisibility) or a constant (constexpr / ==1 / None)."""

    kind: str  # "type" | "const"
    origin: str
    type: str | None = None
    divisibility: int | None = None
    value: Any = None  # the constant, or the known runtime value of a scalar (for heuristics)
    known: bool = False


@dataclass
class _Draft:
    label: str
    params: dict[str, _Value] = field(default_factory=dict)
    options: dict[str, tuple[Any, str]] = field(default_factory=dict)
    exprs: dict[str, str] = field(default_factory=dict)  # launch-site expressions for params it could not evaluate
    # params a launch site pins to a few values that could not be compiled one by one: every value it can pass
    choices: dict[str, tuple] = field(default_factory=dict)


# ---------------------------------------------------------------- entry point
def build_specs(kernel: KernelInfo, target: str, launches: list[LaunchSite] | None = None,
                captures: list[dict[str, Any]] | None = None, gpu: str | None = None,
                env: dict[str, str] | None = None,
                auto_captures: list[dict[str, Any]] | None = None) -> tuple[list[Spec], list[Finding]]:
    """The specs of `kernel` for `target`; `gpu` names the GPU (of that arch) that heuristics see, `env` what they
    read of the environment beyond this process's. `auto_captures`: what the file's own launch code launched without
    a GPU (gpu/autocapture.py, each with "_by"), below real captures and hints, above launch sites and defaults."""
    findings: list[Finding] = _hint_findings(kernel)
    capture_specs, capture_findings = _capture_specs(kernel, target, captures or [])
    findings += capture_findings
    if capture_specs:
        return _dedupe(capture_specs), findings
    if auto_captures and not kernel.hints:
        auto_specs, _ = _capture_specs(kernel, target, auto_captures, auto=True)  # a stale run is no finding
        if auto_specs and not all(s.missing for s in auto_specs):
            return _dedupe(auto_specs), findings

    names = [p.name for p in kernel.params]
    launch_drafts: list[_Draft] = []
    for site in launches or []:
        launch_drafts += _site_drafts(kernel, site, names)

    drafts: list[_Draft] = []
    for hint in kernel.hints:
        d = _Draft(label=f"hint line {hint.line}")
        for name, raw in hint.values.items():
            p = kernel.param(name)
            try:
                hv = parse_value(raw, is_option=p is None and name in OPTION_NAMES,
                                 is_constexpr=bool(p and p.is_constexpr))
            except ValueError:
                continue
            _set(kernel, d, name, hv, f"hint line {hint.line}")
        _fill_from_agreeing_launches(kernel, d, launch_drafts)
        drafts.append(d)
    if not drafts:
        drafts = launch_drafts or [_Draft(label="defaults")]

    specs: list[Spec] = []
    reasons: dict[str, str] = {}
    for d in drafts:
        for spec in _expand(kernel, d, target, reasons, gpu, env):
            specs.append(spec)
    specs = _dedupe(specs)
    findings += _missing_findings(kernel, specs, launch_drafts, reasons)
    return specs, findings


def spec_to_compile_args(spec: Spec, params: KernelInfo | list[str]) -> tuple[
        dict[str, str], dict[tuple[int, ...], Any], dict[tuple[int, ...], list[list[Any]]]]:
    """(signature, constexprs, attrs) exactly as `triton.compiler.ASTSource(fn, signature, constexprs, attrs)` takes
    them in triton 3.6: signature by name (constexprs, ==1 and None included as "constexpr"), constexprs and attrs
    keyed by `(param index,)` paths, divisibility as `[["tt.divisibility", 16]]` (what `BaseBackend.parse_attr`
    makes of a launch's "D"). `params` is the kernel or its parameter names in order (`JITFunction.arg_names`)."""
    if spec.missing:
        raise ValueError(f"spec {spec.label!r} cannot compile: no value for {', '.join(spec.missing)}")
    names = [p.name for p in params.params] if isinstance(params, KernelInfo) else list(params)
    signature: dict[str, Any] = {}
    constexprs: dict[tuple[int, ...], Any] = {}
    attrs: dict[tuple[int, ...], list[list[Any]]] = {}
    for index, name in enumerate(names):
        ty = spec.signature.get(name, "constexpr" if name in spec.constants else "i32")
        signature[name] = _tuple_type(ty)
        if ty == "constexpr":
            constexprs[(index,)] = spec.constants.get(name)
        elif spec.attrs.get(name, {}).get("divisibility") == 16:
            attrs[(index,)] = [["tt.divisibility", 16]]
    # Elements of tuple arguments: `ptrs[1]` is path (index of ptrs, 1), as triton keys them.
    index_of = {n: i for i, n in enumerate(names)}
    for key, value in spec.constants.items():
        path = _element_path(key, index_of)
        if path is not None:
            constexprs[path] = value
    for key, attr in spec.attrs.items():
        path = _element_path(key, index_of)
        if path is not None and attr.get("divisibility") == 16:
            attrs[path] = [["tt.divisibility", 16]]
    return signature, constexprs, attrs


_ELEMENT = re.compile(r"([A-Za-z_]\w*)((?:\[\d+\])+)$")


def _element_path(key: str, index_of: dict[str, int]) -> tuple[int, ...] | None:
    m = _ELEMENT.match(key)
    if m is None or m.group(1) not in index_of:
        return None
    return (index_of[m.group(1)], *(int(x) for x in re.findall(r"\d+", m.group(2))))


def _tuple_type(ty: Any) -> Any:
    """A tuple argument's type as captured — triton's own text of it, `('*fp32', '*fp16')` — back to the nested
    tuple of type strings `ASTSource` takes (read with ast.literal_eval: data, never code)."""
    if isinstance(ty, str) and ty.startswith("("):
        try:
            value = ast.literal_eval(ty)
        except (ValueError, SyntaxError):
            return ty
        return value if isinstance(value, tuple) else ty
    return ty


# ---------------------------------------------------------------- values
def _set(kernel: KernelInfo, d: _Draft, name: str, hv: HintValue, origin: str) -> None:
    p = kernel.param(name)
    if p is None:
        if name in OPTION_NAMES:
            d.options[name] = (hv.value, origin)
        return
    v = _value_of(kernel, p, hv, origin)
    if v is not None:
        d.params[name] = v
    if name in OPTION_NAMES and p.is_constexpr and hv.kind in ("literal", "option"):
        # A kernel parameter named like a launch option (`num_stages: tl.constexpr`): a keyword launch sets both the
        # parameter and the compile option, and so does a hint.
        d.options[name] = (hv.value, origin)


def _pointer_branch_dead(p: Param, values: dict[str, "_Value"]) -> bool:
    """The parameter is only used as a pointer under `if FLAG:` and this spec sets FLAG the other way: it is an int."""
    if p.pointer_if is None:
        return False
    flag, when = p.pointer_if
    v = values.get(flag)
    return v is not None and v.kind == "const" and bool(v.value) != when


def _value_of(kernel: KernelInfo, p: Param, hv: HintValue, origin: str) -> _Value | None:
    no_spec = p.name in kernel.do_not_specialize
    no_align = no_spec or p.name in kernel.do_not_specialize_on_alignment
    if p.is_constexpr:
        return _Value("const", origin, value=hv.value, known=True) \
            if hv.kind == "literal" and not isinstance(hv.value, Typed) else None
    if hv.kind == "pointer":
        return _Value("type", origin, type=f"*{hv.type}", divisibility=None if no_align else hv.divisibility)
    if hv.kind == "scalar":
        return _Value("type", origin, type=hv.type, divisibility=None if no_align else hv.divisibility)
    value = hv.value
    if isinstance(value, Typed):  # a launch passes a value of known type only (a float it computes)
        return _Value("type", origin, type=value.type)
    # the way triton 3.6's specialize_impl types a runtime argument of a real launch
    if value is None:
        return _Value("const", origin, value=None, known=True)
    if isinstance(value, bool):
        return _Value("type", origin, type="u1", value=value, known=True)
    if isinstance(value, int):
        if value == 1 and not no_spec:
            return _Value("const", origin, value=1, known=True)
        ty = "i32" if -2**31 <= value < 2**31 else "u64" if value >= 2**63 else "i64"
        div = 16 if value % 16 == 0 and not no_align else None
        return _Value("type", origin, type=ty, divisibility=div, value=value, known=True)
    if isinstance(value, float):
        return _Value("type", origin, type="fp32", value=value, known=True)
    return None


MAX_SITE_SPECS = 16  # specs one launch site may add by the values its arguments can take
# launch-site specs compiled per kernel and target, and per run (pipeline._bounded_sites): a file may hold 1,000 sites
MAX_SITE_SPECS_PER_KERNEL = 12
MAX_SITE_SPECS_PER_RUN = 240


def _site_drafts(kernel: KernelInfo, site: LaunchSite, names: list[str]) -> list[_Draft]:
    """One draft per combination of the values a launch site can pass: an argument pinned to a few literals
    (`Choices`) gives each of them, labelled as such. Arguments computed from a common unknown (whose combinations
    are not all possible), and more combinations than MAX_SITE_SPECS, are left unknown: never a guess."""
    values, exprs = site.bind(names)
    where = f"launch at {_short(site.path)}:{site.line}"
    choices = {n: v for n, v in values.items() if isinstance(v, Choices)}
    tied = {n for n, c in choices.items() for m, d in choices.items() if n != m and not c.independent_of(d)}
    if math.prod(len(c.values) for c in choices.values()) > MAX_SITE_SPECS:
        tied = set(choices)
    tied_values = {n: choices.pop(n).values for n in tied}
    for n in tied:
        del values[n]
    drafts = []
    for combo in itertools.product(*(c.values for c in choices.values())):
        picked = dict(zip(choices, combo))
        label = where + "".join(f" ({n}={v!r} of {', '.join(map(repr, choices[n].values))})"
                                for n, v in picked.items())
        d = _Draft(label=label, exprs=dict(exprs), choices=dict(tied_values))
        for name, value in {**values, **picked}.items():
            _set(kernel, d, name, HintValue("literal", value=value), where)
        drafts.append(d)
    return drafts


def _fill_from_agreeing_launches(kernel: KernelInfo, d: _Draft, launches: list[_Draft]) -> None:
    """A constexpr a hint leaves unset takes the launch sites' literal when they all pass the same one."""
    if not launches:
        return
    for p in kernel.params:
        if not p.is_constexpr or p.name in d.params:
            continue
        seen = [ld.params.get(p.name) for ld in launches]
        if all(v is not None for v in seen) and len({repr(v.value) for v in seen}) == 1:  # type: ignore[union-attr]
            d.params[p.name] = seen[0]  # type: ignore[assignment]


# ---------------------------------------------------------------- expansion
def _expand(kernel: KernelInfo, d: _Draft, target: str, reasons: dict[str, str],
            gpu: str | None = None, env: dict[str, str] | None = None) -> list[Spec]:
    configs = kernel.autotune_configs or []
    config_keys: set[str] = set()
    for c in configs:
        config_keys |= set(c.get("kwargs", {})) | {k for k in c if k != "kwargs"}
    set_keys = set(d.params) | set(d.options)
    if configs and not config_keys <= set_keys:
        return [_finish(kernel, d, target, c, f"autotune config {i}/{len(configs)}", reasons, gpu, env)
                for i, c in enumerate(configs, 1)]
    return [_finish(kernel, d, target, None, None, reasons, gpu, env)]


def _finish(kernel: KernelInfo, d: _Draft, target: str, config: dict[str, Any] | None, config_label: str | None,
            reasons: dict[str, str], gpu: str | None = None, env: dict[str, str] | None = None) -> Spec:
    values: dict[str, _Value] = dict(d.params)
    options: dict[str, tuple[Any, str]] = dict(d.options)
    if config is not None:
        for k, v in config.get("kwargs", {}).items():
            p = kernel.param(k)
            if p is not None and k not in values:
                hv = HintValue("literal", value=v)
                got = _value_of(kernel, p, hv, config_label or "autotune config")
                if got is not None:
                    values[k] = got
        for k, v in config.items():  # launch options only: a Config's ptx_options or ir_override is no spec's
            if k in OPTION_NAMES and k not in options:
                options[k] = (v, config_label or "autotune config")
    for p in kernel.params:
        if p.name in values or p.name in kernel.heuristics:
            continue
        if p.has_default and p.default_known:
            got = _value_of(kernel, p, HintValue("literal", value=p.default), "default in def")
            if got is not None:
                values[p.name] = got
                continue
        if p.is_descriptor:
            reasons.setdefault(p.name, f"{p.name} is a tensor descriptor (the kernel calls {p.name}.load/store): its "
                                       f"type, tensordesc<dtype[block shape]>, comes from the host launch — capture "
                                       f"one (`tritonlens capture -- CMD`)")
            continue
        if not p.is_constexpr:
            if p.is_pointer and not _pointer_branch_dead(p, values):
                pointee = p.pointee or "fp32"
                origin = ASSUMED if p.pointee is None else f"{ASSUMED}; its values are used as integers"
                values[p.name] = _Value("type", origin, type=f"*{pointee}",
                                        divisibility=None if _no_align(kernel, p) else 16)
            else:
                values[p.name] = _Value("type", ASSUMED, type="i32")
    _apply_heuristics(kernel, values, target, reasons, gpu, env, options)

    signature: dict[str, str] = {}
    constants: dict[str, Any] = {}
    attrs: dict[str, dict[str, Any]] = {}
    origins: dict[str, str] = {}
    missing: list[str] = []
    for p in kernel.params:
        v = values.get(p.name)
        if v is None:
            signature[p.name] = "constexpr"
            missing.append(p.name)
            if kernel.autotune_error and p.name not in kernel.heuristics:
                reasons.setdefault(p.name, f"the autotune configs could not be evaluated ({kernel.autotune_error})")
            continue
        origins[p.name] = v.origin
        if v.kind == "const":
            signature[p.name] = "constexpr"
            constants[p.name] = v.value
        else:
            signature[p.name] = v.type or "i32"
            if v.divisibility == 16:
                attrs[p.name] = {"divisibility": 16}
    for k, default in TRITON_DEFAULT_OPTIONS[backend_of(target)].items():
        options.setdefault(k, (default, "triton default"))
    label = d.label if config_label is None else (config_label if d.label == "defaults"
                                                   else f"{d.label} × {config_label}")
    return Spec(signature=signature, constants=constants, attrs=attrs,
                options={k: v for k, (v, _) in options.items()}, target=target,
                origins={**origins, **{k: o for k, (_, o) in options.items()}}, label=label, missing=missing)


def _no_align(kernel: KernelInfo, p: Param) -> bool:
    return p.name in kernel.do_not_specialize or p.name in kernel.do_not_specialize_on_alignment


def _apply_heuristics(kernel: KernelInfo, values: dict[str, _Value], target: str, reasons: dict[str, str],
                      gpu: str | None = None, env: dict[str, str] | None = None,
                      options: dict[str, tuple[Any, str]] | None = None) -> None:
    """Values `@triton.heuristics` lambdas compute from the values known here, evaluated in the evaluator process
    (config_eval), never in this one: constexprs into `values`, launch options (`"num_warps": lambda args: ...`, which
    Triton passes to the launch as it passes a keyword) into `options`."""
    if not kernel.heuristics:
        return
    known = {n: v.value for n, v in values.items() if v.known}
    for name, source in kernel.heuristics.items():
        is_option = kernel.param(name) is None and name in OPTION_NAMES and options is not None
        if name in values or (is_option and name in options):
            continue  # set by a hint / capture / launch: the user's word wins
        answer = config_eval.shared().call(source, known, target, gpu, kernel.heuristic_programs.get(name), env)
        if "unknown" in answer:
            reasons[name] = (f"@triton.heuristics computes it from {answer['unknown']}, which is known only at "
                             "launch")
            continue
        if not answer.get("ok"):
            reasons[name] = f"its @triton.heuristics lambda could not be evaluated ({answer.get('error')})"
            continue
        if is_option:
            if isinstance(answer["value"], (int, bool)) or answer["value"] is None:
                options[name] = (answer["value"], "heuristics")
            continue
        p = kernel.param(name)
        if p is not None:
            got = _value_of(kernel, p, HintValue("literal", value=answer["value"]), "heuristics")
            if got is not None:
                values[name] = got
                known[name] = answer["value"]


# ---------------------------------------------------------------- captures
def _capture_specs(kernel: KernelInfo, target: str, captures: list[dict[str, Any]],
                   auto: bool = False) -> tuple[list[Spec], list[Finding]]:
    """Specs from captures; `auto`: an automatic capture's (labelled and originated by what launched them)."""
    specs: list[Spec] = []
    findings: list[Finding] = []
    names = [p.name for p in kernel.params]
    n = 0
    for cap in captures:
        if not isinstance(cap, dict) or cap.get("kernel") not in (kernel.name, kernel.func_name):
            continue
        cpath = cap.get("path")
        if isinstance(cpath, str) and cpath and not _same_file(kernel.path, cpath):
            continue
        sig = cap.get("signature")
        if not isinstance(sig, dict) or not all(isinstance(v, str) for v in sig.values()):
            continue
        n += 1
        where = cpath or "captures"
        if list(sig) != names:
            added = [x for x in names if x not in sig]
            removed = [x for x in sig if x not in names]
            parts = ([f"added {', '.join(added)}"] if added else []) + \
                    ([f"removed {', '.join(removed)}"] if removed else [])
            findings.append(_capture_finding(kernel, f"capture from {where} no longer fits: parameters changed "
                                             f"({'; '.join(parts) or 'reordered'})", {"capture": n}))
            continue
        constants = cap.get("constants") if isinstance(cap.get("constants"), dict) else {}
        attrs_in = cap.get("attrs") if isinstance(cap.get("attrs"), dict) else {}
        attrs = {k: {"divisibility": 16} for k, v in attrs_in.items()
                 if isinstance(v, dict) and v.get("divisibility") == 16 and sig.get(k) != "constexpr"}
        opts_in = cap.get("options") if isinstance(cap.get("options"), dict) else {}
        options = {k: v for k, v in opts_in.items() if k in OPTION_NAMES and isinstance(v, (int, float, bool, str))}
        for k, default in TRITON_DEFAULT_OPTIONS[backend_of(target)].items():
            options.setdefault(k, default)
        unrecorded = _unrecorded_args(cap, constants)
        missing = [x for x, t in sig.items() if t == "constexpr" and (x not in constants or x in unrecorded)]
        if unrecorded:
            findings.append(_unrecorded_finding(kernel, n, where, unrecorded, sig))
        by = cap.get("_by") if auto and isinstance(cap.get("_by"), str) else None
        origin = f"{AUTO_CAPTURE}: {by}" if by else "capture"
        specs.append(Spec(signature=dict(sig), constants={k: _replayed(v) for k, v in constants.items()
                                                          if k.split("[", 1)[0] in sig
                                                          and k.split("[", 1)[0] not in unrecorded},
                          attrs=attrs, options=options, target=target,
                          origins={k: origin for k in list(sig) + list(options)},
                          label=f"capture {n} ({by})" if by else f"capture {n}",
                          missing=missing, launches=_count(cap.get("launches")),
                          autotune=cap.get("autotune") if cap.get("autotune") in ("chosen", "trial") else None,
                          launch_records=capture_launch_records(cap),
                          capture_id=capture_identity(cap)))
    return specs, findings


def capture_launch_records(cap: dict[str, Any]) -> list[dict[str, Any]]:
    """The launches of a folded capture as Spec.launch_records: its distribution (`launch_counts`: each distinct launch
    with its count, the most launched first) when the capture kept one, else its one recorded launch (no count)."""
    counts = cap.get("launch_counts")
    if isinstance(counts, list) and counts:
        records = [clean_launch({**item["launch"], "count": item.get("count"), "time_us": item.get("time_us"),
                                 "timed": item.get("timed"), "time_min_us": item.get("time_min_us")})
                   for item in counts if isinstance(item, dict) and isinstance(item.get("launch"), dict)]
        return merge_launch_records([r for r in records if r is not None and "count" in r])
    return [r for r in [clean_launch(cap.get("launch"))] if r is not None]


def _replayed(value: Any) -> Any:
    """A captured constant as triton's preload would rebuild it: `{"constexpr": v}` is `v`. Everything else was
    decoded when the capture was read (launch_values: a dtype is {"dtype": name}, inf is inf); lists stay lists here
    (JSON) and become tuples in the worker."""
    if isinstance(value, dict) and set(value) == {"constexpr"}:
        return value["constexpr"]
    return value


def _unrecorded_args(cap: dict[str, Any], constants: dict[str, Any]) -> dict[str, str]:
    """The arguments of a capture that its recorder could not record (launch_values' `$unrecorded`; a launch
    argument `{"unknown": type}`), by parameter name, with the type it could not say."""
    out: dict[str, str] = {}
    for key, value in constants.items():
        kind = unrecorded_type(value)
        if kind is not None:
            out.setdefault(key.split("[", 1)[0], kind)
    launch = cap.get("launch")
    args = launch.get("args") if isinstance(launch, dict) else None
    for name, arg in (args.items() if isinstance(args, dict) else ()):
        if isinstance(arg, dict):
            kind = arg["unknown"] if isinstance(arg.get("unknown"), str) else unrecorded_type(arg.get("value"))
            if kind is not None:
                out.setdefault(name, kind[:64])
    return out


def _unrecorded_finding(kernel: KernelInfo, n: int, where: str, unrecorded: dict[str, str],
                        sig: dict[str, str]) -> Finding:
    """SRC003: what a capture could not record, and what that costs its checks — a constexpr missing means that
    compile is not checked; a runtime argument keeps the compile (its type was recorded) but not the launch's value,
    which the launch rules and a GPU replay read."""
    parts, lost = [], set()
    for name, kind in unrecorded.items():
        constexpr = sig.get(name) == "constexpr"
        parts.append(f"{name} (a {kind}{', a constexpr' if constexpr else ''})")
        lost.add("compile" if constexpr else "launch")
    cost = ("that compile is not checked: its constexpr value is unknown" if "compile" in lost else
            "the compile is checked (the argument's type was recorded), but the launch rules and a GPU replay lack "
            "its value")
    return _capture_finding(kernel, f"capture {n} from {where}: could not record {', '.join(parts)}; {cost}",
                            {"capture": n, "unrecorded": dict(unrecorded)})


def _capture_finding(kernel: KernelInfo, message: str, data: dict[str, Any]) -> Finding:
    """SRC003 on the kernel's def: a capture that cannot be checked as it was launched."""
    return Finding(kernel.path, kernel.def_line, kernel.col, kernel.def_line, kernel.col + 4 + len(kernel.func_name),
                   "SRC003", "info", message, kernel=kernel.name, data=data)


def _same_file(kernel_path: str, capture_path: str) -> bool:
    a = os.path.normpath(kernel_path).replace(os.sep, "/")
    b = os.path.normpath(capture_path).replace(os.sep, "/")
    return a == b or a.endswith("/" + b.lstrip("./"))


# ---------------------------------------------------------------- findings
def _hint_findings(kernel: KernelInfo) -> list[Finding]:
    out = []
    for hint in kernel.hints:
        spans = hint.error_spans or [(hint.col, hint.col + len(hint.text))] * len(hint.errors)
        for msg, (start, end) in zip(hint.errors, spans):
            out.append(Finding(kernel.path, hint.line, start, hint.line, end, "SRC004", "warning",
                               f"bad tritonlens hint: {msg}", kernel=kernel.name))
    return out


def _missing_findings(kernel: KernelInfo, specs: list[Spec], launches: list[_Draft],
                      reasons: dict[str, str]) -> list[Finding]:
    """One SRC002 per kernel, on its first missing parameter, naming every value no source gave and the candidates
    its launch sites pass (not one finding per parameter: real kernels take most constexprs from tensor shapes)."""
    names: list[str] = []
    for spec in specs:
        names += [n for n in spec.missing if n not in names and kernel.param(n) is not None]
    if not names:
        return []
    candidates: dict[str, list[str]] = {}
    for name in names:
        found: list[str] = []
        for ld in launches:
            text = ld.exprs.get(name)
            if text and text not in found:
                found.append(text)
            v = ld.params.get(name)
            for value in [v.value] if v is not None else ld.choices.get(name, ()):
                if repr(value) not in found:
                    found.append(repr(value))
        candidates[name] = found

    def detail(name: str) -> str:
        parts = ([f"launch sites pass {', '.join(candidates[name])}"] if candidates[name] else []) + \
                ([reasons[name]] if name in reasons else [])
        return "; ".join(parts)

    first = kernel.param(names[0])
    assert first is not None
    hint = ", ".join(f"{n}=..." for n in names)
    if len(names) == 1:
        name = names[0]
        msg = f"{name} has no value: add a hint `# tritonlens: {name}=...`"
        if candidates[name]:
            msg += f" (launch sites pass {', '.join(candidates[name])})"
        if name in reasons:
            msg += f"; {reasons[name]}"
    else:
        listed = "; ".join(f"{n} ({detail(n)})" if detail(n) else n for n in names)
        msg = (f"not compiled: {len(names)} values have no source — {listed}. Add a hint "
               f"`# tritonlens: {hint}` above the decorators, or record real launches with "
               f"`tritonlens capture -- CMD`")
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    short = (f"{names[0]} has no value: add a hint `# tritonlens: {names[0]}=...`" if len(names) == 1 else
             one_line(f"not compiled: no value for {shown} — add a hint or capture a launch"))
    return [Finding(kernel.path, first.line, first.col, first.line, first.end_col, "SRC002", "info", short,
                    details=[msg], kernel=kernel.name, data={"param": names[0], "params": names,
                                              "candidates": candidates[names[0]],
                                              "candidates_by_param": candidates})]


def _dedupe(specs: list[Spec]) -> list[Spec]:
    """One spec per distinct compile; captured ones that repeat add up their launches (and keep "chosen")."""
    seen: dict[str, Spec] = {}
    out = []
    for s in specs:
        k = s.key() + repr(s.missing)
        if k not in seen:
            seen[k] = s
            out.append(s)
        else:
            kept = seen[k]
            kept.launches += s.launches
            kept.launch_records = merge_launch_records(kept.launch_records, s.launch_records)
            if s.autotune == "chosen" or kept.autotune is None:
                kept.autotune = s.autotune or kept.autotune
    return out


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**62 else 0


def _features(spec: Spec) -> set[tuple]:
    """What a representative set must cover: each constexpr value, launch option, pointer type and alignment, and
    each int specialised as 1 or as a multiple of 16."""
    out: set[tuple] = {("const", k, repr(v)) for k, v in spec.constants.items()}
    out |= {("opt", k, repr(v)) for k, v in spec.options.items()}
    out |= {("type", k, t) for k, t in spec.signature.items() if t != "constexpr"}
    out |= {("div", k, spec.attrs.get(k, {}).get("divisibility")) for k, t in spec.signature.items()
            if t != "constexpr"}
    return out


def representative(specs: list[Spec], limit: int) -> list[Spec]:
    """A bounded set of captured specs that covers every value that was launched (see `_features`): the autotuner's
    choices and the most launched specs first, then, greedily, whichever adds the most values not yet covered.
    Autotuner trials are left out while other specs exist (the kernel runs the config that was chosen)."""
    ranked = sorted(range(len(specs)), key=lambda i: (specs[i].autotune != "chosen", -specs[i].launches, i))
    pool = [i for i in ranked if specs[i].autotune != "trial"] or ranked
    picked: list[int] = []
    covered: set[tuple] = set()
    wanted = set().union(*(_features(specs[i]) for i in pool)) if pool else set()
    chosen = [i for i in pool if specs[i].autotune == "chosen"]
    for i in chosen[:limit]:
        picked.append(i)
        covered |= _features(specs[i])
    while len(picked) < limit and covered != wanted:
        best = max((i for i in pool if i not in picked), key=lambda i: (len(_features(specs[i]) - covered),
                                                                       -pool.index(i)), default=None)
        if best is None or not _features(specs[best]) - covered:
            break
        picked.append(best)
        covered |= _features(specs[best])
    if not picked and pool:
        picked.append(pool[0])
    return [specs[i] for i in sorted(picked, key=ranked.index)]


def left_out(specs: list[Spec], chosen: list[Spec]) -> list[str]:
    """The launched values (see `_features`) that no spec of `chosen` has, as hint-like texts (`BLOCK=4096`,
    `num_warps=16`, `x_ptr=*fp16`, `n=i32%16`), autotuner trials aside as in `representative`."""
    pool = [s for s in specs if s.autotune != "trial"] or specs
    covered = set().union(*(_features(s) for s in chosen)) if chosen else set()
    missing = set().union(*(_features(s) for s in pool)) - covered if pool else set()
    out = []
    for kind, name, value in sorted(missing, key=repr):
        if kind == "div":
            out.append(f"{name}%{value}" if value else f"{name} not known divisible")
        elif kind == "type":
            out.append(f"{name}={value}")
        else:
            out.append(f"{name}={value}")
    return out


def _short(path: str) -> str:
    return os.path.basename(path)


def attach_tunings(specs: list[Spec], tunings: list[dict[str, Any]]) -> None:
    """Give each captured spec the tuning lines (frontend/captures.load_tunings) of the keys for which the autotuner
    chose its config: what it measured of the alternatives, for the rules' advice (checks/tuning)."""
    for spec in specs:
        if not spec.label.startswith("capture"):
            continue
        spec.tuning = [t for t in tunings if _chose(t, spec)][-64:]


def _chose(tuning: dict[str, Any], spec: Spec) -> bool:
    chosen = tuning.get("chosen")
    configs = tuning.get("configs") or []
    if not isinstance(chosen, int) or not 0 <= chosen < len(configs):
        return False
    cfg = configs[chosen]
    return all(same(spec.constants.get(k), v) for k, v in (cfg.get("kwargs") or {}).items()) and \
        all(spec.options.get(k) == cfg[k] for k in ("num_warps", "num_stages", "num_ctas") if k in cfg)
