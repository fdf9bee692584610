"""Bootstrap put on PYTHONPATH by `tritonlens capture`: installs the capture hook in any Python process started with
TRITONLENS_CAPTURE=1, then runs the sitecustomize that this one shadows (if any), so the user's setup is unchanged.

Nothing here imports triton: the hook installs itself when the program imports triton, if it ever does.
"""
import os
import sys


def _chain_to_shadowed_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    saved_path = list(sys.path)
    mine = sys.modules.pop("sitecustomize", None)
    try:
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
        import importlib

        try:
            importlib.import_module("sitecustomize")
        except ImportError:
            pass
    finally:
        sys.path[:] = saved_path
        if mine is not None:
            sys.modules["sitecustomize"] = mine


def _install() -> None:
    if os.environ.get("TRITONLENS_CAPTURE", "") in ("", "0"):
        return
    package_root = os.environ.get("TRITONLENS_PACKAGE_ROOT")
    if package_root and package_root not in sys.path:
        sys.path.append(package_root)  # last: never shadows the user's own modules
    try:
        if os.environ.get("TRITONLENS_TRIALS"):  # `tune`'s run of the command: its trials, nothing recorded
            from tritonlens.gpu.trials import install_on_import
        else:
            from tritonlens.gpu.capture import install_on_import

        install_on_import()
    except Exception as exc:  # noqa: BLE001 — a capture problem must never stop the user's program
        sys.stderr.write(f"tritonlens capture: hook not installed: {type(exc).__name__}: {exc}\n")


_install()
_chain_to_shadowed_sitecustomize()
