"""Code from the checked file that tritonlens evaluates: autotune `configs=` builders and `@triton.heuristics`
lambdas. It runs here, in a process of its own, never in the checking process or the language server.

The checking side (`ConfigEvaluator`) decides what to run — the module statements a configs expression depends on
(`Program`, chosen by discover from the AST), refused when they reach for interpreter internals (`guard`) — and sends
it as text. The evaluator process (`python -I -S`, started by `ConfigEvaluator`) runs it in a namespace of stand-ins:
`triton` and `torch` that answer device queries as one virtual GPU (virtual_gpu), a few pure standard modules, no
real imports, a step budget. Containment does not rest on that namespace: before it reads any code the process seals
itself — a seccomp filter (Linux x86-64 and arm64) lets it read and write the two pipes it was given, allocate
memory and exit, and nothing else: no file is opened, no program run, no socket made, no process forked or
signalled; an address-space bound (this process never imports torch) and no file writes (RLIMIT_FSIZE 0) hold
everywhere. The checking side kills it when one evaluation outlives `timeout` and starts another for the next one.
What comes back is JSON, read with a size bound: the evaluator's answers are data, never objects.
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from . import virtual_gpu
from .environment import named_env, passed_environ
from ..source import parse_module

# The folder holding the `tritonlens` package: the evaluator imports it from there, with no other path.
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

DEFAULT_TIMEOUT = 5.0  # seconds per evaluation
DEFAULT_MEMORY_MB = 512  # the evaluator's address space: stand-ins and config lists, never torch
_START_TIMEOUT = 30.0
_MAX_ANSWER = 8 << 20  # bytes of JSON an answer may take
_MAX_STEPS = 200_000  # lines run per evaluation: a loop in config code ends with a reason, not at the time bound
_CACHED = 256  # answers kept by program: a save re-discovers every kernel of the file


class Refused(Exception):
    """Code that tritonlens does not send to the evaluator (`guard`)."""


# ---------------------------------------------------------------- what is evaluated
@dataclass
class ModuleCode:
    """The statements of one module that an evaluation needs, by their place in the file's text (line, column):
    the evaluator parses `text` itself and runs only those, so its line numbers are the file's."""

    filename: str
    text: str
    keep: list[tuple[int, int]] = field(default_factory=list)
    # local name -> a library's dotted name (`triton.language`), or (module key, name or None) for a name (or the
    # whole module) of another module of the same request
    imports: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"filename": self.filename, "text": self.text, "keep": [list(p) for p in self.keep],
                "imports": {k: list(v) if isinstance(v, tuple) else v for k, v in self.imports.items()}}


@dataclass
class Program:
    """An expression of module `main` (its source, at `line`) and the module statements it depends on."""

    main: str  # key of the module the expression belongs to
    modules: dict[str, ModuleCode]
    expression: str
    line: int = 1

    def to_json(self) -> dict[str, Any]:
        return {"main": self.main, "modules": {k: m.to_json() for k, m in self.modules.items()},
                "expression": self.expression, "line": self.line}

    def digest(self) -> str:
        """What the program runs, not where it sits: changes when a statement it needs changes, not when lines
        above it move."""
        h = hashlib.sha256(self.expression.encode())
        for key in sorted(self.modules):
            m = self.modules[key]
            for stmt in kept_statements(parse_module(m.text), set(m.keep)):
                h.update(b"\0" + ast.unparse(stmt).encode())
        return h.hexdigest()


