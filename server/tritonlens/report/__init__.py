"""What the compiler said, made readable: the kernel report and every way it is written out.

Takes the compiled specs of a kernel (artefacts, findings, metrics); gives the `KernelReport` every presenter reads
(`kernel`: error findings, assumptions named, autotune configs that cannot launch), the IR views per spec
(`irviews`), the costs in time and bytes (`cost`: measured times and roofline floors), and the outputs: SARIF
(`sarif`), the one-file HTML report (`html`, with `assets/`), the committed baseline and its comparisons
(`baseline`), and `tritonlens diff`'s text and JSON (`baseline_text`).
No compiling here and no editor: the CLI and the language server both call into it.
"""
