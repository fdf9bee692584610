"""Under CI (TRITONLENS_CI=1) a missing declared test dependency fails the test that needs it; elsewhere it skips and
says why. A GPU test skips without a GPU either way."""
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

NEEDS = '''\
import pytest
from conftest import missing, require_module


def test_needs_nvim():
    missing("nvim", "nvim is not installed")


def test_needs_a_module_nobody_has():
    require_module("torch", "torch is not installed", module="tritonlens_no_such_module")


def test_needs_a_gpu():
    pytest.skip("needs a local NVIDIA GPU")
'''


@pytest.mark.parametrize("ci", ["", "1"])
def test_a_missing_declared_dependency_fails_only_under_ci(tmp_path, ci):
    shutil.copy(os.path.join(HERE, "conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "test_needs.py").write_text(NEEDS)
    env = dict(os.environ, TRITONLENS_CI=ci)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rsf", "-p", "no:cacheprovider", "test_needs.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    tail = proc.stdout.strip().splitlines()[-1]
    if ci:
        assert proc.returncode == 1 and "2 failed, 1 skipped" in tail, proc.stdout
        assert "nvim is a declared test dependency but is missing under CI" in proc.stdout
        assert "torch is a declared test dependency but cannot be imported under CI" in proc.stdout
    else:
        assert proc.returncode == 0 and "3 skipped" in tail, proc.stdout
    assert "needs a local NVIDIA GPU" in proc.stdout  # said, not silent