def kept_statements(tree: ast.Module, keep: set[tuple[int, int]]) -> list[ast.stmt]:
    """The module statements at the places `keep` names, inside the `if`/`try` blocks around them too (with the
    other statements of those blocks left out)."""
    def block(stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            if (s.lineno, s.col_offset) not in keep:
                continue
            if isinstance(s, ast.If):
                s = ast.copy_location(ast.If(test=s.test, body=block(s.body) or [_pass(s)], orelse=block(s.orelse)), s)
            elif isinstance(s, ast.Try):
                handlers = [ast.copy_location(ast.ExceptHandler(type=h.type, name=h.name,
                                                                body=block(h.body) or [_pass(h)]), h)
                            for h in s.handlers]
                finalbody = block(s.finalbody) or ([] if handlers else [_pass(s)])
                s = ast.copy_location(ast.Try(body=block(s.body) or [_pass(s)], handlers=handlers,
                                              orelse=block(s.orelse), finalbody=finalbody), s)
            out.append(s)
        return out

    stmts = block(tree.body)
    for s in stmts:
        ast.fix_missing_locations(s)
    return stmts


def _pass(near: ast.AST) -> ast.stmt:
    return ast.copy_location(ast.Pass(), near)


# Attributes through which running code reaches frames, code objects and the globals of other modules: the way out
# of any namespace a Python evaluator builds. Refused up front (the evaluator's seal holds without this).
_INTROSPECTION = frozenset({
    "gi_frame", "gi_code", "gi_yieldfrom", "gi_running", "cr_frame", "cr_code", "cr_await", "cr_origin",
    "ag_frame", "ag_code", "ag_await", "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace",
    "tb_frame", "tb_next", "co_code", "co_consts", "func_globals", "func_code", "mro",
})


# Names through which code reads or writes an attribute named by a string, or runs text as code: `getattr` and
# `hasattr` only as a direct call with a constant, harmless name; these never (operator.attrgetter("__class__"),
# functools.reduce(getattr, [...]), vars(x)["__dict__"] walk around an attribute check otherwise).
_BY_NAME = frozenset({"getattr", "hasattr"})
# typing's get_type_hints and ForwardRef evaluate a string (an annotation built at run time) as code
_NEVER = frozenset({"setattr", "delattr", "vars", "globals", "locals", "eval", "exec", "compile", "breakpoint", "open",
                    "input", "attrgetter", "methodcaller", "get_type_hints", "ForwardRef", "evaluate_forward_ref"})
# A format string reads the attributes and items its fields name (`"{0.__class__}".format(x)`): its methods only on
# a string literal whose every field is checked (`_safe_format`), never on a string built at run time.
_FORMATTERS = frozenset({"format", "format_map", "vformat"})


def _safe_name(arg: ast.AST) -> bool:
    return isinstance(arg, ast.Constant) and isinstance(arg.value, str) and not arg.value.startswith("_") \
        and arg.value not in _INTROSPECTION and arg.value not in _NEVER and arg.value not in _FORMATTERS


def _safe_format(node: ast.AST, depth: int = 0) -> bool:
    """`node` is a string literal whose replacement fields read no private attribute or item (`{0.x}`, `{n[1]}`
    pass; `{0._x}`, `{0[__class__]}` and fields nested in format specs that do are refused)."""
    import re
    import string

    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or depth > 2:
        return False
    try:
        fields = list(string.Formatter().parse(node.value))
    except ValueError:
        return False
    for _, field_name, spec, _ in fields:
        if field_name is None:
            continue
        if any(part.startswith("_") or part in _INTROSPECTION for part in re.split(r"[.\[\]]", field_name)[1:]):
            return False
        if spec and "{" in spec and not _safe_format(ast.Constant(spec), depth + 1):
            return False
    return True


def guard(node: ast.AST) -> None:
    """Refuse code that reaches for interpreter internals (dunder names and attributes, frames, code objects), and
    every way of naming an attribute by a string but a direct `getattr(x, "name")` and a literal format string
    whose fields are checked."""
    direct = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
              and n.func.id in _BY_NAME and len(n.args) > 1 and _safe_name(n.args[1])}
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and (n.attr.startswith("_") or n.attr in _INTROSPECTION or n.attr in _NEVER):
            raise Refused(f"not evaluated: uses `.{n.attr}`")
        if isinstance(n, ast.Attribute) and n.attr in _FORMATTERS and not _safe_format(n.value):
            raise Refused(f"not evaluated: `.{n.attr}` of a format string built at run time (its fields read "
                          "attributes)")
        if isinstance(n, ast.Name) and (n.id.startswith("__") or n.id in _NEVER):
            raise Refused(f"not evaluated: uses `{n.id}`")
        if isinstance(n, ast.Name) and n.id in _BY_NAME and id(n) not in direct:
            raise Refused(f"not evaluated: {n.id} with a computed name")
        if isinstance(n, ast.alias) and (n.name.split(".")[-1] in _NEVER | _BY_NAME or n.name.startswith("_")):
            raise Refused(f"not evaluated: imports `{n.name}`")
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and "__" in n.value:
            raise Refused("not evaluated: a string naming a dunder (str.format reads attributes too)")
        if isinstance(n, (ast.Global, ast.Nonlocal, ast.AsyncFunctionDef, ast.Await, ast.With, ast.AsyncWith)):
            raise Refused(f"not evaluated: `{type(n).__name__}` statement")


