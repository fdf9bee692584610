"""The real-code corpus: Liger-Kernel with the launches its own test suite made on an H200 (529 distinct compiles of 22
kernels). Every one of those compiles ran on the GPU, so each must compile here for cuda:90, with no SRC001 on any of
them; and over all of `liger_kernel/ops/*.py` nothing may be an error. Run alone with `pytest -m corpus`.

The corpus lives beside the checkout (`../shared/corpus/`, or `TRITONLENS_CORPUS`); it is not part of the project, so
the test skips with the reason when it is absent (a user's own clone) or when torch, which Liger-Kernel's modules
import, is not installed.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
from collections import Counter

import pytest
from conftest import missing

from tritonlens.frontend.captures import unmatched
from tritonlens.pipeline import Checker
from tritonlens.settings import Settings, default_workers

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.environ.get("TRITONLENS_CORPUS") or os.path.join(HERE, "..", "..", "shared", "corpus")
LIGER = os.path.join(CORPUS, "liger-kernel")

pytestmark = [pytest.mark.corpus, pytest.mark.slow]


def _skip_reason() -> str | None:
    if not os.path.isdir(os.path.join(LIGER, "src", "liger_kernel")):
        return f"the real-code corpus is not beside this checkout ({os.path.normpath(LIGER)}; set TRITONLENS_CORPUS)"
    try:
        import torch  # noqa: F401
    except ImportError:
        return "torch is not installed: Liger-Kernel's modules import it (pip install torch)"
    return None


@pytest.fixture(scope="module")
def liger(tmp_path_factory):
    reason = _skip_reason()
    if reason:
        missing("corpus", reason)
    # A private copy: the corpus folder may be read-only, and the check must find `.tritonlens/` from the files.
    root = tmp_path_factory.mktemp("corpus") / "liger-kernel"
    shutil.copytree(LIGER, root)
    src = str(root / "src")
    with open(os.path.join(src, ".tritonlens", "captures.jsonl"), encoding="utf-8") as f:
        caps = [json.loads(line) for line in f if line.strip()]
    files = sorted(glob.glob(os.path.join(src, "liger_kernel", "ops", "*.py")))
    # Every captured compile, not the representative set `check` makes by default: each of them ran on the GPU.
    settings = Settings(target="cuda:90", compile_timeout=300, all_captures=True)
    settings.max_workers = default_workers(editor=False)
    with Checker(settings) as checker:
        reports = list(checker.check_files(files))
    return src, caps, reports


def test_every_captured_kernel_compiles_with_no_src001(liger):
    src, caps, reports = liger
    captured = Counter((c["path"], c["kernel"]) for c in caps)
    by_key = {(os.path.relpath(r.path, src), kr.kernel.name): kr for r in reports for kr in r.kernels}
    not_compiled, failed, src001 = [], [], []
    for key in captured:
        kr = by_key.get(key)
        if kr is None or not kr.compiled:
            not_compiled.append(key)
            continue
        failed += [(key, cs.spec.label, cs.artifacts.error.message[:200]) for cs in kr.compiled
                   if cs.artifacts is None or cs.artifacts.error is not None]
        src001 += [(key, f.message[:200]) for f in kr.findings if f.code == "SRC001"]
        # Each compiled spec is a captured one (the capture replaced the guesses), and each capture was compiled.
        assert all(cs.spec.label.startswith("capture") for cs in kr.compiled), key
        assert len(kr.compiled) == kr.captures["captured"], (key, len(kr.compiled), kr.captures)
    assert not not_compiled, f"captured kernels without a compile: {not_compiled}"
    assert not failed, failed[:5]
    assert not src001, src001[:5]
    assert len(captured) == 22
    assert sum(len(by_key[k].compiled) for k in captured) == len(caps) == 529


def test_no_errors_and_one_src002_per_kernel_over_all_ops(liger):
    _, _, reports = liger
    findings = [f for r in reports for f in r.all_findings()]
    errors = [(f.path, f.line, f.code, f.message[:200]) for f in findings if f.severity == "error"]
    assert not errors, errors[:5]
    per_kernel = Counter((f.path, f.kernel) for f in findings if f.code == "SRC002")
    assert per_kernel and max(per_kernel.values()) == 1
    assert not [f for f in findings if f.code == "SRC006"], "a module of the corpus did not import"


def test_every_capture_is_matched(liger):
    src, _, reports = liger
    checked = {r.path: {k.kernel.name for k in r.kernels} for r in reports}
    assert unmatched(src, None, checked) == []
