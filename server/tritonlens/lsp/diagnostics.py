"""Findings -> LSP diagnostics, and the document notifications that trigger compiles."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import from_fs_path

from ..ir.linemap import same_file
from ..model import Finding
from ..source import split_lines

if TYPE_CHECKING:
    from .docstate import DocState
    from .host import Host

SOURCE = "tritonlens"
_SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
             "info": types.DiagnosticSeverity.Information, "hint": types.DiagnosticSeverity.Hint}


def utf16_column(lines: list[str] | None, line: int, col: int) -> int:
    """A 0-based UTF-8 byte offset (what Python's ast and Triton's locations count) -> LSP's UTF-16 code units."""
    if not lines or not 0 <= line < len(lines):
        return col
    text = lines[line]
    if text.isascii():
        return col
    prefix = text.encode("utf-8")[:col].decode("utf-8", errors="ignore")
    return len(prefix.encode("utf-16-le")) // 2


def finding_range(f: Finding, lines: list[str] | None = None) -> types.Range:
    """Finding lines/columns are 1-based (columns in UTF-8 bytes, as ast and Triton count them) with an exclusive end
    column; LSP is 0-based, end exclusive, in UTF-16 units — `lines` (the document's) lets non-ASCII lines convert."""
    line = max(f.line - 1, 0)
    end_line = max((f.end_line or f.line) - 1, line)
    col = utf16_column(lines, line, max(f.column - 1, 0))
    end_col = utf16_column(lines, end_line, max((f.end_column or f.column + 1) - 1, 0))
    if end_line == line and end_col <= col:
        end_col = col + 1
    return types.Range(types.Position(line, col), types.Position(end_line, end_col))


def jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def to_diagnostic(f: Finding, lines: list[str] | None = None) -> types.Diagnostic:
    from ..checks.registry import doc_link

    href = doc_link(f.code, f.data.get("doc"))
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(uri=from_fs_path(r.path) or r.path,
                                    range=types.Range(types.Position(max(r.line - 1, 0), 0),
                                                      types.Position(max(r.line - 1, 0), 0))),
            message=r.message)
        for r in f.named_lines()
    ]
    return types.Diagnostic(
        range=finding_range(f, lines),
        message=f.message,
        severity=_SEVERITY.get(f.severity, types.DiagnosticSeverity.Information),
        code=f.code,
        code_description=types.CodeDescription(href=href) if href else None,
        source=SOURCE,
        related_information=related or None,
        data=jsonable({"kernel": f.kernel, "code": f.code, "line": f.line, "column": f.column,
                       "config": f.config, "target": f.target, "finding": f.data, "details": f.details}),
    )


def diagnostics_for(st: "DocState") -> list[types.Diagnostic]:
    if st.blocked:
        return [types.Diagnostic(range=types.Range(types.Position(0, 0), types.Position(0, 1)),
                                 message=f"tritonlens cannot compile in this environment: {st.blocked} "
                                 "(`tritonlens doctor` says more)",
                                 severity=types.DiagnosticSeverity.Error, source=SOURCE)]
    lines = split_lines(st.text)
    out = [to_diagnostic(f, lines) for f in st.findings() if same_file(f.path, st.path)]
    if st.crashed:
        out.append(types.Diagnostic(range=types.Range(types.Position(0, 0), types.Position(0, 1)),
                                    message=st.crashed, severity=types.DiagnosticSeverity.Warning, source=SOURCE))
    return out


def register(server: "Host") -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: "Host", params: types.DidOpenTextDocumentParams) -> None:
        if _is_python(params.text_document.uri, params.text_document.language_id):
            ls.scheduler.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: "Host", params: types.DidSaveTextDocumentParams) -> None:
        if _is_python(params.text_document.uri):
            ls.scheduler.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: "Host", params: types.DidChangeTextDocumentParams) -> None:
        if ls.settings.compile_on == "change" and _is_python(params.text_document.uri):
            ls.scheduler.schedule(params.text_document.uri, delay=ls.scheduler.debounce_s)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: "Host", params: types.DidCloseTextDocumentParams) -> None:
        ls.scheduler.forget(params.text_document.uri)


def _is_python(uri: str, language_id: str | None = None) -> bool:
    """Only files on disk: the compile workers import the kernel's module by its path."""
    return uri.startswith("file:") and (language_id == "python" or uri.endswith(".py"))
