"""The compile workers' sandbox: what a kernel's module may do while it is imported.

Importing a kernel's module runs its code (and that of every module it imports), and a repository may be hostile (a
pull request from a fork in CI). A worker confines itself before it imports anything — triton included — and what
it starts (ptxas, the vendor-tool stand-ins) inherits the confinement:

- files (Landlock): only what an import needs may be read (`read_rules`): the interpreter, its import roots,
  the system's libraries and a few files of /etc, /proc but other processes' entries, and the workspace without
  `.git` and its other dotfiles (a folder's names may be listed, their contents not read); only the worker's own folder
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
    """Where tritonlens's own environment has the sandbox modules: a confined process loads these files
    (`load_support`), never what its import path would find — the checking process's `sys.path` may start with the
    working directory (`python -m` in a workspace) or hold PYTHONPATH (a `src/` layout), where a repository's
    `pyseccomp.py` would run before the sandbox it was meant to build. Found in `own_path()` alone."""
    import importlib.machinery

    found = {}
    search = own_path()
    for name in SUPPORT:
        try:
            spec = importlib.machinery.PathFinder.find_spec(name, search)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.origin and os.path.isfile(spec.origin):
            found[name] = spec.origin
    return found


def own_path() -> list[str]:
    """The import folders of tritonlens's own environment: tritonlens's package root, then this process's import
    path as the interpreter made it (standard library, site folders, what their `.pth` files add) — without the
    working directory, relative entries and PYTHONPATH's folders, which a repository can fill."""
    real = os.path.realpath
    try:
        cwd = real(os.getcwd())
    except OSError:
        cwd = None
    users = {real(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    ours = [p for p in sys.path if p and os.path.isabs(p) and real(p) != cwd and real(p) not in users]
    return list(dict.fromkeys([PACKAGE_ROOT, *ours]))


def load_support(origins: dict[str, str]) -> None:
    """Load the sandbox modules from the files `support_modules` named (tritonlens's environment), whatever this
    process's import path would find."""
    import importlib.util

    for name, origin in origins.items():
        if name not in SUPPORT or name in sys.modules or not os.path.isfile(origin):
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


def programs(tools_dir: str | None, gpu_present: bool, search: list[str] | None = None) -> list[str]:
    """What a worker may execute (asked in the worker, whose interpreter and Triton may not be ours): Triton's
    compiler tools, the vendor-tool stand-ins and the Python they run on, the dynamic loader those need; where a GPU
    is present, the real vendor tools and the C compiler. `search`: the import path triton will come from (found
    there, not imported)."""
    allowed = [os.path.realpath(sys.executable)]
    try:
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec("triton", search)
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


SHM = "/dev/shm"
_CLONE_NEWNS, _CLONE_NEWUSER = 0x20000, 0x10000000
_MS_NOSUID, _MS_NODEV, _MS_REC, _MS_PRIVATE = 2, 4, 0x4000, 1 << 18
SHM_SIZE = "1g"  # the private /dev/shm's size: what module code puts there is memory the RSS bound does not see


def private_shm() -> str | None:
    """Give this process (and what it starts) a /dev/shm of its own: a new mount namespace (in a new user namespace
    when not root) with a fresh tmpfs there. POSIX semaphores and shared memory (`multiprocessing.Lock`, `Queue`,
    `shared_memory`, torch.multiprocessing) then work, and module code sees and touches no other process's segments.
    Must run before any thread starts. None when done, else why not (a container without the right, a kernel that
    restricts user namespaces): the caller then grants the machine's /dev/shm."""
    if not os.path.isdir(SHM):
        return f"there is no {SHM}"
    libc = ctypes.CDLL(None, use_errno=True)

    def fail(what: str) -> str:
        err = ctypes.get_errno()
        return f"{what} failed ({os.strerror(err) if err else 'refused'})"

    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(_CLONE_NEWNS | (_CLONE_NEWUSER if uid != 0 else 0)) != 0:
        return fail("a private mount namespace")
    if uid != 0:
        try:
            for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
                with open(f"/proc/self/{name}", "w") as f:
                    f.write(text)
        except OSError as exc:
            return f"mapping the user namespace failed ({exc.strerror})"
    # private first: a mount made in a namespace whose mounts are shared would appear in the machine's too
    if libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        return fail("making the mounts private")
    if libc.mount(b"tmpfs", SHM.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV,
                  f"mode=1777,size={SHM_SIZE}".encode()) != 0:
        return fail(f"a tmpfs on {SHM}")
    return None


# What an import may read besides the interpreter, its import roots and the workspace (found by tracing real compiles,
# kept short): the system's libraries and data under /usr (/lib* link there), and of /etc only the dynamic loader's
# files, the time zone, the name-service files `pwd`/`getpass` read and OpenSSL's configuration and public roots.
SYSTEM_READS = ("/usr", "/lib", "/lib64", "/lib32", "/libx32",
                "/etc/ld.so.cache", "/etc/ld.so.preload", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
                "/etc/localtime", "/etc/timezone", "/etc/nsswitch.conf", "/etc/passwd", "/etc/group",
                "/etc/os-release", "/etc/ssl/openssl.cnf", "/etc/ssl/certs")
# with a GPU: the driver reads the PCI topology and its own configuration
GPU_READS = ("/sys", "/etc/nvidia", "/opt/rocm", "/etc/OpenCL")
_MAX_LISTED = 20_000  # entries of one folder given a rule each (a workspace's top level): more are left closed


def _library_dirs() -> list[str]:
    """Where the environment says the loader and the toolkits find their libraries (LD_LIBRARY_PATH, the CUDA and
    ROCm homes, the driver's libcuda folder): the machine's, kept by the clean environment (device/environment.py)."""
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    dirs += [os.environ[k] for k in ("TRITON_LIBCUDA_PATH", "CUDA_HOME", "CUDA_PATH", "ROCM_PATH", "HIP_PATH")
             if os.environ.get(k)]
    # a folder right under / (`/home`, `/tmp`) or / itself is no library folder: never granted whole this way
    return [d for d in dirs if os.path.isabs(d) and os.path.realpath(d).count(os.sep) >= 2]


def within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


NESTED_REPO_DEPTH = 3  # folders below a workspace's top-level entry searched for a checked-out repository's `.git`
NESTED_REPO_LISTINGS = 4000  # folder listings that search may take, per worker start (then it reads the rest whole)


def _holds_repository(path: str, depth: int, budget: list[int]) -> bool:
    """Whether a `.git` is in `path` or in a folder at most `depth` levels below it (dotted folders and links not
    entered), within `budget` listings."""
    if budget[0] <= 0:
        return False
    budget[0] -= 1
    names = _listdir(path)
    if ".git" in names:
        return True
    if depth <= 0:
        return False
    for name in names[:_MAX_LISTED]:
        sub = os.path.join(path, name)
        if not name.startswith(".") and not os.path.islink(sub) and os.path.isdir(sub) \
                and _holds_repository(sub, depth - 1, budget):
            return True
    return False


def read_rules(workspaces: list[str], import_roots: list[str], gpu: bool = False) -> tuple[list[str], list[str]]:
    """(trees, listings): the folders and files a confined process may read whole, and the folders it may only list.

    Trusted trees — the interpreter (`sys.prefix`, `sys.base_prefix`, the executable's real folder), the import
    roots inside them (site-packages), SYSTEM_READS — are read whole. Every other root — a workspace, an import root
    of the user's (PYTHONPATH, an editable install, tritonlens's own checkout) — is read without its dotfiles:
    Landlock grants trees and cannot take one out, so such a root gets a listing rule and one rule per top-level
    entry that is not a dotfile (`.git`, `.env`, `.ssh` stay closed), and a folder on the way to another such root,
    or holding a checked-out repository (a `.git` up to NESTED_REPO_DEPTH folders down), is walked the same way. An
    entry that is a symbolic link gets no rule (reads through it reach only what other rules allow: a committed
    `notes -> ~/.ssh` stays closed)."""
    real = os.path.realpath
    prefixes = [real(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, venv_prefix()}
                if p]
    prefixes.append(os.path.dirname(real(sys.executable)))
    trusted = [*prefixes, *SYSTEM_READS, *(GPU_READS if gpu else ()), *_library_dirs()]
    untrusted = []
    for root in import_roots:
        if not root:
            continue
        r = real(root)
        (trusted if any(within(r, p) for p in prefixes) else untrusted).append(r)
    hidden_free = list(dict.fromkeys([*(real(w) for w in workspaces if w), *untrusted]))
    trees: list[str] = []
    listings: list[str] = []
    seen: set[str] = set()
    budget = [NESTED_REPO_LISTINGS]

    def visit(folder: str) -> None:
        if folder in seen or not os.path.isdir(folder):
            return
        seen.add(folder)
        listings.append(folder)
        names = _listdir(folder)
        for name in names[:_MAX_LISTED]:
            if name.startswith("."):
                continue
            path = os.path.join(folder, name)
            if os.path.islink(path):
                continue
            if any(within(h, path) for h in hidden_free):
                visit(path)  # on the way to (or itself) another root whose dotfiles stay closed
            elif os.path.isdir(path) and _holds_repository(path, NESTED_REPO_DEPTH, budget):
                visit(path)  # a checked-out repository inside: walked the same way, its `.git` stays closed
            else:
                trees.append(path)

    for tree in dict.fromkeys(trusted):
        tree = real(tree)
        if not os.path.exists(tree):
            continue
        if any(within(h, tree) for h in hidden_free):
            visit(tree)  # a workspace inside a trusted tree: still without its dotfiles
        else:
            trees.append(tree)
    for root in hidden_free:
        if not any(within(root, t) for t in trees):
            visit(root)
    return list(dict.fromkeys(trees)), listings


def _landlock(folder: str, executable: list[str], abi: int, writable: tuple[str, ...] = (),
              reads: tuple[list[str], list[str]] | None = None) -> list[str]:
    """Confine this process (and what it starts) with Landlock; what it now stops."""
    from landlock.plumbing import PR_SET_NO_NEW_PRIVS, SYSCALL_CREATE_RULESET, FSAccess, PathBeneathAttr, \
        get_add_rule, get_prctl, get_restrict_self

    everything = FSAccess.all()
    attr = _Attr(int(everything), 0, 0)
    size = ctypes.sizeof(ctypes.c_uint64)
    stops = ["writes outside its folder and /dev/shm", "programs but tritonlens's",
             "reads but the interpreter's, the import roots', the system's and the workspace's without dotfiles"]
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
        trees, listings = reads if reads is not None else read_rules([], [])
        for path in listings:
            allow(path, int(FSAccess.READ_DIR))
        for path in trees:
            allow(path, int(read))
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
        # POSIX semaphores and shared memory (multiprocessing at import): files only, no links, folders or programs
        shm = FSAccess.READ_FILE | FSAccess.WRITE_FILE | FSAccess.READ_DIR | FSAccess.MAKE_REG | FSAccess.REMOVE_FILE
        allow(SHM, int(shm | (FSAccess.TRUNCATE if abi >= 3 else 0)))
        if abi >= 5:
            allow("/dev/pts", int(FSAccess.IOCTL_DEV))  # the terminal a worker inherited (isatty and friends)
        get_prctl()(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        get_restrict_self()(ruleset, 0)
    finally:
        os.close(ruleset)
    return stops


def _seccomp(unix_sockets: bool = False) -> None:
    """No socket of any family (socketpair stays: it reaches nobody), no io_uring, no mount or namespace; the call
    fails with EACCES. No new session or process group (setsid, setpgid: EPERM).
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
    # io_uring would go around both filters; a namespace or mount of its own would go around the private /dev/shm
    for call in ("io_uring_setup", "io_uring_enter", "io_uring_register", "mount", "umount2", "pivot_root",
                 "unshare", "setns", "fsopen", "fsmount", "move_mount", "open_tree"):
        try:
            f.add_rule(deny, call)
        except (RuntimeError, ValueError, OSError):
            continue  # a system call this architecture has not
    # a child that leaves the worker's process group (a new session or group) would outlive the group kill that ends
    # a timed-out or oversized worker, and so its time-out and memory bound: refused as the kernel refuses a group
    # leader (EPERM), which callers already handle. multiprocessing (fork, spawn, forkserver) never asks for either.
    for call in ("setsid", "setpgid"):
        f.add_rule(pyseccomp.ERRNO(errno.EPERM), call)
    f.load()


def confine(folder: str, executable: list[str], gpu: bool = False, workspaces: list[str] | None = None,
            import_roots: list[str] | None = None) -> dict[str, Any]:
    """Confine this process, before any user code (and before any thread: Landlock binds the calling thread and
    what it starts). Returns {"on": bool, "landlock": ABI or 0, "seccomp": bool, "stops": [...], "missing": [...]}:
    what is in force and, in words, what the platform lacked. `gpu`: a GPU is here, whose driver the imports may
    initialise (its nodes, its tools, UNIX sockets). `workspaces`: the folders whose files (but dotfiles) the
    imports may read; `import_roots`: the import path (default: this interpreter's `sys.path`)."""
    state: dict[str, Any] = {"on": False, "landlock": 0, "seccomp": False, "stops": [], "missing": []}
    if os.environ.get(DISABLE_VAR):
        state["missing"].append(f"turned off ({DISABLE_VAR} is set)")
        return state
    if not sys.platform.startswith("linux"):
        state["missing"].append(f"no sandbox on {sys.platform} (Landlock and seccomp are Linux's)")
        return state
    if why := private_shm():
        state["missing"].append(f"{SHM} is the machine's ({why}): module code may read, write and delete this "
                                "user's shared-memory files")
    else:
        state["shm"] = "private"
    try:
        _seccomp(unix_sockets=gpu)
        state["seccomp"] = True
        state["stops"].append("sockets but UNIX ones (a GPU's driver needs them)" if gpu else "sockets")
        state["stops"].append("leaving the worker's process group")
    except Exception as exc:  # noqa: BLE001
        state["missing"].append(f"no seccomp filter ({type(exc).__name__}: {exc}): sockets are not stopped")
    abi = _landlock_abi()
    if abi:
        try:
            reads = read_rules(list(workspaces or []), list(sys.path if import_roots is None else import_roots),
                               gpu)
            stops = _landlock(folder, executable, abi, reads=reads)
            if state.get("shm") == "private":
                stops[0] = "writes outside its folder and its own /dev/shm"
            state["stops"] += stops
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
    """What a worker started now would get, tested in a throwaway process started as workers are (for doctor)."""
    import json
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tritonlens-sandbox-") as folder:
        try:
            argv, env = command(sys.executable, "tritonlens.compiler.sandbox:print_state", [], folder,
                                cwd=folder, gpu=False)
            out = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, cwd=folder,
                                 stdin=subprocess.DEVNULL)
            return json.loads(out.stdout.strip().splitlines()[-1])
        except (OSError, ValueError, IndexError, subprocess.TimeoutExpired) as exc:
            return {"on": False, "missing": [f"the test process failed ({exc})"]}


def print_state(argv: list[str]) -> None:
    import json

    print(json.dumps(STATE))


# ---------------------------------------------------------------- starting a confined interpreter
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STATE: dict[str, Any] | None = None  # in a process `boot` started: what confine() put in force

# `python -I`: no PYTHON* variable, no user site, and neither the working directory nor a script's folder on
# sys.path — so no file of the workspace (a `textwrap.py` at its root) can load before the sandbox is up; the
# process starts in a folder of its own. Only tritonlens's own package is put first. `-S`: the interpreter's site
# (its `.pth` files' code, `sitecustomize`) runs only once confined (`boot`): an interpreter that came with the
# workspace (a committed `.venv`) runs its own code inside the sandbox too.
_BOOT = ("import sys; sys.path.insert(0, sys.argv[1]); "
         "from tritonlens.compiler.sandbox import boot; boot(sys.argv[2], sys.argv[3:])")


def command(python: str, entry: str, args: list[str], folder: str, cwd: str | None = None, gpu: bool = False,
            tools: str | None = None, extra_env: dict[str, str | None] | None = None,
            reads: list[str] | None = None) -> tuple[list[str], dict]:
    """(argv, environment) of a confined process: `python` runs `entry` ("package.module:function", called with
    `args`) after `boot` has confined it to `folder` (its HOME and TMPDIR; created here). `cwd`: the working
    directory and first import folder it gets once confined (what `python -m` in that folder would have had).
    `gpu`: the local GPU's nodes, tools and driver stay usable; `tools`: where the vendor-tool stand-ins are
    written (before confinement, then read-only); `reads`: the workspaces it may read (without their dotfiles),
    besides the interpreter, the import path and the system's files. Start it with `cwd=folder`, a folder of its
    own."""
    env = clean_env(folder, PACKAGE_ROOT, extra_env)
    if gpu and not env.get("TRITON_LIBCUDA_PATH"):
        found = libcuda_dir()
        if found:  # Triton's driver would run `ldconfig -p` to find it: a program the confined process may not run
            env["TRITON_LIBCUDA_PATH"] = found
    box = {"folder": folder, "tools": tools, "gpu": gpu, "support": support_modules(), "entry": entry,
           "cwd": os.path.abspath(cwd) if cwd else None, "reads": [os.path.abspath(r) for r in reads or () if r]}
    import json

    return [python, "-I", "-S", "-c", _BOOT, PACKAGE_ROOT, json.dumps(box), *args], env


def libcuda_dir() -> str | None:
    """The folder of the driver's libcuda.so.1, as `ldconfig -p` lists it (read here, before confinement)."""
    import subprocess

    for ldconfig in ("/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"):
        try:
            out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        for line in out.splitlines():
            if "libcuda.so.1" in line and "=>" in line:
                return os.path.dirname(line.split("=>", 1)[1].strip())
        return None
    return None


def kill_group(proc) -> None:
    """Stop a process `command` started (with start_new_session) and what it forked."""
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.kill()


def venv_prefix() -> str | None:
    """The virtual environment `sys.executable` belongs to, found as site.py finds it (a `pyvenv.cfg` beside it or one
    folder up): under `-S` nothing has set sys.prefix to it yet."""
    exe_dir = os.path.dirname(os.path.abspath(sys.executable))
    for folder in (exe_dir, os.path.dirname(exe_dir)):
        if os.path.isfile(os.path.join(folder, "pyvenv.cfg")):
            return os.path.dirname(exe_dir)
    return None


def _site_dirs() -> list[str]:
    """The site folders `site` will add once the process is confined. A virtual environment's are
    `lib/pythonX.Y/site-packages` whatever the interpreter's vendor patched into `site.getsitepackages` (Debian's
    and Ubuntu's Python answer `dist-packages` folders there, which a venv does not have)."""
    import site

    venv = venv_prefix()
    try:
        dirs = site.getsitepackages([venv] if venv else None)
    except AttributeError:  # a virtualenv of old whose site module lacks it
        dirs = []
    if venv:
        version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
        dirs = [os.path.join(venv, lib, version, "site-packages") for lib in ("lib", "lib64")] + list(dirs)
    return list(dict.fromkeys(d for d in dirs if os.path.isdir(d)))


def site_paths(site_dirs: list[str]) -> list[str]:
    """The import folders the site's `.pth` files will add, read without running them (a line that is code runs
    later, confined): path lines, and the package folders of setuptools' editable finders (`MAPPING = {...}`)."""
    import ast

    found: list[str] = []
    for d in site_dirs:
        for name in sorted(_listdir(d)):
            path = os.path.join(d, name)
            try:
                if name.endswith(".pth"):
                    with open(path, encoding="utf-8", errors="replace") as f:
                        lines = f.read(1 << 20).splitlines()
                    found += [os.path.join(d, ln.strip()) for ln in lines
                              if ln.strip() and not ln.startswith(("#", "import ", "import\t"))]
                elif name.startswith("__editable__") and name.endswith("_finder.py"):
                    with open(path, encoding="utf-8", errors="replace") as f:
                        tree = ast.parse(f.read(1 << 20))
                    for node in tree.body:
                        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
                        if isinstance(target, ast.Name) and target.id == "MAPPING" and node.value is not None:
                            found += [os.path.dirname(str(v)) for v in ast.literal_eval(node.value).values()]
            except (OSError, SyntaxError, ValueError, TypeError, AttributeError, RecursionError):
                continue
    return [p for p in dict.fromkeys(found) if os.path.isdir(p)]


def user_path(skip: str | None = None) -> list[str]:
    """PYTHONPATH's folders as this process got them (`-I` left them out of `sys.path`), but `skip`."""
    return [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != skip]


def import_search(skip: str | None = None) -> list[str]:
    """The import path a process started with `-S` will have once its site loads (PYTHONPATH, its `sys.path`, the
    site folders and what their `.pth` files add), read without running anything: where `programs` and the read
    rules find Triton and the imports before confinement."""
    site_dirs = _site_dirs()
    return list(dict.fromkeys([*user_path(skip), *sys.path, *site_dirs, *site_paths(site_dirs)]))


def load_site() -> None:
    """What `python` without `-S` does at start (site-packages, `.pth` files, `sitecustomize`), now confined."""
    import site

    try:
        site.main()
    except Exception as exc:  # noqa: BLE001 — as a failing sitecustomize at start: said, and the process goes on
        print(f"tritonlens: the interpreter's site failed to load ({type(exc).__name__}: {exc})", file=sys.stderr)


_PR_SET_CHILD_SUBREAPER = 36


def child_subreaper() -> str | None:
    """Make this process the reaper of what it starts: a grandchild whose parent exits (a double fork) is
    re-parented here, not to init, so it stays among this process's descendants — counted against the memory bound
    (pool.resident_bytes) and ended with the job (pool.left_behind). None when done, else why not."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        return (f"no child subreaper ({os.strerror(ctypes.get_errno())}): a double-forked grandchild leaves the "
                "memory count")
    return None


def loaded_files() -> list[str]:
    """The files of every module this process has loaded so far: what ran before the sandbox was up, for doctor and
    the attack tests (none may lie in a workspace or on PYTHONPATH)."""
    return sorted({f for m in list(sys.modules.values()) if isinstance(f := getattr(m, "__file__", None), str)})


def boot(box_json: str, argv: list[str]) -> None:
    """The first thing a confined process runs (`command`): confine, then take the working directory and import
    path the process would have had, then run the entry point. Until confine() returns only the standard library
    and tritonlens's own modules are imported, from their installed places."""
    import importlib
    import json

    global STATE
    box = json.loads(box_json)
    load_support(box.get("support") or {})
    if box.get("tools"):
        from ..device.answers import prepare_tools

        prepare_tools(box["tools"])
    gpu = bool(box.get("gpu"))
    # PYTHONPATH as this process got it (a launcher may have put another Triton there), which -I left out
    users = user_path(skip=PACKAGE_ROOT)
    search = import_search(skip=PACKAGE_ROOT)
    reaper = child_subreaper()
    STATE = confine(box["folder"], programs(box.get("tools"), gpu, search), gpu, box.get("reads") or [], search)
    STATE["loaded_before"] = loaded_files()
    if reaper:
        STATE["missing"].append(reaper)
    load_site()
    module, _, function = box["entry"].partition(":")
    entry = getattr(importlib.import_module(module), function or "main")  # tritonlens's own, before the paths
    # as `python -m` started in `cwd` with PYTHONPATH would have: cwd first, then PYTHONPATH
    sys.path[1:1] = users
    if box.get("cwd"):
        sys.path.insert(0, box["cwd"])
        try:
            os.chdir(box["cwd"])
        except OSError:
            pass
    entry(argv)
