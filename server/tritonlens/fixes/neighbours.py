"""Changes to try on a launch that carries time, made from what the compiler and the cost model said of it: the
chosen config's neighbours in the direction of each finding's cause, in the kernel's own knobs (launch options,
constexprs of its autotune configs or launch), beyond the configs the autotune list already has. Pure: `tune` proves
each on the CPU (it must compile, within the target's shared memory) and times the proven ones at the real launch.

Directions by cause:
- a tile larger than the launch's extent (LAUNCH004): the tile that fits, with the other tile dimensions re-balanced
  (the dimension beside it wider, the reduction deeper, a deeper pipeline) — not only the one dimension changed;
- spills (SASS001): more warps for the same tile, a shallower pipeline, a smaller tile;
- idle SMs (LAUNCH002): smaller tiles (more programs), a split of the reduction where the kernel has one;
- shared memory over the limit or low occupancy (RES001/RES002): a shallower pipeline, a smaller tile;
- any launch that carries time: num_warps halved and doubled, num_stages one up and one down, then each tile
  dimension halved and doubled.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_PER_KERNEL = 8
WARPS = (1, 2, 4, 8, 16)
STAGES = range(1, 7)
MIN_TILE, MAX_TILE = 16, 256


@dataclass
class Neighbour:
    """One change of the chosen config: the constexprs and options it sets (only those that differ), why."""

    constants: dict[str, int] = field(default_factory=dict)
    options: dict[str, int] = field(default_factory=dict)
    why: str = ""
    finding: tuple[str, int] | None = None  # (code, line) of the finding whose cause it goes after

    def change_text(self, base_constants: dict[str, Any], base_options: dict[str, Any]) -> str:
        old = {**base_constants, **base_options}
        return ", ".join(f"{k} {old.get(k, '?')} → {v}" for k, v in {**self.constants, **self.options}.items())

    def ident(self) -> tuple:
        return tuple(sorted(self.constants.items())), tuple(sorted(self.options.items()))


def tile_names(constants: dict[str, Any], config_names: list[str]) -> list[str]:
    """The constexprs that size a tile: the autotune configs' power-of-two values, else BLOCK/TILE-named ones."""
    names = config_names or [k for k in constants if any(s in k.upper() for s in ("BLOCK", "TILE"))]
    return [k for k in names if _pow2(constants.get(k)) and "GROUP" not in k.upper()]


