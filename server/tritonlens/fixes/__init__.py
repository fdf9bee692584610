"""Quick fixes without an editor: takes a kernel's report, one of its findings and the file's text; gives candidate
edits in the order they are tried (`search.fix_candidates`: where the value is set — the launch call, a constant,
heuristics (`launch`), a literal autotune config (`configs`), a mask-free path for full blocks (`tail`) — then the
hint comment that states an assumption (`hints`)), the re-compile that proves each (`search.prove`, through the
`pipeline.Checker` it is given), and the proven fixes as plain data (`search.Fix`: title, edits, preferred). Edits
are 0-based line/character ranges of the source text (`edit.Edit`), applied by one function (`edit.apply_edits`).
No protocol here: `lsp/actions.py` turns a `Fix` into a code action, `tritonlens check --fix` writes its edits."""
