"""The package's layout: the imports between all of its modules run one way (no circle), counting imports inside
functions and under `TYPE_CHECKING` too; no stage imports a presenter; the top folder holds the entry modules and
each sub-package says what it takes and gives. In `lsp/` the feature modules never import `server.py` (they get a
`host.Host`) — a reader can take one handler file alone."""
from __future__ import annotations

import ast
from pathlib import Path

import tritonlens.lsp

LSP = Path(tritonlens.lsp.__file__).parent


def lsp_imports(path: Path) -> set[str]:
    """The `lsp/` modules that `path` imports, anywhere in the file."""
    out: set[str] = set()
    siblings = {p.stem for p in LSP.glob("*.py")}
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:  # from .x import y / from . import x, y
                names = [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
            elif node.level == 0 and (node.module or "").startswith("tritonlens.lsp."):
                names = [node.module.split(".")[2]]
            else:
                continue
        elif isinstance(node, ast.Import):
            names = [a.name.split(".")[2] for a in node.names if a.name.startswith("tritonlens.lsp.")]
        else:
            continue
        out.update(n for n in names if n in siblings)
    return out


def graph() -> dict[str, set[str]]:
    return {p.stem: lsp_imports(p) - {p.stem} for p in sorted(LSP.glob("*.py"))}


def test_no_feature_module_imports_the_server():
    g = graph()
    assert len(g) >= 10, sorted(g)
    importers = sorted(m for m, deps in g.items() if "server" in deps)
    assert importers == [], f"these lsp/ files import server.py: {importers}"
    assert {"actions", "diagnostics", "hover", "lens", "lifecycle"} <= g["server"]


def test_lsp_imports_have_no_circle():
    g = graph()
    done: set[str] = set()

    def visit(m: str, path: list[str]) -> None:
        if m in path:
            raise AssertionError("import circle in lsp/: " + " -> ".join(path[path.index(m):] + [m]))
        if m in done:
            return
        for d in sorted(g[m]):
            visit(d, path + [m])
        done.add(m)

    for m in g:
        visit(m, [])


# ---------------------------------------------------------------- the whole package
PACKAGE = LSP.parent
TOP = {"__init__", "__main__", "cli", "doctor", "model", "pipeline", "settings", "source"}


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Every module of the package -> the package's modules it imports, anywhere in the file (inside functions and
    under `TYPE_CHECKING` too). `from .x import y` counts as importing `x.y` when that is a module, else `x`."""
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py")) if "__pycache__" not in p.parts}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(here[:len(here) - node.level + 1] + ([node.module] if node.module else []))
                deps.update(f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        graph[name] = {d for d in deps if d in files and d != name}
    return graph


def find_circle(g: dict[str, set[str]]) -> list[str] | None:
    done: set[str] = set()

    def visit(m: str, path: list[str]) -> list[str] | None:
        if m in path:
            return path[path.index(m):] + [m]
        if m in done:
            return None
        for d in sorted(g[m]):
            found = visit(d, path + [m])
            if found:
                return found
        done.add(m)
        return None

    for m in sorted(g):
        found = visit(m, [])
        if found:
            return found
    return None


def test_package_imports_have_no_circle():
    g = package_graph()
    assert len(g) > 60 and "tritonlens.checks.launch" in g, sorted(g)
    circle = find_circle(g)
    assert circle is None, "import circle: " + " -> ".join(circle)


def test_circle_finder_sees_imports_inside_functions(tmp_path):
    """The finder itself, on a package made here: a circle closed only by an import inside a function, through a
    sub-package and `from . import x`, is found; the same package without that import has none."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("from . import c\n")
    (pkg / "sub" / "c.py").write_text("def f():\n    from ..a import g\n")
    assert find_circle(package_graph(pkg)) == ["pkg.a", "pkg.sub.b", "pkg.sub.c", "pkg.a"]
    (pkg / "sub" / "c.py").write_text("def f():\n    from .. import d\n")
    (pkg / "d.py").write_text("")
    assert find_circle(package_graph(pkg)) is None


def test_presenters_are_imported_by_nobody_below_them():
    """The pipeline runs one way: no stage imports the CLI or the language server, and the top folder holds only
    the entry modules and the shared model (each stage lives in its sub-package)."""
    g = package_graph()
    for m, deps in g.items():
        if m not in ("tritonlens.__main__", "tritonlens.cli") and not m.startswith("tritonlens.lsp"):
            assert not {d for d in deps if d == "tritonlens.cli" or d.startswith("tritonlens.lsp")}, m
    top = {p.stem for p in PACKAGE.glob("*.py")}
    assert top == TOP, sorted(top ^ TOP)
    for sub in ("frontend", "device", "compiler", "ir", "checks", "report", "gpu", "lsp"):
        doc = ast.get_docstring(ast.parse((PACKAGE / sub / "__init__.py").read_text()))
        assert doc and len(doc) > 100, f"{sub}/__init__.py says what it takes and gives"
