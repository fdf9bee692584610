"""Compiler remarks / warnings / errors that Triton prints on stderr with MLIR_ENABLE_DIAGNOSTICS=remarks:

    /path/add.py:13:16: remark: Warning: vectorization fails vec = 1 origin vec = 4 numElems = 8 mask is 1
    <blank>
        x = tl.load(x_ptr + offsets, mask=mask)
                   ^

The source excerpt and caret lines that follow each diagnostic are skipped. Pure.
"""
from __future__ import annotations

from dataclasses import dataclass

from .linemap import decimal

SEVERITY_WORDS = ("remark", "warning", "error", "note")


@dataclass(frozen=True)
class Remark:
    file: str
    line: int
    col: int
    severity: str  # remark | warning | error | note
    message: str


def _parse_head(line: str) -> Remark | None:
    for word in SEVERITY_WORDS:
        marker = f": {word}: "
        pos = line.find(marker)
        if pos < 0:
            if line.endswith(f": {word}:"):
                pos = len(line) - len(word) - 3
            else:
                continue
        head = line[:pos]
        message = line[pos + len(marker) :].strip()
        # head = file:line:col (the file may itself contain ':', e.g. a Windows drive)
        bits = head.rsplit(":", 2)
        if len(bits) == 3 and decimal(bits[1]) is not None and decimal(bits[2]) is not None:
            return Remark(bits[0], decimal(bits[1]), decimal(bits[2]), word, message)
        if len(bits) >= 2 and decimal(bits[-1]) is not None:
            file, _, ln = head.rpartition(":")
            return Remark(file, decimal(ln), 0, word, message)
        return None
    return None


def parse_remarks(stderr_text: str) -> list[Remark]:
    out: list[Remark] = []
    for raw in stderr_text.split("\n"):
        line = raw.rstrip("\r")
        if not line or line[0].isspace():
            continue  # the source excerpt and the caret line
        r = _parse_head(line)
        if r is not None:
            out.append(r)
    return out


def _int_after(message: str, key: str) -> int | None:
    pos = message.find(key + " = ")
    while pos > 0 and message[pos - 1].isalnum():  # match whole words only
        pos = message.find(key + " = ", pos + 1)
    if pos < 0:
        return None
    j = pos + len(key) + 3
    k = j
    while k < len(message) and message[k].isdecimal():
        k += 1
    return decimal(message[j:k]) if k > j else None


def parse_vectorization(message: str) -> dict | None:
    """`Warning: vectorization fails vec = 1 origin vec = 4 numElems = 8 mask is 1` ->
    {"vec": 1, "origin_vec": 4, "num_elems": 8, "causes": ["mask"], "flags": {"mask": 1}}. None for other
    messages. `elemsPerThread` (stores) is reported as num_elems too."""
    if "vectoriz" not in message:
        return None
    origin = _int_after(message, "origin vec")
    # "vec = " first occurrence that is not the one in "origin vec = "
    vec = None
    i = 0
    while True:
        pos = message.find("vec = ", i)
        if pos < 0:
            break
        if not message[:pos].endswith("origin "):
            vec = _int_after(message[pos:], "vec")
            break
        i = pos + 1
    num = _int_after(message, "numElems")
    if num is None:
        num = _int_after(message, "elemsPerThread")
    flags: dict[str, int] = {}
    words = message.split()
    for k in range(len(words) - 2):
        value = decimal(words[k + 2].removeprefix("-"))
        if words[k + 1] == "is" and value is not None:
            flags[words[k]] = -value if words[k + 2].startswith("-") else value
    causes = [name for name, val in flags.items() if val]
    return {"vec": vec, "origin_vec": origin, "num_elems": num, "causes": causes, "flags": flags,
            "fails": "fail" in message}
