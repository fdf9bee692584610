"""What a compile worker sends back: JSON, checked field by field — never pickle.

The worker runs the user's module code; whatever it writes to its result pipe is untrusted. Unpickling it would run
code in the checking process (or the language server); JSON makes data only, and `artifacts_from_wire` accepts only
the shape `artifacts_to_wire` makes (anything else raises `ValueError`: the pool reports a worker failure and goes
on). A message is at most `MAX_MESSAGE` bytes: the framing refuses a longer one before reading it. Inside it, what
presenters show as numbers must be numbers (a metric, a line), a finding's code and severity are of the known forms,
and every text but the compiler's own IR is bounded: an error message or finding message to `MAX_TEXT` (module code
can put a whole file it read into its exception), names to `MAX_NAME`.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import asdict
from typing import Any

from ..ir.sass import LazyAsm
from ..model import Artifacts, CompileError, Finding, Related, Resources

_TEXTS = Artifacts.__dataclass_fields__["asm"].default_factory  # the dict type a compile's texts are kept in
MAX_MESSAGE = 256 << 20  # a 1-warp 8192-element kernel's PTX is 2.4 MB; a hundred times that is no compile's
_DEPTH = 64  # nesting of any JSON value a worker sends (metadata, finding data)
MAX_TEXT = 64 << 10  # characters of one message (an error, a finding); longer ones are cut, and say so
MAX_NAME = 4 << 10  # characters of a name, a path, a key
MAX_DETAILS = 64  # lines of a finding's evidence
_CODE = re.compile(r"[A-Z]{2,12}[0-9]{3}")
_SEVERITIES = ("error", "warning", "info", "hint")
# metrics the presenters show as numbers (report/html.py, lsp/hover.py, the baseline)
_NUMERIC = ("registers", "spill_bytes", "stack", "shared", "compile_time", "spill_stores", "spill_loads",
            "convert_layout", "local_alloc", "dots", "bar", "mma", "wgmma", "fma", "ldl", "stl")


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), default=_plain).encode("utf-8", "surrogatepass")


def _plain(value: Any) -> Any:
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"{type(value).__name__} does not travel from a worker")


def decode(data: bytes) -> dict[str, Any]:
    try:
        message = json.loads(data.decode("utf-8", "surrogatepass"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ValueError(f"not JSON ({type(exc).__name__})") from None
    if not isinstance(message, dict):
        raise ValueError("not a JSON object")
    _check_depth(message)
    return message


def _check_depth(value: Any, depth: int = 0) -> None:
    if depth > _DEPTH:
        raise ValueError(f"nested deeper than {_DEPTH}")
    if isinstance(value, dict):
        for v in value.values():
            _check_depth(v, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _check_depth(v, depth + 1)


def artifacts_to_wire(art: Artifacts) -> dict[str, Any]:
    lazy = isinstance(art.asm, LazyAsm)
    wire = {"kernel": art.kernel, "spec_key": art.spec_key, "target": art.target,
            "asm": dict(dict.items(art.asm)) if lazy else dict(art.asm), "lazy_sass": lazy,
            "asm_error": art.asm.error if lazy else None, "paths": art.paths, "metadata": art.metadata,
            "resources": asdict(art.resources), "remarks": art.remarks, "compile_time": art.compile_time,
            "cached": art.cached, "error": asdict(art.error) if art.error else None, "analysis": None}
    if art.analysis is not None:
        wire["analysis"] = analysis_to_wire(art.analysis)
    return wire


def analysis_to_wire(analysis: tuple[dict, list[Finding]]) -> dict[str, Any]:
    """(metrics, findings) of a compile as JSON data: what a worker sends, and what the artefact cache keeps."""
    metrics, findings = analysis
    return {"metrics": metrics, "findings": [_finding_to_wire(f) for f in findings]}


def analysis_from_wire(value: Any) -> tuple[dict, list[Finding]]:
    """The (metrics, findings) `analysis_to_wire` made, or ValueError."""
    return _metrics(_need(value, "metrics", dict)), [_finding(f) for f in _need(value, "findings", list)]


def bounded(text: str, limit: int = MAX_TEXT) -> str:
    """`text` cut to `limit` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f" … ({len(text) - limit} more characters cut by tritonlens)"


def _number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _data(value: Any, where: str) -> Any:
    """A JSON value whose numbers are finite and whose texts (and keys) are bounded; ValueError otherwise."""
    if value is None or type(value) is bool or _number(value):
        return value
    if isinstance(value, str):
        return bounded(value)
    if isinstance(value, list):
        return [_data(v, where) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) and len(k) <= MAX_NAME for k in value):
            raise ValueError(f"{where}: a key is not a short string")
        return {k: _data(v, k) for k, v in value.items()}
    raise ValueError(f"{where}: not a finite number")