def guard_program(program: Program) -> None:
    for m in program.modules.values():
        for s in kept_statements(parse_module(m.text), set(m.keep)):
            guard(s)
    guard(ast.parse(f"({program.expression.strip()})", mode="eval"))


# ---------------------------------------------------------------- the checking side
class ConfigEvaluator:
    """Evaluations in one persistent evaluator process, one at a time (thread-safe). A process that outlives an
    evaluation's `timeout`, dies or answers nonsense is killed; the next evaluation starts a fresh one."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT, memory_mb: int = DEFAULT_MEMORY_MB) -> None:
        self.timeout = float(timeout)
        self.memory_mb = int(memory_mb)
        self._proc: subprocess.Popen | None = None
        self._conn: Any = None
        self.sealed: bool | None = None  # whether the running evaluator could install its seccomp filter
        self._file: str | None = None  # the file whose code the running evaluator has run: no other file's sees it
        self._lock = threading.Lock()
        self._answers: "OrderedDict[str, dict[str, Any]]" = OrderedDict()

    # ------------------------------------------------------------ what callers use
    def configs(self, program: Program, target: str, gpu: str | None = None,
                env: dict[str, str] | None = None) -> tuple[list[dict] | None, str | None]:
        """(the configs as `[{"kwargs": {...}, "num_warps": 4, ...}]`, None) or (None, why not). `env` is added to
        the environment config code reads (tritonlens.env, as the compile workers get it)."""
        try:
            guard_program(program)
        except Refused as exc:
            return None, str(exc)
        except SyntaxError as exc:
            return None, f"SyntaxError: {exc.msg}"
        answer = self.evaluate({"op": "configs", "program": program.to_json(), "env": named_env(env),
                                **_device(target, gpu)})
        if not answer.get("ok"):
            return None, answer.get("error") or "the evaluator gave no reason"
        configs = answer.get("value")
        if not isinstance(configs, list) or not all(isinstance(c, dict) and isinstance(c.get("kwargs"), dict)
                                                     for c in configs):
            return None, "configs= did not evaluate to a list of triton.Config"
        return configs, None  # only documented launch options become a spec's (frontend.specs, the worker)

    def call(self, source: str, args: dict[str, Any], target: str, gpu: str | None = None,
             program: Program | None = None, env: dict[str, str] | None = None) -> dict[str, Any]:
        """`(source)(args)` for a `@triton.heuristics` lambda — in its module when `program` (whose expression is
        `source`) gives the statements it needs, else with `triton`, `tl` and `torch` only: {"ok": True, "value": v},
        {"ok": False, "unknown": name} when it reads an argument `args` lacks, else {"ok": False, "error": why}."""
        if program is None:
            program = Program("<heuristic>", {"<heuristic>": ModuleCode("<heuristic>", "", [], {
                "triton": "triton", "tl": "triton.language", "torch": "torch"})}, source)
        try:
            guard_program(program)
        except Refused as exc:
            return {"ok": False, "error": str(exc)}
        except SyntaxError as exc:
            return {"ok": False, "error": f"SyntaxError: {exc.msg}"}
        known = {k: v for k, v in args.items() if _is_data(v)}
        return self.evaluate({"op": "call", "program": program.to_json(), "args": known, "env": named_env(env),
                              **_device(target, gpu)})

    def evaluate(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send one request as it is — no guard — and return the evaluator's answer (or why there is none)."""
        key = hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()
        with self._lock:
            if key in self._answers:
                self._answers.move_to_end(key)
                return self._answers[key]
            file = _file_of(request)
            if file != self._file:
                self._stop()  # a fresh process: what one file's code changed in the evaluator, the next never sees
                self._file = file
            answer = self._ask(request)
            self._answers[key] = answer
            while len(self._answers) > _CACHED:
                self._answers.popitem(last=False)
            return answer

    def close(self) -> None:
        with self._lock:
            self._stop()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    # ------------------------------------------------------------ the process
    def _ask(self, request: dict[str, Any], retry: bool = True) -> dict[str, Any]:
        fresh = self._proc is None or self._proc.poll() is not None
        try:
            if fresh:
                self._start()
            self._conn.send_bytes(json.dumps(request).encode())
        except (OSError, RuntimeError, ValueError) as exc:
            self._stop()
            if retry and not fresh:  # it died while idle: this request is not why
                return self._ask(request, retry=False)
            return {"ok": False, "error": f"the evaluator process could not run ({exc})"}
        if not self._conn.poll(self.timeout):
            self._stop()
            return {"ok": False, "error": f"evaluation took longer than {self.timeout:g} s", "limit": "time"}
        try:
            answer = json.loads(self._conn.recv_bytes(_MAX_ANSWER))
        except (EOFError, OSError) as exc:
            why = self._death() or str(exc)
            self._stop()
            if retry and not fresh:  # it may have died before this request reached it: once more, on a new one
                return self._ask(request, retry=False)
            return {"ok": False, "error": f"the evaluator process stopped ({why})", "limit": "crash"}
        except ValueError:
            self._stop()
            return {"ok": False, "error": "the evaluator process answered something that is not JSON"}
        if not isinstance(answer, dict):
            return {"ok": False, "error": "the evaluator process answered something that is not an answer"}
        if answer.get("limit") == "memory":
            answer["error"] = f"evaluation needed more than the {self.memory_mb} MB the evaluator may use"
        return answer

    def _start(self) -> None:
        req_r, req_w = os.pipe()
        ans_r, ans_w = os.pipe()
        code = (f"import sys; sys.path.insert(0, {_PACKAGE_ROOT!r}); from tritonlens.device.config_eval import serve; "
                f"serve({req_r}, {ans_w}, {self.memory_mb})")
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "SYSTEMROOT")}
        try:
            self._proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", code], pass_fds=(req_r, ans_w),
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL, env=env, cwd=os.path.abspath(os.sep),
                                          close_fds=True)
        finally:
            os.close(req_r)
            os.close(ans_w)
        self._conn = _Pipes(req_w, ans_r)
        if not self._conn.poll(_START_TIMEOUT):
            self._stop()
            raise RuntimeError("it did not start")
        try:
            hello = json.loads(self._conn.recv_bytes(_MAX_ANSWER))
        except (EOFError, OSError, ValueError):
            why = self._death()
            self._stop()
            raise RuntimeError(why or "it did not start") from None
        if not isinstance(hello, dict) or not hello.get("ready"):
            self._stop()
            raise RuntimeError(f"it failed to start: {hello.get('error') if isinstance(hello, dict) else hello}")
        self.sealed = bool(hello.get("sealed"))
        # what the file's os.environ reads: the compile workers' clean environment, never this process's secrets
        self._conn.send_bytes(json.dumps({"environ": passed_environ()}).encode())

    def _death(self) -> str | None:
        try:
            code = self._proc.wait(2) if self._proc is not None else None
        except subprocess.TimeoutExpired:
            return None
        if code is not None and code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exited with code {code}" if code is not None else None

    def _stop(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
        if self._conn is not None:
            self._conn.close()
        self._proc = self._conn = None


class _Pipes:
    """A request pipe and an answer pipe, framed by multiprocessing's Connection (bytes only: no pickle)."""

    def __init__(self, out_fd: int, in_fd: int) -> None:
        from multiprocessing.connection import Connection

        self._out = Connection(out_fd, readable=False)
        self._in = Connection(in_fd, writable=False)

    def send_bytes(self, data: bytes) -> None:
        self._out.send_bytes(data)

    def poll(self, timeout: float) -> bool:
        return self._in.poll(timeout)

    def recv_bytes(self, maxlength: int) -> bytes:
        return self._in.recv_bytes(maxlength)

    def close(self) -> None:
        self._out.close()
        self._in.close()


def _file_of(request: dict[str, Any]) -> str:
    program = request.get("program") or {}
    main = (program.get("modules") or {}).get(program.get("main")) or {}
    return str(main.get("filename") or program.get("main") or "")


def _device(target: str, gpu: str | None) -> dict[str, str]:
    """The target and the key of the GPU the stand-ins answer as: the run's (device/run.py, worked out where the run
    started), else — a caller outside a run — the target's default."""
    return {"target": str(target), "gpu": gpu or virtual_gpu.for_target(str(target)).key}


def _is_data(value: Any) -> bool:
    try:
        json.dumps(value)
        return True
    except (TypeError, ValueError):
        return False


_shared: ConfigEvaluator | None = None
_shared_lock = threading.Lock()


def shared() -> ConfigEvaluator:
    """The evaluator of callers that bring none (one per process, started on first use, stopped at exit)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            import atexit

            _shared = ConfigEvaluator()
            atexit.register(_shared.close)
        return _shared


# ---------------------------------------------------------------- the evaluator process
def serve(request_fd: int, answer_fd: int, memory_mb: int) -> None:
    """The evaluator's main loop: bound, seal, then answer requests until the checking side closes the pipe."""
    from multiprocessing.connection import Connection

    requests = Connection(request_fd, writable=False)
    answers = Connection(answer_fd, readable=False)
    try:
        _set_bounds(memory_mb)
        sealed = _seal()
    except Exception as exc:  # noqa: BLE001 — say why, and let the checking side report it
        answers.send_bytes(json.dumps({"ready": False, "error": f"{type(exc).__name__}: {exc}"}).encode())
        return
    answers.send_bytes(json.dumps({"ready": True, "sealed": sealed}).encode())
    try:
        environ = json.loads(requests.recv_bytes()).get("environ", {})
    except (EOFError, OSError, ValueError, AttributeError):
        return
    while True:
        try:
            raw = requests.recv_bytes()
        except (EOFError, OSError):
            return
        try:
            answer = _answer(json.loads(raw), environ)
            data = json.dumps(answer)
        except MemoryError:
            data = json.dumps({"ok": False, "limit": "memory", "error": "MemoryError"})
        except Exception as exc:  # noqa: BLE001
            data = json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        answers.send_bytes(data.encode())


def _set_bounds(memory_mb: int) -> None:
    import resource

    limits = [(resource.RLIMIT_FSIZE, 0), (resource.RLIMIT_CORE, 0)]
    if memory_mb > 0:
        limits.append((resource.RLIMIT_AS, memory_mb << 20))
    for what, soft in limits:
        _, hard = resource.getrlimit(what)
        value = soft if hard == resource.RLIM_INFINITY else min(soft, hard)
        resource.setrlimit(what, (value, value))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the bound fails (EFBIG) instead of killing us


# System calls the evaluator may make once sealed: its two pipes, memory, signals' bookkeeping, clocks, exit.
_ALLOWED = {
    "x86_64": (0xC000003E, {"read": 0, "write": 1, "close": 3, "fstat": 5, "lseek": 8, "mmap": 9, "mprotect": 10,
                            "munmap": 11, "brk": 12, "rt_sigaction": 13, "rt_sigprocmask": 14, "rt_sigreturn": 15,
                            "sched_yield": 24, "mremap": 25, "madvise": 28, "getpid": 39, "exit": 60,
                            "sigaltstack": 131, "gettid": 186, "futex": 202, "clock_gettime": 228,
                            "exit_group": 231, "newfstatat": 262, "getrandom": 318}),
    "aarch64": (0xC00000B7, {"read": 63, "write": 64, "close": 57, "fstat": 80, "lseek": 62, "mmap": 222,
                             "mprotect": 226, "munmap": 215, "brk": 214, "rt_sigaction": 134,
                             "rt_sigprocmask": 135, "rt_sigreturn": 139, "sched_yield": 124, "mremap": 216,
                             "madvise": 233, "getpid": 172, "exit": 93, "sigaltstack": 132, "gettid": 178,
                             "futex": 98, "clock_gettime": 113, "exit_group": 94, "newfstatat": 79,
                             "getrandom": 278}),
}


def _seal() -> bool:
    """Install the seccomp filter: any system call but `_ALLOWED`'s fails with EPERM. False where seccomp is not
    available (another OS or architecture): the bounds and the kill on time-out still hold there."""
    import ctypes
    import platform

    arch = _ALLOWED.get(platform.machine())
    if not sys.platform.startswith("linux") or arch is None:
        return False
    audit_arch, calls = arch
    libc = ctypes.CDLL(None, use_errno=True)

    class Insn(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Insn))]

    ld_abs, jeq, ret = 0x20, 0x15, 0x06  # BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_RET|BPF_K
    allow, kill, eperm = 0x7FFF0000, 0x80000000, 0x00050000 | 1
    numbers = sorted(calls.values())
    insns = [Insn(ld_abs, 0, 0, 4), Insn(jeq, 1, 0, audit_arch), Insn(ret, 0, 0, kill), Insn(ld_abs, 0, 0, 0)]
    insns += [Insn(jeq, len(numbers) - i, 0, nr) for i, nr in enumerate(numbers)]
    insns += [Insn(ret, 0, 0, eperm), Insn(ret, 0, 0, allow)]
    prog = Prog(len(insns), (Insn * len(insns))(*insns))
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "seccomp filter refused")
    return True


