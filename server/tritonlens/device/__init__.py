"""The one device model: what the GPU says about itself, the real one when present, a named virtual one otherwise.

Takes a target (`cuda:90`, `hip:gfx942`, `auto`) and the `gpu` setting; gives the `GpuModel` (SMs, shared memory,
registers, peaks: `virtual_gpu`), the local GPU when there is one (`targets`), the answers torch, Triton's driver and
the vendor tools give as that GPU without one (`answers`, `vendor_tools`), and the autotune-config evaluator that runs
a file's config code in a subprocess answered as that GPU (`config_eval`). Every door that asks the device — the
compile workers, the config evaluator, `capture --no-gpu`, the rules' limits — asks here, so all answer alike.
A run's devices — per target compiled for, the concrete target (as text and as the compiler's `Target`), its GPU
model and the workers' environment — are worked out once where the run starts (`run.run_devices`: held by the
`Checker`, made by `compare` per side, by `bench`, `doctor` and a capture) and handed on, to the compile job and the
check context: `run_devices` is the only caller of `virtual_gpu.compile_target` and `virtual_gpu.resolve`.
"""
