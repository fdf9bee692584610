"""Findings of all specs of a kernel merged into one `KernelReport`: the object every presenter reads."""
from __future__ import annotations

import ast
import re

from ..launch_values import show
from ..model import (SEVERITY_RANK, Artifacts, CompiledSpec, CompileError, Finding, KernelInfo, KernelReport, Spec,
                     compiled_under, one_line)
from ..settings import Settings
from ..source import parse_module, split_lines
from ..checks.registry import cost_cause
from ..checks.verdict import limit, outcome
from ..frontend.launchers import is_test_label
from ..frontend.specs import ASSUMED, AUTO_CAPTURE, CONFIG_LABEL
from ..units import fmt_us

_OWN_PREFIX = {"Timeout": "compile timed out", "WorkerCrash": "compiler crashed", "InternalError": "internal error",
               "Cancelled": "compile cancelled", "MemoryLimit": "memory bound reached",
               "MissingTool": "compiler tool missing", "ImportTimeout": "importing the module timed out",
               "ImportCrash": "importing the module crashed", "SandboxRefused": "refused by tritonlens's sandbox"}


def error_finding(kernel: KernelInfo, spec: Spec, art: Artifacts, withheld: dict[str, str] | None = None,
                  source: str | None = None, assumed_bindings: dict[str, str] | None = None) -> Finding:
    """A failed compile as SRC001 on the line Triton names (made absolute), else on the def line.

    An error is the user's only when the user's values caused it. It is one (severity error) unless the failure
    rests on something tritonlens assumed: a value of the spec it defaulted (a pointer's element type, an int taken
    for `i32`, an argument taken for a pointer — origin `specs.ASSUMED`) that feeds the failing statement, or a
    name whose binding the definitions slice did not run (`withheld`) or chose without running its condition
    (`assumed_bindings`, a binding switch). Then the finding is an info that names the assumption and how to supply
    the truth (a hint, a capture, moduleExecution=full)."""
    err = art.error
    assert err is not None
    if err.ours:
        return own_failure_finding(kernel, spec, err)
    line = err.line or kernel.def_line
    col = err.col or kernel.col
    end_col = err.end_col or (col + 1 if err.col else kernel.col + 3)
    if err.kind == "OutOfResources":
        prefix = "out of resources"
    elif err.kind == "LoadError":
        prefix = "kernel module did not load"
    else:
        prefix = "compile error"
    first = split_lines(err.message.strip())[0] if err.message.strip() else err.kind
    message = f"{prefix}: {first}" if not first.startswith(prefix) else first
    ours = False
    for name, why in (withheld or {}).items():
        if re.search(rf"\b{re.escape(name)}\b", err.message):
            fix = ("bind it outside that `if`" if "`if` whose condition" in why
                   else "make it a literal or tl.constexpr")
            message += (f" — `{name}` comes from {why} (moduleExecution=definitions); {fix}, or set "
                        f"moduleExecution to full")
            ours = True
            break
    for name, why in (assumed_bindings or {}).items():
        if re.search(rf"\b{re.escape(name)}\b", err.message):
            message += (f" — `{name}` is bound at {why} (moduleExecution=definitions); if the import it took is not "
                        f"the one your program runs, set moduleExecution to full")
            ours = True
            break
    short = message  # the compiler's own words first: the cause, whatever the assumption
    severity = "info" if ours else "error"
    data: dict = {"kind": err.kind, "detail": err.message}
    if not ours:
        assumed = _assumed_behind(kernel, spec, err, source)
        if assumed:
            severity = "info"
            data["assumed"] = assumed
            pointers = [n for n in assumed if spec.signature.get(n, "").startswith("*")]
            if pointers:
                data["assumed_pointers"] = pointers
            shown = ", ".join(f"{n} typed {spec.signature.get(n)}" for n in assumed)
            hint = ", ".join(f"{n}={_truth_example(spec.signature.get(n, ''))}" for n in assumed)
            short = f"with {shown} (assumed by tritonlens): {short}"
            message = (f"does not compile with {shown}, which tritonlens assumed (no capture, hint or launch site "
                       f"gives {'it' if len(assumed) == 1 else 'them'}) — {message}; if your launch passes something "
                       f"else, say so in a hint: `# tritonlens: {hint}`, or capture a real launch "
                       f"(`tritonlens capture -- CMD`)")
    return Finding(
        path=kernel.path, line=line, column=col, end_line=line, end_column=end_col, code="SRC001",
        severity=severity, message=one_line(short), kernel=kernel.name, config=spec.describe(),
        target=spec.target, data=data, details=[message, compiled_under(spec.describe())],
    )