def _answer(request: dict[str, Any], environ: dict[str, str]) -> dict[str, Any]:
    gpu = virtual_gpu.GPUS[request["gpu"]]
    world = _world(request["target"], gpu, {**environ, **request.get("env", {})})
    if request.get("op") == "call":
        return _call(request, world)
    return _configs(request["program"], world)


class _Budget:
    """A line budget over the frames of the given files, so a loop in config code ends with a reason."""

    def __init__(self, filenames: set[str], steps: int = _MAX_STEPS) -> None:
        self.filenames, self.left = filenames, steps

    def __enter__(self) -> "_Budget":
        sys.settrace(self._trace)
        return self

    def __exit__(self, *exc: Any) -> None:
        sys.settrace(None)

    def _trace(self, frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename not in self.filenames:
            return None
        self.left -= 1
        if self.left < 0:
            raise _OverBudget(f"not evaluated: ran more than {_MAX_STEPS} steps")
        return self._trace


class _OverBudget(BaseException):  # not caught by the file's `except Exception`
    pass


class _Run:
    """One program in the evaluator: its modules' kept statements run once each, in namespaces of stand-ins."""

    def __init__(self, program: dict[str, Any], world: dict[str, Any]) -> None:
        self.program, self.world = program, world
        self.modules: dict[str, dict[str, Any]] = program["modules"]
        self.namespaces: dict[str, dict[str, Any]] = {}
        self.failed: dict[str, str] = {}  # name -> why the statement binding it failed
        self.filenames = {m["filename"] for m in self.modules.values()}

    def load(self, key: str) -> dict[str, Any]:
        if key in self.namespaces:
            return self.namespaces[key]
        m = self.modules[key]
        ns = _namespace(self.world)
        self.namespaces[key] = ns  # before running: an import cycle sees the names bound so far
        for local, dotted in m["imports"].items():
            if isinstance(dotted, list):
                other, name = dotted
                if other in self.modules:
                    got = self.load(other)
                    value = got.get(name, _MISSING) if name else _Module(got)
                    if value is not _MISSING:
                        ns[local] = value
            else:
                value = _lookup(self.world, dotted)
                if value is not None:
                    ns[local] = value
        tree = ast.parse(m["text"], m["filename"])
        for stmt in kept_statements(tree, {tuple(p) for p in m["keep"]}):
            try:
                exec(compile(ast.Module([stmt], []), m["filename"], "exec"), ns)  # noqa: S102 — sealed process
            except MemoryError:
                raise
            except Exception as exc:  # noqa: BLE001 — a statement nothing needs may fail; a needed one says why below
                for name in _names_bound(stmt):
                    self.failed.setdefault(name, f"{name} (line {stmt.lineno}) could not be evaluated: "
                                                 f"{type(exc).__name__}: {exc}")
        return ns

    def value(self) -> Any:
        """The program's expression, evaluated in its module's namespace."""
        ns = self.load(self.program["main"])
        filename = self.modules[self.program["main"]]["filename"]
        expr = ast.parse(f"({self.program['expression'].strip()})", filename, mode="eval")
        ast.increment_lineno(expr, int(self.program.get("line", 1)) - 1)
        return eval(compile(expr, filename, "eval"), ns)  # noqa: S307 — sealed process

    def name_error(self, exc: NameError) -> dict[str, Any]:
        name = getattr(exc, "name", None)
        return {"ok": False, "error": self.failed.get(name) or f"NameError: {exc}", "name": name}


def _evaluated(run: "_Run", use: Any) -> dict[str, Any]:
    """`use(run.value())` within the budget, as an answer: {"ok": True, "value": ...}, or what went wrong — an
    argument the lambda asked for that is not known, the budget, a name that could not be evaluated, any error."""
    try:
        with _Budget(run.filenames):
            return {"ok": True, "value": use(run.value())}
    except _Unknown as exc:
        return {"ok": False, "unknown": exc.args[0]}
    except _OverBudget as exc:
        return {"ok": False, "error": str(exc)}
    except NameError as exc:
        return run.name_error(exc)
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}


