"""The import path of tritonlens's own processes: never the working directory.

`python -m tritonlens` puts its working directory first on `sys.path`, and `python -c` puts `''` there: started in a
workspace (an editor that starts the server in the folder it opened, a CI step), a repository's `json.py`, `logging.py`
or `typing.py` would run in the checking process with the user's rights, before any sandbox. The VS Code client
starts the server isolated (`python -I`) in a folder of its own; this is the guard for every other way of starting it
(a Neovim configuration, a script): run before anything else is imported, it drops those entries. Dropping them is
safe: tritonlens itself is already imported (its submodules come from its package), and nothing tritonlens imports
lives in a workspace — a kernel's own imports are the compile workers', which get the working directory back on
their path once confined (compiler/sandbox.py)."""
from __future__ import annotations

import os
import sys


def drop_working_directory() -> None:
    """Remove from `sys.path` the relative entries (`''`, `.`) and those naming the working directory, but a folder
    of the interpreter's own installation."""
    try:
        cwd = os.path.realpath(os.getcwd())
    except OSError:  # the working directory was removed: only relative entries can name it
        cwd = None
    own = [os.path.realpath(p) + os.sep for p in {sys.prefix, sys.base_prefix, sys.exec_prefix} if p]

    def names_cwd(entry: str) -> bool:
        if not os.path.isabs(entry):
            return True
        real = os.path.realpath(entry)
        return real == cwd and not any((real + os.sep).startswith(p) for p in own)

    sys.path[:] = [p for p in sys.path if not names_cwd(p)]
