"""The compile worker: a persistent process that imports triton once and compiles one job at a time.

A job is a plain dict (see `CompileJob` in pool.py); the answer is an `Artifacts`. Everything that can go wrong in
user code is caught here and returned as `Artifacts.error`; only a crash or hang of the process itself is left to the
pool.
"""
from __future__ import annotations

import ast
import contextlib
import errno
from collections import OrderedDict
import hashlib
import importlib.abc
import linecache
import os
import re
import sys
import tempfile
import threading
import time
import traceback
import types
from typing import Any

from ..model import Artifacts, CompileError, Resources, Spec, Target
from ..frontend.hints import OPTION_NAMES
from ..frontend.specs import spec_to_compile_args
from ..source import split_lines

# Set before triton is imported: remarks on fd 2, ptxas -v log on stdout, and no reuse of Triton's own cache
# (a cache hit would print no remarks).
_ENV = {
    "MLIR_ENABLE_DIAGNOSTICS": "remarks",
    "TRITON_DUMP_PTXAS_LOG": "1",
    "TRITON_ALWAYS_COMPILE": "1",
}

# Loaded user modules by (path, text). Owned by this worker process: it lives and dies with the
# process (a crash or a restart by the pool starts empty).
# Bounded: a long editing session makes a new text at every save.
_modules: "OrderedDict[str, types.ModuleType]" = OrderedDict()
_MAX_MODULES = 32


def _package_of(path: str) -> tuple[str | None, str]:
    """(`pkg.sub` the file belongs to or None, the folder to put on sys.path)."""
    folder = os.path.dirname(os.path.abspath(path))
    parts: list[str] = []
    root = folder
    while os.path.exists(os.path.join(root, "__init__.py")):
        parts.insert(0, os.path.basename(root))
        root = os.path.dirname(root)
    return (".".join(parts) or None), root


def answer_device_queries(target: Target | None, device: dict[str, Any] | None = None) -> bool:
    """On a machine without a GPU a module that asks its device at import — Triton's driver for the backend, torch
    for the name, capability, SM count and shared memory, nvidia-smi in a subprocess — would not load, or would
    load as a half-answered world (Triton says cuda, torch says no CUDA) worse than none. Every door answers as one
    virtual GPU instead (device.answers): `device["gpu"]`, the run's GPU for the target (device/run.py);
    `device["env"]` (tritonlens.env) is the imports' environment. Nothing may be put on a device:
    a module that allocates there at import fails with DeviceUseRefused. A real GPU's answers are left alone.
    True when the answers or the environment changed since the last job: modules imported before are stale."""
    if target is None:
        return False
    from ..device import answers as device_answers
    from ..device.virtual_gpu import lookup

    device = device or {}
    changed = _apply_env(device.get("env") or {})
    if device_answers.current() is None:
        from triton.runtime import driver

        from ..device.targets import local_gpu_target

        # Not `driver.active` itself: probing the AMD backend imports torch (seconds, in every worker).
        if local_gpu_target() is not None or getattr(driver, "_active", None) is not None:
            return changed  # a GPU is there: its own answers are the true ones
    # every job names the run's GPU for this target (device/run.py, resolved where the run started; a job made
    # outside a run, the target's default: pool.CompileJob)
    gpu = lookup(device["gpu"])
    wanted = (gpu.key, str(target))
    if _answering and _answering[0] == wanted:
        return changed
    device_answers.install(gpu, tensors="refuse", target=str(target))
    retargeted = bool(_answering)
    _answering[:] = [wanted]
    return retargeted or changed


_answering: list[tuple[str, str]] = []  # (GPU key, target) the device answers are for
_env_saved: dict[str, str | None] = {}  # variables tritonlens.env set: their values before


def _apply_env(env: dict[str, str]) -> bool:
    """Make the imports' environment `env` on top of the worker's own (what an earlier job set is undone). True
    when it changed."""
    now = {k: os.environ.get(k) for k in _env_saved}
    if all(now.get(k) == v for k, v in env.items()) and set(env) == set(_env_saved):
        return False
    for key, before in _env_saved.items():
        if before is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = before
    _env_saved.clear()
    for key, value in env.items():
        _env_saved[key] = os.environ.get(key)
        os.environ[key] = str(value)
    return True


