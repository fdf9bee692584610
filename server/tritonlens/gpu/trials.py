"""Candidate changes timed where the kernel runs: inside the user's own program, at its real launch (`tritonlens
tune`'s second run of the command; installed by the capture bootstrap when TRITONLENS_TRIALS names a plan).

At the first launches of a planned kernel with the planned config (the one the autotuner chose, or the launch's own
values), outside any autotuner benchmark, the launch's tensors are copied, and for the unchanged launch and each
candidate in turn: the tensors are restored, the kernel is launched with the candidate's constexprs and options, its
grid function evaluated for them, the `@triton.heuristics` above it recomputed; what every tensor holds afterwards
is compared with the unchanged launch's, and the launch is timed (`triton.testing.do_bench`, L2 flushed before each
run, the same for all). The unchanged launch is timed before, between and after the candidates: its spread is the
noise a candidate must beat. Then the tensors get back what the real launch left in them and the program goes on.

Each trial writes a line before it launches (`try`) and one after (`result`): a trial that faults (an illegal
address poisons the CUDA context and ends the process) leaves a `try` without a result, and `tune` runs the command
again without that candidate. Once every planned kernel is done the process ends (`done`): the rest of the program
is not what is being measured.

Out of reach, said and not guessed: a launch inside a CUDA graph capture, a kernel taking a random seed (its outputs
cannot be compared), a grid given as numbers when a candidate changes a constexpr (only the caller's code knows the
grid of another tile)."""
from __future__ import annotations

import json
import math
import os
import threading
import time
from typing import Any

ENV_TRIALS = "TRITONLENS_TRIALS"
SEED_NAMES = ("seed", "philox", "rng")
BASELINE_REPEATS = 3  # the unchanged launch is timed this often, spread over the candidates
COPY_SHARE = 0.4  # the launch's tensors are copied only when two copies fit in this share of the free GPU memory
# Output tolerance by dtype, relative to the largest magnitude in the unchanged launch's tensor: a tile of another
# shape sums in another order (fp32 accumulators: a few ulps of the output type).
TOLERANCE = {"float32": 1e-4, "float64": 1e-9, "bfloat16": 1.6e-2, "float16": 2e-3, "float8_e4m3fn": 0.125,
             "float8_e5m2": 0.25}


def _names(jit) -> list[str]:
    return list(getattr(jit, "arg_names", ()) or ())


