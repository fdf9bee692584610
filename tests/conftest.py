"""Shared test setup: every test compiles with the real Triton on the CPU, into a throwaway artefact cache."""
import os
import shutil
import tempfile

import pytest

_CACHE = tempfile.mkdtemp(prefix="tritonlens-test-cache-")
os.environ["TRITONLENS_CACHE_DIR"] = _CACHE

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(REPO, "examples")


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_CACHE, ignore_errors=True)


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