def _metrics(value: dict) -> dict:
    metrics = _data(value, "metrics")
    for key in _NUMERIC:
        if metrics.get(key) is not None and not _number(metrics[key]):
            raise ValueError(f"metric {key!r} is not a number")
    occ = metrics.get("occupancy")
    if occ is not None and not (isinstance(occ, dict) and all(_number(occ.get(k)) for k in
                                                               ("warps", "max_warps", "occupancy", "blocks"))):
        raise ValueError("metric 'occupancy' is malformed")
    widths = metrics.get("global_widths")
    if widths is not None and not (isinstance(widths, dict) and all(
            isinstance(w, dict) and all(b.isdigit() and type(n) is int for b, n in w.items())
            for w in widths.values())):
        raise ValueError("metric 'global_widths' is malformed")
    return metrics


def _finding_to_wire(f: Finding) -> dict[str, Any]:
    out = asdict(f)
    out["related"] = [asdict(r) for r in f.related]
    return out


def _need(obj: Any, key: str, kind: Any, optional: bool = False) -> Any:
    value = obj.get(key) if isinstance(obj, dict) else None
    if value is None and optional:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"field {key!r} is not {getattr(kind, '__name__', kind)}")
    return value


def _strings(obj: Any, key: str) -> dict[str, str]:
    value = _need(obj, key, dict)
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ValueError(f"field {key!r} is not a map of strings")
    return value


_INT_OR_NONE = (int, type(None))


def artifacts_from_wire(wire: Any) -> Artifacts:
    """The Artifacts a worker described, or ValueError."""
    if not isinstance(wire, dict):
        raise ValueError("not an object")
    res = _need(wire, "resources", dict)
    if set(res) - set(Resources.__dataclass_fields__) or not all(isinstance(v, _INT_OR_NONE) for v in res.values()):
        raise ValueError("malformed resources")
    art = Artifacts(kernel=_need(wire, "kernel", str), spec_key=_need(wire, "spec_key", str),
                    target=_need(wire, "target", str), paths=_strings(wire, "paths"),
                    metadata=_need(wire, "metadata", dict), resources=Resources(**res),
                    remarks=_need(wire, "remarks", str), compile_time=float(_need(wire, "compile_time", (int, float))),
                    cached=bool(_need(wire, "cached", bool)), error=_error(wire.get("error")))
    asm = _strings(wire, "asm")
    if wire.get("lazy_sass"):
        art.asm = LazyAsm(asm)
        art.asm.error = _need(wire, "asm_error", str, optional=True)
    else:
        art.asm = _TEXTS(asm)
    if wire.get("analysis") is not None:
        art.analysis = analysis_from_wire(wire["analysis"])
    return art


def _error(value: Any) -> CompileError | None:
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - set(CompileError.__dataclass_fields__):
        raise ValueError("malformed error")
    err = CompileError(kind=bounded(_need(value, "kind", str), MAX_NAME), message=bounded(_need(value, "message", str)))
    for key in ("line", "col", "end_col"):
        setattr(err, key, _need(value, key, int, optional=True))
    err.path = _need(value, "path", str, optional=True)
    return err


def _finding(value: Any) -> Finding:
    if not isinstance(value, dict):
        raise ValueError("malformed finding")
    ints = {k: _need(value, k, int) for k in ("line", "column", "end_line", "end_column")}
    texts = {k: _need(value, k, str) for k in ("path", "code", "severity", "message")}
    if not _CODE.fullmatch(texts["code"]) or texts["severity"] not in _SEVERITIES:
        raise ValueError("malformed finding code or severity")
    texts["message"] = bounded(texts["message"])
    optional = {k: _need(value, k, str, optional=True) for k in ("kernel", "config", "target")}
    if any(len(v) > MAX_NAME for v in (texts["path"], *filter(None, optional.values()))):
        raise ValueError("a finding's name or path is too long")
    related = [Related(_need(r, "path", str), _need(r, "line", int), bounded(_need(r, "message", str)))
               for r in _need(value, "related", list)]
    details = _need(value, "details", list, optional=True) or []
    if len(details) > MAX_DETAILS or not all(isinstance(d, str) for d in details):
        raise ValueError("malformed finding details")
    details = [bounded(d) for d in details]
    return Finding(**ints, **texts, **optional, related=related, details=details,
                   data=_data(_need(value, "data", dict), "data"))
