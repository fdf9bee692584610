"""A repository nobody vetted, checked as an attacker's pull request would be: module code that runs while a kernel's
module is imported tries to write files outside the worker's folder, run programs, reach the network, read the
checking process's secrets, and talk to the checking process through the worker's pipe. Each attempt is a real file;
each test asserts what a user would see — the finding, the exit code — and that the marker file the attack meant to
write does not exist."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from tritonlens.cli import main as cli_main
from conftest import evidence

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux's")

SECRET = "tritonlens-test-secret-3f9c2b"

KERNEL = '''
# tritonlens: x_ptr=*fp32, n=i32%16, BLOCK=1024
@triton.jit
def add_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)
'''


def check(capsys, path, *args: str) -> tuple[int, list[dict], str]:
    code = cli_main(["check", str(path), "--target", "cuda:90", "--workers", "1", "--format", "json", *args])
    out = capsys.readouterr()
    return code, json.loads(out.out), out.out + out.err


def module(tmp_path, name: str, prelude: str, kernel: str = KERNEL) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text("import os\nimport subprocess\nimport triton\nimport triton.language as tl\n"
                    + textwrap.dedent(prelude) + kernel)
    return str(path)


# Each attack's module-level code, run in full (every top-level statement); MARK is a file beside the module.
ATTACKS = {
    "os_system": 'os.system("touch MARK")\n',
    "subprocess": 'subprocess.run(["/usr/bin/touch", "MARK"])\n',
    "getattr_chain": 'getattr(os, "system")("touch MARK")\n',
    "map_callable": 'list(map(os.system, ["touch MARK"]))\n',
    "class_body": 'class Evil:\n    os.system("touch MARK")\n',
    "open_write": 'open("MARK", "w").write("pwned")\n',
    "shell_redirect": 'os.system("echo pwned > MARK")\n',
    "via_python": 'import sys\nsubprocess.run([sys.executable, "-c", "open(\'MARK\', \'w\')"])\n',
    "via_loader": 'subprocess.run(["/lib64/ld-linux-x86-64.so.2", "/bin/sh", "-c", "touch MARK"])\n',
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_module_code_cannot_write_or_run_programs(confined, tmp_path, capsys, attack):
    mark = tmp_path / f"{attack}.marker"
    code_text = "try:\n" + textwrap.indent(ATTACKS[attack].replace("MARK", str(mark)), "    ") \
        + "except Exception:\n    pass\n"
    path = module(tmp_path, attack, code_text)
    code, findings, _ = check(capsys, path, "--module-execution", "full")
    assert not mark.exists(), f"{attack} wrote {mark}"
    assert code == 0 and findings == [], findings  # the kernel itself compiles: the sandbox stops only the attack


def test_what_the_sandbox_refuses_is_tritonlenss_limit_not_the_users_error(confined, tmp_path, capsys, monkeypatch):
    """A refusal of the sandbox is tritonlens's limit, and the findings say so, with the way out for a repository the
    user trusts. An import that needs a file outside (a library's cache written at import) is one SRC006 info that
    names the file and the sandbox, not a warning about the module. A compiler tool the sandbox will not start (a
    `TRITON_PTXAS_PATH` wrapper script: its `/bin/sh` is not among the programs allowed) is SRC007, not an SRC001
    compile error. Neither sets check's exit code; unconfined, the same kernel compiles."""
    import triton

    monkeypatch.setenv("TRITONLENS_CACHE_DIR", str(tmp_path / "cache"))
    outside = tmp_path / "outside"
    outside.mkdir()
    path = module(tmp_path, "cachey", f'open({str(outside / "cache.db")!r}, "w").write("x")\n')
    code, findings, _ = check(capsys, path, "--module-execution", "full")
    assert code == 0 and [(f["code"], f["severity"]) for f in findings] == [("SRC006", "info")], findings
    message = evidence(findings[0])
    assert "tritonlens's sandbox refused" in message and "cache.db" in message, message
    assert "not an error in the module" in message and "TRITONLENS_NO_SANDBOX=1" in message, message
    assert not (outside / "cache.db").exists()

    ptxas = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
    wrapper = tmp_path / "tools" / "ptxas"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec {ptxas} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("TRITON_PTXAS_PATH", str(wrapper))
    plain = module(tmp_path, "plain", "")
    code, findings, _ = check(capsys, plain)
    assert code == 0 and [(f["code"], f["severity"]) for f in findings] == [("SRC007", "info")], findings
    message = evidence(findings[0])
    assert "refused by tritonlens's sandbox" in message and str(wrapper) in message, message
    assert "not an error in the kernel" in message, message
    monkeypatch.setenv("TRITONLENS_NO_SANDBOX", "1")
    code, findings, _ = check(capsys, plain)
    assert code == 0 and findings == [], findings


def test_definitions_slice_bypasses_run_confined(confined, tmp_path, capsys):
    """The default (definitions) keeps what the kernels use; code hidden in those parts — a chained call, a callable
    passed to map, a decorator's argument, a helper decorator's default — runs (unconfined, each writes its
    marker), inside the sandbox."""
    marks = [tmp_path / f"m{i}" for i in range(4)]
    path = module(tmp_path, "sliced", f'''
        def keep(_=os.system("touch {marks[0]}")):
            return lambda fn: fn


        SCALE = tl.constexpr((getattr(os, "system")("touch {marks[1]}") or 0) + 2)
        SHIFT = tl.constexpr(len(list(map(os.system, ["touch {marks[2]}"]))))
        ''', kernel=f'''
# tritonlens: x_ptr=*fp32, n=i32%16, BLOCK=1024
@keep()
@triton.jit(do_not_specialize=[os.system("touch {marks[3]}") and "n"])
def add_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * SCALE + SHIFT, mask=offs < n)
''')
    code, findings, _ = check(capsys, path)
    assert not any(m.exists() for m in marks), [m.name for m in marks if m.exists()]
    assert code == 0 and findings == [], findings


def test_no_network(confined, tmp_path, capsys):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    reached: list[bool] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                server.accept()[0].close()
                reached.append(True)
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    path = module(tmp_path, "net", f'''
        import socket
        socket.create_connection(("127.0.0.1", {port}), timeout=2).sendall(b"secret")
        ''')
    try:
        code, findings, _ = check(capsys, path, "--module-execution", "full")
    finally:
        stop.set()
        thread.join(2)
        server.close()
    assert not reached, "module code reached a listening port"
    assert [f["code"] for f in findings] == ["SRC006"] and "PermissionError" in evidence(findings[0]), findings


def test_secrets_of_the_checking_process_never_reach_the_output(confined, tmp_path):
    """A CI secret in the checking process's environment: module code looks for it in its own environment and in
    the checking process's (/proc/PPID/environ) and puts what it found in its error, which check prints."""
    path = module(tmp_path, "leak", '''
        found = [os.environ.get("TRITONLENS_TEST_TOKEN", "")]
        for pid in (os.getppid(), os.getppid() - 1):
            try:
                found.append(open(f"/proc/{pid}/environ").read())
            except OSError as exc:
                found.append(str(exc))
        raise RuntimeError("leaked: " + " ".join(found))
        ''')
    env = {**os.environ, "TRITONLENS_TEST_TOKEN": SECRET}
    run = subprocess.run([sys.executable, "-m", "tritonlens", "check", path, "--target", "cuda:90", "--workers", "1",
                          "--format", "json", "--module-execution", "full"], capture_output=True, text=True,
                         env=env, timeout=300)
    findings = json.loads(run.stdout)
    assert [f["code"] for f in findings] == ["SRC006"] and "leaked:" in evidence(findings[0]), findings
    assert "Permission denied" in evidence(findings[0]), findings
    assert SECRET not in run.stdout + run.stderr


def test_a_named_variable_is_passed(confined, tmp_path, capsys, monkeypatch):
    """What the user names in tritonlens.env (`--env NAME=value`) reaches the imports; nothing else does."""
    path = module(tmp_path, "named", '''
        if os.environ.get("MYLIB_DEVICE") != "cuda":
            raise RuntimeError("MYLIB_DEVICE is not set")
        ''')
    code, findings, _ = check(capsys, path, "--module-execution", "full", "--env", "MYLIB_DEVICE=cuda")
    assert code == 0 and findings == [], findings


def test_a_crafted_pickle_on_the_worker_pipe_runs_nothing(confined, tmp_path, capsys):
    """Module code writes a pickle whose loading would run a shell command in the checking process, as the worker's
    answer. The answer is JSON-only: the check reports a worker failure for that file and goes on."""
    mark = tmp_path / "parent.marker"
    evil = module(tmp_path, "evil_pickle", f'''
        import sys
        from multiprocessing.connection import Connection

        class Payload:
            def __reduce__(self):
                return (os.system, ("touch {mark}",))

        Connection(int(sys.argv[-2]), readable=False).send(Payload())
        ''')
    code, findings, _ = check(capsys, evil, "--module-execution", "full")
    assert not mark.exists(), "the worker's pickle ran in the checking process"
    assert [(f["code"], f["severity"]) for f in findings] == [("SRC007", "info")], findings
    assert "malformed answer" in evidence(findings[0]), findings
    assert code == 0


def test_garbage_on_the_worker_pipe_is_a_worker_failure_and_the_run_goes_on(confined, tmp_path, capsys):
    garbage = module(tmp_path, "garbage", '''
        import sys
        from multiprocessing.connection import Connection

        Connection(int(sys.argv[-2]), readable=False).send_bytes(b"\\x80\\x04\\x95garbage" + b"[" * 100000)
        ''')
    fine = module(tmp_path, "fine", "")
    code = cli_main(["check", garbage, fine, "--target", "cuda:90", "--workers", "1", "--format", "json",
                     "--module-execution", "full"])
    findings = json.loads(capsys.readouterr().out)
    assert [(os.path.basename(f["path"]), f["code"]) for f in findings] == [("garbage.py", "SRC007")], findings
    assert code == 0


HELPER_KERNEL = '''
from {helper} import SCALE

# tritonlens: x_ptr=*fp32, n=i32%16, BLOCK=1024
@triton.jit
def add_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * SCALE, mask=offs < n)
'''


def test_a_module_that_crashes_at_import_is_blamed(tmp_path, capsys):
    (tmp_path / "crashing_helper.py").write_text("import ctypes\nctypes.string_at(0)\nSCALE = 2\n")
    path = module(tmp_path, "uses_crash", "", kernel=HELPER_KERNEL.format(helper="crashing_helper"))
    code, findings, _ = check(capsys, path)
    assert [(f["code"], f["severity"]) for f in findings] == [("SRC007", "info")], findings
    message = evidence(findings[0])
    assert "importing the module crashed" in message and "`crashing_helper`" in message, message
    assert "SIGSEGV" in message and "compiler" not in message, message
    assert code == 0


def test_a_module_that_hangs_at_import_is_blamed(tmp_path, capsys):
    (tmp_path / "hanging_helper.py").write_text("import time\nwhile True:\n    time.sleep(1)\nSCALE = 2\n")
    path = module(tmp_path, "uses_hang", "", kernel=HELPER_KERNEL.format(helper="hanging_helper"))
    code, findings, _ = check(capsys, path, "--timeout", "8")
    assert [(f["code"], f["severity"]) for f in findings] == [("SRC007", "info")], findings
    message = evidence(findings[0])
    assert "importing the module timed out" in message and "`hanging_helper`" in message, message
    assert "compileTimeout" not in message, message
    assert code == 0


def test_an_exception_while_importing_a_helper_names_the_helper(tmp_path, capsys):
    (tmp_path / "raising_helper.py").write_text("raise RuntimeError('no license server')\nSCALE = 2\n")
    path = module(tmp_path, "uses_raise", "", kernel=HELPER_KERNEL.format(helper="raising_helper"))
    code, findings, _ = check(capsys, path)
    assert [(f["code"], f["severity"]) for f in findings] == [("SRC006", "warning")], findings
    message = evidence(findings[0])
    assert "RuntimeError: no license server (while importing `raising_helper`)" in message, message


def test_what_module_code_prints_cannot_drive_the_terminal(tmp_path):
    path = module(tmp_path, "noisy", '''
        import sys
        print("\\x1b]0;pwned\\x07\\x1b[2J\\x1b[Hhello from import")
        print("\\x1b[31mred\\x1b[0m", file=sys.stderr)
        ''')
    run = subprocess.run([sys.executable, "-m", "tritonlens", "check", path, "--target", "cuda:90", "--workers", "1",
                          "--module-execution", "full"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "hello from import" in run.stderr and "\x1b" not in run.stdout + run.stderr, repr(run.stderr)


def test_what_module_code_forks_dies_with_its_worker(tmp_path):
    """A module that leaves a child looping (to mine, to wait for a later chance) and then hangs: the time-out stops
    the worker and the child."""
    (tmp_path / "forking_helper.py").write_text(textwrap.dedent(f'''\
        import os, sys, time
        pid = os.fork()
        if pid == 0:
            while True:
                time.sleep(0.1)
        print("CHILD", pid, flush=True)
        time.sleep(600)
        SCALE = 2
        '''))
    path = module(tmp_path, "uses_fork", "", kernel=HELPER_KERNEL.format(helper="forking_helper"))
    run = subprocess.run([sys.executable, "-m", "tritonlens", "check", path, "--target", "cuda:90", "--workers", "1",
                          "--timeout", "8", "--format", "json"], capture_output=True, text=True, timeout=300)
    child = int(next(line.split()[1] for line in run.stderr.splitlines() if line.startswith("CHILD")))
    for _ in range(50):
        if not os.path.exists(f"/proc/{child}") or "zombie" in open(f"/proc/{child}/status").read().lower():
            break
        time.sleep(0.1)
    else:
        os.kill(child, 9)
        pytest.fail("the forked child outlived its worker")
    assert [f["code"] for f in json.loads(run.stdout)] == ["SRC007"], run.stdout


def test_a_variable_named_without_a_value_passes_the_checking_process_value(confined, tmp_path, monkeypatch):
    """`"tritonlens.env": {"MYLIB_HOME": null}`: the editor's own value reaches the imports; unnamed, it does not."""
    from tritonlens.pipeline import Checker
    from tritonlens.settings import Settings

    monkeypatch.setenv("MYLIB_HOME", "/opt/mylib")
    path = module(tmp_path, "passed", '''
        if os.environ.get("MYLIB_HOME") != "/opt/mylib":
            raise RuntimeError("MYLIB_HOME is not set")
        ''')
    for env, codes in (({}, ["SRC006"]), ({"MYLIB_HOME": None}, [])):
        settings = Settings.from_dict({"target": "cuda:90", "maxWorkers": 1, "moduleExecution": "full", "env": env})
        assert not settings.problems, settings.problems
        with Checker(settings) as checker:
            report = checker.check_file(path)
        assert [f.code for f in report.all_findings()] == codes, (env, report.all_findings())