def load_module(path: str, text: str, workspace_root: str | None, target: Target | None = None,
                device: dict[str, Any] | None = None) -> types.ModuleType:
    """Execute `text` (a slice or the whole file) as a module whose code says it lives at `path`. Device queries at
    import are answered for `target` as the virtual GPU when no GPU is there (answer_device_queries); the module is
    kept per target, GPU and environment."""
    retargeted = answer_device_queries(target, device)
    answers = repr(sorted((device or {}).get("env", {}).items())) + str((device or {}).get("gpu"))
    key = hashlib.sha256((path + "\0" + text + "\0" + str(target or "") + "\0" + answers).encode()).hexdigest()[:20]
    if workspace_root and (_evict_changed_workspace_modules(workspace_root, everything=retargeted)):
        _modules.clear()  # they may hold the old helper functions
    if key in _modules:
        _modules.move_to_end(key)
        return _modules[key]
    package, import_root = _package_of(path)
    for extra in (workspace_root, import_root, os.path.dirname(os.path.abspath(path))):
        if extra and extra not in sys.path:
            sys.path.insert(0, extra)
    name = f"__tritonlens_user__.m{key}"
    module = types.ModuleType(name)
    module.__file__ = path
    module.__package__ = package
    module.__dict__["__tritonlens_switch__"] = binding_switch
    sys.modules[name] = module
    # inspect.getsource (which @triton.jit calls) must see this text, not what is on disk: the editor's buffer may be
    # unsaved. An entry with mtime None is never invalidated by linecache.checkcache.
    linecache.cache[path] = (len(text), None, split_lines(text, keepends=True), path)
    try:
        exec(compile(text, path, "exec"), module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    _modules[key] = module
    while len(_modules) > _MAX_MODULES:
        old_key, _ = _modules.popitem(last=False)
        sys.modules.pop(f"__tritonlens_user__.m{old_key}", None)
    if workspace_root:
        _evict_changed_workspace_modules(workspace_root)  # records the mtimes of what this import pulled in
    return module


_switch_trees: "OrderedDict[str, ast.Module]" = OrderedDict()


def binding_switch(namespace: dict[str, Any], line: int) -> bool:
    """The condition of a binding switch (`loader.is_switch`) at `line` of the module being loaded: True when the
    `if` branch binds without an exception, run first in a scratch copy of the module's namespace — as an import
    fallback chain decides. The branch then runs for real in the module. Its outcome is kept in
    `__tritonlens_switches__` (line -> the exception that made the other branch run, or None)."""
    path = namespace.get("__file__") or ""
    lines = linecache.getlines(path)
    text = "".join(lines)
    key = hashlib.sha256((path + "\0" + text).encode()).hexdigest()
    tree = _switch_trees.get(key)
    if tree is None:
        tree = _switch_trees[key] = ast.parse(text)
        while len(_switch_trees) > _MAX_MODULES:
            _switch_trees.popitem(last=False)
    node = next((n for n in ast.walk(tree) if isinstance(n, ast.If) and n.lineno == line), None)
    outcomes = namespace.setdefault("__tritonlens_switches__", {})
    if node is None:
        outcomes[line] = "no `if` on this line"
        return False
    scratch = dict(namespace)
    try:
        exec(compile(ast.Module(body=node.body, type_ignores=[]), path, "exec"), scratch)
    except Exception as exc:  # noqa: BLE001 — the other branch is the fallback, as an except clause would take it
        outcomes[line] = f"{type(exc).__name__}: {exc}"
        return False
    outcomes[line] = None
    return True


def _evict_changed_workspace_modules(root: str, everything: bool = False) -> bool:
    """Forget workspace modules (helpers the kernels import) whose file changed since this worker imported them
    (all of them with `everything`: they were imported under another target's device answers). Runs before every
    job: a module once found outside the workspace (torch's thousands) is not looked at again."""
    root = os.path.abspath(root) + os.sep
    evicted = False
    outside = _outside_workspace.setdefault(root, {})
    for name, mod in list(sys.modules.items()):
        if outside.get(name) is mod:
            continue
        file = getattr(mod, "__file__", None)
        if not file or not os.path.abspath(file).startswith(root) or name.startswith("__tritonlens_user__") \
                or "site-packages" in file or name.partition(".")[0] == "tritonlens":  # not ourselves, in a checkout
            outside[name] = mod
            continue
        try:
            mtime = os.stat(file).st_mtime_ns
        except OSError:
            mtime = None
        seen = _import_mtimes.setdefault(name, mtime)
        if seen != mtime or everything:
            del sys.modules[name]
            _import_mtimes.pop(name, None)
            evicted = True
    return evicted


_outside_workspace: dict[str, dict[str, Any]] = {}  # workspace root -> modules (by name) not under it
_import_mtimes: dict[str, int | None] = {}


def find_jit_function(module: types.ModuleType, qualname: str):
    from triton.runtime.jit import JITFunction

    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part)
    # Autotuner / Heuristics / user wrappers keep the JITFunction in `.fn`.
    seen = 0
    while not isinstance(obj, JITFunction) and hasattr(obj, "fn") and seen < 10:
        obj = obj.fn
        seen += 1
    if not isinstance(obj, JITFunction):
        raise TypeError(f"{qualname} is not a triton.jit function (got {type(obj).__name__})")
    return obj


