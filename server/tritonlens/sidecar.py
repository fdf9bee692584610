"""The workspace's own folder of tritonlens files, `.tritonlens/` at the workspace root, and the files in it: the
captured launches, the committed baseline, the measured times. Every module that names one of them takes it here."""
from __future__ import annotations

import os

FOLDER = ".tritonlens"
CAPTURES = "captures.jsonl"  # gpu/capture writes it; frontend/captures reads it
BASELINE = "baseline.json"  # `tritonlens baseline save` writes it, meant to be committed
BENCH = "bench.jsonl"  # `tritonlens bench` appends to it; report/cost reads it


def sidecar_path(root: str, name: str) -> str:
    """`ROOT/.tritonlens/NAME`."""
    return os.path.join(root, FOLDER, name)


def is_sidecar_folder(folder: str) -> bool:
    return os.path.basename(folder) == FOLDER
