"""Bounds per file, per kernel and per run: one hostile (or generated) file costs its own diagnostic, not the run.

A 200,000-term expression once made the whole check an internal error (exit 2, an empty SARIF) and silently turned
off another kernel's launch-site specs; a 38 MB source cost 3.3 GB; 1,000 launch sites made 1,000 compiles."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from conftest import evidence

TRITONLENS = os.path.join(os.path.dirname(sys.executable), "tritonlens")

KERNEL = '''\
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def launch(x):
    add_kernel[(1,)](x, x.numel(), BLOCK=256)
'''


def check(cwd, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([TRITONLENS, "check", *args, "--target", "cuda:90", "--workers", "1"], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TRITONLENS_CACHE_DIR": str(cwd / ".cache")})


def test_a_file_too_deep_to_parse_gets_one_finding_and_the_run_goes_on(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (tmp_path / "good.py").write_text(KERNEL)
    # it mentions add_kernel, so the launch-site scan of add_kernel reads it too
    (tmp_path / "deep.py").write_text("from good import add_kernel\n\nX = " + "+".join(["1"] * 200_000) + "\n")
    done = check(tmp_path, "good.py", "deep.py", "--format", "json")
    assert done.returncode == 0, done.stderr  # the exit code of the other findings: none
    findings = json.loads(done.stdout)
    assert [(os.path.basename(f["path"]), f["line"], f["code"], f["severity"]) for f in findings] == \
           [("deep.py", 1, "SRC007", "info")], findings
    assert "nests more than 250 levels deep" in evidence(findings[0])
    # good.py's kernel compiled from its launch site (BLOCK=256), not left without a value (SRC002)
    text = check(tmp_path, "good.py", "deep.py")
    assert "good.py::add_kernel [cuda:90, num_warps=4, num_stages=3, BLOCK=256" in text.stdout, text.stdout
    sarif = check(tmp_path, "good.py", "deep.py", "--format", "sarif")
    assert sarif.returncode == 0 and json.loads(sarif.stdout)["runs"][0]["results"], sarif.stdout


def test_a_38_mb_file_is_not_read(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    table = "".join(f"    {i},\n" for i in range(4_200_000))
    (tmp_path / "big.py").write_text(KERNEL + "\nTABLE = [\n" + table + "]\n")
    assert os.path.getsize(tmp_path / "big.py") > 38e6
    (tmp_path / "measure.py").write_text(
        "import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, done.returncode)\n"
        "print(done.stdout)\n")
    out = subprocess.run([sys.executable, str(tmp_path / "measure.py"), TRITONLENS, "check", "big.py", "--target",
                          "cuda:90", "--format", "json"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "TRITONLENS_CACHE_DIR": str(tmp_path / ".cache")})
    head, _, rest = out.stdout.partition("\n")
    max_kb, code = map(int, head.split())
    findings = json.loads(rest)
    assert code == 0 and [(f["code"], f["line"]) for f in findings] == [("SRC007", 1)], (findings, out.stderr)
    assert "past tritonlens's bound of 12 MB" in evidence(findings[0])
    assert max_kb < 600_000, f"checking a 38 MB file took {max_kb >> 10} MB"  # 3.3 GB before


def test_launch_sites_are_bounded_per_kernel(checker, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    path = tmp_path / "sites.py"
    path.write_text(KERNEL.replace("BLOCK: tl.constexpr)", "BLOCK: tl.constexpr, C: tl.constexpr)")
                    .replace("* 2,", "* C,").split("def launch")[0]
                    + "def launch(x):\n" + "".join(f"    add_kernel[(1,)](x, x.numel(), BLOCK=64, C={i})\n"
                                                   for i in range(1000)))
    report = checker.check_file(str(path), workspace_root=str(tmp_path))
    (kr,) = report.kernels
    assert len(kr.compiled) == 12, len(kr.compiled)
    (limit,) = [f for f in report.all_findings() if f.code == "SRC007"]
    assert limit.severity == "info" and limit.line == 6 and limit.data["kind"] == "SpecLimit"
    assert "12 of 1000 launch-site specs compiled" in evidence(limit) and "988 skipped" in evidence(limit)


def test_launch_sites_are_bounded_per_run(checker, tmp_path, monkeypatch):
    from tritonlens.frontend import specs

    monkeypatch.setattr(specs, "MAX_SITE_SPECS_PER_KERNEL", 3)
    monkeypatch.setattr(specs, "MAX_SITE_SPECS_PER_RUN", 4)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    paths = []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.py"
        path.write_text(KERNEL.replace("add_kernel", f"{name}_kernel").split("def launch")[0]
                        + "def launch(x):\n" + "".join(f"    {name}_kernel[(1,)](x, x.numel(), BLOCK={b})\n"
                                                       for b in (16, 32, 64, 128, 256)))
        paths.append(str(path))
    a, b = list(checker.check_files(paths))
    assert [len(a.kernels[0].compiled), len(b.kernels[0].compiled)] == [3, 1]
    (limit,) = [f for f in b.all_findings() if f.code == "SRC007"]
    assert "1 of 5 launch-site specs compiled (the bound on launch-site compiles per run was reached)" in \
           evidence(limit), evidence(limit)

