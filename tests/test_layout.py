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
TOP = {"__init__", "__main__", "doctor", "importpath", "launch_values", "model", "pipeline", "reads", "settings", "sidecar", "source",
       "units", "writes"}


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
    the entry modules and the shared model (each stage, and the CLI, lives in its sub-package)."""
    g = package_graph()
    for m, deps in g.items():
        if m != "tritonlens.__main__" and not m.startswith(("tritonlens.cli", "tritonlens.lsp")):
            assert not {d for d in deps if d.startswith(("tritonlens.cli", "tritonlens.lsp"))}, m
    top = {p.stem for p in PACKAGE.glob("*.py")}
    assert top == TOP, sorted(top ^ TOP)
    for sub in ("frontend", "device", "compiler", "ir", "checks", "report", "fixes", "gpu", "cli", "lsp"):
        doc = ast.get_docstring(ast.parse((PACKAGE / sub / "__init__.py").read_text()))
        assert doc and len(doc) > 100, f"{sub}/__init__.py says what it takes and gives"


# ---------------------------------------------------------------- between packages
# The pipeline's direction (docs/server.md): a package may import its own stage and earlier ones. The shared base
# (model, settings, source, units, sidecar, the package itself) imports none of them; device/ (the GPU a run answers as) and gpu/ (the
# GPU machine's edges: capture, bench, profile) stand apart and are not checked. pipeline orchestrates the stages;
# fixes and compare re-compile through them; cli and lsp present.
STAGE = {"tritonlens": -1, "model": -1, "settings": -1, "source": -1, "units": -1, "sidecar": -1, "writes": -1,
         "reads": -1, "launch_values": -1, "frontend": 0, "compiler": 1, "ir": 2, "checks": 3, "report": 4,
         "pipeline": 5, "fixes": 5, "compare": 5, "doctor": 5, "cli": 6, "lsp": 6, "__main__": 6, "importpath": -1}
APART = {"device", "gpu"}
DOCS = Path(__file__).resolve().parent.parent / "docs" / "server.md"


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def packages(g: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph drawn between packages (a top-level module counts as its own package)."""
    out: dict[str, set[str]] = {}
    for m, deps in g.items():
        out.setdefault(package_of(m), set()).update(package_of(d) for d in deps)
    return {p: deps - {p} for p, deps in out.items()}


def named_edges() -> set[tuple[str, str]]:
    """The edges against the direction that docs/server.md names (rows "| `a` → `b` | why |" of its table)."""
    import re

    return set(re.findall(r"^\| `(\w+)` → `(\w+)` \|", DOCS.read_text(encoding="utf-8"), re.M))


def test_packages_have_no_circle():
    pg = packages(package_graph())
    assert {"frontend", "compiler", "report", "fixes", "cli", "lsp"} <= set(pg), sorted(pg)
    circle = find_circle(pg)
    assert circle is None, "import circle between packages: " + " -> ".join(circle)


def test_the_package_circle_finder_sees_one(tmp_path):
    pkg = tmp_path / "pkg"
    for sub in ("a", "b"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a" / "x.py").write_text("from ..b import y\n")
    (pkg / "b" / "y.py").write_text("def f():\n    from ..a import z\n")
    (pkg / "a" / "z.py").write_text("")
    assert find_circle(package_graph(pkg)) is None  # no circle between modules...
    assert find_circle(packages(package_graph(pkg))) == ["a", "b", "a"]  # ...but one between packages


def test_no_package_imports_a_later_stage_except_the_named_edges():
    g = package_graph()
    allowed = named_edges()
    assert ("compiler", "checks") in allowed, "docs/server.md names the edges against the direction"
    against = []
    for m, deps in sorted(g.items()):
        a = package_of(m)
        if a in APART:
            continue
        assert a in STAGE, f"{a}/ has no place in the pipeline: add it to STAGE here and to docs/server.md"
        for d in sorted(deps):
            b = package_of(d)
            if b == a or b in APART or (a, b) in allowed:
                continue
            assert b in STAGE, f"{b}/ has no place in the pipeline: add it to STAGE here and to docs/server.md"
            if STAGE[b] > STAGE[a] or (STAGE[a] == -1 and STAGE[b] != -1):
                against.append(f"{m} -> {d}")
    assert not against, "imports against the pipeline's direction (name them in docs/server.md if meant): " + \
        ", ".join(against)
    unused = {(a, b) for a, b in allowed if b not in packages(g).get(a, set())}
    assert not unused, f"docs/server.md names edges no module has any more: {sorted(unused)}"
