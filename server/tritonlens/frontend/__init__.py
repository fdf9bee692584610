"""The front end: from a file's text to the specs to compile, by reading it, never by running it.

Takes a Python file (and the workspace's captured launches); gives its kernels (`discover`: `@triton.jit` functions,
parameters, autotune configs and heuristics, found with `ast`; names resolved by `scope`, parameter types
inferred by `params`, the code behind computed configs cut out by `config_code`, literal configs' places for
quick fixes in `config_spans`), the launch sites that call them (`launches`), the hint
comments (`hints`), the captured launches (`captures`, untrusted JSON validated), the `Spec`s to compile in order of
trust (`specs`), and the dependency-sliced copy of the module that the compiler imports (`loader`). Pure: no triton,
no torch, no device; what needs a device's answers (an autotune config computed from the GPU's properties) asks
`device/`.
"""
