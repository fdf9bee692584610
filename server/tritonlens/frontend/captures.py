"""Reading captured launches (`.tritonlens/captures.jsonl`). Capture files are untrusted input: JSON only, every
field validated, never pickle or eval. Writing them is `gpu/capture.py`'s job."""
from __future__ import annotations

import hashlib
import io
import json
import os
from typing import Any, Iterator

from .untrusted import UntrustedFile, printable, read_text
from ..launch_values import decode
from ..model import clean_descriptor
from ..reads import inside
from ..sidecar import CAPTURES, FOLDER, is_sidecar_folder

CAPTURE_FILE = os.path.join(FOLDER, CAPTURES)


def captures_path(workspace_root: str) -> str:
    return os.path.join(workspace_root, CAPTURE_FILE)


# Bounds on what a capture line may hold: a real line is a few KB; anything far beyond is not a capture.
MAX_LINE = 1 << 20  # characters per line
_MAX_TEXT = 4096  # characters per string value
_MAX_INT = 1 << 63
_ROLES = ("trial", "chosen")
_RECORDS = ("compile", "summary")
# The fields that make two lines the same compile (a launch, a count or a choice does not).
IDENTITY_FIELDS = ("path", "kernel", "signature", "constants", "attrs", "options", "target")


def _bad_scalar(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int):
        return not -_MAX_INT <= value < _MAX_INT
    if isinstance(value, float):
        return False
    if isinstance(value, str):  # control characters: a name printed to a terminal must not drive it
        return len(value) > _MAX_TEXT or not value.isprintable()
    return True


def _bad_value(value: Any) -> str | None:
    """Why a launch value (a constexpr, a config's kwarg, an autotune key) is not one launch_values reads."""
    try:
        decode(value)
    except (ValueError, RecursionError) as exc:
        return str(exc)
    return None


def _decoded(obj: dict[str, Any]) -> dict[str, Any]:
    """A valid line with its launch values decoded (launch_values): inf is inf again, a dtype {"dtype": name}. An
    argument value of a launch that does not decode is read as unknown (older readers never looked at them)."""
    for field in ("constants",):
        if isinstance(obj.get(field), dict):
            obj[field] = {k: decode(v) for k, v in obj[field].items()}
    for field in ("autotune_keys", "key"):
        if isinstance(obj.get(field), list):
            obj[field] = decode(obj[field])
    for field in ("configs", "pruned"):
        for cfg in obj.get(field) or ():
            cfg["kwargs"] = {k: decode(v) for k, v in (cfg.get("kwargs") or {}).items()}
    launches = [obj.get("launch"), {"args": obj.get("args")}] + [c.get("launch") for c in obj.get("launch_counts") or ()]
    for launch in launches:
        args = launch.get("args") if isinstance(launch, dict) else None
        for name, arg in (args.items() if isinstance(args, dict) else ()):
            if isinstance(arg, dict) and "value" in arg:
                try:
                    arg["value"] = decode(arg["value"])
                except (ValueError, RecursionError):
                    args[name] = {"unknown": "value"}
    return obj