def _constexpr_value(value: Any) -> Any:
    """Spec values are JSON; a triton dtype travels as {"dtype": "float32"} (a `tl` name, see hints.dtype_value) or
    {"dtype": "bf16"} (the name triton's specialization data holds); a tuple travels as a list."""
    if isinstance(value, dict) and set(value) == {"dtype"}:
        import triton.language as tl

        found = getattr(tl, value["dtype"], None)
        return found if isinstance(found, tl.dtype) else tl.dtype(value["dtype"])
    if isinstance(value, list):
        return tuple(_constexpr_value(v) for v in value)
    return value


def gpu_target(target: Target):
    from triton.backends.compiler import GPUTarget

    return GPUTarget(target.backend, target.arch, target.warp_size)


@contextlib.contextmanager
def captured_output():
    """Collect what C++ and Python write to fd 1 and fd 2 (MLIR remarks, the ptxas log) during a compile."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as out, tempfile.TemporaryFile(mode="w+b") as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        box: dict[str, str] = {}
        try:
            yield box
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            out.seek(0)
            err.seek(0)
            box["stdout"] = out.read().decode("utf-8", "replace")
            box["stderr"] = err.read().decode("utf-8", "replace")


_private_cache: list[str] = []  # this process's own Triton cache folder, made on first use


@contextlib.contextmanager
def private_triton_cache():
    """Triton's on-disk cache, for one compile, in a folder of this worker's own, emptied afterwards.

    Triton names a cache entry by a hash of the kernel's source and first line, signature, constants, options and
    target — not of its file — and `triton.compile` reads the IR it returns back from the entry's files after writing
    them (TRITON_ALWAYS_COMPILE skips only the lookup). Two workers compiling one kernel of two files (a copy of a
    file, the same function at the same line) in one shared folder got each other's IR, whole or stage by stage: its
    locations named the other file, so no line of the kernel mapped to any IR. A folder per process, cleared after
    each compile, shares nothing — with other workers, other tritonlens processes or the user's own Triton runs — and
    leaves nothing in the user's ~/.triton. Only the compile uses it: the driver's built helpers stay in the usual
    cache."""
    if not _private_cache:
        import atexit
        import shutil

        folder = tempfile.mkdtemp(prefix="tritonlens-triton-cache-")
        _private_cache.append(folder)
        atexit.register(shutil.rmtree, folder, True)
    folder = _private_cache[0]
    before = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = folder
    try:
        yield folder
    finally:
        if before is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = before
        _empty(folder)


def _empty(folder: str) -> None:
    import shutil

    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        shutil.rmtree(os.path.join(folder, name), ignore_errors=True)


_PTXAS_USED = re.compile(r"Used (\d+) registers")
_PTXAS_SPILL = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_STACK = re.compile(r"(\d+) bytes stack frame")


def parse_ptxas_log(text: str, res: Resources) -> None:
    if m := _PTXAS_USED.search(text):
        res.registers = int(m.group(1))
    if m := _PTXAS_SPILL.search(text):
        res.spill_stores, res.spill_loads = int(m.group(1)), int(m.group(2))
    if m := _PTXAS_STACK.search(text):
        res.stack = int(m.group(1))


_MISSING_TOOL = re.compile(r"Cannot find (\S+)$")


def _error_from_exception(exc: BaseException, jit_fn, path: str) -> CompileError:
    from triton.compiler.errors import CompilationError

    kind = type(exc).__name__
    # The outermost CompilationError whose node is in the kernel itself gives the user's line.
    if isinstance(exc, CompilationError) and getattr(exc, "node", None) is not None and hasattr(exc.node, "lineno"):
        def_line = _def_line(jit_fn)
        indent = _def_indent(jit_fn)
        node = exc.node
        msg = _root_message(exc)
        line = def_line + node.lineno - 1
        col = node.col_offset + indent + 1
        end_col = None
        if getattr(node, "end_lineno", None) == node.lineno and getattr(node, "end_col_offset", None) is not None:
            end_col = node.end_col_offset + indent + 1
        return CompileError(kind, msg.strip() or kind, line, col, path, end_col)
    msg = str(exc).strip() or kind
    if tool := _MISSING_TOOL.match(msg):
        # Triton looks for ptxas (and other tools) beside its wheel, then on PATH: the installation's failure.
        return CompileError("MissingTool", f"Triton could not find its `{tool.group(1)}` ({msg}); `tritonlens doctor` "
                                           "says which compiler tools this Triton installation lacks",
                            _def_line(jit_fn), None, path)
    if kind == "PTXASError" and "non-ASCII" in msg and not os.path.basename(path).isascii():
        # LLVM writes the file's base name, unescaped, into the PTX's `.loc` comments, and ptxas rejects any
        # non-ASCII byte: no kernel of such a file compiles with Triton, on a GPU either.
        msg = (f"ptxas rejects the non-ASCII file name {os.path.basename(path)!r}, which Triton writes into the "
               "PTX line info: no kernel of this file compiles (on a GPU either) until the file is renamed")
    return CompileError(kind, msg, _def_line(jit_fn), None, path)


_MLIR_ERROR = re.compile(r"^(?P<file>[^\n]+?):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.*)$", re.M)


def _mlir_error(stderr: str, path: str) -> CompileError | None:
    """A failed MLIR pass prints `file:line:col: error: ...` on fd 2 before raising a generic RuntimeError."""
    for m in _MLIR_ERROR.finditer(stderr):
        if os.path.abspath(m.group("file")) == os.path.abspath(path):
            return CompileError("MLIRError", f"{m.group('msg')} (in an MLIR pass)", int(m.group("line")),
                                int(m.group("col")) + 1 if int(m.group("col")) else None, path)
    return None


def _root_message(exc: BaseException) -> str:
    """The message of the deepest cause: Triton wraps the real error (truncated by repr) in CompilationErrors."""
    from triton.compiler.errors import CompilationError

    deepest = exc
    while deepest.__cause__ is not None:
        deepest = deepest.__cause__
    if isinstance(deepest, CompilationError):
        msg = deepest.error_message or ""
        # Triton stores repr(e) of the original error: NameError("...") -> NameError: ...
        if m := re.fullmatch(r"(\w+)\((['\"])(.*)\2\)", msg.strip(), re.S):
            return f"{m.group(1)}: {m.group(3)}"
        return msg
    text = str(deepest)
    if isinstance(deepest, AssertionError) and not text:
        # A bare `assert` inside Triton: the failing condition is the only explanation there is.
        frames = traceback.extract_tb(deepest.__traceback__)
        cond = frames[-1].line if frames else ""
        return f"Triton's check failed: `{cond}`" if cond else "AssertionError in Triton"
    if type(deepest).__name__ in ("AssertionError", "ValueError") and text:
        return text
    return f"{type(deepest).__name__}: {text}"


def _def_line(jit_fn) -> int | None:
    if jit_fn is None:
        return None
    for idx, line in enumerate(jit_fn.raw_src):
        if line.strip().startswith("def "):
            return jit_fn.starting_line_number + idx
    return jit_fn.starting_line_number


def _def_indent(jit_fn) -> int:
    for line in jit_fn.raw_src:
        if line.strip().startswith("def "):
            return len(line) - len(line.lstrip())
    return 0


_REFUSED = (errno.EACCES, errno.EPERM)


def sandbox_refusal(exc: BaseException) -> str | None:
    """What the sandbox refused (the file or program, and the error), when `exc` (or what it was raised from) is a
    refused file access, program start or system call in a confined worker; None otherwise. Such a failure is
    tritonlens's limit (model.OWN_FAILURES), not the kernel's error: Triton's own tools and a real library's
    import-time needs must work confined, and when one does not, the sandbox is what to fix (or to turn off for a
    trusted repository)."""
    from . import sandbox

    state = sandbox.STATE or {}
    if not (state.get("landlock") or state.get("seccomp")):
        return None
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen and len(seen) < 8:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in _REFUSED:
            what = f" {e.filename!r}" if e.filename else ""
            return f"{what.strip() or 'a call'} ({type(e).__name__}: {e.strerror or e})"
        e = e.__cause__ or e.__context__
    return None


def _user_frame(exc: BaseException, path: str) -> tuple[int | None, str]:
    """The deepest traceback frame in the user's file: where an import-time error really is."""
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.abspath(frame.filename) == os.path.abspath(path):
            line = frame.lineno
    if isinstance(exc, SyntaxError) and exc.filename and os.path.abspath(exc.filename) == os.path.abspath(path):
        line = exc.lineno
    return line, f"{type(exc).__name__}: {exc}"


