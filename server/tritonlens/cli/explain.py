"""`tritonlens explain CODE`: what a rule code means and how to fix it (its doc page)."""
from __future__ import annotations

import sys

from .common import EXIT_ERROR, EXIT_OK


def add_parser(sub) -> None:
    e = sub.add_parser("explain", help="what a rule code means and how to fix it")
    e.add_argument("code")


def run(args) -> int:
    return explain(args.code)


def explain(code: str) -> int:
    from ..checks import load_rules, rule_doc

    code = code.upper()
    rules = load_rules()
    doc = rule_doc(code)
    if doc is None and code not in rules:
        print(f"tritonlens explain: unknown code {code}; known: {', '.join(sorted(rules))}", file=sys.stderr)
        return EXIT_ERROR
    if doc is None:
        r = rules[code]
        doc = f"# {r.code} {r.name}\n\n{r.summary}\n\nDefault severity: {r.severity}\n"
    sys.stdout.write(doc if doc.endswith("\n") else doc + "\n")
    return EXIT_OK