def own_failure_finding(kernel: KernelInfo, spec: Spec, err: CompileError) -> Finding:
    """A compile that tritonlens itself could not finish (model.OWN_FAILURES: its memory bound or time-out, a crashed
    worker, a missing tool, its own bug): SRC007 on the def line, an info that says so and how to raise the limit —
    never the kernel's error, never a reason for exit 1."""
    first = split_lines(err.message.strip())[0] if err.message.strip() else err.kind
    message = (f"{kernel.display_name} not compiled here: {_OWN_PREFIX.get(err.kind, err.kind)} — {first} "
               f"(tritonlens's own limit or failure, not an error in the kernel)")
    short = f"{kernel.display_name} not compiled here: {_OWN_PREFIX.get(err.kind, err.kind)} — {first}"
    return Finding(path=kernel.path, line=kernel.def_line, column=kernel.col, end_line=kernel.def_line,
                   end_column=kernel.col + 3, code="SRC007", severity="info", message=one_line(short),
                   kernel=kernel.name, config=spec.describe(), target=spec.target,
                   data={"kind": err.kind, "detail": err.message}, details=[message, compiled_under(spec.describe())])


_GPU_WORDS = re.compile(r"cuda|gpu|device|driver|nvml|hip|rocm|npu|xpu", re.I)
# A library that learns its device from an environment variable (or its own runtime) and gives up without one.
_ENV_WORDS = re.compile(r"no (?:\w+ )?device (?:was )?(?:detected|found)|unsupported (?:device|platform|backend)|"
                        r"environment variable|env(?:ironment)? var|is not set|not supported on|unknown device|"
                        r"no backend|could not (?:detect|determine) (?:the )?(?:device|backend|platform)", re.I)