def compile_job(job: dict[str, Any]) -> Artifacts:
    spec = Spec.from_json(job["spec"])
    target: Target = job["target"]  # the run's (device/run.py RunDevice.arch): not parsed again here
    art = Artifacts(kernel=job["qualname"], spec_key=spec.key(), target=str(target))
    start = time.perf_counter()
    path = job["path"]
    _phase("import", os.path.splitext(os.path.basename(path))[0])
    try:
        module = load_module(path, job["text"], job.get("workspace_root"), target, job.get("device"))
        jit_fn = find_jit_function(module, job["qualname"])
    except BaseException as exc:  # noqa: BLE001 — user code: anything can happen at import
        line, msg = _user_frame(exc, path)
        if _trail and _trail[0].failed:  # the module whose import raised, when it is not the kernel's own
            first, _, rest = msg.partition("\n")
            msg = f"{first} (while importing `{_trail[0].failed}`)" + (f"\n{rest}" if rest else "")
        refused = sandbox_refusal(exc)
        art.error = CompileError("LoadRefused" if refused else "LoadError",
                                 f"could not load the kernel's module: {msg}" + (f" — refused: {refused}" if refused
                                                                                  else ""),
                                 line, None, path)
        art.compile_time = time.perf_counter() - start
        return art

    _phase("compile")
    import triton
    from triton.compiler import ASTSource

    # only the launch options Triton documents, whatever made the spec: `ptx_options`, `ir_override` and the like
    # make the compile read files of someone's choosing
    options = {k: v for k, v in spec.options.items() if k in OPTION_NAMES}
    box: dict[str, str] = {}
    try:
        signature, constexprs, attrs = spec_to_compile_args(spec, list(jit_fn.arg_names))
        constexprs = {k: _constexpr_value(v) for k, v in constexprs.items()}
        with captured_output() as box, private_triton_cache():
            kernel = triton.compile(ASTSource(jit_fn, signature, constexprs, attrs), target=gpu_target(target),
                                    options=options)
    except BaseException as exc:  # noqa: BLE001
        if isinstance(exc, KeyboardInterrupt):
            raise
        art.remarks = box.get("stderr", "")
        art.error = _mlir_error(art.remarks, path) if "PassManager::run failed" in str(exc) else None
        refused = None if art.error else sandbox_refusal(exc)
        if refused:
            art.error = CompileError("SandboxRefused", f"{refused} while compiling: a tool the compile runs (or a file "
                                     "it reads) is one the sandbox does not allow; TRITONLENS_NO_SANDBOX=1 compiles "
                                     "without it, for a repository you trust", _def_line(jit_fn), None, path)
        art.error = art.error or _error_from_exception(exc, jit_fn, path)
        art.compile_time = time.perf_counter() - start
        return art
    art.compile_time = time.perf_counter() - start
    art.remarks = box["stderr"]
    md = kernel.metadata
    art.metadata = {k: _jsonable(getattr(md, k)) for k in md._fields if k not in ("extern_libs",)} \
        if hasattr(md, "_fields") else {}
    art.resources.shared = int(getattr(md, "shared", 0) or 0)
    for stage, text in kernel.asm.items():
        if isinstance(text, str) and stage != "source":
            art.asm[stage] = text
    parse_ptxas_log(box["stdout"], art.resources)
    cubin = kernel.asm.get("cubin")
    if isinstance(cubin, (bytes, bytearray)):
        # SASS is made when asked for (ir.sass.LazyAsm); the rules read only its local loads and stores, which are
        # read from the cubin itself (ir.cubin) — the disassembler runs now only for a cubin that reader declines
        _add_sass(art, bytes(cubin), target, disassemble_now=bool(job.get("sass")))
    hsaco = kernel.asm.get("hsaco")
    if isinstance(hsaco, (bytes, bytearray)) and art.resources.registers is None:
        _amd_resources(art)
    return art


