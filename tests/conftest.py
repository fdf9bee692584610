"""Shared test setup: every test compiles with the real Triton on the CPU, into a throwaway artefact cache.

Missing dependencies: a test that needs something beyond tritonlens itself calls `missing(NAME, REASON)` when it is
not there (or `require_module(NAME, REASON)` for a Python module, which returns it). Outside CI that skips the test
and says why. Under CI (`TRITONLENS_CI=1`, set by `.ci/run`) a dependency the project declares — DECLARED below:
installed by the `test` extra or by `.ci/run` — fails the test instead, so that a broken install cannot pass as a
clean run of fewer tests. What CI cannot have (a GPU, Nsight Compute) still skips, saying so: use `pytest.skip`.
"""
import importlib
import os
import shutil
import tempfile
from typing import Any, NoReturn

import pytest

# What CI installs: the `test` extra (torch, selenium, hypothesis), .ci/run (nvim, Debian's chromium and its
# chromedriver, code-server) and the real-code corpus beside the checkout.
DECLARED = frozenset({"torch", "selenium", "hypothesis", "corpus", "nvim", "chromium", "code-server"})
CI = os.environ.get("TRITONLENS_CI", "") not in ("", "0")


def missing(name: str, reason: str) -> NoReturn:
    """The test cannot run because `name` is missing: skip it with `reason` — or, under CI, fail it when `name` is
    a declared dependency (DECLARED)."""
    if CI and name in DECLARED:
        pytest.fail(f"{name} is a declared test dependency but is missing under CI: {reason}", pytrace=False)
    pytest.skip(reason)


def require_module(name: str, reason: str, module: str | None = None) -> Any:
    """Import `module` (default `name`) or report `name` missing (see `missing`); at module level this skips (or,
    under CI, fails) the whole test file."""
    try:
        return importlib.import_module(module or name)
    except ImportError:
        if CI and name in DECLARED:
            pytest.fail(f"{name} is a declared test dependency but cannot be imported under CI: {reason}",
                        pytrace=False)
        pytest.skip(reason, allow_module_level=True)

_CACHE = tempfile.mkdtemp(prefix="tritonlens-test-cache-")
os.environ["TRITONLENS_CACHE_DIR"] = _CACHE

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(REPO, "examples")


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_CACHE, ignore_errors=True)


@pytest.fixture(scope="session")
def confined():
    """What confines a compile worker here (compiler.sandbox.status); the test is skipped without Landlock."""
    from tritonlens.compiler import sandbox

    state = sandbox.status()
    if not state.get("landlock"):
        pytest.skip(f"no Landlock here: {sandbox.describe(state)}")
    return state


@pytest.fixture(scope="session")
def checker():
    """One Checker (and worker pool) for the session, compiling for cuda:90."""
    from tritonlens.pipeline import Checker
    from tritonlens.settings import Settings

    with Checker(Settings(target="cuda:90", max_workers=2)) as c:
        yield c


@pytest.fixture(scope="module")
def checkers():
    """`checkers("cuda:80")`: one Checker per target, made on first use, for a test module."""
    from tritonlens.pipeline import Checker
    from tritonlens.settings import Settings

    made: dict = {}

    def get(target: str):
        if target not in made:
            made[target] = Checker(Settings(target=target, max_workers=2))
        return made[target]

    yield get
    for c in made.values():
        c.close()


def evidence(f) -> str:
    """A finding's one-line message and every line of its evidence (`Finding.details`: the rule's full account, the
    spec, the cost, the verdict's reason) — what the hover and `check --verbose` show under the squiggle's line. `f` is
    a Finding, a finding of `check --format json`, or an LSP diagnostic (its details are in its data)."""
    if isinstance(f, dict):
        return "\n".join([f["message"], *f.get("details", [])])
    details = f.details if hasattr(f, "details") else (getattr(f, "data", None) or {}).get("details", [])
    return "\n".join([f.message, *details])


def verbose_findings(out: str, marker: str) -> list[str]:
    """Each finding line of `check --verbose` output holding `marker`, with the evidence lines printed under it."""
    lines = out.splitlines()
    blocks = []
    for at, line in enumerate(lines):
        if marker in line:
            end = at + 1
            while end < len(lines) and lines[end].startswith("    "):
                end += 1
            blocks.append("\n".join(lines[at:end]))
    return blocks
