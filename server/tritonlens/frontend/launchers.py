"""What launches a file's kernels: the code a no-GPU capture can run to learn their specializations, found from the
source alone (the AST and plain text searches, never by running anything).

In the order they are tried: the file's own `if __name__ == "__main__":` block and its `test_*` functions; a file
that launches its kernels at the top level (a tutorial, a script) as a script; the workspace's test files that import
the module (`import pkg.mod`, `from pkg import mod`, or a name the module defines from one of its packages); the
benchmark scripts that import it. Which of them runs, under which bounds, is `gpu/autocapture.py`'s business.
"""
from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass

from ..source import parse_module, read_source

MAX_TEST_FILES = 2  # workspace test files run for one kernel file (the ones that import it most directly first)
MAX_SCANNED = 2000  # files looked at in the test and benchmark folders
_TEST_DIRS = ("tests", "test", "testing")
_BENCH_DIRS = ("bench", "benchmark", "benchmarks", "benches")
_SKIP = {".git", ".hg", ".venv", "venv", "env", "node_modules", "__pycache__", "site-packages", "build", "dist",
         ".tox", ".tritonlens"}


@dataclass(frozen=True)
class Launcher:
    """One piece of code to run: `kind` is "main" (the file's `__main__` block), "tests" (test functions of a file:
    the kernel's own or a workspace test file), "script" (the file run as a script) or "benchmark"."""

    kind: str
    path: str  # the file that is run (absolute)
    line: int  # where it starts in that file (1-based): the `if __name__` line, the first test, line 1
    names: tuple[str, ...] = ()  # the test functions, for kind "tests"

    def describe(self, kernel_file: str, test: str | None = None) -> str:
        """`launched by `test_update_fn` in this file, no GPU`: where a spec's values came from, for its label."""
        here = os.path.abspath(self.path) == os.path.abspath(kernel_file)
        where = "this file" if here else f"`{os.path.basename(self.path)}`"
        if self.kind == "main":
            who = f"the `__main__` block of {where}"
        elif self.kind == "script":
            who = f"{where} run as a script"
        elif self.kind == "benchmark":
            who = f"the benchmark {where}"
        elif test:
            who = f"`{test}` in {where}"
        else:
            who = f"the tests in {where}"
        return f"launched by {who}, no GPU"


def find_launchers(path: str, text: str, root: str) -> list[Launcher]:
    """The code that launches the kernels of `path` (whose text is `text`), best first: the file's own launch code
    when it has some, else the workspace's tests that import it, else its benchmarks."""
    try:
        tree = parse_module(text)
    except (SyntaxError, ValueError):
        return []
    path = os.path.abspath(path)
    own: list[Launcher] = []
    main = _main_block(tree)
    if main is not None:
        own.append(Launcher("main", path, main))
    tests = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")]
    if tests:
        own.append(Launcher("tests", path, tests[0].lineno, tuple(n.name for n in tests)))
    if not own and _launches_at_top(tree):
        own.append(Launcher("script", path, 1))
    if own:
        return own
    modules = module_names(path, root)
    defined = _defined_names(tree)
    found = [Launcher("tests", p, 1) for p in _importers(root, _TEST_DIRS, modules, defined, path, tests=True)]
    if found:
        return found[:MAX_TEST_FILES]
    return [Launcher("benchmark", p, 1) for p in _importers(root, _BENCH_DIRS, modules, defined, path)][:1]


def _main_block(tree: ast.Module) -> int | None:
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.comparators) == 1:
            sides = [node.test.left, node.test.comparators[0]]
            names = {s.id for s in sides if isinstance(s, ast.Name)}
            consts = {s.value for s in sides if isinstance(s, ast.Constant)}
            if names == {"__name__"} and consts == {"__main__"}:
                return node.lineno
    return None