def load_error_finding(kernel: KernelInfo, err: CompileError, module_execution: str = "definitions") -> Finding:
    """The kernel's module raised at import: one SRC006 on the line of this file the failure came through (the
    import), for the whole file — the environment, not a kernel, is what failed. It says what failed and how to check
    it; the pipeline keeps one per file (the same line and message from several kernels is one finding). The advice
    depends on `module_execution`: under `definitions` the failing statement is one the kernels need (the slice kept
    nothing else), so switching modes cannot help."""
    detail = err.message.removeprefix("could not load the kernel's module: ").strip()
    first = split_lines(detail)[0] if detail else err.kind
    line = err.line or kernel.def_line
    if err.kind == "LoadRefused":
        # tritonlens's limit, not the module's error: an info, and the way out for a repository the user trusts
        return Finding(kernel.path, line, 1, line, 1 + 200, "SRC006", "info",
                       one_line(f"not compiled: tritonlens's sandbox refused what importing this file needs — {first}"),
                       kernel=kernel.name, data={"kind": err.kind, "detail": err.message, "merge_key": first},
                       details=[f"this file's kernels were not compiled: tritonlens's sandbox refused what importing "
                                f"it needs here — {first}; that is tritonlens's limit, not an error in the module "
                                f"(docs/security.md says what the sandbox allows); for a repository you trust, "
                                f"TRITONLENS_NO_SANDBOX=1 checks it without the sandbox"])
    if "ModuleNotFoundError" in first or "ImportError" in first:
        how = ("install it in the interpreter tritonlens runs with (the editor's `tritonlens.interpreter`), or "
               "check on the machine the code runs on")
    elif first.startswith("DeviceUseRefused"):
        how = ("nothing is allocated on a device or launched while tritonlens checks: make the tensor when the "
               "kernel is launched (in the function that launches it), not when the module is imported")
    elif _ENV_WORDS.search(first):
        how = ("if the library reads its device from an environment variable, give the compile workers one: the "
               "`tritonlens.env` setting (`{\"NAME\": \"value\"}`) or `tritonlens check --env NAME=value`; device "
               "queries (Triton's driver, torch.cuda, nvidia-smi) are answered as the virtual GPU")
    elif _GPU_WORDS.search(first):
        how = ("the module asks its device at import in a way tritonlens does not answer (Triton's driver, torch.cuda "
               "and nvidia-smi answer as the virtual GPU; see `tritonlens doctor`): check on the GPU machine "
               "(`tritonlens check --target auto` there), give the workers the environment it needs "
               "(`tritonlens.env`, `--env NAME=value`), or make the probe tolerate a machine without one")
    elif module_execution == "definitions":
        how = ("only the imports and the module-level statements the kernels use were run (moduleExecution="
               "definitions), and this is one of them: give it a value that needs no runtime input (a literal or "
               "tl.constexpr), or move what it needs into the kernel's parameters")
    else:
        how = "set moduleExecution to definitions (the default) or make the import-time code tolerate a bare import"
    return Finding(kernel.path, line, 1, line, 1 + 200, "SRC006", "warning",
                   one_line(f"not compiled: importing this file failed here — {first}"), kernel=kernel.name,
                   data={"kind": err.kind, "detail": err.message, "merge_key": first},
                   details=[f"this file's kernels were not compiled: importing it failed here on this machine — "
                            f"{first}; {how}"])


def _truth_example(assumed_type: str) -> str:
    """What to write in a hint instead of an assumed type: the other usual choice."""
    if assumed_type == "*fp32":
        return "*i32"
    if assumed_type.startswith("*"):
        return "*fp16"
    return "i64" if assumed_type == "i32" else "i32"


def _assumed_behind(kernel: KernelInfo, spec: Spec, err: CompileError, source: str | None) -> list[str]:
    """Runtime arguments whose type tritonlens assumed (not a capture, hint or launch) that reach the failing
    statement — through it and the assignments feeding it. An error with no line in the kernel (raised in a helper,
    or by the backend) cannot be traced: then every assumed argument is a suspect."""
    assumed = assumed_values(spec)
    if not assumed:
        return []
    if err.kind not in ("CompilationError", "MLIRError") or not err.line or source is None:
        return assumed
    if err.line == kernel.def_line:
        return []  # the signature itself: no statement of the body, no assumed value behind it
    names = _names_feeding(kernel, source, err.line, err.col, err.end_col, header="Loop-carried" not in err.message)
    return assumed if names is None else [n for n in assumed if n in names]


