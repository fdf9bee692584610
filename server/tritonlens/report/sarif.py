"""Findings as SARIF 2.1.0, for GitHub code scanning and other SARIF viewers."""
from __future__ import annotations

import os
from typing import Any

from .. import __version__
from ..model import Finding
from .markdown import md

_LEVEL = {"error": "error", "warning": "warning", "info": "note", "hint": "note"}
SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _uri(path: str, base: str) -> tuple[str, bool]:
    rel = os.path.relpath(path, base) if os.path.isabs(path) else path
    if rel.startswith(".."):
        return "file://" + os.path.abspath(path).replace(os.sep, "/"), False
    return rel.replace(os.sep, "/"), True


def to_sarif(findings: list[Finding], base: str) -> dict[str, Any]:
    from ..checks import load_rules

    catalogue = load_rules()
    codes = sorted({f.code for f in findings} | set(catalogue))
    index = {c: i for i, c in enumerate(codes)}
    rules = []
    for code in codes:
        r = catalogue.get(code)
        rules.append({
            "id": code,
            "name": r.name if r else code,
            "shortDescription": {"text": (r.summary if r and r.summary else code)},
            "helpUri": r.doc_url if r else None,
            "defaultConfiguration": {"level": _LEVEL.get(r.severity if r else "warning", "warning")},
        })
        if rules[-1]["helpUri"] is None:
            del rules[-1]["helpUri"]
    results = []
    for f in findings:
        uri, relative = _uri(f.path, base)
        loc: dict[str, Any] = {"uri": uri}
        if relative:
            loc["uriBaseId"] = "%SRCROOT%"
        results.append({
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": _LEVEL.get(f.severity, "warning"),
            "message": _message(f),
            "locations": [{"physicalLocation": {
                "artifactLocation": loc,
                "region": {"startLine": f.line, "startColumn": f.column, "endLine": f.end_line,
                           "endColumn": max(f.end_column, f.column + 1) if f.end_line == f.line else f.end_column},
            }}],
            "properties": {"kernel": f.kernel, "config": f.config, "target": f.target},
        })
        places = [r for r in f.named_lines() if r.path == f.path]
        if places:  # the lines of the file it names (IR lines live in a cache outside the repository)
            results[-1]["relatedLocations"] = [
                {"id": i, "message": {"text": r.message},
                 "physicalLocation": {"artifactLocation": loc, "region": {"startLine": r.line}}}
                for i, r in enumerate(places)]
        if f.data.get("baseline_state") in ("new", "unchanged"):  # set by `check --baseline`
            results[-1]["baselineState"] = f.data["baseline_state"]
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "tritonlens", "version": __version__, "semanticVersion": __version__,
                                "informationUri": "https://github.com/tritonlens/tritonlens", "rules": rules}},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": "file://" + os.path.abspath(base).replace(os.sep, "/") + "/"}},
            "results": results,
        }],
    }



def _message(f) -> dict[str, str]:
    """The one-line message as text; with it, as markdown, every line of its evidence (escaped: it holds the
    checked files' names and values)."""
    out = {"text": f.message}
    if f.details:
        out["markdown"] = "\n".join([md(f.message), ""] + [f"- {md(d)}" for d in f.details])
    return out
