"""The compile workers' sandbox: what a kernel's module may do while it is imported.

Importing a kernel's module runs its code (and that of every module it imports), and a repository may be hostile (a
pull request from a fork in CI). A worker confines itself before it imports anything — triton included — and what
it starts (ptxas, the vendor-tool stand-ins) inherits the confinement:

- files (Landlock): everything may be read but other processes' /proc entries; only the worker's own folder
  (`TMPDIR`, `HOME`, Triton's cache in it) and its own /proc entries may be written, and a handful of devices
  (`/dev/null`, a GPU's nodes where one is present); only the programs tritonlens runs may be executed (Triton's
  `ptxas`/`nvdisasm`/`cuobjdump`, the vendor-tool stand-ins and the Python that runs them; on a machine with a GPU
  the real vendor tools and the C compiler Triton's driver builds its helper with);
- network (Landlock, ABI 4+): no TCP connection or listening port; (seccomp) no socket of any family at all — a
  UNIX socket such as a container daemon's is as good as root; on a machine with a GPU UNIX sockets stay, the CUDA
  driver needs them — and no io_uring, which would go around both;
- processes (Landlock, ABI 6+): no signal to, and (any ABI) no ptrace of, a process outside the sandbox — the
  checking process included, whose environment (`/proc/PID/environ`) is unreadable too;
- environment: the worker starts with a clean one (`clean_env`): no variable of the checking process but the few a
  Python and a compiler need (device/environment.py), plus what the user names in `tritonlens.env`.

Landlock comes through the `landlock` binding and seccomp through `pyseccomp` (libseccomp). Where the kernel or the
libraries lack them, the worker runs with what there is and says so (`status()`: doctor, and once in the log).
"""
from __future__ import annotations

import ctypes
import errno
import os
import shutil
import sys
from typing import Any

from ..device.environment import named_env, passed_environ

# TRITONLENS_NO_SANDBOX=1 runs the workers unconfined (for debugging tritonlens itself); doctor says so.
DISABLE_VAR = "TRITONLENS_NO_SANDBOX"


def clean_env(folder: str, package_root: str, extra: dict[str, str | None] | None = None) -> dict[str, str]:
    """A worker's environment: the kept variables, its own folder as HOME, TMPDIR and Triton's home, the tritonlens
    package on PYTHONPATH, and `extra` (tritonlens.env) on top."""
    env = passed_environ()
    env.setdefault("PATH", os.defpath)
    home = os.path.join(folder, "home")
    tmp = os.path.join(folder, "tmp")
    for d in (home, tmp):
        os.makedirs(d, mode=0o700, exist_ok=True)
    # the user's PYTHONPATH is where their imports come from (a src/ layout): kept, after tritonlens itself
    python_path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
    env.update({"HOME": home, "TMPDIR": tmp, "TRITON_HOME": home, "PYTHONPATH": python_path,
                "PYTHONDONTWRITEBYTECODE": "1", "XDG_CACHE_HOME": os.path.join(home, ".cache")})
    if os.environ.get(DISABLE_VAR):
        env[DISABLE_VAR] = os.environ[DISABLE_VAR]
    env.update(named_env(extra))
    return env


SUPPORT = ("landlock", "pyseccomp")  # pure Python (ctypes): they load in any interpreter a worker runs on


def support_modules() -> dict[str, str]:
    """Where this interpreter's sandbox modules are: a worker under another interpreter (another venv, another
    Triton) that lacks them loads these files (`load_support`) rather than run unconfined."""
    import importlib.util

    found = {}
    for name in SUPPORT:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.origin:
            found[name] = spec.origin
    return found


def load_support(origins: dict[str, str]) -> None:
    import importlib.util

    for name, origin in origins.items():
        if importlib.util.find_spec(name) is not None or not os.path.isfile(origin):
            continue
        folder = os.path.dirname(origin) if os.path.basename(origin) == "__init__.py" else None
        spec = importlib.util.spec_from_file_location(name, origin,
                                                      submodule_search_locations=[folder] if folder else None)
        if spec is None or spec.loader is None:
            continue
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        except Exception:  # noqa: BLE001 — confine() then says what is missing
            sys.modules.pop(name, None)


def _landlock_abi() -> int:
    try:
        from landlock.plumbing import landlock_abi_version

        return int(landlock_abi_version())
    except Exception:  # noqa: BLE001 — no binding, no syscall, disabled at boot: no Landlock
        return 0