class _Plan:
    def __init__(self, path: str) -> None:
        with open(path, encoding="utf-8") as f:
            plan = json.load(f)
        self.out = plan["out"]
        self.root = plan.get("root") or os.getcwd()
        self.targets = plan.get("targets") or []
        self.skip = set(plan.get("skip") or [])
        self.deadline = time.monotonic() + float(plan.get("budget_s") or 600)
        self.exit_when_done = bool(plan.get("exit_when_done", True))
        for t in self.targets:
            t.setdefault("done_keys", [])
        self.lock = threading.Lock()

    def write(self, rec: dict[str, Any]) -> None:
        with open(self.out, "a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def finished(self) -> bool:
        return all(len(t["done_keys"]) >= int(t.get("launches") or 1) or t.get("gave_up") for t in self.targets) \
            or time.monotonic() > self.deadline


def _path_of(jit, root: str) -> str:
    from .capture_record import relative_path

    fn = getattr(jit, "fn", None)
    code = getattr(fn, "__code__", None)
    return relative_path(code.co_filename, root) if code is not None else ""


def _matches(target: dict[str, Any], jit, args: tuple, kwargs: dict[str, Any], root: str) -> bool:
    name = getattr(getattr(jit, "fn", None), "__name__", None)
    if name != target["kernel"] or _path_of(jit, root) != target["path"]:
        return False
    bound = dict(zip(_names(jit), args))
    bound.update(kwargs)
    for k, v in (target.get("constants") or {}).items():
        if k in bound and bound[k] != v:
            return False
    for k, v in (target.get("options") or {}).items():
        if k in kwargs and kwargs[k] != v:
            return False
    return True


def _tensors(torch, args: tuple, kwargs: dict[str, Any], names: list[str]) -> dict[str, Any]:
    bound = dict(zip(names, args))
    bound.update(kwargs)
    return {k: v for k, v in bound.items() if torch.is_tensor(v) and v.is_cuda}


def _heuristic_values(stack: list, jit, bound: dict[str, Any], fixed: set[str]) -> dict[str, Any]:
    """The values the `@triton.heuristics` above `jit` give for `bound` (a candidate's constexprs), outermost first;
    the candidate's own constexprs are not recomputed."""
    out: dict[str, Any] = {}
    for heur in stack:
        inner, hops = getattr(heur, "fn", None), 0
        while inner is not None and inner is not jit and hops < 8:
            inner, hops = getattr(inner, "fn", None), hops + 1
        if inner is not jit:
            continue
        for name, fn in (getattr(heur, "values", None) or {}).items():
            if name not in fixed:
                out[name] = bound[name] = fn({**bound})
    return out


def _compare(torch, base: dict[str, Any], got: dict[str, Any], spread: dict[str, float]) -> tuple[bool, float, str]:
    """(the same within tolerance, the largest relative difference, why not) for every tensor: relative to the
    largest magnitude of the unchanged launch's tensor, within the dtype's tolerance or 4× the unchanged launch's own
    run-to-run difference (atomics, split-K); a NaN only where the unchanged launch has one."""
    worst = 0.0
    for k, b in base.items():
        g = got[k]
        if b.dtype.is_floating_point:
            bf, gf = b.float(), g.float()
            bn, gn = torch.isnan(bf), torch.isnan(gf)
            if bool((gn & ~bn).any()):
                return False, math.inf, f"{k}: NaN where the unchanged launch has none"
            ok = ~(bn | gn)
            if not bool(ok.any()):
                continue
            scale = float(bf[ok].abs().max().clamp_min(1e-30))
            diff = float((bf[ok] - gf[ok]).abs().max()) / scale
            tol = max(TOLERANCE.get(str(b.dtype).replace("torch.", ""), 1e-2), 4 * spread.get(k, 0.0))
        else:
            diff = 0.0 if torch.equal(b, g) else 1.0
            tol = 0.0 if spread.get(k, 0.0) == 0 else 1.0
        worst = max(worst, diff)
        if diff > tol:
            return False, worst, f"{k} differs by {diff:.2g} of its largest value (tolerance {tol:.2g})"
    return True, worst, ""


class Trials:
    """The wrappers around Triton's launch path that run a plan's trials (installed once per process)."""

    def __init__(self, plan: _Plan) -> None:
        self.plan = plan
        self.local = threading.local()

    # Triton's Heuristics.run: which heuristics are above the launch being made
    def wrap_heuristics(self, run):
        trials = self

        def heuristics_run(heur, *args, **kwargs):
            stack = trials.local.__dict__.setdefault("heuristics", [])
            stack.append(heur)
            try:
                return run(heur, *args, **kwargs)
            finally:
                stack.pop()
        return heuristics_run

    # Triton's Autotuner._bench: launches inside it are the autotuner's own trials, never ours
    def wrap_bench(self, bench):
        trials = self

        def bench_run(*args, **kwargs):
            trials.local.bench = getattr(trials.local, "bench", 0) + 1
            try:
                return bench(*args, **kwargs)
            finally:
                trials.local.bench -= 1
        return bench_run

    def wrap_run(self, run):
        trials = self

        def run_with_trials(jit, *args, grid=None, warmup=False, **kwargs):
            target = None
            if not warmup and not getattr(trials.local, "bench", 0) and not getattr(trials.local, "busy", False):
                with trials.plan.lock:
                    target = next((t for t in trials.plan.targets if not t.get("gave_up") and
                                   len(t["done_keys"]) < int(t.get("launches") or 1) and
                                   _matches(t, jit, args, kwargs, trials.plan.root)), None)
            if target is None:
                return run(jit, *args, grid=grid, warmup=warmup, **kwargs)
            trials.local.busy = True
            try:
                return trials.at_launch(run, target, jit, args, grid, kwargs)
            finally:
                trials.local.busy = False
                if trials.plan.exit_when_done and trials.plan.finished():
                    trials.plan.write({"event": "done"})
                    os._exit(0)
        return run_with_trials

    def at_launch(self, run, target: dict[str, Any], jit, args: tuple, grid, kwargs: dict[str, Any]):
        import torch
        from .capture_record import launch_key

        plan, names = self.plan, _names(jit)
        try:
            key = repr(launch_key(grid if not callable(grid) else None, args, kwargs))
        except Exception:  # noqa: BLE001
            key = repr(len(target["done_keys"]))
        if key in target["done_keys"]:
            return run(jit, *args, grid=grid, warmup=False, **kwargs)
        why = self._out_of_reach(torch, target, names, grid)
        tensors = _tensors(torch, args, kwargs, names)
        need = 2 * sum(t.untyped_storage().nbytes() for t in tensors.values())
        if why is None and need > COPY_SHARE * torch.cuda.mem_get_info()[0]:
            why = f"copies of its tensors ({need / 2**30:.1f} GiB) would not fit in the free GPU memory"
        if why is not None:
            target["gave_up"] = True
            plan.write({"event": "out_of_reach", "target": target["id"], "why": why})
            return run(jit, *args, grid=grid, warmup=False, **kwargs)
        before = {k: t.clone() for k, t in tensors.items()}
        ret = run(jit, *args, grid=grid, warmup=False, **kwargs)  # the program's own launch, as it was made
        torch.cuda.synchronize()
        after = {k: t.clone() for k, t in tensors.items()}
        target["done_keys"].append(key)
        try:
            self._trials(run, target, jit, args, grid, kwargs, tensors, before, after, key)
        finally:
            for k, t in tensors.items():
                t.copy_(after[k])
            torch.cuda.synchronize()
        return ret

    def _out_of_reach(self, torch, target, names: list[str], grid) -> str | None:
        if torch.cuda.is_current_stream_capturing():
            return "launched inside a CUDA graph capture"
        if any(s in n.lower() for n in names for s in SEED_NAMES):
            return "takes a random seed: its outputs cannot be compared"
        if not callable(grid) and any(c.get("constants") for c in target["candidates"]):
            # only option changes can be tried with a grid given as numbers
            target["candidates"] = [c for c in target["candidates"] if not c.get("constants")]
            if not target["candidates"]:
                return "its grid is given as numbers: another tile's grid is known only to the caller's code"
        return None

    def _launch(self, run, jit, args, grid, kwargs, cand: dict[str, Any] | None):
        if cand is None:
            return run(jit, *args, grid=grid, warmup=False, **kwargs)
        new = {**kwargs, **(cand.get("constants") or {}), **(cand.get("options") or {})}
        bound = {**dict(zip(_names(jit), args)), **new}
        new.update(_heuristic_values(getattr(self.local, "heuristics", []), jit, bound,
                                     set(cand.get("constants") or {})))
        bound.update(new)
        g = grid(bound) if callable(grid) else grid
        return run(jit, *args, grid=g, warmup=False, **new)

    def _trials(self, run, target, jit, args, grid, kwargs, tensors, before, after, key) -> None:
        import torch
        import triton.testing

        plan = self.plan

        def restore():
            for k, t in tensors.items():
                t.copy_(before[k])

        def once(cand):
            restore()
            self._launch(run, jit, args, grid, kwargs, cand)
            torch.cuda.synchronize()
            return {k: t.clone() for k, t in tensors.items()}

        def timed(cand) -> float:
            restore()
            return 1000.0 * triton.testing.do_bench(lambda: self._launch(run, jit, args, grid, kwargs, cand),
                                                    warmup=25, rep=100)

        again = once(None)  # the unchanged launch's own run-to-run difference
        spread = {}
        for k, b in after.items():
            if b.dtype.is_floating_point:
                bf, gf = b.float(), again[k].float()
                ok = ~(torch.isnan(bf) | torch.isnan(gf))
                scale = float(bf[ok].abs().max().clamp_min(1e-30)) if bool(ok.any()) else 1.0
                spread[k] = float((bf[ok] - gf[ok]).abs().max()) / scale if bool(ok.any()) else 0.0
            else:
                spread[k] = 0.0 if torch.equal(b, again[k]) else 1.0
        cands = [c for c in target["candidates"] if c["label"] not in plan.skip]
        base_times = [timed(None)]
        every = max(1, len(cands) // (BASELINE_REPEATS - 1)) if cands else 1
        for i, cand in enumerate(cands):
            if time.monotonic() > plan.deadline:
                plan.write({"event": "budget", "target": target["id"], "left": [c["label"] for c in cands[i:]]})
                break
            plan.write({"event": "try", "target": target["id"], "label": cand["label"], "key": key})
            rec: dict[str, Any] = {"event": "result", "target": target["id"], "label": cand["label"], "key": key}
            try:
                got = once(cand)
                same, diff, why = _compare(torch, after, got, spread)
                rec.update(time_us=timed(cand), same=same, max_rel_diff=diff, why=why)
            except Exception as exc:  # noqa: BLE001 — a candidate that does not launch is a result, not a crash
                rec.update(error=f"{type(exc).__name__}: {str(exc)[:200]}")
                if "illegal" in str(exc).lower() or "CUDA error" in str(exc):
                    plan.write(rec)
                    raise
            plan.write(rec)
            if (i + 1) % every == 0 and len(base_times) < BASELINE_REPEATS:
                base_times.append(timed(None))
        while len(base_times) < BASELINE_REPEATS:
            base_times.append(timed(None))
        plan.write({"event": "baseline", "target": target["id"], "key": key, "times_us": base_times,
                    "spread": {k: v for k, v in spread.items() if v}})


_installed: Trials | None = None


def install() -> Trials | None:
    """Wrap Triton's launch path for the plan TRITONLENS_TRIALS names (once per process)."""
    global _installed
    path = os.environ.get(ENV_TRIALS)
    if _installed is not None or not path:
        return _installed
    trials = Trials(_Plan(path))
    from triton.runtime.jit import JITFunction

    JITFunction.run = trials.wrap_run(JITFunction.run)
    try:
        from triton.runtime.autotuner import Autotuner, Heuristics

        Heuristics.run = trials.wrap_heuristics(Heuristics.run)
        Autotuner._bench = trials.wrap_bench(Autotuner._bench)
    except (ImportError, AttributeError):
        pass
    _installed = trials
    return trials


def install_on_import() -> None:
    import sys

    if "triton" in sys.modules and hasattr(sys.modules["triton"], "jit"):
        install()
        return
    from ..device.answers import when_imported

    when_imported("triton", install)


# ---------------------------------------------------------------- the side that runs the command (tune)
MAX_RERUNS = 2  # a faulted candidate is left out and the command run again, at most this often


def read_events(path: str) -> list[dict[str, Any]]:
    """The lines a trial run wrote (its own program wrote them, so each is checked as data by the reader)."""
    out = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f.read(1 << 24).split("\n"):
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict) and isinstance(rec.get("event"), str):
                    out.append(rec)
    except OSError:
        pass
    return out


def run_plan(cmd: list[str], root: str, targets: list[dict[str, Any]], budget_s: float, env: dict[str, str],
             log=None) -> list[dict[str, Any]]:
    """Run `cmd` with the trials of `targets`; a candidate that faults is left out and the command run again for the
    targets not done. Every event of every run, in order; a fault is an event {"event": "fault", "label"}."""
    import subprocess
    import tempfile

    events: list[dict[str, Any]] = []
    skip: list[str] = []
    deadline = time.monotonic() + budget_s
    with tempfile.TemporaryDirectory(prefix="tritonlens-tune-") as tmp:
        for attempt in range(MAX_RERUNS + 1):
            left = deadline - time.monotonic()
            if left <= 5:
                events.append({"event": "budget", "left": [c["label"] for t in targets for c in t["candidates"]
                                                           if c["label"] not in skip]})
                break
            out, plan = os.path.join(tmp, f"events-{attempt}.jsonl"), os.path.join(tmp, f"plan-{attempt}.json")
            with open(plan, "w", encoding="utf-8") as f:
                json.dump({"out": out, "root": root, "targets": targets, "skip": skip, "budget_s": left - 5}, f)
            proc = subprocess.Popen(cmd, env={**env, ENV_TRIALS: plan}, start_new_session=True)
            try:
                code = proc.wait(timeout=left)
            except subprocess.TimeoutExpired:
                import signal

                os.killpg(proc.pid, signal.SIGKILL)
                code = proc.wait()
                events.append({"event": "budget", "why": f"the command ran past the time budget ({budget_s:.0f} s)"})
            got = read_events(out)
            for e in got:
                e["run"] = attempt
            events.extend(got)
            tried = {e.get("label") for e in got if e.get("event") == "try"}
            answered = {e.get("label") for e in got if e.get("event") == "result"}
            faulted = [lab for lab in tried - answered if isinstance(lab, str)]
            if log is not None:
                log(f"trial run {attempt + 1}: exit {code}, {len(answered)} trial(s) timed"
                    + (f", faulted: {', '.join(faulted)}" if faulted else ""))
            if not faulted:
                break
            for lab in faulted:
                events.append({"event": "fault", "label": lab, "exit": code})
            skip.extend(faulted)
            done = {e.get("target") for e in got if e.get("event") == "baseline"}
            targets = [t for t in targets if t["id"] not in done]
            if not targets:
                break
    return events
