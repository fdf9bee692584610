"""The language server: the editor's requests answered from the core.

Takes LSP requests and notifications (pygls); gives diagnostics, hovers, code lenses, quick fixes, IR documents and
status. `server.py` assembles one module per feature (docs/server.md); each feature sees the server only as a
`host.Host` and calls the pipeline, the report, the checks and the fixes (`fixes/`: the search without a protocol;
`actions.py` turns its fixes into code actions) — nothing below imports this package.
"""
