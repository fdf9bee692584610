"""`tritonlens doctor`: is this environment able to compile kernels, and if not, why.

Each check is a `Check` (ok / warn / fail / info). `fail` marks what stops every compile — no `triton`, another
`triton` shadowing the installed one (a `triton/` package in the folder the compiler workers start in: "module
'triton' has no attribute 'language'"), no ptxas, an unwritable cache — and makes the exit code 1. The rest (no
nvdisasm, no GPU, no ncu, an editor interpreter that is not the workspace's venv) is said, not fatal.

Nothing here imports triton or torch in this process: versions come from package metadata and files, and whether
`import triton.language` works is tried in a child interpreter started exactly as a compiler worker starts: isolated,
confined by the sandbox, then with the folder the compiles run in first on sys.path.
"""
from __future__ import annotations

import importlib.machinery
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

from .source import split_lines

ESSENTIAL = "fail"



def probe(argv: list[str]) -> None:
    """The probe's own process (compiler.sandbox.boot runs it confined): can triton.language be imported here."""
    out: dict[str, Any] = {}
    try:
        import triton

        out.update(file=getattr(triton, "__file__", None), path=list(getattr(triton, "__path__", [])),
                   version=getattr(triton, "__version__", None))
        import triton.language  # noqa: F401

        out["ok"] = True
    except BaseException as e:  # noqa: BLE001 — whatever the import raises is the answer
        out.update(ok=False, error=f"{type(e).__name__}: {e}")
    print(json.dumps(out))


@dataclass
class Check:
    name: str
    status: str  # ok | warn | fail | info
    message: str
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class Diagnosis:
    checks: list[Check]

    @property
    def ok(self) -> bool:
        return all(c.status != ESSENTIAL for c in self.checks)

    def problem(self) -> str | None:
        """The one message that explains why nothing can compile (triton missing or shadowed), or None."""
        for c in self.checks:
            if c.name == "triton" and c.status == ESSENTIAL:
                return c.message
        return None

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "checks": [asdict(c) for c in self.checks]}

    def text(self) -> str:
        marks = {"ok": "ok  ", "warn": "warn", "fail": "FAIL", "info": "--  "}
        lines = [f"{marks.get(c.status, c.status)}  {c.name:<12} {c.message}" for c in self.checks]
        lines.append("all essential checks pass" if self.ok else "some essential checks FAIL: nothing will compile")
        return "\n".join(lines)


# ---------------------------------------------------------------- triton
def installed_triton() -> tuple[str | None, str | None]:
    """(folder of the installed `triton` distribution's package, its version), from metadata only."""
    try:
        from importlib.metadata import distribution

        dist = distribution("triton")
        return os.path.realpath(str(dist.locate_file("triton"))), dist.version
    except Exception:  # noqa: BLE001 — not installed
        return None, None


def resolve_triton(search: list[str]) -> str | None:
    """Where `import triton` would come from with `search` as sys.path: the package folder (or module file)."""
    spec = importlib.machinery.PathFinder.find_spec("triton", search)
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return os.path.realpath(list(spec.submodule_search_locations)[0])
    return os.path.realpath(spec.origin) if spec.origin else None


def probe_import(cwd: str, python: str = sys.executable, timeout: float = 120.0) -> dict[str, Any]:
    """`import triton.language` in a fresh interpreter started as a compiler worker is (compiler.sandbox.command:
    isolated, confined, a clean environment, then `cwd` first on sys.path): what is in the workspace runs only
    inside the sandbox."""
    import tempfile

    from .compiler import sandbox

    with tempfile.TemporaryDirectory(prefix="tritonlens-probe-") as folder:
        argv, env = sandbox.command(python, "tritonlens.doctor:probe", [], os.path.join(folder, "w"), cwd=cwd,
                                    reads=[cwd])
        try:
            run = subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=timeout, env=env,
                                 stdin=subprocess.DEVNULL)
            return json.loads(split_lines(run.stdout.strip())[-1])
        except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
            return {"ok": False, "error": f"could not run {python}: {type(exc).__name__}: {exc}"}