def _names_feeding(kernel: KernelInfo, source: str, line: int, col: int | None = None, end_col: int | None = None,
                   header: bool = True) -> set[str] | None:
    """The names the statement at `line` of the kernel reads (the expression at `col` when given; a loop's or an
    `if`'s header when `header`), and through assignments anywhere in the kernel what feeds them. None when the line
    is not inside the kernel's body (its def line, a helper): then anything may feed it."""
    try:
        tree = parse_module(source)
    except (SyntaxError, ValueError):
        return set()
    fn = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               and n.lineno == kernel.def_line), None)
    if fn is None or not fn.body or not fn.body[0].lineno <= line <= (fn.end_lineno or fn.lineno):
        return None
    at = [s for s in ast.walk(fn) if isinstance(s, ast.stmt) and s is not fn
          and s.lineno <= line <= (s.end_lineno or s.lineno)]
    if not at:
        return set()
    stmt = at[-1]  # ast.walk goes outside-in: the innermost statement at that line
    focus: ast.AST = stmt
    if isinstance(stmt, (ast.For, ast.While, ast.If)) and header:
        focus = stmt.iter if isinstance(stmt, ast.For) else stmt.test  # the header, not the body
    if col:  # the expression named (`tl.arange(0, 100)` inside a store), not its whole statement
        spans = [e for e in ast.walk(focus) if isinstance(e, ast.expr) and e.lineno == line
                 and e.col_offset + 1 == col]
        exact = [e for e in spans if end_col and e.end_lineno == line and e.end_col_offset + 1 == end_col]
        if exact or spans:
            focus = (exact or spans)[0]  # ast.walk is outside-in: the largest expression starting there
    names = {n.id for n in ast.walk(focus) if isinstance(n, ast.Name)}
    assigns = [s for s in ast.walk(fn) if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign))
               and getattr(s, "value", None) is not None]
    changed = True
    while changed:  # names feeding the statement, through assignments anywhere in the kernel
        changed = False
        for s in assigns:
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            if any(isinstance(t, ast.Name) and t.id in names for tg in targets for t in ast.walk(tg)):
                used = {n.id for n in ast.walk(s.value) if isinstance(n, ast.Name)} - names  # type: ignore[arg-type]
                if used:
                    names |= used
                    changed = True
    return names


def assumed_values(spec: Spec) -> list[str]:
    """Runtime arguments whose type tritonlens assumed (no capture, hint or launch site gave it)."""
    return [n for n, ty in spec.signature.items() if ty != "constexpr"
            and spec.origins.get(n, "").startswith(ASSUMED)]


def note_assumed(kernel: KernelInfo, spec: Spec, findings: list[Finding], source: str | None) -> None:
    """A rule's finding made under values tritonlens assumed — a pointer typed `*fp32` may be fp16 in the real launch,
    which halves a tile; an int taken for `i32` with no known divisibility narrows every access it bounds — holds for
    tritonlens's guess, not yet for the user's code: at most an info that names the values and how to supply them
    (checks/verdict: a ceiling). A finding on a line of the kernel's body rests on the assumed values that feed that
    statement; one on the def line (spills, shared memory, occupancy: the whole kernel) on all of them. SRC001 has
    its own, finer rule (error_finding)."""
    assumed = assumed_values(spec)
    if not assumed:
        return
    for f in findings:
        if f.code.startswith("SRC"):
            continue
        names = _names_feeding(kernel, source, f.line) if source is not None and f.path == kernel.path else None
        behind = assumed if names is None else [n for n in assumed if n in names]
        if not behind:
            continue
        shown = ", ".join(f"{n}={spec.signature[n]}" for n in behind[:4]) + (", …" if len(behind) > 4 else "")
        limit(f, "info", f"compiled with {shown} assumed (no capture, hint or launch site gives "
              f"{'it' if len(behind) == 1 else 'them'}): a hint or a capture makes this certain", "assumed")
        f.data["assumed"] = behind


# what a rule's cost cause says the finding is about: the launch's own shape (its grid, its masked lanes)
_SHAPE_CAUSES = ("grid", "lanes")


