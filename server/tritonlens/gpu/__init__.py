"""The edges that run the user's program: capture its launches, replay them, time and profile them.

Takes a command (`capture -- pytest ...`) or a captured launch; gives capture records (`capture` on a GPU through
Triton's post-compile hook installed by `_capture_hook/`: `capture_record` the line format, `capture_file` the
writer, `capture_hook` the hook and its launch timer, `capture` the command; `capture_nogpu` without one, answered as
the virtual GPU and without launching), measured times (`bench`) and Nsight Compute's counters with the findings
they confirm (`profile`). The only modules that run user code end to end. `check` and the editor call one of them
on their own: `autocapture` runs a kernel file's own launch code (its `__main__` block, its tests) without a GPU,
sandboxed and bounded, when nothing else gives its kernels' specs (`autocapture_run` is the process that runs it).
Each command's arguments are declared here (`add_arguments`) and reached from the one `tritonlens` parser (cli/).
"""
