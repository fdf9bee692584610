"""What launches a file's kernels: the code a no-GPU capture can run to learn their specializations, found from the
source alone (the AST and plain text searches, never by running anything).

In the order they are tried: a file that launches its kernels at the top level (a tutorial, a script) as a script;
the file's own `if __name__ == "__main__":` block and its `test_*` functions; the workspace's test files that import
the module (`import pkg.mod`, `from pkg import mod`, or a name the module defines from one of its packages), else
those that import a module of its package that imports it (a wrapper: `ops/fp8.py` over `kernels/fp8.py`); the
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


_TEST_LABEL = re.compile(r"^launched by (`[^`]+` in |the tests in )")


def is_test_label(label: str) -> bool:
    """Whether a launch label (`Launcher.describe`, or the test's own) names a test function or test file — whose
    shapes are the test's, not a production run's — rather than a `__main__` block, a script or a benchmark."""
    return bool(_TEST_LABEL.match(label))


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
    if _launches_at_top(tree):
        # a tutorial: its launches (and the calls of its own test functions, which take arguments no test runner
        # gives) run at the top level, its `__main__` block with them
        own.append(Launcher("script", path, 1))
    elif main is not None:
        own.append(Launcher("main", path, main))
    called = _called_at_top(tree)
    tests = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
             and n.name.startswith("test") and n.name not in called]
    if tests:
        own.append(Launcher("tests", path, tests[0].lineno, tuple(n.name for n in tests)))
    if own:
        return own
    modules = module_names(path, root)
    defined = _defined_names(tree)
    found = [Launcher("tests", p, 1) for p in _importers(root, _TEST_DIRS, modules, defined, path, tests=True)]
    if not found:
        # the tests reach the kernels through a module of the package that wraps them (`ops/fp8.py` calling
        # `kernels/fp8.py`): the tests of those wrappers
        for wrapper in _wrappers(path, root, modules):
            w_text, problem = read_source(wrapper, root=root)
            if problem or w_text is None:
                continue
            try:
                w_defined = _defined_names(parse_module(w_text))
            except (SyntaxError, ValueError):
                continue
            for p in _importers(root, _TEST_DIRS, module_names(wrapper, root), w_defined, wrapper, tests=True):
                if p not in {x.path for x in found}:
                    found.append(Launcher("tests", p, 1))
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
    """Top-level statements (outside defs, classes and imports) that launch a kernel (`kernel[grid](...)`) or call a
    function of the file that does (`add(x, y)` of a tutorial): the file does its launches when run as a script."""
    defs: dict[str, ast.AST] = {n.name: n for n in tree.body
                                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    for node in tree.body:  # `layer_norm = LayerNorm.apply`: a name for a launching function or class
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            defs.update({t.id: node.value for t in node.targets if t.id not in defs})
    launching: set[str] = set()
    while True:  # functions (classes, aliases) that launch, directly or through another one of the file
        more = {name for name, node in defs.items() if name not in launching
                and _launches(node, launching, calls=not isinstance(node, ast.expr))}
        if not more:
            break
        launching |= more
    return any(_launches(node, launching, calls=True) for node in _top_statements(tree))


def _top_statements(tree: ast.Module) -> list[ast.stmt]:
    """The statements a run of the module executes at the top level, less definitions, imports, its `__main__` block
    and dead branches (`if False:`)."""
    main = _main_block(tree)
    return [node for node in tree.body
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom))
            and node.lineno != main
            and not (isinstance(node, ast.If) and isinstance(node.test, ast.Constant) and not node.test.value)]


def _called_at_top(tree: ast.Module) -> set[str]:
    """Functions the module itself calls at the top level or in its `__main__` block (a tutorial's
    `test_layer_norm(1151, 8192, torch.float16)`): they are run by running the file, not by a test runner."""
    main = _main_block(tree)
    nodes = _top_statements(tree) + [n for n in tree.body if n.lineno == main and isinstance(n, ast.If)]
    return {n.func.id for node in nodes for n in ast.walk(node)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


def _launches(node: ast.AST, launching: set[str], calls: bool = False) -> bool:
    """Whether `node` launches a kernel (`k[grid](...)`) or uses a function, class or alias that does (`calls`: only
    by calling it — `f = Fn.apply` at the top level names a launcher, it launches nothing)."""
    for n in _walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript):
            return True
        if calls:
            if isinstance(n, ast.Call) and _root_name(n.func) in launching:
                return True
        elif isinstance(n, ast.Name) and n.id in launching and isinstance(n.ctx, ast.Load):
            return True
    return False


def _walk(node: ast.AST):
    """ast.walk, but not into a class a function defines (`class _M(ModuleType)` whose `__call__` launches: defining
    it launches nothing)."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        todo.extend(c for c in ast.iter_child_nodes(n) if not isinstance(c, ast.ClassDef))


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def module_names(path: str, root: str) -> set[str]:
    """The dotted names the module at `path` may be imported as: from each folder between it and the workspace root
    that is no package (the root itself, a `src/` layout, a package inside the repository), and its bare name."""
    path, root = os.path.abspath(path), os.path.abspath(root)
    stem = os.path.splitext(os.path.basename(path))[0]
    parts = [] if stem == "__init__" else [stem]
    names = set(parts)
    folder = os.path.dirname(path)
    while True:
        if parts and not os.path.isfile(os.path.join(folder, "__init__.py")):
            names.add(".".join(parts))  # a folder on sys.path: the module's name from there
        if folder == root or not folder.startswith(root + os.sep):
            return names
        parts.insert(0, os.path.basename(folder))
        folder = os.path.dirname(folder)


def _defined_names(tree: ast.Module) -> set[str]:
    out = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
            out.add(node.name)
    return out


def _reexports(path: str, modules: set[str], package: str, names: set[str]) -> bool:
    """Whether `package` (an ancestor of the module at `path`) imports one of `names` from the module in its
    `__init__.py` (`from pkg.ops.rms_norm import LigerRMSNormFunction` in `pkg/ops/__init__.py`): only then is a name
    imported from the package the module's, and not another module's of the same name (a backend's copy)."""
    full = max((n for n in modules if n.startswith(package + ".")), key=len, default=None)
    if full is None:
        return False
    folder = os.path.dirname(os.path.abspath(path))
    for _ in range(full.count(".") - 1 - package.count(".")):
        folder = os.path.dirname(folder)
    text, problem = read_source(os.path.join(folder, "__init__.py"))
    if problem or text is None:
        return False
    rel = full[len(package) + 1:]
    try:
        tree = parse_module(text)
    except (SyntaxError, ValueError):
        return False
    return any(isinstance(n, ast.ImportFrom) and {a.name for a in n.names} & names
               and ((not n.level and n.module in modules) or (n.level == 1 and n.module == rel))
               for n in ast.walk(tree))


def imports_module(text: str, modules: set[str], defined: set[str], path: str | None = None) -> int:
    """How directly `text` imports one of `modules`: 2 by its name, 1 a name the module defines from one of its
    packages (`from liger_kernel.ops import LigerRMSNormFunction`), 0 not at all (or not Python)."""
    if not any(n.rsplit(".", 1)[-1] in text for n in modules) and not any(x in text for x in defined):
        return 0
    try:
        tree = parse_module(text)
    except (SyntaxError, ValueError):
        return 0
    best = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            if any(a.name in modules for a in node.names):
                return 2
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            items = {a.name for a in node.names}
            if node.module in modules or any(f"{node.module}.{x}" in modules for x in items):
                return 2
            if any(n.startswith(node.module + ".") for n in modules) and items & defined and (
                    path is None or _reexports(path, modules, node.module, items & defined)):
                best = 1
    return best


MAX_WRAPPERS = 3  # modules of the package that import a kernel module, whose tests are run for it


def _absolute_imports(tree: ast.Module, package: str) -> set[str]:
    """The modules (and `module.name`s) a module of `package` imports, relative imports made absolute."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".") if package else []
                if node.level - 1 > len(parts):
                    continue
                base = ".".join(parts[:len(parts) - (node.level - 1)])
                mod = ".".join(x for x in (base, node.module or "") if x)
            else:
                mod = node.module or ""
            if mod:
                out.add(mod)
            out.update(f"{mod}.{a.name}" if mod else a.name for a in node.names)
    return out


def _package_of(path: str, root: str) -> str:
    """The dotted package the module at `path` lies in, named from the outermost folder that is no package."""
    names = module_names(path, root)
    full = max(names, key=lambda n: n.count("."), default="")
    if os.path.basename(path) == "__init__.py":
        return full
    return full.rsplit(".", 1)[0] if "." in full else ""


def _wrappers(path: str, root: str, modules: set[str]) -> list[str]:
    """Modules of the kernel module's own top-level package (tests aside) that import it — by name or relatively
    (`from ._kernels import fwd`): what a test calls when it does not import the kernel module itself."""
    path, root = os.path.abspath(path), os.path.abspath(root)
    full = max(modules, key=lambda n: n.count("."), default="")
    top = os.path.dirname(path)
    for _ in range(full.count(".") - (os.path.basename(path) != "__init__.py")):
        top = os.path.dirname(top)  # the folder of the package the longest name starts with (namespace ones too)
    if top == root or not top.startswith(root + os.sep):
        return []
    stem = os.path.splitext(os.path.basename(path))[0]
    out: list[str] = []
    seen = 0
    for folder, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP and not d.startswith(".") and d not in _TEST_DIRS)
        for name in sorted(files):
            if not name.endswith(".py") or name.startswith("test_") or name.endswith("_test.py"):
                continue
            seen += 1
            if seen > MAX_SCANNED or len(out) >= MAX_WRAPPERS:
                return out
            p = os.path.join(folder, name)
            if p == path:
                continue
            text, problem = read_source(p, root=root)
            if problem or text is None or stem not in text:
                continue
            try:
                tree = parse_module(text)
            except (SyntaxError, ValueError):
                continue
            if _absolute_imports(tree, _package_of(p, root)) & modules:
                out.append(p)
    return out


def _first_of_its_name(path: str, root: str) -> bool:
    """Whether no module of the same name lies closer to the top of its package: `test_rms_norm.py` is named for
    `pkg/ops/rms_norm.py`, not for a backend's copy `pkg/ops/backends/npu/rms_norm.py`."""
    folder, name = os.path.dirname(path), os.path.basename(path)
    top = folder
    while os.path.isfile(os.path.join(os.path.dirname(top), "__init__.py")) and top.startswith(root):
        top = os.path.dirname(top)
    depth = path.count(os.sep)
    seen = 0
    for d, dirs, files in os.walk(top):
        dirs[:] = [x for x in dirs if x not in _SKIP and not x.startswith(".")]
        seen += 1
        if seen > MAX_SCANNED:
            return True
        if name in files and os.path.join(d, name) != path and os.path.join(d, name).count(os.sep) < depth:
            return False
    return True


def _imports_package(text: str, modules: set[str]) -> bool:
    """Whether `text` imports anything of the top-level package one of `modules` lies in."""
    tops = {n.split(".")[0] for n in modules if "." in n}
    return any(f"from {t}." in text or f"from {t} import" in text or f"import {t}" in text for t in tops)


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
                text, problem = read_source(p, root=root)
                if problem or text is None:
                    continue
                how = imports_module(text, modules, defined, own)
                if not how and name in (f"test_{stem}.py", f"{stem}_test.py") and _imports_package(text, modules) \
                        and _first_of_its_name(own, root):
                    how = 1  # named for the module, importing from its package (through a wrapper module)
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