def note_test_launch(spec: Spec, metrics: dict, findings: list[Finding]) -> None:
    """A finding made on the launches of the file's own launch code run without a GPU (gpu/autocapture.py) rests on
    their shapes, which a test picks small: when every such launch is bound by the launch itself (the cost model's
    "launch-bound"), nothing in the code costs it anything, and a finding is at most an info that says so; a finding
    about the launch's shape itself (its grid, its masked lanes: the rule's cost cause) from a test is about the test's
    shape, not a production one — at most an info too (checks/verdict: a ceiling). SRC findings and errors are left
    alone: a compile error or a launch that cannot fit holds for every shape."""
    labels = {o[len(AUTO_CAPTURE) + 2:] for o in spec.origins.values() if o.startswith(AUTO_CAPTURE + ": ")}
    if not labels:
        return
    costs = [c for c in metrics.get("launch_costs") or () if isinstance(c, dict)]
    launch_bound = bool(costs) and all(c.get("bound") == "launch-bound" for c in costs)
    test = any(is_test_label(x) for x in labels)
    who = sorted(labels)[0].removeprefix("launched by ").removesuffix(", no GPU")
    longest = max((float(c.get("est_us") or 0) for c in costs), default=0.0)
    for f in findings:
        if f.code.startswith("SRC") or f.severity == "error":
            continue
        if launch_bound:
            limit(f, "info", f"a test-sized launch: ~{fmt_us(longest)} a launch, bound by the launch itself whatever "
                  f"the code ({who}) — capture a real run for the launches that matter", "test-launch")
        elif test and cost_cause(f.code) in _SHAPE_CAUSES:
            limit(f, "info", f"the shape of a test's launch ({who}), not a production one — capture a real run to "
                  f"weigh it", "test-launch")


def skipped_autotune_configs(kr: KernelReport, sources: list | None, others_pending: bool = False) -> None:
    """RES001 in an autotune config, when another config of the kernel fits: the autotuner benchmarks every config
    and one that raises OutOfResources is skipped at run time, so the kernel still launches — a warning on that
    `triton.Config(...)` in the list (`sources`: config_spans.config_sources, None when the configs are built by code),
    not an error on the kernel. When no config fits, the launch itself fails: the error stays."""
    def over(cs: CompiledSpec) -> bool:
        return any(f.code == "RES001" for f in cs.findings)

    autotuned = kr.kernel.is_autotuned
    from_configs = [cs for cs in kr.compiled if cs.artifacts is not None and cs.artifacts.ok
                    and (CONFIG_LABEL.search(cs.spec.label) or (autotuned and cs.spec.label.startswith("capture")))]
    # (`others_pending`: a partial report, the other configs still compiling — most config lists have one that fits)
    if not from_configs or (all(over(cs) for cs in from_configs) and not others_pending):
        return
    by_index = {src.index: src for src in sources or []}
    for cs in from_configs:
        m = CONFIG_LABEL.search(cs.spec.label)
        src = by_index.get(int(m.group(1))) if m else None
        which = m.group(0) if m else f"the config of {cs.spec.label} (an autotuner trial: another captured config fits)"
        for f in cs.findings:
            if f.code != "RES001":
                continue
            limit(f, "warning", "the autotuner skips this config at run time", "skipped", said=True)
            account = f.details[0] if f.details else f.message
            f.details = [f"{which} cannot launch on {f.data.get('target', cs.spec.target)}: {account}; the "
                             f"autotuner skips it at run time (its OutOfResources is caught while benchmarking), so "
                             f"it only costs tuning time — remove or shrink it", *f.details[1:]]
            f.message = one_line(f"{m.group(0) if m else 'an autotuner trial'}: {f.message.split(': the launch')[0]}"
                                 f" — the autotuner skips it")
            f.data["skipped_by_autotuner"] = True
            if src is not None:
                line, col, end_line, end_col = src.call
                f.line, f.column, f.end_line, f.end_column = line, col + 1, end_line, end_col + 1
            f.add_detail(compiled_under(cs.spec.describe()), replacing="compiled under [")