def _valid(obj: Any) -> str | None:
    """None when `obj` is a usable capture line (version 1, or 2 with its count/choice fields), else why not.
    Unknown fields are ignored (a newer writer may add some); known fields of the wrong type reject the line."""
    if not isinstance(obj, dict):
        return "not an object"
    if obj.get("version") not in (1, 2, 3) or isinstance(obj.get("version"), bool):
        return f"unsupported version {repr(obj.get('version'))[:40]}"
    if obj.get("record") == "tuning":
        return _valid_tuning(obj)
    for key, kind in (("path", str), ("kernel", str), ("signature", dict)):
        if not isinstance(obj.get(key), kind):
            return f"field {key!r} missing or not a {kind.__name__}"
    if len(obj["path"]) > _MAX_TEXT or len(obj["kernel"]) > _MAX_TEXT:
        return "path or kernel name too long"
    if not (obj["path"].isprintable() and obj["kernel"].isprintable()):
        return "control characters in the path or kernel name"
    for key in ("constants", "attrs", "options"):
        if key in obj and not isinstance(obj[key], dict):
            return f"field {key!r} is not an object"
    for key in ("target", "triton_version", "gpu"):  # gpu: the virtual GPU a --no-gpu capture answered as
        if obj.get(key) is not None and (not isinstance(obj[key], str) or len(obj[key]) > 64):
            return f"field {key!r} is not a short string"
    if len(obj["signature"]) > 1024 or not all(isinstance(k, str) and isinstance(v, str) and len(k) + len(v) < 512
                                               for k, v in obj["signature"].items()):
        return "signature must map parameter names to type strings"
    for name, value in obj.get("constants", {}).items():
        why = _bad_value(value)
        if why:
            return f"constant {printable(name[:80])}: {why}"
    for name, attr in obj.get("attrs", {}).items():
        if not isinstance(attr, dict):
            return f"attrs of {name[:80]} is not an object"
        div = attr.get("divisibility")
        if div is not None and (isinstance(div, bool) or not isinstance(div, int) or not 1 <= div <= 1 << 16):
            return f"divisibility of {name[:80]} is not a small positive integer"
    for key, value in obj.get("options", {}).items():
        if _bad_scalar(value) and value is not None:
            return f"option {key[:80]} has a non-scalar value"
    # version 2: what the launch really used
    if obj.get("record", "compile") not in _RECORDS:
        return f"unknown record kind {repr(obj.get('record'))[:40]}"
    if obj.get("autotune") not in (None,) + _ROLES:
        return "field 'autotune' must be \"trial\", \"chosen\" or null"
    launches = obj.get("launches")
    if launches is not None and (isinstance(launches, bool) or not isinstance(launches, int)
                                 or not 0 <= launches < _MAX_INT):
        return "field 'launches' is not a non-negative integer"
    by = obj.get("launched_by")  # what ran the launch (an automatic capture's test or script), in words
    if by is not None and (not isinstance(by, str) or len(by) > 256 or not by.isprintable()):
        return "field 'launched_by' is not a short printable string"
    if "no_gpu" in obj and not isinstance(obj["no_gpu"], bool):
        return "field 'no_gpu' is not a boolean"
    keys = obj.get("autotune_keys")
    if keys is not None and (not isinstance(keys, list) or len(keys) > 4096
                             or any(_bad_value(k) for k in keys)):
        return "field 'autotune_keys' is not a bounded list"
    launch = obj.get("launch")
    if launch is not None and _bad_launch(launch):
        return "field 'launch' must hold a grid of integers and an args object"
    if launch is not None and _bad_descriptors(launch):
        return f"field 'launch': {_bad_descriptors(launch)}"
    if obj.get("launch_counts") is not None:
        return _bad_list(obj, "launch_counts", MAX_LAUNCH_COUNTS, _bad_count)
    return None


def _bad_list(obj: dict[str, Any], name: str, limit: int, bad_item) -> str | None:
    """Why field `name` (absent: an empty list) is not a list of at most `limit` items that `bad_item` accepts."""
    items = obj.get(name, [])
    if not isinstance(items, list) or len(items) > limit:
        return f"field {name!r} is not a list of at most {limit}"
    for item in items:
        why = bad_item(item)
        if why:
            return f"field {name!r}: {why}"
    return None


MAX_TUNING_CONFIGS = 512  # configs a tuning line may list (timed, and pruned)
_CONFIG_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
_CONFIG_NUMBERS = ("time_us", "time_us_p20", "time_us_p80", "bench_s")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e12