def check_triton(cwd: str, probe: bool = True) -> Check:
    installed, version = installed_triton()
    search = [cwd] + [p for p in sys.path if p and os.path.realpath(p) != os.path.realpath(cwd)]
    resolved = resolve_triton(search)
    detail: dict[str, Any] = {"installed": installed, "version": version, "resolved": resolved, "cwd": cwd,
                              "python": sys.executable}
    shadow = resolved is not None and installed is not None and resolved != installed
    if resolved is not None and not os.path.isdir(os.path.join(resolved, "language")):
        shadow = True
    if shadow:
        what = "the folder" if os.path.isdir(resolved or "") else "the file"
        lacks = (" and has no triton.language (\"module 'triton' has no attribute 'language'\")"
                 if not os.path.isdir(os.path.join(resolved or "", "language")) else "")
        return Check("triton", "fail",
                     f"another triton shadows the installed one: {what} {resolved} is imported"
                     + (f" instead of {installed} ({version})" if installed else "") + lacks
                     + "; rename or move it, or start the editor or command from another folder", detail)
    if installed is None and resolved is None:
        return Check("triton", "fail", f"triton is not installed in {sys.executable}: pip install triton "
                     "(tritonlens is verified against 3.6.0)", detail)
    if probe:
        result = probe_import(cwd)
        detail["import"] = result
        if not result.get("ok"):
            return Check("triton", "fail", f"import triton.language fails in {sys.executable} (started in {cwd}): "
                         f"{result.get('error')}", detail)
        version = result.get("version") or version
    note = "" if version == "3.6.0" else " (tritonlens is verified against 3.6.0)"
    return Check("triton", "ok", f"triton {version} from {resolved or installed}{note}", detail)


# ---------------------------------------------------------------- versions, tools
def _dist_version(name: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:  # noqa: BLE001
        return None


def torch_cuda_version() -> str | None:
    """torch's CUDA build (`torch.version.cuda`) read from its version.py: importing torch takes seconds."""
    spec = importlib.machinery.PathFinder.find_spec("torch", [p for p in sys.path if p])
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        with open(os.path.join(list(spec.submodule_search_locations)[0], "version.py"), encoding="utf-8") as f:
            m = re.search(r"^cuda(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", f.read(), re.M)
        return m.group(1) if m else None
    except OSError:
        return None


def check_versions() -> Check:
    torch = _dist_version("torch")
    cuda = torch_cuda_version()
    from . import __version__

    parts = [f"tritonlens {__version__}", f"python {sys.version.split()[0]}",
             f"torch {torch}" + (f" (CUDA {cuda})" if cuda else " (CPU build)" if torch else "") if torch
             else "torch not installed (only needed to capture launches)"]
    return Check("versions", "info", ", ".join(parts), {"torch": torch, "torch_cuda": cuda, "python": sys.version})


def _tool_version(path: str) -> str | None:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"release (\S+?),", out)
    return m.group(1) if m else None


def find_tool(name: str) -> str | None:
    """Triton's own copy first (triton/backends/nvidia/bin, what it compiles with), then TRITON_<NAME>_PATH, PATH."""
    installed, _ = installed_triton()
    cands = [os.path.join(installed, "backends", "nvidia", "bin", name)] if installed else []
    if env := os.environ.get(f"TRITON_{name.upper()}_PATH"):
        cands.insert(0, env)
    cands += [p for p in [shutil.which(name)] if p]
    return next((c for c in cands if os.path.isfile(c) and os.access(c, os.X_OK)), None)


def check_tool(name: str, essential: bool, why: str) -> Check:
    path = find_tool(name)
    if path is None:
        return Check(name, "fail" if essential else "warn", f"{name} not found ({why})", {"path": None})
    version = _tool_version(path)
    return Check(name, "ok", f"{path}" + (f" (CUDA {version})" if version else ""), {"path": path, "version": version})