def _pow2(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1 and v & (v - 1) == 0


def _axis(name: str) -> str:
    """M, N or K by the name's last letter group (BLOCK_SIZE_M, BLOCK_M, BM, TILE_K); '' otherwise."""
    tail = name.upper().rstrip("0123456789").split("_")[-1]
    return tail[-1] if tail and tail[-1] in "MNK" and (len(tail) <= 2 or tail.startswith("SIZE")) else ""


def _warps(v: int, up: bool) -> int | None:
    w = v * 2 if up else v // 2
    return w if w in WARPS else None


def neighbours(constants: dict[str, Any], options: dict[str, Any], findings: list[Any], config_names: list[str],
               existing: set[tuple] | None = None, limit: int = MAX_PER_KERNEL) -> list[Neighbour]:
    """The changes to try for a launch compiled with `constants`/`options`, the findings' causes first (in the
    findings' order: the costliest first), then the plain option neighbours; none that equals the launch itself or a
    config in `existing` ((sorted kwargs items, num_warps, num_stages) as fixes/tuning._existing gives them)."""
    tiles = tile_names(constants, config_names)
    warps, stages = int(options.get("num_warps", 4)), int(options.get("num_stages", 3))
    out: list[Neighbour] = []
    seen: set[tuple] = set()

    def add(consts: dict[str, int], opts: dict[str, int], why: str, f=None) -> None:
        consts = {k: v for k, v in consts.items() if constants.get(k) != v}
        opts = {k: v for k, v in opts.items() if options.get(k, {"num_warps": 4, "num_stages": 3}.get(k)) != v}
        if not consts and not opts:
            return
        if any(not 1 <= v <= 4096 for v in consts.values()):
            return
        n = Neighbour(consts, opts, why, (f.code, f.line) if f is not None else None)
        full = (tuple(sorted({**{k: constants[k] for k in (config_names or consts) if k in constants},
                              **consts}.items())), opts.get("num_warps", warps), opts.get("num_stages", stages))
        if n.ident() in seen or (existing and full in existing):
            return
        seen.add(n.ident())
        out.append(n)

    for f in findings:
        code, data = getattr(f, "code", ""), getattr(f, "data", {}) or {}
        if code == "LAUNCH004" and isinstance(data.get("name"), str) and isinstance(data.get("fit"), int):
            name, fit = data["name"], data["fit"]
            if name not in constants:
                continue
            why = f"a {name} = {fit} tile fits the launch's extent"
            add({name: fit}, {}, why, f)
            beside = [t for t in tiles if t != name and _axis(t) in "MN" and _axis(t) != _axis(name)]
            depth = [t for t in tiles if _axis(t) == "K"]
            for b in beside:
                add({name: fit, b: constants[b] // 2}, {}, why + f", {b} narrower (more programs)", f)
            for d in depth:
                add({name: fit, d: constants[d] * 2}, {}, why + f", {d} deeper (fewer K trips)", f)
                for b in beside:
                    add({name: fit, b: constants[b] // 2, d: constants[d] * 2}, {},
                        why + f", {b} narrower, {d} deeper", f)
            add({name: fit}, {"num_stages": stages + 1}, why + ", a deeper pipeline", f)
            if (w := _warps(warps, False)) is not None:
                add({name: fit}, {"num_warps": w}, why + ", fewer warps for the smaller tile", f)
        elif code == "SASS001":
            if (w := _warps(warps, True)) is not None:
                add({}, {"num_warps": w}, "more warps: fewer values a thread", f)
            if stages - 1 in STAGES:
                add({}, {"num_stages": stages - 1}, "a shallower pipeline: fewer live buffers", f)
            for t in tiles:
                if constants[t] // 2 >= MIN_TILE:
                    add({t: constants[t] // 2}, {}, f"a smaller {t}: fewer values a thread", f)
        elif code == "LAUNCH002":
            for t in tiles:
                if _axis(t) in "MN" and constants[t] // 2 >= MIN_TILE:
                    add({t: constants[t] // 2}, {}, f"a smaller {t}: more programs for the idle SMs", f)
            split = next((k for k in constants if "SPLIT" in k.upper() and _pow2(constants[k])), None)
            if split is not None:
                add({split: constants[split] * 2}, {}, f"{split} doubled: the reduction split over more programs", f)
        elif code in ("RES001", "RES002"):
            if stages - 1 in STAGES:
                add({}, {"num_stages": stages - 1}, "a shallower pipeline: less shared memory", f)
            for t in tiles:
                if constants[t] // 2 >= MIN_TILE:
                    add({t: constants[t] // 2}, {}, f"a smaller {t}: less shared memory", f)
    for up in (True, False):
        if (w := _warps(warps, up)) is not None:
            add({}, {"num_warps": w}, f"num_warps {'doubled' if up else 'halved'}")
    for s in (stages + 1, stages - 1):
        if s in STAGES:
            add({}, {"num_stages": s}, f"num_stages {'one deeper' if s > stages else 'one shallower'}")
    for t in tiles:  # the tile's own neighbours, one dimension at a time
        for v, how in ((constants[t] // 2, "halved"), (constants[t] * 2, "doubled")):
            if MIN_TILE <= v <= MAX_TILE or (_axis(t) == "" and 1 <= v <= 2 * constants[t]):
                add({t: v}, {}, f"{t} {how}")
    return out[:limit]