def _bad_config(cfg: Any) -> str | None:
    """One config of a tuning line: {"kwargs": {...}, "num_warps": 4, ..., "time_us": 35.9 | null, "grid": [...]}."""
    if not isinstance(cfg, dict) or not isinstance(cfg.get("kwargs", {}), dict) or len(cfg.get("kwargs", {})) > 64:
        return "a config must hold a kwargs object of at most 64 values"
    for name, value in cfg.get("kwargs", {}).items():
        why = "name too long" if len(name) > 256 else _bad_value(value)
        if why:
            return f"config value {printable(name[:80])}: {why}"
    for opt in _CONFIG_OPTIONS:
        v = cfg.get(opt)
        if v is not None and not _count_int(v, 1 << 16):
            return f"config option {opt} is not a small non-negative integer"
    for num in _CONFIG_NUMBERS:
        if cfg.get(num) is not None and not _number(cfg[num]):
            return f"config {num} is not a finite non-negative number"
    if "grid" in cfg and _bad_launch({"grid": cfg["grid"]}):
        return "config grid must be at most 3 non-negative integers"
    return None


def _valid_tuning(obj: dict[str, Any]) -> str | None:
    """A tuning line (version 3): what the autotuner measured for one key of one kernel (see gpu/capture_record)."""
    for key in ("path", "kernel"):
        if not isinstance(obj.get(key), str) or len(obj[key]) > _MAX_TEXT or not obj[key].isprintable():
            return f"field {key!r} missing, too long or not a printable string"
    for key in ("target", "triton_version"):
        if obj.get(key) is not None and (not isinstance(obj[key], str) or len(obj[key]) > 64):
            return f"field {key!r} is not a short string"
    if obj.get("key") is not None and (not isinstance(obj["key"], list) or _bad_value(obj["key"])):
        return "field 'key' is not a bounded list"
    for field_name in ("configs", "pruned"):
        why = _bad_list(obj, field_name, MAX_TUNING_CONFIGS, _bad_config)
        if why:
            return why
    if not obj.get("configs"):
        return "field 'configs' is empty"
    chosen = obj.get("chosen")
    if chosen is not None and not _count_int(chosen, len(obj["configs"])):
        return "field 'chosen' is not an index into 'configs'"
    if obj.get("offered") is not None and not _count_int(obj["offered"], 1 << 20):
        return "field 'offered' is not a small non-negative integer"
    if obj.get("bench_s") is not None and not _number(obj["bench_s"]):
        return "field 'bench_s' is not a finite non-negative number"
    if "cached" in obj and not isinstance(obj["cached"], bool):
        return "field 'cached' is not a boolean"
    if "args" in obj and _bad_launch({"args": obj["args"]}):
        return "field 'args' is not an object"
    return None


MAX_LAUNCH_COUNTS = 64  # distinct launches a line may list (the writer lists 16)
_MAX_DISTINCT = 1024  # distinct launches folded per compile; launches of further ones count as "other"


def _bad_launch(launch: Any) -> bool:
    return not (isinstance(launch, dict) and isinstance(launch.get("args", {}), dict)
                and isinstance(launch.get("grid", []), list) and len(launch.get("grid", [])) <= 3
                and all(isinstance(g, int) and not isinstance(g, bool) and 0 <= g < _MAX_INT
                        for g in launch.get("grid", [])))


def _bad_descriptors(launch: dict[str, Any]) -> str | None:
    """Why a launch's host tensor descriptor arguments (`{"descriptor": {...}}`) are not usable, None when they are."""
    for name, arg in (launch.get("args") or {}).items():
        if isinstance(arg, dict) and "descriptor" in arg and clean_descriptor(arg["descriptor"]) is None:
            return (f"descriptor {str(name)[:80]} must hold a base tensor with a dtype and shape, strides and "
                    f"block_shape of one rank (1-5)")
    return None


def _count_int(value: Any, limit: int = _MAX_INT) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < limit