def _gpu_nodes() -> list[str]:
    nodes = [os.path.join("/dev", n) for n in _listdir("/dev") if n.startswith("nvidia") or n == "kfd"]
    return nodes + [p for p in ("/dev/dri",) if os.path.isdir(p)]


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _c_compiler() -> list[str]:
    """The C compiler and the tools it runs: Triton's driver builds its helper module with it on a GPU machine."""
    found = []
    for tool in ("cc", "gcc", "clang", "as", "ld", "ld.bfd", "ld.gold"):
        if path := shutil.which(tool):
            found.append(os.path.realpath(path))
    return found + [d for d in ("/usr/lib/gcc", "/usr/libexec/gcc", "/usr/lib/llvm") if os.path.isdir(d)]


def programs(tools_dir: str | None, gpu_present: bool) -> list[str]:
    """What a worker may execute (asked in the worker, whose interpreter and Triton may not be ours): Triton's
    compiler tools, the vendor-tool stand-ins and the Python they run on, the dynamic loader those need; where a GPU
    is present, the real vendor tools and the C compiler."""
    allowed = [os.path.realpath(sys.executable)]
    try:
        import importlib.util

        spec = importlib.util.find_spec("triton")
        if spec and spec.origin:
            backends = os.path.join(os.path.dirname(spec.origin), "backends")
            allowed += [os.path.join(backends, b, "bin") for b in _listdir(backends)
                        if os.path.isdir(os.path.join(backends, b, "bin"))]
    except (ImportError, ValueError):
        pass
    allowed += [os.environ[k] for k in ("TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH", "TRITON_NVDISASM_PATH")
                if os.environ.get(k)]
    if tools_dir:
        allowed.append(tools_dir)
    for loader in ("/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1", "/lib/ld-linux-x86-64.so.2"):
        if os.path.exists(loader):
            allowed.append(os.path.realpath(loader))
    if gpu_present:  # the real vendor tools (a library asks nvidia-smi), the driver's helper build
        allowed += [os.path.realpath(p) for p in map(shutil.which, ("nvidia-smi", "rocminfo", "rocm-smi")) if p]
        allowed += _c_compiler()
    return list(dict.fromkeys(allowed))


class _Attr(ctypes.Structure):
    """landlock_ruleset_attr as of ABI 6 (the binding's own struct has only the file-system field)."""
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


_NET_BIND_TCP, _NET_CONNECT_TCP = 1, 2
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1, 2