def analyse_compile(art: Artifacts, request: dict[str, Any]) -> tuple[dict, list]:
    """(metrics, findings) of a compile — one this worker just made, or a cache hit the pipeline sent to be analysed
    — for the pipeline (checks.analyse_unstored: IR paths are placed once the artefact cache has stored the IR). This
    is the one place the analysis runs. When it fails, the metrics say why (`analysis_error`, tritonlens's own
    failure, logged with its traceback) and there are no findings: the compile stands."""
    try:
        from ..checks import analyse_unstored

        # the run's device for this target, worked out where the run started (device/run.py), as the parent made it
        return analyse_unstored(request["kernel"], request["spec"], art, request["settings"], request.get("source"),
                                request.get("select"), request["device"])
    except Exception as exc:  # noqa: BLE001
        import traceback

        traceback.print_exc(file=sys.stderr)
        return {"analysis_error": f"{type(exc).__name__}: {exc}"}, []


def _add_sass(art: Artifacts, cubin: bytes, target: Target, disassemble_now: bool = False) -> None:
    import base64

    from ..ir import cubin as cubin_reader
    from ..ir import sass

    try:
        usage = sass.resource_usage(cubin)
    except Exception as exc:  # noqa: BLE001
        art.metadata["res_usage_error"] = str(exc)
        usage = {}
    res = art.resources
    res.registers = usage.get("REG", res.registers)
    res.stack = usage.get("STACK", res.stack)
    res.local = usage.get("LOCAL", res.local)
    if not disassemble_now and (res.spill_stores or res.spill_loads or res.stack or res.local):
        sites = cubin_reader.local_accesses(cubin, target.arch) if isinstance(target.arch, int) else None
        if sites is None:
            disassemble_now = True
        else:
            art.metadata["local_accesses"] = [[at, kind, loc.file if loc else None, loc.line if loc else 0]
                                              for at, kind, loc in sites]
    if disassemble_now:
        try:
            art.asm["sass"] = sass.disassemble(cubin)
        except Exception as exc:  # noqa: BLE001 — a missing nvdisasm costs the SASS layer, not the compile
            art.metadata["sass_error"] = str(exc)
    else:
        art.asm = sass.LazyAsm(art.asm)
        art.asm[sass.CUBIN_STAGE] = base64.b64encode(cubin).decode("ascii")