def _bad_count(item: Any) -> str | None:
    """One entry of `launch_counts`: {"launch": {...}, "count": n} and, when the run was timed, "time_us" (a finite
    non-negative number) and "timed" (how many launches it is the median of)."""
    if not isinstance(item, dict) or _bad_launch(item.get("launch")) or not _count_int(item.get("count")):
        return "an entry must hold a launch (grid and args) and a non-negative integer count"
    why = _bad_descriptors(item["launch"])
    if why:
        return why
    t = item.get("time_us")
    if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t < 1e12):
        return "time_us is not a finite non-negative number"
    if item.get("timed") is not None and not _count_int(item["timed"], 1 << 20):
        return "timed is not a small non-negative integer"
    if (t is None) != (item.get("timed") is None):
        return "time_us and timed go together"
    low = item.get("time_min_us")
    if low is not None and (t is None or isinstance(low, bool) or not isinstance(low, (int, float))
                            or not 0 <= low <= t):
        return "time_min_us is not a number between 0 and time_us"
    return None


def identity(rec: dict[str, Any]) -> str:
    """Two lines are the same compile when these fields agree (the launch that came with it does not count)."""
    blob = json.dumps([rec.get(k) for k in IDENTITY_FIELDS], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def bounded_lines(f: Any, limit: int = MAX_LINE) -> Iterator[str]:
    """The lines of a text file, none held longer than `limit` + 1 characters: a longer line is cut there and the
    rest of it skipped unread into memory, so the caller sees it (len > limit) and can report it."""
    while True:
        line = f.readline(limit + 1)
        if not line:
            return
        newline = "\n" if isinstance(line, str) else b"\n"  # text or binary files alike
        if len(line) > limit and not line.endswith(newline):
            rest = line
            while rest and not rest.endswith(newline):
                rest = f.readline(limit)
        yield line


def fold_captures(caps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One dict per distinct compile from the lines `load_captures` returned (their order kept), with
    `launches`: how many times it launched outside the autotuner's benchmark — the sum of the count records
    (`"record": "summary"`) the capturing processes wrote at exit; without any (a version-1 file, a process that
    died first) 1 when the line came with a launch and was no autotuner trial, else 0 — a lower bound; and
    `autotune`: "chosen" when the autotuner picked this config for some key (`autotune_keys` lists them), "trial"
    when it only benchmarked it, None for a kernel that is not autotuned.

    When the summary lines carry `launch_counts` (distinct launches with their counts, see gpu/capture.py), the
    fold has `launch_counts` too: each distinct launch once, its counts summed over the lines, the most launched
    first (ties: first seen first), with `time_us` and `timed` where the run was timed (`time_us`: the medians of
    the lines, weighed by their `timed`; `time_min_us`: the least of their minimums, when every line kept one); and `launch` is the most launched of them — the launch a replay should
    make. Without them `launch` is the first launch of the compile, as before."""
    out: dict[str, dict[str, Any]] = {}
    counted: dict[str, int] = {}
    shapes: dict[str, dict[str, dict[str, Any]]] = {}  # identity -> canonical launch JSON -> folded entry
    for cap in caps:
        ident = identity(cap)
        summary = cap.get("record") == "summary"
        first = out.get(ident)
        if first is None:
            first = out[ident] = dict(cap)
            first.pop("record", None)
            first.pop("launches", None)
            first.pop("launch_counts", None)
            first["autotune_keys"] = []
            first["autotune"] = None
        if isinstance(cap.get("launches"), int):  # count lines, or captures folded already (folding is idempotent)
            counted[ident] = counted.get(ident, 0) + cap["launches"]
        for item in cap.get("launch_counts") or ():
            _add_count(shapes.setdefault(ident, {}), item)
        if not summary and "launch" not in first and "launch" in cap:
            first["launch"] = cap["launch"]
        role = cap.get("autotune")
        if role == "chosen" or (role == "trial" and first["autotune"] is None):
            first["autotune"] = role
        for key in cap.get("autotune_keys") or []:
            if key not in first["autotune_keys"]:
                first["autotune_keys"].append(key)
    for ident, first in out.items():
        fallback = int("launch" in first and first["autotune"] != "trial")
        first["launches"] = counted.get(ident, fallback)
        if shapes.get(ident):
            ranked = sorted(shapes[ident].values(), key=lambda e: -e["count"])[:MAX_LAUNCH_COUNTS]
            first["launch_counts"] = [_folded_count(e) for e in ranked]
            first["launch"] = ranked[0]["launch"]
    return list(out.values())


def _add_count(into: dict[str, dict[str, Any]], item: dict[str, Any]) -> None:
    key = json.dumps(item["launch"], sort_keys=True, default=str)
    entry = into.get(key)
    if entry is None:
        if len(into) >= _MAX_DISTINCT:
            return
        entry = into[key] = {"launch": item["launch"], "count": 0, "time_sum": 0.0, "timed": 0, "time_min": None,
                             "unspread": 0}
    entry["count"] += item["count"]
    if item.get("timed"):
        entry["time_sum"] += float(item["time_us"]) * item["timed"]
        entry["timed"] += item["timed"]
        if item.get("time_min_us") is not None:
            low = float(item["time_min_us"])
            entry["time_min"] = low if entry["time_min"] is None else min(entry["time_min"], low)
        else:
            entry["unspread"] += item["timed"]  # timed by a capture that kept no minimum


def _folded_count(entry: dict[str, Any]) -> dict[str, Any]:
    out = {"launch": entry["launch"], "count": entry["count"]}
    if entry["timed"]:
        out.update(time_us=round(entry["time_sum"] / entry["timed"], 3), timed=entry["timed"])
        if entry["time_min"] is not None and not entry["unspread"]:
            out["time_min_us"] = round(min(entry["time_min"], out["time_us"]), 3)
    return out


def capture_root(file: str, workspace_root: str) -> str:
    """The folder a capture file's paths are relative to: the one holding its `.tritonlens/` folder, else the
    file's own folder when it lies elsewhere (`--captures runs/h200.jsonl`), else the workspace root."""
    folder = os.path.dirname(os.path.abspath(file))
    if is_sidecar_folder(folder):
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
    want = os.path.normcase(os.path.abspath(path)) if path else None
    roots = list(dict.fromkeys([capture_root(file, workspace_root), workspace_root]))
    parsed = _parsed(file, roots)
    if parsed is None:
        return [], []
    objs, problems = parsed
    out = [obj for obj in objs if (want is None or want in obj["_resolved"]) and obj.get("record") != "tuning"]
    # One capture per distinct compile, with its launch count and the autotuner's role (version 2 count and choice
    # records folded in; a version-1 file gets the lower bound).
    return fold_captures(out), list(problems)


def load_tunings(workspace_root: str, path: str | None = None, file: str | None = None) -> list[dict[str, Any]]:
    """The tuning lines of the workspace's capture file (those of the kernel file `path` when given), validated as
    `load_captures` validates the rest (its problems report bad tuning lines too): what the autotuner measured, one
    line per kernel and key it benchmarked, the latest last."""
    file = file or captures_path(workspace_root)
    want = os.path.normcase(os.path.abspath(path)) if path else None
    parsed = _parsed(file, list(dict.fromkeys([capture_root(file, workspace_root), workspace_root])))
    if parsed is None:
        return []
    return [obj for obj in parsed[0] if obj.get("record") == "tuning" and (want is None or want in obj["_resolved"])]


# A module cache on purpose: the owner is the file on disk — an entry is keyed by its path, mtime and size, so an
# edited file is read again — and every reader in the process (check, the server's features, bench) reads the same
# file. One entry: the latest capture file read.
_PARSED: dict[tuple, tuple[list[dict[str, Any]], list[str]]] = {}


def _parsed(file: str, roots: list[str]) -> tuple[list[dict[str, Any]], list[str]] | None:
    """The valid lines of a capture file and the problems of the others, read once per version of the file (a check
    of many files asks for each of them; 529 lines took a second to re-read each time). Callers get copies."""
    try:
        st = os.stat(file)
    except OSError:
        return None
    key = (os.path.abspath(file), st.st_mtime_ns, st.st_size, tuple(roots))
    hit = _PARSED.get(key)
    if hit is None:
        try:
            hit = _read_lines(file, roots)
        except OSError:
            return None
        except UntrustedFile as exc:  # a link to /dev/zero, a FIFO, a file of gigabytes: said, not read
            hit = ([], [str(exc)])
        _PARSED.clear()  # one file at a time is what a check or a server reads
        _PARSED[key] = hit
    return [dict(obj) for obj in hit[0]], hit[1]


def _read_lines(file: str, roots: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
    out: list[dict[str, Any]] = []
    problems: list[str] = []
    lines = list(bounded_lines(io.StringIO(read_text(file, root=roots[0]))))
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        if len(line) > MAX_LINE:
            problems.append(f"{file}:{n}: skipped: longer than {MAX_LINE} characters")
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as exc:  # RecursionError: nesting deeper than the parser goes
            problems.append(f"{file}:{n}: not JSON ({getattr(exc, 'msg', None) or str(exc)[:120]})")
            continue
        why = _valid(obj)
        if why:
            problems.append(f"{file}:{n}: skipped: {why}")
            continue
        obj = _decoded(obj)
        obj["_source"] = f"{os.path.basename(file)}:{n}"
        obj["_line"] = n
        obj["_resolved"] = _candidates(obj["path"], roots)
        out.append(obj)
    return out, problems


def unmatched(workspace_root: str, file: str | None, checked: dict[str, set[str]]) -> list[str]:
    """What a capture file holds that this check used nowhere, said in a few lines (never dropped silently):
    captures whose path is no file here (a different checkout, or paths relative to another folder), captures whose
    path leads outside the workspace, and captures of a checked file whose kernel it no longer defines. `checked`
    maps each checked file (absolute) to the names of its kernels. Captures of files that exist but were not checked
    are fine (a partial check). A path outside the workspace is said to be so, never whether a file is there: a
    capture file is the repository's, and what a check prints lands in a CI log — naming the paths of those that
    do not exist told anyone which files exist outside."""
    caps, _ = load_captures(workspace_root, None, file)
    if not caps:
        return []
    shown = file or captures_path(workspace_root)
    roots = list(dict.fromkeys([capture_root(shown, workspace_root), workspace_root]))
    real_roots = [os.path.realpath(r) for r in roots]
    want = {os.path.normcase(os.path.abspath(p)): names for p, names in checked.items()}
    missing_files: dict[str, int] = {}
    outside_files: dict[str, int] = {}
    missing_kernels: dict[tuple[str, str], int] = {}
    for cap in caps:
        hit = next((c for c in cap["_resolved"] if c in want), None)
        if hit is not None:
            if cap["kernel"] not in want[hit]:
                missing_kernels[(cap["path"], cap["kernel"])] = missing_kernels.get((cap["path"], cap["kernel"]), 0) + 1
            continue
        here = [c for c in cap["_resolved"] if any(inside(os.path.realpath(c), r) for r in real_roots)]
        if not here:
            outside_files[cap["path"]] = outside_files.get(cap["path"], 0) + 1
        elif not any(os.path.exists(c) for c in here):
            missing_files[cap["path"]] = missing_files.get(cap["path"], 0) + 1
    out = []
    if missing_files:
        out.append(f"{shown}: {sum(missing_files.values())} captures name files that are not under "
                   f"{', '.join(roots)}: {_listed(missing_files)} — their paths are relative to the folder that held "
                   "`.tritonlens/` when they were recorded; check from that folder or pass --captures with the file "
                   "inside it")
    if outside_files:
        out.append(f"{shown}: {sum(outside_files.values())} captures name files outside the workspace "
                   f"({', '.join(roots)}): {_listed(outside_files)} — used only by a check that names those files")
    for (p, k), n in sorted(missing_kernels.items()):
        out.append(f"{shown}: {n} capture(s) of {printable(k)} in {printable(p)}, which no longer defines that "
                   "kernel; skipped")
    return out


def _listed(counts: dict[str, int], most: int = 5) -> str:
    listed = ", ".join(f"{printable(p)} ({n})" for p, n in sorted(counts.items())[:most])
    return listed + (f" and {len(counts) - most} more" if len(counts) > most else "")