def _landlock(folder: str, executable: list[str], abi: int, writable: tuple[str, ...] = ()) -> list[str]:
    """Confine this process (and what it starts) with Landlock; what it now stops."""
    from landlock.plumbing import PR_SET_NO_NEW_PRIVS, SYSCALL_CREATE_RULESET, FSAccess, PathBeneathAttr, \
        get_add_rule, get_prctl, get_restrict_self

    everything = FSAccess.all()
    attr = _Attr(int(everything), 0, 0)
    size = ctypes.sizeof(ctypes.c_uint64)
    stops = ["writes outside its folder", "programs but tritonlens's"]
    if abi >= 4:
        attr.handled_access_net = _NET_BIND_TCP | _NET_CONNECT_TCP
        size = 2 * ctypes.sizeof(ctypes.c_uint64)
        stops.append("TCP")
    if abi >= 6:
        attr.scoped = _SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL
        size = ctypes.sizeof(_Attr)
        stops.append("signals out of the sandbox")
    # the binding's create_ruleset takes its own one-field struct: the call itself, with the ABI's full struct
    libc = ctypes.CDLL(None, use_errno=True)
    ruleset = libc.syscall(SYSCALL_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    add_rule = get_add_rule()
    read = FSAccess.READ_FILE | FSAccess.READ_DIR
    file_rights = FSAccess.all_file()

    def allow(path: str, rights: int) -> None:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return
        try:
            if not os.path.isdir(path):
                rights &= int(file_rights)
            rule = PathBeneathAttr(rights, fd)
            add_rule(ruleset, 1, ctypes.byref(rule), 0)
        finally:
            os.close(fd)

    try:
        allow("/", int(FSAccess.READ_DIR))
        for name in _listdir("/"):
            if name != "proc":
                allow(os.path.join("/", name), int(read))
        # /proc, but no other process's entries: the checking process's environment (/proc/PID/environ) is as
        # readable to its own user as the file system is, and ptrace rules do not cover it
        for name in _listdir("/proc"):
            if not name.isdigit() and name not in ("self", "thread-self"):
                allow(os.path.join("/proc", name), int(read))
        # its own entries, writable too: the CUDA driver writes there while it initialises
        allow(f"/proc/{os.getpid()}", int(everything & ~FSAccess.EXECUTE))
        for path in executable:
            allow(path, int(read | FSAccess.EXECUTE))
        for path in (folder, *writable):
            allow(path, int(everything & ~FSAccess.EXECUTE))
        devices = FSAccess.READ_FILE | FSAccess.WRITE_FILE | (FSAccess.IOCTL_DEV if abi >= 5 else 0)
        for dev in ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", *_gpu_nodes()):
            allow(dev, int(devices | (FSAccess.READ_DIR if os.path.isdir(dev) else 0)))
        if abi >= 5:
            allow("/dev/pts", int(FSAccess.IOCTL_DEV))  # the terminal a worker inherited (isatty and friends)
        get_prctl()(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        get_restrict_self()(ruleset, 0)
    finally:
        os.close(ruleset)
    return stops


def _seccomp(unix_sockets: bool = False) -> None:
    """No socket of any family (socketpair stays: it reaches nobody) and no io_uring; the call fails with EACCES.
    With `unix_sockets` (a machine with a GPU: the CUDA driver fails to initialise without them) UNIX sockets
    stay."""
    import socket

    import pyseccomp

    deny = pyseccomp.ERRNO(errno.EACCES)
    f = pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)
    if unix_sockets:
        f.add_rule(deny, "socket", pyseccomp.Arg(0, pyseccomp.NE, socket.AF_UNIX))
    else:
        f.add_rule(deny, "socket")
    for call in ("io_uring_setup", "io_uring_enter", "io_uring_register"):
        try:
            f.add_rule(deny, call)
        except (RuntimeError, ValueError, OSError):
            continue  # a system call this architecture has not
    f.load()


def confine(folder: str, executable: list[str], gpu: bool = False) -> dict[str, Any]:
    """Confine this process, before any user code (and before any thread: Landlock binds the calling thread and
    what it starts). Returns {"on": bool, "landlock": ABI or 0, "seccomp": bool, "stops": [...], "missing": [...]}:
    what is in force and, in words, what the platform lacked. `gpu`: a GPU is here, whose driver the imports may
    initialise (its nodes, its tools, UNIX sockets)."""
    state: dict[str, Any] = {"on": False, "landlock": 0, "seccomp": False, "stops": [], "missing": []}
    if os.environ.get(DISABLE_VAR):
        state["missing"].append(f"turned off ({DISABLE_VAR} is set)")
        return state
    if not sys.platform.startswith("linux"):
        state["missing"].append(f"no sandbox on {sys.platform} (Landlock and seccomp are Linux's)")
        return state
    try:
        _seccomp(unix_sockets=gpu)
        state["seccomp"] = True
        state["stops"].append("sockets but UNIX ones (a GPU's driver needs them)" if gpu else "sockets")
    except Exception as exc:  # noqa: BLE001
        state["missing"].append(f"no seccomp filter ({type(exc).__name__}: {exc}): sockets are not stopped")
    abi = _landlock_abi()
    if abi:
        try:
            state["stops"] += _landlock(folder, executable, abi)
            state["landlock"] = abi
        except Exception as exc:  # noqa: BLE001 — degrade, and say so
            state["missing"].append(f"Landlock could not be applied ({exc})")
    else:
        state["missing"].append("no Landlock (the kernel lacks it, it is off, or the `landlock` package is missing): "
                                "module code may write files and run programs")
    if abi < 4 and not state["seccomp"]:
        state["missing"].append("the network is open")
    state["on"] = bool(state["landlock"] or state["seccomp"])
    return state


def describe(state: dict[str, Any] | None) -> str:
    """One line for doctor and the log."""
    if not state:
        return "unknown (no worker started)"
    parts = []
    if state.get("landlock"):
        parts.append(f"Landlock ABI {state['landlock']}")
    if state.get("seccomp"):
        parts.append("seccomp")
    head = f"on ({' + '.join(parts)}: no {', no '.join(state.get('stops', []))})" if state.get("on") else "OFF"
    return head + ("; " + "; ".join(state["missing"]) if state.get("missing") else "")


def status() -> dict[str, Any]:
    """What a worker started now would get, tested in a throwaway process (for doctor)."""
    import json
    import subprocess
    import tempfile

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with tempfile.TemporaryDirectory(prefix="tritonlens-sandbox-") as folder:
        code = ("import json, sys; from tritonlens.compiler.sandbox import confine; "
                "print(json.dumps(confine(sys.argv[1], [])))")
        try:
            out = subprocess.run([sys.executable, "-c", code, folder], capture_output=True, text=True, timeout=60,
                                 env=clean_env(folder, root))
            return json.loads(out.stdout.strip().splitlines()[-1])
        except (OSError, ValueError, IndexError, subprocess.TimeoutExpired) as exc:
            return {"on": False, "missing": [f"the test process failed ({exc})"]}