def _configs(program: dict[str, Any], world: dict[str, Any]) -> dict[str, Any]:
    answer = _evaluated(_Run(program, world), lambda value: [_record(c) for c in value])
    if not answer["ok"]:
        return answer
    configs = answer["value"]
    if any(c is None for c in configs):
        return {"ok": False, "error": "configs= did not evaluate to a list of triton.Config"}
    return {"ok": True, "value": configs}


_MISSING = object()


class _Module:
    """Another module of the request, as `import pkg.utils as utils` gives it: its evaluated names."""

    def __init__(self, ns: dict[str, Any]) -> None:
        self._ns = ns

    def __getattr__(self, name: str) -> Any:
        try:
            return self._ns[name]
        except KeyError:
            raise AttributeError(name) from None


def _names_bound(stmt: ast.stmt) -> list[str]:
    return [n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)] + \
        [n.name for n in ast.walk(stmt) if isinstance(n, (ast.FunctionDef, ast.ClassDef))]


def _record(config: Any) -> dict[str, Any] | None:
    """A config as data: kwargs and the compile options that were given (a `pre_hook` runs at launch: not kept)."""
    if not isinstance(config, _Config):
        return None
    out: dict[str, Any] = {"kwargs": {k: _data(v) for k, v in config.kwargs.items()}}
    for k, v in config.options.items():
        if v is not None and k != "pre_hook" and _is_data(v):
            out[k] = v
    return out