_AMD_META = {"registers": re.compile(r"\.vgpr_count:\s+(\d+)"), "spill": re.compile(r"\.vgpr_spill_count:\s+(\d+)"),
             "stack": re.compile(r"\.private_segment_fixed_size:\s+(\d+)")}


def _amd_resources(art: Artifacts) -> None:
    text = art.asm.get("amdgcn", "")
    if m := _AMD_META["registers"].search(text):
        art.resources.registers = int(m.group(1))
    if m := _AMD_META["spill"].search(text):
        # VGPR spills go to scratch at 4 bytes per lane-register; report the register count as bytes per thread.
        art.resources.spill_stores = art.resources.spill_loads = 4 * int(m.group(1))
    if m := _AMD_META["stack"].search(text):
        art.resources.stack = int(m.group(1))


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return repr(value)


def _exit_with_parent() -> None:
    """A worker must not outlive the server, even one killed with SIGKILL while user code runs here."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, daemon=True, name="tritonlens-parent-watch").start()


class ImportTrail(importlib.abc.MetaPathFinder):
    """Keeps, in a small file the pool reads when a worker dies or hangs, which module is being imported right now
    (the innermost) and whether a job is importing or compiling: a SIGSEGV or an endless loop at import is then
    blamed on the import and the module, not on the compiler."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        self.stack: list[str] = []
        self.phase = "idle"
        self.failed: str | None = None  # the innermost module whose import raised, in this job

    def set_phase(self, phase: str, module: str | None = None) -> None:
        self.phase = phase
        self.stack[:] = [module] if module else []
        self.failed = None
        self._write()

    def _write(self) -> None:
        line = f"{self.phase}\t{self.stack[-1] if self.stack else ''}\n".encode("utf-8", "replace")[:4096]
        try:
            os.pwrite(self.fd, line.ljust(4096), 0)
        except OSError:
            pass

    def find_spec(self, name, path, target=None):
        if self.phase != "import":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        # the loader object stays the module's own (torch checks its modules' __loader__): its exec_module is
        # wrapped for this one import, on the instance; class-level loaders (builtins, frozen) are not followed
        if loader is None or isinstance(loader, type) or "exec_module" in getattr(loader, "__dict__", {"": 0}):
            return spec
        trail, run = self, loader.exec_module

        def exec_module(module):
            trail.stack.append(name)
            trail._write()
            try:
                run(module)
            except BaseException:
                trail.failed = trail.failed or name
                raise
            finally:
                loader.__dict__.pop("exec_module", None)
                if trail.stack and trail.stack[-1] == name:
                    trail.stack.pop()
                trail._write()

        loader.exec_module = exec_module
        return spec