def _launches_at_top(tree: ast.Module) -> bool:
    """Top-level statements that call something (outside defs, classes, imports): the file does its work when run."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, (ast.Expr, ast.Assign, ast.AnnAssign, ast.For, ast.With)) and any(
                isinstance(n, ast.Call) and _calls_launch_or_function(n) for n in ast.walk(node)):
            if isinstance(node, ast.Expr) or any(isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load)
                                                 for n in ast.walk(node)):
                return True
    return False


def _calls_launch_or_function(call: ast.Call) -> bool:
    f = call.func
    # `kernel[grid](...)` or a call of a plain name (a wrapper `add(x, y)`), not `torch.manual_seed(0)` alone
    return isinstance(f, ast.Subscript) or isinstance(f, ast.Name)


def module_names(path: str, root: str) -> set[str]:
    """The dotted names the module at `path` may be imported as: from the workspace root, and from each folder above
    it that is no package (a `src/` layout, a package inside the repository)."""
    path = os.path.abspath(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    parts = [] if stem == "__init__" else [stem]
    folder = os.path.dirname(path)
    names = {stem} if parts else set()
    root = os.path.abspath(root)
    while True:
        if not os.path.isfile(os.path.join(folder, "__init__.py")):
            if parts:
                names.add(".".join(parts))
            if folder == root or len(folder) <= len(root):
                break
        parts.insert(0, os.path.basename(folder))
        parent = os.path.dirname(folder)
        if parent == folder or not folder.startswith(root):
            break
        if folder == root:
            break
        folder = parent
    full = ".".join(parts)
    if full:
        names.add(full)
    return names


def _defined_names(tree: ast.Module) -> set[str]:
    out = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
            out.add(node.name)
    return out


_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import\s+\(?([\w\s,]+)\)?|import\s+([\w.]+))", re.M)


def imports_module(text: str, modules: set[str], defined: set[str]) -> int:
    """How directly `text` imports one of `modules`: 2 by its name, 1 a name the module defines from one of its
    packages (`from liger_kernel.ops import LigerRMSNormFunction`), 0 not at all."""
    best = 0
    for m in _IMPORT.finditer(text):
        source, imported, plain = m.group(1), m.group(2), m.group(3)
        if plain:
            if plain in modules or any(plain.startswith(n + ".") for n in modules):
                return 2
            continue
        items = {x.strip().split(" as ")[0].strip() for x in (imported or "").split(",")} - {""}
        if source in modules or any(f"{source}.{x}" in modules for x in items):
            return 2
        if any(n.startswith(source + ".") for n in modules) and items & defined:
            best = 1
    return best


def _importers(root: str, folders: tuple[str, ...], modules: set[str], defined: set[str], own: str,
               tests: bool = False) -> list[str]:
    """Files under `root`'s test (benchmark) folders that import the module, the most direct first, then the one
    named most like it (test_rms_norm.py for rms_norm.py)."""
    stem = os.path.splitext(os.path.basename(own))[0]
    scored: list[tuple[int, int, str]] = []
    seen = 0
    for base in _folders(root, folders):
        for folder, dirs, files in os.walk(base):
            dirs[:] = sorted(d for d in dirs if d not in _SKIP and not d.startswith("."))
            for name in sorted(files):
                if not name.endswith(".py") or (tests and not (name.startswith("test_") or name.endswith("_test.py"))):
                    continue
                seen += 1
                if seen > MAX_SCANNED:
                    break
                p = os.path.abspath(os.path.join(folder, name))
                if p == own:
                    continue
                text, problem = read_source(p)
                if problem or text is None:
                    continue
                how = imports_module(text, modules, defined)
                if how:
                    scored.append((-how, 0 if stem in name else 1, p))
    return [p for _, _, p in sorted(scored)]


def _folders(root: str, names: tuple[str, ...]) -> list[str]:
    """The test (benchmark) folders of the workspace: those at its root and one level below (a `src/` layout keeps
    tests beside it, a monorepo under each project)."""
    out = []
    for top in [root] + [os.path.join(root, d) for d in sorted(_listdir(root)) if d not in _SKIP]:
        for name in names:
            p = os.path.join(top, name)
            if os.path.isdir(p) and p not in out:
                out.append(p)
    return out


def _listdir(p: str) -> list[str]:
    try:
        return [d for d in os.listdir(p) if os.path.isdir(os.path.join(p, d)) and not d.startswith(".")]
    except OSError:
        return []
