"""The process that runs a kernel file's launch code for `gpu/autocapture.py`, started as a compile worker is
(`compiler.sandbox.command`: `python -I -S`, in a folder of its own, the sandbox's modules from tritonlens's own
environment), so that it is confined (`sandbox.boot`) before anything of the workspace or PYTHONPATH can load and
before the interpreter's site runs; `main` then installs the no-GPU capture hook and runs each launcher in turn: a
`__main__` block or script with `runpy`, test functions with pytest (or, without pytest, each test function that
takes no argument). Each compile is recorded with what launched
it (`launched_by`). What a launcher raises ends that launcher, not the run; the last one's failure is the exit code.
"""
from __future__ import annotations

import json
import os
import sys
import traceback


def _set_launcher(label: str) -> None:
    from . import capture_hook

    capture_hook.LAUNCHED_BY[0] = label[:200]


def _run_script(path: str) -> None:
    import runpy

    sys.argv = [path]
    runpy.run_path(path, run_name="__main__")


class _TestsFailed(Exception):
    """Some tests failed (pytest printed which, and why)."""


class _Names:
    """pytest plugin: each compile a test makes is labelled with the test."""

    def __init__(self, label: str, path: str, here: bool) -> None:
        self.where = "this file" if here else f"`{os.path.basename(path)}`"
        self.label = label

    def pytest_collection_modifyitems(self, session, config, items) -> None:
        """Each test function's first case first, then each one's second, ...: a run cut at its time bound has
        launched what every test launches, not every case of the first test."""
        rank: dict[str, int] = {}
        order = []
        for i, item in enumerate(items):
            name = f"{item.location[0]}::{getattr(item, 'originalname', None) or item.name}"
            rank[name] = rank.get(name, -1) + 1
            order.append((rank[name], i))
        items[:] = [items[i] for _, i in sorted(order)]

    def pytest_runtest_setup(self, item) -> None:
        name = getattr(item, "originalname", None) or item.name
        _set_launcher(f"launched by `{name}` in {self.where}, no GPU")


def _run_tests(path: str, names: list[str], label: str, kernel_file: str) -> None:
    try:
        import pytest
    except ImportError:
        pytest = None
    here = os.path.abspath(path) == os.path.abspath(kernel_file)
    if pytest is not None:
        args = [path, "-q", "-p", "no:cacheprovider", "-o", "addopts=", "-p", "no:randomly", "--no-header",
                "-W", "ignore"]
        code = int(pytest.main(args, plugins=[_Names(label, path, here)]))
        if code == 1:  # tests failed: what they launched before is kept; pytest's summary says which and why
            raise _TestsFailed()
        if code not in (0, 5):  # 5: none collected
            raise RuntimeError(f"pytest stopped with exit code {code}")
        return
    import inspect
    import runpy

    namespace = runpy.run_path(path, run_name="tritonlens_autocapture_tests")
    for name in names:
        fn = namespace.get(name)
        if not callable(fn) or any(p.default is inspect.Parameter.empty
                                   for p in inspect.signature(fn).parameters.values()):
            continue
        _set_launcher(f"launched by `{name}` in {'this file' if here else os.path.basename(path)}, no GPU")
        try:
            fn()
        except Exception:  # noqa: BLE001 — one test's failure ends that test
            traceback.print_exc()


def run(argv: list[str]) -> None:
    """The entry `sandbox.boot` calls once the process is confined."""
    sys.exit(main(argv))


def main(argv: list[str]) -> int:
    from ..compiler import sandbox
    from ..compiler.worker import _exit_with_parent

    job = json.loads(argv[0])
    state = sandbox.STATE or {"missing": ["not started confined (compiler.sandbox.command)"]}

    _exit_with_parent()  # the run must not outlive what started it (a server killed while a test runs)
    if not state.get("on"):
        print(f"tritonlens autocapture: sandbox not available ({'; '.join(state.get('missing', []))})", flush=True)
    from .capture import HOOK_DIR
    from .capture_hook import install_on_import

    install_on_import()
    # the programs it starts (a test's subprocess) record their launches too, in the same box
    os.environ["PYTHONPATH"] = os.pathsep.join([HOOK_DIR] + [p for p in os.environ.get("PYTHONPATH", "").split(
        os.pathsep) if p])
    root = job["root"]
    for extra in (os.path.join(root, "src"), root):
        if os.path.isdir(extra) and extra not in sys.path:
            sys.path.insert(0, extra)
    failed = ""
    for launcher in job["launchers"]:
        path = launcher["path"]
        _set_launcher(launcher["label"])
        os.chdir(root)
        sys.path.insert(0, os.path.dirname(path))
        try:
            if launcher["kind"] == "tests":
                _run_tests(path, launcher["names"], launcher["label"], job["path"])
            else:
                _run_script(path)
        except _TestsFailed:
            failed = failed or "-"
        except SystemExit as exc:
            if exc.code not in (None, 0):
                failed = f"{os.path.basename(path)} exited with {exc.code}"
        except BaseException as exc:  # noqa: BLE001 — the launcher's failure, said; the next one still runs
            traceback.print_exc()
            failed = f"{os.path.basename(path)}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        finally:
            sys.path.remove(os.path.dirname(path)) if os.path.dirname(path) in sys.path else None
    if failed:
        if failed != "-":
            print(f"tritonlens autocapture: {failed}", flush=True)
        return 1
    return 0
