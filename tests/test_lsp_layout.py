"""The language server's layout: the feature modules of `tritonlens/lsp/` never import `server.py` (they get a
`host.Host`), and the imports between the files of `lsp/` run one way (no circle), counting imports inside functions
and under `TYPE_CHECKING` too — a reader can take one handler file alone."""
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
