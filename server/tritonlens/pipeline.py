"""The pipeline, one direction: source text -> discover -> specs -> compile -> ir -> checks -> report.

`Checker.check_file` is what the CLI and the language server both call. It never raises for bad user input: a file
that cannot be read or parsed, a kernel that does not compile, a worker that crashes — each becomes a finding.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import queue
import threading
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, wait
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator

from .frontend import captures as captures_mod
from .frontend.specs import attach_tunings
from .report.tuning import note_withheld, summary_of, tuned_finding, tuning_finding, weigh_proposals
from .report import cost
from .checks import analysis_digest, analysis_inputs, place_ir_paths
from .compiler.cache import ArtifactCache
from .compiler.pool import URGENT, CompileJob, CompileService
from .frontend.loader import Slice, slice_module
from .model import LOAD_FAILURES, Artifacts, CompiledSpec, Finding, KernelInfo, KernelReport, Spec, SpecVariant
from .checks.verdict import decide
from .report.kernel import (error_finding, finish_report, load_error_finding, note_assumed, note_test_launch,
                            skipped_autotune_configs)
from .settings import Settings
from .reads import open_file
from .source import MAX_SOURCE_BYTES, SourceTooDeep, parse_module, read_source, source_too_large
from .device.run import RunDevice, run_devices
from .gpu.autocapture import AutoCapture, AutoCapturer
from .sidecar import FOLDER, find_workspace_root  # noqa: F401 — read from here by the presenters

log = logging.getLogger(__name__)

_SKIP_DIRS = {".git", ".hg", ".venv", "venv", "env", "node_modules", "__pycache__", "site-packages", "build", "dist",
              ".tox", ".mypy_cache", ".pytest_cache", FOLDER}
_MAX_SCAN_FILES = 2000


@dataclass
class FileReport:
    path: str
    kernels: list[KernelReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # file-level: syntax errors, hint errors, stale captures
    problems: list[str] = field(default_factory=list)  # one-line messages that belong to no line (unreadable file)
    # the automatic capture of the file's launch code (gpu/autocapture.py): None when none was wanted or, asked for
    # from the cache only, none is there yet (`wants_auto_capture` is then the key of the run the editor should make)
    auto: AutoCapture | None = None
    wants_auto_capture: str = ""

    def all_findings(self) -> list[Finding]:
        out = list(self.findings)
        for k in self.kernels:
            out.extend(k.findings)
        return sorted(out, key=Finding.sort_key)


@dataclass
class _PlannedKernel:
    kernel: KernelInfo
    jobs: list[tuple[Spec, Future | Artifacts]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # from specs: SRC002, SRC003, bad hints
    withheld: dict[str, str] = field(default_factory=dict)  # names the slice did not bind (loader.Slice.withheld)
    assumed: dict[str, str] = field(default_factory=dict)  # names bound by a switch not run (loader.Slice.assumed)
    captures: dict[str, Any] = field(default_factory=dict)  # see KernelReport.captures
    tunings: list[dict[str, Any]] = field(default_factory=list)  # the kernel's tuning lines (captures.load_tunings)


@dataclass
class _Plan:
    report: FileReport
    text: str | None = None
    kernels: list[_PlannedKernel] = field(default_factory=list)
    load_errors: set[tuple] = field(default_factory=set)  # (line, message) of SRC006 already reported in this file
    root: str = ""  # the workspace root the file was checked in


def is_device_helper(kernel: KernelInfo, kernels: list[KernelInfo], text: str) -> bool:
    """A @jit function that the file never launches (`name[grid](...)`) and that other kernels of the file call, or
    that returns a value (a kernel cannot), is a device helper: it is compiled inlined into its callers, not on its
    own."""
    if f"{kernel.name}[" in text:
        return False
    return kernel.returns_value or any(kernel.func_name in k.helpers or kernel.name in k.helpers
                                       for k in kernels if k is not kernel)


def _workspace_deps_digest(kernel: KernelInfo, path: str, root: str) -> str:
    """Contents of the workspace modules a kernel imports helpers from: a change there must invalidate the cache."""
    h = hashlib.sha256()
    for name in kernel.helpers:
        rel = name.lstrip(".").replace(".", os.sep)
        for base in (root, os.path.dirname(path)):
            for candidate in (os.path.join(base, rel + ".py"), os.path.join(base, rel, "__init__.py")):
                try:  # a workspace file (reads): never a link out of it, a FIFO or more than a source's bound
                    with open_file(candidate, root, MAX_SOURCE_BYTES) as f:
                        h.update(candidate.encode() + b"\0")
                        for chunk in iter(lambda: f.read(1 << 20), b""):  # a huge helper costs time, not memory
                            h.update(chunk)
                except OSError:
                    continue
    return h.hexdigest()


def file_bound_finding(path: str, kind: str, why: str) -> Finding:
    """The one finding of a file past a bound of tritonlens's (source.py): SRC007, an info on its first line — it
    says nothing about the file's kernels and never sets the exit code; the rest of the run reports as usual."""
    return Finding(path, 1, 1, 1, 2, "SRC007", "info", f"{os.path.basename(path)} not checked here: {why} "
                   "(tritonlens's own limit, not an error in the file)", data={"kind": kind})


