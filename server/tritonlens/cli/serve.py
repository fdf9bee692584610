"""`tritonlens serve`: the language server on stdio."""
from __future__ import annotations

from .common import EXIT_OK


def add_parser(sub) -> None:
    sub.add_parser("serve", help="run the language server on stdio")


def run(args) -> int:
    from ..lsp.server import main as serve_main

    serve_main()
    return EXIT_OK
