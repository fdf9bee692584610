"""`tritonlens doctor`: which triton, ptxas, GPU, interpreter and cache this environment uses."""
from __future__ import annotations

import json

from .common import EXIT_FINDINGS, EXIT_OK


def add_parser(sub) -> None:
    doc = sub.add_parser("doctor", help="which triton, ptxas, GPU, interpreter and cache this environment uses")
    doc.add_argument("--format", choices=("text", "json"), default="text")
    doc.add_argument("--workspace", metavar="DIR", help="the project root (default: the current folder)")


def run(args) -> int:
    from ..doctor import diagnose

    diagnosis = diagnose(workspace=args.workspace)
    print(json.dumps(diagnosis.to_json(), indent=2) if args.format == "json" else diagnosis.text())
    return EXIT_OK if diagnosis.ok else EXIT_FINDINGS