def _data(value: Any) -> Any:
    if _is_data(value):
        return value
    raise TypeError(f"a config value is not data: {value!r}")


def _call(request: dict[str, Any], world: dict[str, Any]) -> dict[str, Any]:
    args = _Args(request["args"])
    answer = _evaluated(_Run(request["program"], world), lambda fn: fn(args))
    if not answer["ok"]:
        return answer
    value = answer["value"]
    if not _is_data(value):
        return {"ok": False, "error": f"the lambda returned {type(value).__name__}, not a value"}
    return {"ok": True, "value": value}


class _Unknown(KeyError):
    pass


class _Args(dict):
    def __missing__(self, key: str) -> Any:
        raise _Unknown(key)


# ---------------------------------------------------------------- the stand-ins config code sees
class _Config:
    """What `triton.Config(...)` records."""

    def __init__(self, kwargs: dict[str, Any] | None = None, num_warps: int | None = None,
                 num_stages: int | None = None, num_ctas: int | None = None, maxnreg: int | None = None,
                 pre_hook: Any = None, **options: Any) -> None:
        self.kwargs = dict(kwargs or {})
        self.options = {"num_warps": num_warps, "num_stages": num_stages, "num_ctas": num_ctas, "maxnreg": maxnreg,
                        "pre_hook": pre_hook, **options}

    def __getattr__(self, name: str) -> Any:
        options = self.__dict__.get("options", {})
        if name in options:
            return options[name]
        raise AttributeError(name)

    def all_kwargs(self) -> dict[str, Any]:
        return {**self.kwargs, **{k: v for k, v in self.options.items() if v is not None}}


