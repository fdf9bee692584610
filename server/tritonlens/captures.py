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


def load_captures(workspace_root: str, path: str | None = None,
                  file: str | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Valid captures of the workspace (only those of the kernel file `path` when given), and one problem line per
    bad line. `file` overrides the default `.tritonlens/captures.jsonl` (the CLI's --captures)."""
    file = file or captures_path(workspace_root)
    out: list[dict[str, Any]] = []
    problems: list[str] = []
    try:
        with open(file, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError:
        return out, problems
    want = os.path.normcase(os.path.abspath(path)) if path else None
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
        if want is not None:
            full = obj["path"] if os.path.isabs(obj["path"]) else os.path.join(workspace_root, obj["path"])
            if os.path.normcase(os.path.abspath(full)) != want:
                continue
        out.append(obj)
    return out, problems
