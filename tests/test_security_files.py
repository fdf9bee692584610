"""Files of a workspace that tritonlens reads — captures, bench results, a baseline, launch sites — written by an
attacker: a capture file that is a link to /dev/zero, JSON nested 100,000 deep, a 100,000-digit literal in a launch
argument, terminal escape sequences in a capture's path. Each check must end, in bounded time, with a message that
names the file — never a hang, never "internal error" (exit 2), never the escape sequence on the terminal."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

KERNEL = '''\
import triton
import triton.language as tl


# tritonlens: x_ptr=*fp32, n=i32%16, BLOCK=1024
@triton.jit
def add_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)
'''
DEEP = "[" * 100_000 + "]" * 100_000


def workspace(tmp_path, kernel: str = KERNEL):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (tmp_path / ".tritonlens").mkdir()
    path = tmp_path / "k.py"
    path.write_text(kernel)
    return path


def check(tmp_path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tritonlens", "check", *args, "--target", "cuda:90",
                           "--workers", "1"], cwd=tmp_path, capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_capture_file_linked_to_dev_zero_is_not_read(tmp_path):
    path = workspace(tmp_path)
    os.symlink("/dev/zero", tmp_path / ".tritonlens" / "captures.jsonl")
    run = check(tmp_path, str(path), timeout=120)
    assert run.returncode == 0, run.stderr
    # a link out of the workspace is not followed at all (where it leads is not looked at)
    assert "captures.jsonl is outside the workspace" in run.stdout + run.stderr, run.stdout + run.stderr


def test_a_capture_file_that_is_a_fifo_is_not_waited_on(tmp_path):
    path = workspace(tmp_path)
    os.mkfifo(tmp_path / ".tritonlens" / "captures.jsonl")
    run = check(tmp_path, str(path), timeout=120)
    assert run.returncode == 0, run.stderr
    assert "not a regular file" in run.stdout + run.stderr


def test_bench_results_nested_deep_are_ignored(tmp_path):
    path = workspace(tmp_path)
    deep_record = '{"measured": true, "identity": ' + DEEP + "}"
    good = json.dumps({"measured": True, "identity": "abc", "time_us": 12.5})
    (tmp_path / ".tritonlens" / "bench.jsonl").write_text(DEEP + "\n" + deep_record + "\n" + good + "\n")
    from tritonlens.report.cost import load_bench

    assert set(load_bench(str(tmp_path))) == {"abc"}  # the deep lines are skipped, the good one kept
    run = check(tmp_path, str(path))
    assert run.returncode == 0 and "internal error" not in run.stderr, run.stderr


def test_a_baseline_nested_deep_is_refused_by_name(tmp_path):
    path = workspace(tmp_path)
    baseline = tmp_path / ".tritonlens" / "baseline.json"
    baseline.write_text('{"files": ' + DEEP + "}")
    run = check(tmp_path, str(path), "--baseline", str(baseline))
    out = run.stdout + run.stderr
    assert "internal error" not in out and "RecursionError" not in out, out
    assert "baseline.json: JSON nested too deep" in out, out


def test_a_baseline_with_terminal_escapes_is_refused(tmp_path):
    path = workspace(tmp_path)
    baseline = tmp_path / ".tritonlens" / "baseline.json"
    baseline.write_text(json.dumps({"files": {"k.py\x1b]0;pwned\x07\x1b[2J": {"kernels": {}}}}))
    run = check(tmp_path, str(path), "--baseline", str(baseline))
    out = run.stdout + run.stderr
    assert "\x1b" not in out and "control characters" in out, out


def test_a_huge_literal_in_a_launch_argument_costs_nothing(tmp_path):
    """`min(triton.next_power_of_2(n), <a 100,000-digit literal>)` took memory and time quadratic in its size."""
    huge = "0x" + "f" * 100_000
    unhinted = KERNEL.replace("# tritonlens: x_ptr=*fp32, n=i32%16, BLOCK=1024\n", "")
    path = workspace(tmp_path, unhinted + textwrap.dedent(f'''

        def launch(x, n):
            BLOCK = min(triton.next_power_of_2(n), {huge})
            add_kernel[(1,)](x, n, BLOCK=BLOCK)
        '''))
    start = time.perf_counter()
    run = check(tmp_path, str(path), "--format", "json", timeout=120)
    took = time.perf_counter() - start
    assert run.returncode in (0, 1) and "internal error" not in run.stderr, run.stderr
    assert took < 60, f"check took {took:.0f} s"
    findings = json.loads(run.stdout)
    assert [f["code"] for f in findings] == ["SRC002"], findings  # BLOCK is not known: said, not guessed


def test_terminal_escapes_in_a_capture_path_are_never_printed(tmp_path):
    path = workspace(tmp_path)
    evil = "k.py\x1b]0;pwned\x07\x1b[2J\x1b[H"
    line = {"version": 1, "path": evil, "kernel": "add_kernel\x1b[31m", "signature": {"x_ptr": "*fp32", "n": "i32",
            "BLOCK": "constexpr"}, "constants": {"BLOCK": 256}, "attrs": {}, "options": {"num_warps": 4},
            "target": "cuda:90"}
    (tmp_path / ".tritonlens" / "captures.jsonl").write_text(json.dumps(line) + "\n")
    run = check(tmp_path, str(path))
    out = run.stdout + run.stderr
    assert "\x1b" not in out and "\x07" not in out, repr(out)
    assert "control characters" in out, out


def test_terminal_escapes_in_a_kernel_file_name_are_printed_escaped(tmp_path):
    """A file in the workspace named to set the terminal's title and clear its screen: check names it, escaped."""
    workspace(tmp_path)
    evil = "k\x1b]0;pwned\x07\x1b[2J.py"
    (tmp_path / evil).write_text(KERNEL.replace("n=i32%16", "n=i32"))
    run = check(tmp_path, ".")
    out = run.stdout + run.stderr
    assert "\x1b" not in out and "\x07" not in out, repr(out)
    assert "k\\x1b]0;pwned\\x07\\x1b[2J.py:" in run.stdout, run.stdout  # its findings, under the escaped name


def test_captures_of_files_outside_the_workspace_say_nothing_of_whether_they_exist(tmp_path):
    """A capture file may name any path. Those that lead outside the workspace (absolute, `../`, or through a
    committed link) are said to be outside, alike whether a file is there or not: the check's output (a CI log)
    must not tell which files exist outside."""
    ws = tmp_path / "ws"
    ws.mkdir()
    path = workspace(ws)
    (tmp_path / "there.py").write_text("x = 1\n")
    (ws / "out").symlink_to(tmp_path)

    def said(name: str) -> str:
        line = {"version": 1, "kernel": "add_kernel", "signature": {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                "constants": {"BLOCK": 256}, "attrs": {}, "options": {"num_warps": 4}, "target": "cuda:90"}
        paths = [str(tmp_path / name), f"../{name}", f"out/{name}"]
        (ws / ".tritonlens" / "captures.jsonl").write_text("".join(json.dumps({**line, "path": p}) + "\n"
                                                                   for p in paths))
        run = check(ws, str(path))
        assert run.returncode == 0, run.stderr
        return [ln for ln in run.stderr.splitlines() if "captures.jsonl" in ln]

    there, gone = said("there.py"), said("gone.py")
    assert there == [ln.replace("gone.py", "there.py") for ln in gone], (there, gone)
    assert len(there) == 1 and "3 captures name files outside the workspace" in there[0], there