class _Namespace:
    """A module stand-in: attributes, and `pkg.sub` lookups through them."""

    def __init__(self, **attrs: Any) -> None:
        self.__dict__.update(attrs)

    def __repr__(self) -> str:
        return f"<stand-in {self.__dict__.get('__name__', 'module')}>"


def _world(target: str, gpu: virtual_gpu.GpuModel, environ: dict[str, str]) -> dict[str, Any]:
    """Stand-ins for `triton`, `torch` and `os`, answering as `gpu` compiled for `target`, and pure modules."""
    import functools
    import itertools
    import math
    import operator
    import typing

    backend, _, arch_text = str(target).partition(":")
    arch: Any = int(arch_text.rstrip("a")) if backend == "cuda" and arch_text.rstrip("a").isdigit() else arch_text
    cap = gpu.capability
    gpu_target = _Namespace(backend=backend, arch=arch, warp_size=gpu.warp_size)
    props = virtual_gpu.torch_properties(gpu)
    utils = _Namespace(get_device_properties=lambda *a: {
        "max_shared_mem": gpu.shared_per_block_optin, "max_num_regs": gpu.regs_per_block,
        "multiprocessor_count": gpu.sms, "warpSize": gpu.warp_size, "sm_clock_rate": gpu.clock_mhz * 1000,
        "mem_clock_rate": gpu.memory_clock_mhz * 1000, "mem_bus_width": gpu.memory_bus_width})
    active = _Namespace(get_current_target=lambda: gpu_target, get_current_device=lambda: 0,
                        get_device_capability=lambda *a: cap, is_active=lambda: True, utils=utils,
                        get_current_stream=lambda *a: 0)
    driver = _Namespace(active=active)

    def next_power_of_2(n: int) -> int:
        return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()

    def cdiv(a: int, b: int) -> int:
        return -(-a // b)

    def passthrough(*a: Any, **k: Any) -> Any:
        if len(a) == 1 and callable(a[0]) and not k:
            return a[0]
        return lambda f: f

    dtypes = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64", "int8": "int8",
              "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8", "float8e4nv": "fp8e4nv",
              "float8e5": "fp8e5"}
    language = _Namespace(constexpr=lambda x=None: x, cdiv=cdiv, next_power_of_2=next_power_of_2, **dtypes)
    runtime = _Namespace(driver=driver, Config=_Config, autotune=passthrough, heuristics=passthrough, jit=passthrough)
    triton = _Namespace(Config=_Config, cdiv=cdiv, next_power_of_2=next_power_of_2, runtime=runtime,
                        language=language, jit=passthrough, autotune=passthrough, heuristics=passthrough,
                        __version__="3.6.0")
    arch_name = f"sm_{arch}" if backend == "cuda" else str(arch)
    cuda = _Namespace(get_device_capability=lambda *a: cap, is_available=lambda: True, device_count=lambda: 1,
                      get_device_properties=lambda *a: props, current_device=lambda: 0, set_device=lambda *a: None,
                      get_device_name=lambda *a: gpu.name, is_initialized=lambda: True,
                      mem_get_info=lambda *a: (gpu.memory_bytes, gpu.memory_bytes),
                      get_arch_list=lambda: [arch_name], synchronize=lambda *a: None,
                      is_bf16_supported=lambda *a, **k: cap >= (8, 0) or not gpu.is_cuda)
    version = _Namespace(cuda="12.8" if gpu.is_cuda else None, hip=None if gpu.is_cuda else "6.4.43482")
    torch = _Namespace(cuda=cuda, version=version, __version__="2.8.0", **dtypes)
    environ = dict(environ)
    os_stub = _Namespace(environ=environ, getenv=lambda k, d=None: environ.get(k, d), sep="/", name="posix")
    return {"triton": triton, "torch": torch, "os": os_stub, "math": math, "functools": functools,
            "itertools": itertools, "operator": operator, "typing": typing}


