"""Loop trips of a launch: the IR's `scf.for` bounds evaluated with the launch's values (ir/counts), for the busiest
program when the grid runs in one wave; the AST's `range` loops where the IR has no line.
"""
from __future__ import annotations

import ast
from typing import Any

from ..facts import eval_int


def launch_trips(counts: Any, env: dict[str, int], launch: dict[str, Any], programs: int, concurrent: int):
    """The IR's loops evaluated for one launch (ir/counts.Trips), None without counts: its scalars (`env`), grid
    and the contents of small integer tensors the capture kept (loop bounds the kernel loads from them: expert
    offsets)."""
    if counts is None:
        return None
    data = {name: a["tensor"]["values"] for name, a in (launch.get("args") or {}).items()
            if isinstance(a, dict) and isinstance(a.get("tensor"), dict)
            and isinstance(a["tensor"].get("values"), list)}
    trips = counts.trips(env, [int(g) for g in launch.get("grid") or []], data)
    if programs <= concurrent:
        # one wave: the launch ends with its busiest program (a persistent GEMM's first num_tiles % SMS programs
        # take one tile more), so every program is priced at its trips
        trips = trips.busiest()
    return trips


Loop = tuple[int, int, ast.Call]  # first line, last line, the range(...) call


def kernel_loops(fn: ast.FunctionDef | None) -> list[Loop]:
    """The kernel's `for ... in range / static_range(...)` loops, read once (loop_trips asks them for every line)."""
    out: list[Loop] = []
    for node in ast.walk(fn) if fn is not None else ():
        it = node.iter if isinstance(node, ast.For) else None
        if isinstance(it, ast.Call) and it.args and \
                (it.func.attr if isinstance(it.func, ast.Attribute) else getattr(it.func, "id", "")) \
                in ("range", "static_range"):
            out.append((node.lineno, node.end_lineno or node.lineno, it))
    return out


def loop_trips(loops: list[Loop], line: int, env: dict[str, int]) -> int:
    """How many times a source line of the kernel runs per program: the product of the trips of the `for` loops around
    it (range / tl.static_range with values known in this launch; an unknown loop counts once)."""
    trips = 1
    for first, last, it in loops:
        if not first < line <= last:
            continue
        args = [eval_int(a, env) for a in it.args[:3]]
        if any(a is None for a in args):
            continue
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) > 2 else 1)
        if step and step > 0:
            trips *= max(0, -(-(stop - start) // step))
    return max(trips, 1) if trips else 0