class WorkspaceFiles:
    """Python files of the workspace, read once and re-read when their mtime changes (for launch sites)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._cache: dict[str, tuple[float, str]] = {}

    def texts_mentioning(self, name: str, overrides: dict[str, str]) -> dict[str, str]:
        out: dict[str, str] = {}
        count = 0
        for folder, dirs, files in os.walk(self.root):
            dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.startswith(".")]
            for fname in files:
                if not fname.endswith(".py"):
                    continue
                count += 1
                if count > _MAX_SCAN_FILES:
                    return out
                p = os.path.join(folder, fname)
                text = overrides.get(os.path.abspath(p)) or self._read(p)
                if text and name in text:
                    out[p] = text
        for p, text in overrides.items():
            if name in text:
                out.setdefault(p, text)
        return out

    def _read(self, p: str) -> str | None:
        try:
            mtime = os.stat(p).st_mtime
        except OSError:
            return None
        hit = self._cache.get(p)
        if hit and hit[0] == mtime:
            return hit[1]
        text, _ = read_source(p)
        if text is not None:
            self._cache[p] = (mtime, text)
        return text


class Checker:
    """Owns the worker pool and the artefact cache; checks files."""

    def __init__(self, settings: Settings | None = None, *, service: CompileService | None = None,
                 cache: ArtifactCache | None = None, select: set[str] | None = None,
                 capture_file: str | None = None, sass_ahead: bool = False) -> None:
        self.settings = settings or Settings()
        # the language server shows SASS on every hover: have it disassembled in the worker with each compile (its
        # results arrive with it), and in the background for a cache entry stored without it (model.StageTexts) —
        # never when the first hover reads it
        self.sass_ahead = sass_ahead
        self._sass_queue: queue.SimpleQueue | None = None
        self._devices: list[RunDevice] | None = None
        self.service = service or CompileService(self.settings.max_workers, self.settings.compile_memory_mb)
        self._own_service = service is None
        self.cache = cache or ArtifactCache()
        self.select = select
        self.capture_file = capture_file
        self._workspaces: dict[str, WorkspaceFiles] = {}
        self._lock = threading.Lock()
        self._autocapturer: AutoCapturer | None = None

    def close(self) -> None:
        if self._sass_queue is not None:
            self._sass_queue.put(None)  # the SASS thread ends
        if self._own_service:
            self.service.shutdown()

    def update_settings(self, new: Settings) -> None:
        """Take new settings; a new worker count gets a new pool (the old one finishes its jobs in the background)."""
        old, self.settings = self.settings, new
        self._devices = None
        self._autocapturer = None
        if self._own_service and (old.max_workers, old.compile_memory_mb) != (new.max_workers, new.compile_memory_mb):
            stale, self.service = self.service, CompileService(new.max_workers, new.compile_memory_mb)
            threading.Thread(target=stale.shutdown, daemon=True, name="tritonlens-pool-shutdown").start()

    def __enter__(self) -> "Checker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def devices(self) -> list[RunDevice]:
        """The run's devices, worked out once from the settings (device/run.py): the main target first."""
        if self._devices is None:
            s = self.settings
            self._devices = run_devices(s.target, s.gpu, s.extra_targets, s.env)
        return self._devices

    def device(self, target: str) -> RunDevice:
        """The run's device for a spec's target (one of `targets()`; another, such as a capture's, is worked out
        the same way)."""
        found = next((d for d in self.devices if d.target == target), None)
        return found or run_devices(target, self.settings.gpu, env=self.settings.env)[0]

    def targets(self) -> list[str]:
        return [d.target for d in self.devices]

    @property
    def autocapturer(self) -> AutoCapturer:
        """Runs kernel files' own launch code without a GPU (gpu/autocapture.py), for the run's main device."""
        if self._autocapturer is None:
            main, s = self.devices[0], self.settings
            self._autocapturer = AutoCapturer(self.cache.root, main.target, main.gpu.key, s.auto_capture_timeout,
                                              s.compile_memory_mb or 0)
        return self._autocapturer

    def auto_capture(self, path: str, workspace_root: str | None = None) -> AutoCapture:
        """Run the file's launch code now (or read its cached run): what the editor does in the background."""
        path = os.path.abspath(path)
        return self.autocapturer.run(path, workspace_root or find_workspace_root(path))

    # ------------------------------------------------------------------ the pipeline
    def discover(self, path: str, text: str, root: str):
        """The kernels of a file as this checker sees them: configs and heuristics evaluated for its target, GPU and
        environment. The editor asks the same, so a kernel's key (its hash covers what its configs read) agrees."""
        from .frontend.discover import discover

        main = self.devices[0]
        return discover(path, text, root, target=main.target, gpu=main.gpu.key, env=self.settings.env)

    def check_file(self, path: str, text: str | None = None, *, workspace_root: str | None = None,
                   on_kernel: Callable[[KernelReport], None] | None = None, group: str | None = None,
                   kernels: set[str] | None = None,
                   on_partial: Callable[[KernelReport], None] | None = None,
                   variant: SpecVariant | None = None, auto: str | None = None) -> FileReport:
        """Check every kernel of `path` (using `text` when given: the editor's unsaved buffer).

        `on_kernel` is called as each kernel finishes (from this thread, in the order they finish). `group` tags the
        compile jobs so that `self.service.cancel(group)` stops them. `kernels` limits the check to those names.
        `variant` compiles only that one spec of its kernel, with its one change (a quick fix's proof). `auto`: see
        `plan_file`.
        """
        plan = self.plan_file(path, text, workspace_root=workspace_root, group=group, kernels=kernels,
                              variant=variant, auto=auto)
        return self.finish(plan, on_kernel, on_partial)

    def check_files(self, paths: list[str],
                    on_kernel: Callable[[KernelReport, int, int], None] | None = None) -> Iterator[FileReport]:
        """Check many files with every compile submitted up front, so all workers stay busy. `on_kernel(report,
        done, total)` is called as each kernel finishes (progress)."""
        from .frontend.specs import MAX_SITE_SPECS_PER_RUN

        self._auto_capture_ahead(paths)
        budget = [MAX_SITE_SPECS_PER_RUN]  # launch-site compiles, for the whole run
        plans = [self.plan_file(p, budget=budget) for p in paths]
        total = sum(len(p.kernels) for p in plans)
        done = 0

        def progress(kr: KernelReport) -> None:
            nonlocal done
            done += 1
            if on_kernel is not None:
                on_kernel(kr, done, total)

        for plan in plans:
            yield self.finish(plan, progress)

    def _auto_capture_ahead(self, paths: list[str]) -> None:
        """The automatic captures of many files, run side by side (each is a process of its own, mostly waiting on
        imports) before they are planned, which then reads them from the cache. Files with captured launches are left
        to the plan, which knows whether all their kernels have some."""
        if not self.settings.auto_capture or len(paths) < 2:
            return
        from concurrent.futures import ThreadPoolExecutor

        todo = []
        for p in paths:
            text, _ = read_source(p)
            if not text or "jit" not in text or "# tritonlens:" in text:  # no kernel, or hints: the plan decides
                continue
            root = find_workspace_root(p)
            if not captures_mod.load_captures(root, os.path.abspath(p), self.capture_file)[0]:
                todo.append((os.path.abspath(p), root))
        with ThreadPoolExecutor(max(1, min(self.settings.max_workers, len(todo) or 1))) as pool:
            for _ in pool.map(lambda item: self._try_auto_capture(*item), todo):
                pass

    def _try_auto_capture(self, path: str, root: str) -> None:
        try:
            self.autocapturer.run(path, root)
        except Exception:  # noqa: BLE001 — the plan tries again and says what failed
            log.exception("automatic capture of %s failed", path)

    def plan_file(self, path: str, text: str | None = None, *, workspace_root: str | None = None,
                  group: str | None = None, kernels: set[str] | None = None,
                  variant: SpecVariant | None = None, auto: str | None = None,
                  budget: list[int] | None = None) -> "_Plan":
        """Discover, build specs and submit every compile of a file; `finish` collects them. `auto`: the automatic
        capture of the file's launch code for kernels with no capture or hint — "run" (now, bounded: check), "cached"
        (only a run made before: the editor, which runs it in the background), "off"; default "run" unless the
        settings turn it off. `budget`: launch-site compiles left to the run (default: a run of this one file)."""
        from .frontend.specs import MAX_SITE_SPECS_PER_RUN

        budget = [MAX_SITE_SPECS_PER_RUN] if budget is None else budget
        path = os.path.abspath(path)
        plan = _Plan(FileReport(path))
        # bounded per file (source.py): past them the file gets one SRC007 and the run goes on
        if too_large := source_too_large(path, text):
            plan.report.findings.append(file_bound_finding(path, "FileTooLarge", too_large))
            return plan
        if text is None:
            text, problem = read_source(path)
            if problem:
                plan.report.problems.append(problem)
                return plan
        plan.text = text
        root = plan.root = workspace_root or find_workspace_root(path)
        targets = self.targets()
        try:
            parse_module(text)
            found = self.discover(path, text, root)
        except SourceTooDeep as exc:
            plan.report.findings.append(file_bound_finding(path, "FileTooDeep", str(exc.msg)))
            return plan
        except RecursionError:
            plan.report.findings.append(file_bound_finding(path, "FileTooDeep", "its syntax tree nests too deep for "
                                                           "tritonlens to walk: not checked"))
            return plan
        except (SyntaxError, ValueError):
            found = self.discover(path, text, root)  # which reports it
        plan.report.findings.extend(found.errors)
        todo = [k for k in found.kernels
                if (kernels is None or k.name in kernels) and not is_device_helper(k, found.kernels, text)]
        if not todo:
            return plan
        caps, cap_problems = captures_mod.load_captures(root, path, self.capture_file)
        tunings = captures_mod.load_tunings(root, path, self.capture_file)
        plan.report.problems.extend(cap_problems)
        launches_by_kernel = self._launches(todo, root, {path: text})
        auto_caps = self._auto_captures(plan, todo, caps, auto)
        for kernel in todo:
            kernel_caps = [c for c in caps if c.get("kernel") in (kernel.name, kernel.func_name)]
            kernel_auto = [c for c in auto_caps if c.get("kernel") in (kernel.name, kernel.func_name)]
            item = _PlannedKernel(kernel, tunings=[t for t in tunings
                                                   if t.get("kernel") in (kernel.name, kernel.func_name)])
            try:
                module = self._module_slice(text, kernel)
            except SyntaxError:  # discover already reported it
                continue
            item.withheld = module.withheld
            item.assumed = module.assumed
            for target in targets:
                inputs = analysis_inputs(kernel, self.settings, text, self.select, self.device(target))
                specs, spec_findings = self._specs(kernel, target, launches_by_kernel.get(kernel.name), kernel_caps,
                                                   kernel_auto)
                attach_tunings(specs, [t for t in item.tunings if t.get("target") in (None, target)])
                if variant is not None and variant.kernel == kernel.name:
                    specs = [variant.apply(s) for s in specs if s.key() == variant.spec_key]
                else:
                    specs = self._bounded_captures(item, specs, target == targets[0])
                    specs = self._bounded_sites(item, specs, budget, target == targets[0])
                for f in spec_findings:
                    if not any(f.sort_key() == g.sort_key() for g in item.findings):
                        item.findings.append(f)
                for spec in specs:
                    if not spec.missing:
                        item.jobs.append((spec, self._compile(path, module.text, kernel, spec, root, group, text,
                                                              inputs)))
            plan.kernels.append(item)
        return plan

    def finish(self, plan: "_Plan", on_kernel: Callable[[KernelReport], None] | None = None,
               on_partial: Callable[[KernelReport], None] | None = None) -> FileReport:
        """Wait for a plan's compiles; report each kernel as soon as all its specs are compiled and analysed. With
        `on_partial`, a kernel of several specs is also reported once as soon as its first spec is compiled
        (`KernelReport.pending` says how many are still compiling): a save of a kernel with a dozen captured specs
        shows its first findings after one compile, not after all of them."""
        left = list(plan.kernels)
        done: list[KernelReport] = []
        partial_sent: set[int] = set()
        while left:
            ready = [k for k in left if all(not isinstance(j, Future) or j.done() for _, j in k.jobs)]
            if not ready:
                if on_partial is not None:
                    for item in left:
                        finished = [(s, j) for s, j in item.jobs if not isinstance(j, Future) or j.done()]
                        if id(item) not in partial_sent and finished and len(item.jobs) > 1:
                            partial_sent.add(id(item))
                            on_partial(self._partial_report(item, finished, plan))
                futures = [j for k in left for _, j in k.jobs if isinstance(j, Future) and not j.done()]
                wait(futures, return_when=FIRST_COMPLETED)
                continue
            for item in ready:
                left.remove(item)
                kr = self._kernel_report(item, plan)
                done.append(kr)
                if on_kernel is not None:
                    on_kernel(kr)
        plan.report.kernels = sorted(done, key=lambda kr: kr.kernel.def_line)
        return plan.report

    def _partial_report(self, item: "_PlannedKernel", finished: list, plan: "_Plan") -> KernelReport:
        return self._kernel_report(replace(item, jobs=finished), _Plan(plan.report, plan.text),  # own SRC006 set
                                   pending=len(item.jobs) - len(finished))

    def _kernel_report(self, item: "_PlannedKernel", plan: "_Plan", pending: int = 0) -> KernelReport:
        kr = KernelReport(item.kernel, captures=dict(item.captures), pending=pending)
        own = list(item.findings)
        for spec, job in item.jobs:
            try:
                art = job.result() if isinstance(job, Future) else job
            except CancelledError:
                art = None
            if art is not None and art.error is not None and art.error.kind in LOAD_FAILURES:
                # The module did not import: one finding for the file, on the import line, not one per kernel/spec.
                f = load_error_finding(item.kernel, art.error, self.settings.module_execution)
                if (f.line, f.message) not in plan.load_errors:
                    plan.load_errors.add((f.line, f.message))
                    own.append(f)
                kr.compiled.append(CompiledSpec(spec, art))
                continue
            kr.compiled.append(self._collect(item, spec, art, plan.text))
        k = item.kernel
        if k.is_autotuned and plan.text is not None:
            from .frontend.config_spans import config_sources

            skipped_autotune_configs(kr, config_sources(k.path, plan.text, k.def_line), others_pending=pending > 0)
        finish_report(kr, own, self.settings)
        kr.tuning = summary_of(item.tunings)
        measured = tuning_finding(kr, kr.tuning, self.settings)
        if measured is not None:
            kr.findings = sorted(kr.findings + decide([measured], self.settings), key=Finding.sort_key)
        weigh_proposals(kr, plan.root)  # what a GPU measured of the configs proposed (bench/autotune)
        note_withheld(kr, plan.root)  # what `tune` measured no faster for a finding's cause
        tuned = tuned_finding(kr, plan.root, plan.text)  # what `tune` measured faster that no finding carries
        if tuned is not None:
            kr.findings = sorted(kr.findings + [tuned], key=Finding.sort_key)
        if plan.root:  # what `tritonlens bench` measured for the captured specs weighs the findings
            measured = cost.load_bench(plan.root)
            rel = os.path.relpath(plan.report.path, plan.root).replace(os.sep, "/")
            cost.weigh(kr, measured, cost.file_time_us(measured, rel))
        kr.findings = decide(kr.findings, self.settings)  # every evidence is in: the one verdict
        return kr

    # ------------------------------------------------------------------ steps
    def _module_slice(self, text: str, kernel: KernelInfo) -> Slice:
        if self.settings.module_execution == "full":
            return Slice(text)
        root_name = (kernel.qualname or kernel.name).split(".")[0]
        # The kernel's own definition must be the one that exists at import, even under an `if`/`try` whose branch
        # would not be taken (and when another branch defines the same name): the slice forces its branch.
        return slice_module(text, [root_name], definitions=[kernel.def_line])

    def _launches(self, kernels: list[KernelInfo], root: str, overrides: dict[str, str]):
        try:
            from .frontend.launches import find_launches
        except ImportError:
            return {}
        with self._lock:
            ws = self._workspaces.setdefault(root, WorkspaceFiles(root))
        out = {}
        for k in kernels:
            try:
                out[k.name] = find_launches(k.name, ws.texts_mentioning(k.name, overrides))
            except Exception:  # noqa: BLE001 — launch sites are a hint source, never a reason to fail
                log.exception("launch-site scan failed for %s", k.name)
        return out

    def _bounded_captures(self, item: "_PlannedKernel", specs: list[Spec], main: bool) -> list[Spec]:
        """Captured specs: a representative set (specs.representative) unless all_captures; the counts go on the
        kernel's report ("12 of 134 captured specs compiled")."""
        from .frontend.specs import left_out, representative

        captured = [s for s in specs if s.label.startswith("capture")]
        if not captured:
            return specs
        limit = self.settings.max_captured_specs
        chosen = captured if self.settings.all_captures else representative(captured, limit)
        if main:
            item.captures = {"compiled": len(chosen), "captured": len(captured),
                             "trials": sum(1 for s in captured if s.autotune == "trial"),
                             "trials_compiled": sum(1 for s in chosen if s.autotune == "trial"),
                             "limit": limit, "left_out": left_out(captured, chosen)}
        return chosen + [s for s in specs if not s.label.startswith("capture")]

    def _bounded_sites(self, item: "_PlannedKernel", specs: list[Spec], budget: list[int], main: bool) -> list[Spec]:
        """Specs from launch sites, at most MAX_SITE_SPECS_PER_KERNEL per kernel and target and what is left of the
        run's MAX_SITE_SPECS_PER_RUN (`budget`): a file of 1,000 launch sites makes a representative dozen compiles,
        not 1,000. What is left out is one SRC007 on the def line that says how many and which values."""
        from .frontend.specs import MAX_SITE_SPECS_PER_KERNEL, left_out, representative

        sites = [s for s in specs if s.label.startswith("launch at") and not s.missing]
        room = max(0, min(MAX_SITE_SPECS_PER_KERNEL, budget[0]))
        if len(sites) <= room:
            budget[0] -= len(sites)
            return specs
        chosen = representative(sites, room) if room else []
        budget[0] -= len(chosen)
        if main:
            k = item.kernel
            why = (f"tritonlens's bound of {MAX_SITE_SPECS_PER_KERNEL} per kernel" if room == MAX_SITE_SPECS_PER_KERNEL
                   else "the bound on launch-site compiles per run was reached")
            missing = left_out(sites, chosen)
            shown = ", ".join(missing[:8]) + (f", … {len(missing) - 8} more" if len(missing) > 8 else "")
            item.findings.append(Finding(
                path=k.path, line=k.def_line, column=k.col, end_line=k.def_line, end_column=k.col + 3, code="SRC007",
                severity="info", kernel=k.name, data={"kind": "SpecLimit", "sites": len(sites), "compiled": len(chosen)},
                message=f"{k.display_name}: {len(chosen)} of {len(sites)} launch-site specs compiled ({why}); "
                        f"{len(sites) - len(chosen)} skipped" + (f", with values no compiled spec has: {shown}"
                                                                  if shown else "")
                        + " (tritonlens's own limit, not an error in the kernel; a hint or a capture names the "
                          "ones that matter)"))
        keep = {id(s) for s in chosen}
        return [s for s in specs if id(s) in keep or not (s.label.startswith("launch at") and not s.missing)]

    def _specs(self, kernel: KernelInfo, target: str, launches, caps, auto_caps=None) -> tuple[list[Spec],
                                                                                               list[Finding]]:
        from .frontend.specs import build_specs

        return build_specs(kernel, target, launches=launches, captures=caps,
                           gpu=self.device(target).gpu.key, env=self.settings.env, auto_captures=auto_caps)

    def _auto_captures(self, plan: "_Plan", todo: list[KernelInfo], caps: list[dict], auto: str | None) -> list[dict]:
        """What the file's own launch code launched (gpu/autocapture.py), when a kernel has no capture and no hint
        and the settings allow it; a run that failed, hung or ran out of memory before it launched a kernel it was run
        for is one info on the file (SRC008)."""
        mode = auto or "run"
        if not self.settings.auto_capture or mode == "off" or not self.targets():
            return []
        captured = {c.get("kernel") for c in caps}
        if all(k.hints or k.name in captured or k.func_name in captured for k in todo):
            return []
        try:
            if mode == "cached":
                result, key = self.autocapturer.cached(plan.report.path, plan.root)
                if result is None:
                    plan.report.wants_auto_capture = key or ""
                    return []
            else:
                result = self.autocapturer.run(plan.report.path, plan.root)
        except Exception:  # noqa: BLE001 — a source of specs, never a reason to fail the check
            log.exception("automatic capture of %s failed", plan.report.path)
            return []
        plan.report.auto = result
        if result.failed and result.outcome != "none":  # said when a kernel it was run for got nothing from it
            launched = {c.get("kernel") for c in result.captures}
            if any(not k.hints and not {k.name, k.func_name} & (captured | launched) for k in todo):
                plan.report.findings.append(result.finding(plan.report.path))
        return result.captures

    def _compile(self, path: str, module_text: str, kernel: KernelInfo, spec: Spec, root: str,
                 group: str | None, source: str | None, inputs: str) -> Future | Artifacts:
        """The compile of one spec with its analysis: from the artefact cache when both are there, else made by the
        workers (compile and analysis, or only the analysis of a cached compile read with other inputs). `inputs`:
        the kernel's `checks.analysis_inputs` on this spec's device."""
        qualname = kernel.qualname or kernel.name
        # what the imports see (the virtual GPU, tritonlens.env) can change module constants, hence the kernel
        run = self.device(spec.target)
        device = run.job()
        key = self.cache.key(path + "\0" + module_text + _workspace_deps_digest(kernel, path, root)
                             + "\0" + json.dumps(device, sort_keys=True), qualname, spec.key())
        request = {"kernel": kernel, "spec": spec, "settings": self.settings, "source": source,
                   "select": self.select, "device": run}
        digest = analysis_digest(spec, inputs)
        hit = self.cache.get(key)
        if hit is not None:
            self._sass_soon(hit, key)
            if hit.error is not None:
                return hit
            stored = self.cache.get_analysis(key, digest)
            if stored is not None:
                hit.analysis = stored
                place_ir_paths(stored[1], hit.paths)
                return hit
            # analysed in a worker too (one place for the analysis), ahead of the compiles: it takes milliseconds
            return self._submit(CompileJob(path=path, text="", qualname=qualname, spec=spec.to_json(),
                                           workspace_root=root, timeout=self.settings.compile_timeout, group=group,
                                           priority=URGENT, run=run, analysis=request, artifacts=hit),
                                key, digest, hit)
        # The worker analyses its compile too: on every core at once, not one after another here.
        return self._submit(CompileJob(path=path, text=module_text, qualname=qualname, spec=spec.to_json(),
                                       workspace_root=root, timeout=self.settings.compile_timeout, group=group,
                                       run=run, sass=self.sass_ahead, analysis=request), key, digest)

    def _submit(self, job: CompileJob, key: str, digest: str, hit: Artifacts | None = None) -> Future:
        fut = self.service.submit(job)
        out: Future = Future()

        def store(done: Future) -> None:
            if done.cancelled():
                out.cancel()
                return
            art = done.result()
            if hit is not None:  # the analysis of a cached compile
                if art.error is not None and art.error.kind == "Cancelled":
                    out.set_result(art)
                    return
                art, hit.analysis = hit, art.analysis or ({"analysis_error": art.error.message if art.error else
                                                           "the worker sent no analysis"}, [])
            else:
                try:
                    art = self.cache.put(key, art)
                except OSError as exc:
                    log.warning("artefact cache not writable: %s", exc)
            if art.analysis is not None:
                if "analysis_error" in art.analysis[0]:
                    log.warning("analysis of %s failed: %s", job.qualname, art.analysis[0]["analysis_error"])
                else:
                    self.cache.put_analysis(key, digest, art.analysis)  # IR paths still marked, as stored
                place_ir_paths(art.analysis[1], art.paths)
            out.set_result(art)
            if hit is None:
                self._sass_soon(art, key)

        fut.add_done_callback(store)
        return out

    def _sass_soon(self, art: Artifacts, key: str) -> None:
        """With `sass_ahead`: the SASS of a compile whose cubin was kept instead, disassembled now in a background
        thread (one at a time; a hover that asks meanwhile waits for that run, not for a second) and added to the
        compile's cache entry, so that a later cache hit has it at once."""
        if not self.sass_ahead or art.error is not None or not getattr(art.asm, "sass_pending", False):
            return
        with self._lock:
            if self._sass_queue is None:
                self._sass_queue = queue.SimpleQueue()
                threading.Thread(target=self._make_sass, args=(self._sass_queue, self.cache), name="tritonlens-sass",
                                 daemon=True).start()
        self._sass_queue.put((art, key))

    @staticmethod
    def _make_sass(todo: "queue.SimpleQueue", cache: ArtifactCache) -> None:
        while (item := todo.get()) is not None:
            art, key = item
            try:
                text = art.asm.get("sass")
                path = cache.add_text(key, "sass", text) if text else None
                if path:
                    art.paths.setdefault("sass", path)
            except Exception:  # noqa: BLE001 — a hover will say what is missing
                log.debug("SASS ahead of the hover failed", exc_info=True)

    def _collect(self, item: "_PlannedKernel", spec: Spec, art: Artifacts | None, text: str | None) -> CompiledSpec:
        """A compiled spec as the report takes it: its analysis (made in a worker), or its compile error."""
        kernel = item.kernel
        cs = CompiledSpec(spec, art)
        if art is None:
            return cs
        if art.error is not None:
            cs.findings.append(error_finding(kernel, spec, art, item.withheld, source=text,
                                           assumed_bindings=item.assumed))
            return cs
        if art.analysis is not None:  # made by a worker, or stored with the compile, for this very spec and inputs
            metrics, findings = art.analysis
            cs.metrics, cs.findings = dict(metrics), [replace(f, data=dict(f.data)) for f in findings]
        note_assumed(kernel, spec, cs.findings, text)
        note_test_launch(spec, cs.metrics, cs.findings)
        return cs