def check_gpu() -> list[Check]:
    from .gpu.profile import find_ncu
    from .device.run import run_devices
    from .device.targets import local_gpu_target

    gpu = local_gpu_target()
    model = run_devices("auto")[0].gpu  # the GPU `check` (target auto) answers as and reports for
    out = [Check("gpu", "ok" if gpu else "info",
                 f"local GPU {gpu}: {model.label()}" if gpu else
                 f"no GPU visible: imports see the virtual {model.label()} for {model.target} (--gpu / "
                 "tritonlens.gpu for another; captures: tritonlens capture --no-gpu, or on a GPU machine)",
                 {"target": gpu, "gpu": model.key, "virtual": gpu is None})]
    ncu = find_ncu()
    out.append(Check("ncu", "ok" if ncu else "info", ncu or "ncu not found (only needed to profile on a GPU)",
                     {"path": ncu}))
    return out


# ---------------------------------------------------------------- interpreter, cache
def workspace_venvs(workspace: str) -> list[str]:
    """Virtual environments in the workspace (`.venv`, `venv`, `env`, `.env` holding pyvenv.cfg)."""
    return [os.path.join(workspace, d) for d in (".venv", "venv", "env", ".env")
            if os.path.isfile(os.path.join(workspace, d, "pyvenv.cfg"))]


def check_interpreter(workspace: str) -> Check:
    here = os.path.realpath(sys.prefix)
    venvs = workspace_venvs(workspace)
    detail = {"python": sys.executable, "prefix": sys.prefix, "workspace_venvs": venvs}
    if venvs and all(os.path.realpath(v) != here for v in venvs):
        return Check("interpreter", "warn",
                     f"{sys.executable} runs tritonlens, but the workspace has its own environment {venvs[0]}: "
                     "kernels are compiled with this interpreter's packages (select that environment, or set "
                     "tritonlens.interpreter)", detail)
    return Check("interpreter", "ok", sys.executable + (" (the workspace's environment)" if venvs else ""), detail)


def _folder_size(folder: str) -> tuple[int, int]:
    total = files = 0
    for root, _dirs, names in os.walk(folder):
        for n in names:
            try:
                total += os.stat(os.path.join(root, n)).st_size
                files += 1
            except OSError:
                pass
    return total, files


def check_cache() -> Check:
    from .compiler.cache import default_cache_dir

    folder = default_cache_dir()
    try:
        os.makedirs(folder, exist_ok=True)
        writable = os.access(folder, os.W_OK)
    except OSError:
        writable = False
    if not writable:
        return Check("cache", "fail", f"{folder} cannot be written (set TRITONLENS_CACHE_DIR)", {"path": folder})
    size, files = _folder_size(folder)
    return Check("cache", "ok", f"{folder} ({size / 1e6:.1f} MB in {files} files)",
                 {"path": folder, "bytes": size, "files": files})


def check_sandbox() -> Check:
    """What confines the compile workers here (compiler.sandbox), tried in a throwaway process as a worker does."""
    from .compiler import sandbox

    state = sandbox.status()
    status = "ok" if state.get("landlock") and state.get("seccomp") else "warn"
    how = "" if status == "ok" else (" — code that a kernel's module runs at import is not fully confined here; "
                                     "see docs/security.md before checking code you have not read")
    return Check("sandbox", status, sandbox.describe(state) + how, state)


def diagnose(cwd: str | None = None, workspace: str | None = None, probe: bool = True) -> Diagnosis:
    """Every check. `cwd`: the folder compiles start in (default the current one); `workspace`: the project root."""
    cwd = os.path.abspath(cwd or os.getcwd())
    workspace = os.path.abspath(workspace or cwd)
    return Diagnosis([
        check_triton(cwd, probe=probe),
        check_versions(),
        check_tool("ptxas", True, "Triton compiles PTX to a cubin with it; it ships in triton/backends/nvidia/bin"),
        check_tool("nvdisasm", False, "no SASS, so no spill lines (SASS001)"),
        *check_gpu(),
        check_interpreter(workspace),
        check_cache(),
        *([check_sandbox()] if probe else []),
    ])