def finish_report(kr: KernelReport, spec_findings: list[Finding], settings: Settings) -> KernelReport:
    """Merge the findings of every compiled spec: one finding per (code, line, column) — one diagnostic per line, not
    one per spec. The variant the verdict finds most severe, from the first (highest-ranked) spec, speaks for the
    group; when it holds in only some specs, it says in which ("in 1 of 2 configs: BLOCK_M=128, ..."), and
    `data["configs"]` lists them all (for hovers). `settings` ranks the variants as the verdict would; the severities
    themselves are set by `verdict.decide`, which the pipeline calls once every evidence is in (after what bench
    measured)."""
    total = len(kr.compiled)
    groups: dict[tuple, list[tuple[CompiledSpec, Finding]]] = {}
    order: list[tuple] = []
    for cs in kr.compiled:
        for f in cs.findings:
            key = (f.code, f.path, f.line, f.column)
            if key not in groups:
                groups[key] = []
                order.append(key)
            groups[key].append((cs, f))
    merged: list[Finding] = []
    labels = config_labels([cs.spec for cs in kr.compiled])
    for key in order:
        items = groups[key]
        first = min((f for _, f in items), key=lambda f: SEVERITY_RANK.get(outcome(f, settings).severity or "", 4))
        specs = {cs.spec.key() for cs, _ in items}
        shown: list[str] = []
        for cs, _ in items:
            label = labels.get(cs.spec.key()) or _short(cs.spec)
            if label not in shown:
                shown.append(label)
        variants = len({f.data.get("merge_key", f.details[0] if f.details else f.message) for _, f in items})
        differ = "; the numbers differ between them" if variants > 1 else ""
        what = "captured specs" if all(cs.spec.label.startswith("capture") for cs in kr.compiled) else "configs"
        roles = {cs.spec.autotune for cs, _ in items}
        if any(cs.spec.autotune == "chosen" for cs in kr.compiled):
            differ += "; in the autotuner's chosen config" if "chosen" in roles else "; not in the autotuner's chosen config"
        if roles == {"trial"}:
            # Only configs the autotuner tried and did not keep: the kernel never runs them — said, not alarmed.
            differ += " — only in autotuner trials, which the kernel does not run"
            limit(first, "info", "only in autotuner trials", "trials", said=True)
        if total > 1 and len(specs) < total:
            text = "; ".join(shown[:3]) + (f"; … {len(shown) - 3} more" if len(shown) > 3 else "")
            first.add_detail(f"in {len(specs)} of {total} {what}: {text}{differ}")
        elif total > 1:
            first.add_detail(f"in all {total} {what}{differ}")
        elif differ:
            first.add_detail(differ.lstrip("; —"))
        first.data["specs"] = sorted(specs)
        first.data["configs"] = shown
        merged.append(first)
    merged.extend(spec_findings)
    kr.findings = sorted(merged, key=Finding.sort_key)
    return kr


def _short(spec: Spec) -> str:
    return spec.label or spec.describe()


def _spec_values(spec: Spec) -> dict[str, str]:
    """What tells one spec from another, in the order a reader looks for it: target, constexprs, options, then the
    types and divisibility assumed for runtime arguments."""
    values: dict[str, str] = {"target": spec.target}
    for name, value in spec.constants.items():
        if spec.signature.get(name) == "constexpr":
            values[name] = show(value)
    for opt in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
        if opt in spec.options:
            values[opt] = repr(spec.options[opt])
    for name, ty in spec.signature.items():
        if ty == "constexpr":
            continue
        if name in spec.constants:
            values[name] = show(spec.constants[name])
            continue
        div = spec.attrs.get(name, {}).get("divisibility")
        values[name] = f"{ty}%{div}" if div and not ty.startswith("*") else ty if div == 16 or not ty.startswith("*") \
            else f"{ty}%1"
    return values


def config_labels(specs: list[Spec]) -> dict[str, str]:
    """spec key -> `BLOCK_M=128, BLOCK_N=128, num_warps=8`: only the values that differ between the specs (all of
    them describe() when a single spec or when they differ in nothing visible)."""
    values = [_spec_values(s) for s in specs]
    keys: list[str] = []
    for v in values:
        for k in v:
            if k not in keys:
                keys.append(k)
    differing = [k for k in keys if len({v.get(k) for v in values}) > 1]
    out: dict[str, str] = {}
    for spec, v in zip(specs, values):
        if len(specs) < 2 or not differing:
            out[spec.key()] = spec.label or spec.describe()
        else:
            out[spec.key()] = ", ".join(f"{k}={v[k]}" if k != "target" else v[k] for k in differing if k in v)
    return out