def _lookup(roots: dict[str, Any], dotted: str) -> Any:
    parts = dotted.split(".")
    obj = roots.get(parts[0])
    for p in parts[1:]:
        if obj is None:
            return None
        obj = getattr(obj, p, None)
    return obj


_SAFE_BUILTINS = ("abs", "all", "any", "bool", "dict", "enumerate", "filter", "float", "int", "isinstance", "len",
                  "list", "map", "max", "min", "pow", "range", "reversed", "round", "set", "sorted", "str", "sum",
                  "tuple", "zip", "True", "False", "None", "ValueError", "KeyError", "TypeError", "Exception",
                  "AssertionError", "RuntimeError", "NotImplementedError", "ImportError", "AttributeError",
                  "IndexError", "divmod", "hasattr", "getattr", "frozenset", "next", "iter", "callable", "ord",
                  "chr", "hex", "bin", "slice", "BaseException", "ZeroDivisionError", "StopIteration")


def _namespace(world: dict[str, Any]) -> dict[str, Any]:
    """Globals for the file's code: safe builtins, the stand-ins, an `__import__` that gives only those."""
    import builtins as real

    def fake_import(name: str, globals=None, locals=None, fromlist=(), level=0):  # noqa: ANN001
        if level or name.split(".")[0] not in world:
            raise ImportError(f"not evaluated: imports {name}")
        return _lookup(world, name) if fromlist else world[name.split(".")[0]]

    builtins = {n: getattr(real, n) for n in _SAFE_BUILTINS}
    builtins.update(print=lambda *a, **k: None, __import__=fake_import)
    return {"__builtins__": builtins, "__name__": "tritonlens_config"}
