"""The workspace's own folder of tritonlens files, `.tritonlens/` at the workspace root, and the files in it: the
captured launches, the committed baseline, the measured times. Every module that names one of them takes it here."""
from __future__ import annotations

import os
from typing import Iterator

FOLDER = ".tritonlens"
CAPTURES = "captures.jsonl"  # gpu/capture writes it; frontend/captures reads it
BASELINE = "baseline.json"  # `tritonlens baseline save` writes it, meant to be committed
BENCH = "bench.jsonl"  # `tritonlens bench` appends to it; report/cost reads it


def sidecar_path(root: str, name: str) -> str:
    """`ROOT/.tritonlens/NAME`."""
    return os.path.join(root, FOLDER, name)


def is_sidecar_folder(folder: str) -> bool:
    return os.path.basename(folder) == FOLDER


def find_workspace_root(path: str) -> str:
    """The folder that holds `.tritonlens/` (captures, baseline), walking up from `path` — first, because capture
    paths are relative to it and a package that ships its own `pyproject.toml` inside the repository must not move
    the root below them. That walk stops at the repository's root (the folder holding `.git`) and below the home
    folder, never reaching `/`: a stray `~/.tritonlens` must not take over every project under home. Without one:
    the nearest folder holding `.git`, `pyproject.toml` or `setup.py`; else the file's folder."""
    start = os.path.dirname(os.path.abspath(path)) if not os.path.isdir(path) else os.path.abspath(path)
    for cur in _capture_search(start):
        if os.path.isdir(os.path.join(cur, FOLDER)):
            return cur
    cur = start
    while True:
        for marker in (".git", "pyproject.toml", "setup.py"):
            if os.path.exists(os.path.join(cur, marker)):
                return cur
        parent = os.path.dirname(cur)
        if parent == cur:
            return start
        cur = parent


def _capture_search(start: str) -> Iterator[str]:
    """The folders searched for `.tritonlens/`: `start` and its parents up to the repository root (a folder holding
    `.git`, included), never the home folder or above it (unless `start` is home itself), never `/`."""
    home = os.path.realpath(os.path.expanduser("~"))
    cur = start
    while True:
        real = os.path.realpath(cur)
        if os.path.dirname(cur) == cur or (real == home and cur != start):
            return
        yield cur
        if os.path.exists(os.path.join(cur, ".git")) or real == home:
            return
        cur = os.path.dirname(cur)
