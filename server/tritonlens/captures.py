"""Reading captured launches (`.tritonlens/captures.jsonl`). Capture files are untrusted input: JSON only, every
field validated, never pickle or eval. Writing them is `capture.py`'s job."""
from __future__ import annotations

import json
import os
from typing import Any

CAPTURE_FILE = os.path.join(".tritonlens", "captures.jsonl")


def captures_path(workspace_root: str) -> str:
    return os.path.join(workspace_root, CAPTURE_FILE)


def _valid(obj: Any) -> str | None:
    """None when `obj` is a usable capture, else why not."""
    if not isinstance(obj, dict):
        return "not an object"
    if obj.get("version") != 1:
        return f"unsupported version {obj.get('version')!r}"
    for key, kind in (("path", str), ("kernel", str), ("signature", dict)):
        if not isinstance(obj.get(key), kind):
            return f"field {key!r} missing or not a {kind.__name__}"
    for key in ("constants", "attrs", "options"):
        if key in obj and not isinstance(obj[key], dict):
            return f"field {key!r} is not an object"
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in obj["signature"].items()):
        return "signature must map parameter names to type strings"
    for name, attr in obj.get("attrs", {}).items():
        if not isinstance(attr, dict):
            return f"attrs of {name} is not an object"
    for key, value in obj.get("options", {}).items():
        if not isinstance(value, (int, float, str, bool)) and value is not None:
            return f"option {key} has a non-scalar value"
    return None


def capture_root(file: str, workspace_root: str) -> str:
    """The folder a capture file's paths are relative to: the one holding its `.tritonlens/` folder, else the
    file's own folder when it lies elsewhere (`--captures runs/h200.jsonl`), else the workspace root."""
    folder = os.path.dirname(os.path.abspath(file))
    if os.path.basename(folder) == ".tritonlens":
        return os.path.dirname(folder)
    return folder if os.path.isfile(file) else workspace_root


def _candidates(cpath: str, roots: list[str]) -> list[str]:
    if os.path.isabs(cpath):
        return [os.path.normcase(os.path.abspath(cpath))]
    return [os.path.normcase(os.path.abspath(os.path.join(r, cpath))) for r in roots]


def load_captures(workspace_root: str, path: str | None = None,
                  file: str | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Valid captures of the workspace (only those of the kernel file `path` when given), and one problem line per
    bad line. `file` overrides the default `.tritonlens/captures.jsonl` (the CLI's --captures); its paths resolve
    against the folder holding its `.tritonlens/` (see capture_root) and against the workspace root."""
    file = file or captures_path(workspace_root)
    out: list[dict[str, Any]] = []
    problems: list[str] = []
    try:
        with open(file, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError:
        return out, problems
    want = os.path.normcase(os.path.abspath(path)) if path else None
    roots = list(dict.fromkeys([capture_root(file, workspace_root), workspace_root]))
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            problems.append(f"{file}:{n}: not JSON ({exc.msg})")
            continue
        why = _valid(obj)
        if why:
            problems.append(f"{file}:{n}: skipped: {why}")
            continue
        obj["_source"] = f"{os.path.basename(file)}:{n}"
        obj["_line"] = n
        obj["_resolved"] = _candidates(obj["path"], roots)
        if want is not None and want not in obj["_resolved"]:
            continue
        out.append(obj)
    return out, problems


def unmatched(workspace_root: str, file: str | None, checked: dict[str, set[str]]) -> list[str]:
    """What a capture file holds that this check used nowhere, said in a few lines (never dropped silently):
    captures whose path is no file here (a different checkout, or paths relative to another folder), and captures
    of a checked file whose kernel it no longer defines. `checked` maps each checked file (absolute) to the names
    of its kernels. Captures of files that exist but were not checked are fine (a partial check)."""
    caps, _ = load_captures(workspace_root, None, file)
    if not caps:
        return []
    shown = file or captures_path(workspace_root)
    want = {os.path.normcase(os.path.abspath(p)): names for p, names in checked.items()}
    missing_files: dict[str, int] = {}
    missing_kernels: dict[tuple[str, str], int] = {}
    for cap in caps:
        hit = next((c for c in cap["_resolved"] if c in want), None)
        if hit is not None:
            if cap["kernel"] not in want[hit]:
                missing_kernels[(cap["path"], cap["kernel"])] = missing_kernels.get((cap["path"], cap["kernel"]), 0) + 1
            continue
        if not any(os.path.exists(c) for c in cap["_resolved"]):
            missing_files[cap["path"]] = missing_files.get(cap["path"], 0) + 1
    out = []
    if missing_files:
        roots = ", ".join(dict.fromkeys([capture_root(shown, workspace_root), workspace_root]))
        listed = ", ".join(f"{p} ({n})" for p, n in sorted(missing_files.items())[:5])
        more = f" and {len(missing_files) - 5} more" if len(missing_files) > 5 else ""
        out.append(f"{shown}: {sum(missing_files.values())} captures name files that are not under {roots}: "
                   f"{listed}{more} — their paths are relative to the folder that held `.tritonlens/` when they were "
                   f"recorded; check from that folder or pass --captures with the file inside it")
    for (p, k), n in sorted(missing_kernels.items()):
        out.append(f"{shown}: {n} capture(s) of {k} in {p}, which no longer defines that kernel; skipped")
    return out