_trail: list[ImportTrail] = []


def _phase(phase: str, module: str | None = None) -> None:
    if _trail:
        _trail[0].set_phase(phase, module)


def read_trail(path: str) -> tuple[str, str]:
    """(phase, module) a worker last wrote to its trail file: ("import", "pkg.mod"), ("compile", ""), or ("", "")."""
    try:
        with open(path, "rb") as f:
            text = f.read(4096).decode("utf-8", "replace")
    except OSError:
        return "", ""
    phase, _, module = text.strip().partition("\t")
    return phase, module.strip()


def serve(conn, out=None, trail: str | None = None, sandbox: dict[str, Any] | None = None) -> None:
    """Worker loop: receive a job dict on `conn`, send back Artifacts as JSON (compiler.wire) on `out` (default
    `conn`). Ends on None or a closed pipe. Memory is bounded from outside, by the pool (pool.resident_bytes)."""
    from . import wire

    out = out or conn
    os.environ.update(_ENV)
    _exit_with_parent()
    if trail:
        _trail.append(ImportTrail(trail))
        sys.meta_path.insert(0, _trail[0])
    import triton  # noqa: F401 — import once, before the first job

    out.send_bytes(wire.encode({"ready": True, "pid": os.getpid(), "sandbox": sandbox}))
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        if job.get("artifacts") is not None:  # a cache hit, to analyse only: nothing is imported or compiled
            hit = job["artifacts"]
            result = Artifacts(kernel=hit.kernel, spec_key=hit.spec_key, target=hit.target)
            result.analysis = analyse_compile(hit, job.get("analysis") or {})
        else:
            try:
                result = compile_job(job)
            except BaseException as exc:  # noqa: BLE001
                result = Artifacts(kernel=job.get("qualname", "?"), spec_key="", target="",
                                   error=CompileError("InternalError", f"{type(exc).__name__}: {exc}"))
            _phase("idle")
            if job.get("analysis") and result.error is None:
                result.analysis = analyse_compile(result, job["analysis"])
        try:
            message = wire.encode({"result": wire.artifacts_to_wire(result)})
        except (TypeError, ValueError) as exc:  # a value of the analysis that is not JSON data: our failure
            result.analysis = ({"analysis_error": f"the analysis does not travel as JSON ({exc})"}, [])
            message = wire.encode({"result": wire.artifacts_to_wire(result)})
        out.send_bytes(message)


def main(argv: list[str]) -> None:
    """The pool's worker process, `JOB_FD RESULT_FD TRAIL`, started by compiler.sandbox.boot (pool._Worker): it is
    confined before this module is imported, and keeps its import trail in TRAIL."""
    from multiprocessing.connection import Connection

    from . import sandbox

    serve(Connection(int(argv[0]), writable=False), Connection(int(argv[1]), readable=False),
          argv[2] if len(argv) > 2 else None, sandbox.STATE)
