"""PTX001 / PTX002: tensor loads and stores that use global accesses narrower than 128 bits though each thread's
elements would fill 128 bits. Evidence: the PTX (or AMDGCN) accesses stamped with the `tl.load` / `tl.store`
position, and Triton's `vectorization fails vec = 1 origin vec = 4 ... mask is 1` remark for the cause."""
from __future__ import annotations

from collections import Counter

from .registry import rule
from ._common import anchor, finding, in_kernel_file, related, source_index, tensor_shape_dtype
from ..model import one_line
from .facts import Access, contiguous, lane_terms, tensor_accesses

_FULL_BITS = 128


def _machine_accesses(ctx, store: bool):
    """(stage, [(ir_line, loc, opcode, bits)]) of the global accesses of the kernel's own code."""
    if ctx.hip:
        kinds = {"st.global"} if store else {"ld.global"}
        return "amdgcn", [(i.ir_line, i.loc, i.opcode, i.bits) for i in ctx.amdgcn.instrs if i.kind in kinds]
    kinds = {"st.global"} if store else {"ld.global", "cp.async"}
    # libdevice's own table loads (sin/cos range reduction) are plain PTX inlined into the entry: not the user's
    return "ptx", [(i.ir_line, i.loc, i.opcode, i.bits) for i in ctx.ptx.instrs
                   if i.kind in kinds and not i.likely_library]


def _vectorization_remark(ctx, line: int, col: int):
    from ..ir.remarks import parse_vectorization

    best = None
    for r in ctx.remarks:
        if r.line != line or not in_kernel_file(ctx, r):
            continue
        info = parse_vectorization(r.message)
        if info is None:
            continue
        if r.col == col:
            return info
        best = best or info
    return best


def _unaligned_params(ctx, names: set[str]) -> tuple[list[str], list[str]]:
    """(pointer params not known 16-byte aligned, int params not known multiples of 16) among `names`."""
    ptrs, ints = [], []
    for name, ty in ctx.spec.signature.items():
        if name not in names or ty == "constexpr" or name in ctx.spec.constants:
            continue
        div = ctx.spec.attrs.get(name, {}).get("divisibility")
        if div == 16:
            continue
        if ty.startswith("*"):
            ptrs.append(name)
        elif ty[:1] in ("i", "u"):
            ints.append(name)
    return ptrs, ints


def _layout_fields(text: str) -> dict[str, str]:
    """`#ttg.swizzled_shared<{vec = 8, perPhase = 1, order = [1, 0]}>` -> {"vec": "8", "order": "[1, 0]", ...}."""
    from ..ir.mlir import split_top

    a, b = text.find("{"), text.rfind("}")
    if a < 0 or b < a:
        return {}
    out = {}
    for part in split_top(text[a + 1 : b], ","):
        key, eq, value = part.partition("=")
        if eq:
            out[key.strip()] = value.strip()
    return out


def _fastest_dim(fields: dict[str, str], rank: int) -> int | None:
    order = fields.get("order", "").strip("[] ")
    if order:
        first = order.split(",")[0].strip()
        return int(first) if first.isdigit() else None
    if "transposed" in fields:  # nvmma_shared: row-major unless transposed
        return rank - 2 if fields["transposed"] == "true" else rank - 1
    return None


def _shared_layout_cause(ctx, acc: Access) -> str | None:
    """Why an async copy into shared memory (cp.async) is narrow when the global side is not to blame: the shared
    layout the consumer (a dot operand) needs is transposed relative to the global rows, or its swizzle vector is
    shorter than 128 bits. None when the shared layout allows full-width copies."""
    from ..ir.mlir import layout_of, split_top

    op = acc.ops[0]
    if not op.name.endswith("_to_local") or not op.operand_types or not op.result_type:
        return None
    dst = op.result_type.strip().lstrip("!ttg.memdesc").strip("<>")
    parts = split_top(dst, ",")
    shared = next((p.strip() for p in parts[1:] if p.strip().startswith("#")), None)
    src = layout_of(op.operand_types[0])
    if not shared or not src:
        return None
    layouts = ctx.ttgir.layouts
    sh, bl = _layout_fields(layouts.get(shared, shared)), _layout_fields(layouts.get(src, src))
    sd = tensor_shape_dtype(op.operand_types[0])
    rank = len(sd[0]) if sd else 2
    sh_fast, bl_fast = _fastest_dim(sh, rank), _fastest_dim(bl, rank)
    if sh_fast is not None and bl_fast is not None and sh_fast != bl_fast:
        return (f"the shared-memory layout this tile is copied into ({shared}) is contiguous along dim {sh_fast} "
                f"while the global rows are contiguous along dim {bl_fast}, so each cp.async moves one element — "
                f"the dot needs this operand K-major: store it transposed in global memory (load it K-contiguous "
                f"and pass tl.trans(...) to tl.dot)")
    vec = sh.get("vec", "")
    # The swizzle vector only splits copies when there is a swizzle: an unswizzled tile (maxPhase = 1, what a
    # pipelined load with no dot consumer gets, vec = 1) is contiguous along its order, so it caps nothing.
    phase = sh.get("maxPhase", "")
    swizzled = not phase.isdigit() or int(phase) > 1
    if swizzled and vec.isdigit() and int(vec) * acc.elem_bits < _FULL_BITS:
        bits = int(vec) * acc.elem_bits
        return (f"the shared-memory layout this tile is copied into ({shared}, swizzle vec = {vec} × {acc.elem}) "
                f"caps each cp.async at {bits} bits — the dot operand's layout, not the global addresses; storing "
                f"the operand K-major in global memory usually lifts it")
    return None


def _walk_columns(node):
    """ast.walk that does not enter `(...)[:, None]`: what is inside indexes rows, whatever it multiplies."""
    import ast

    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, ast.Subscript):
            sl = n.slice
            elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
            if elts and isinstance(elts[-1], ast.Constant) and elts[-1].value is None:
                continue
        todo.extend(ast.iter_child_nodes(n))


def _gather_source(idx, pointer_expr) -> int | None:
    """The line of a `tl.load` whose values index this access along its contiguous axis (`base + idx_loaded`,
    `partial_ptr + expert * n`): a gather, whose addresses are data — no compiler can prove them contiguous, so a
    narrow access is the expected code, not a missed vectorization. Row indices (`block[:, None] * stride`, paged
    KV) do not count: the columns stay contiguous. None when no loaded value reaches the columns."""
    import ast

    column_names = frozenset(n.id for n in _walk_columns(pointer_expr) if isinstance(n, ast.Name))
    for name in sorted(idx.names_reaching(column_names)):
        for value in idx.assigns.get(name, []):
            for n in ast.walk(value):
                if isinstance(n, ast.Call) and (n.func.attr if isinstance(n.func, ast.Attribute)
                                                else getattr(n.func, "id", "")) == "load":
                    return n.lineno
    return None


def _inner_strides(idx, pointer_expr, params: list[str]) -> list[str]:
    """Int params that multiply the index on every axis of the tile (`x_ptr + offs * stride`): not an alignment
    problem but a stride — the elements of a thread are not adjacent whatever the stride's divisibility. A tile with
    a stride-1 axis has none: the layout runs along that axis (facts.lane_terms, the answer LAUNCH003 reads too)."""
    import ast

    terms = lane_terms(idx, pointer_expr)
    if contiguous(terms) is not False:
        return []
    found: list[str] = []
    for term in terms:
        for n in ast.walk(term):
            if isinstance(n, ast.Name) and n.id in params and n.id not in found:
                found.append(n.id)
    return found


def _cause(ctx, site, acc: Access, remark, store: bool) -> tuple[str, list[str], str]:
    """(cause, params, explanation)."""
    idx = source_index(ctx)
    pointer_names: set[str] = set()
    mask_names: set[str] = set()
    if site is not None:
        args = site.args
        # tl.load(pointer, mask, other) / tl.store(pointer, value, mask)
        if args:
            pointer_names = idx.names_reaching(frozenset(n.id for n in _names(args[0])))
        mask_expr = site.kw.get("mask") or (args[2] if store and len(args) > 2 else
                                           args[1] if not store and len(args) > 1 else None)
        if mask_expr is not None:
            mask_names = idx.names_reaching(frozenset(n.id for n in _names(mask_expr)))
    bad_ptrs, bad_ptr_ints = _unaligned_params(ctx, pointer_names)
    _, bad_mask_ints = _unaligned_params(ctx, mask_names)
    full_vec = max(1, _FULL_BITS // acc.elem_bits)
    origin = remark.get("origin_vec") if remark else None
    vec = remark.get("vec") if remark else None
    if remark and origin and vec is not None and vec < origin and "mask" in remark.get("causes", []):
        params = bad_mask_ints
        why = (f"the mask is not aligned — {_join(params)} {'is' if len(params) == 1 else 'are'} not known to be "
               f"a multiple of 16" if params else "the mask is not known to be aligned to the vector width")
        return "mask", params, why
    if remark is None and bad_mask_ints and not bad_ptrs and not bad_ptr_ints:
        params = bad_mask_ints
        return "mask", params, (f"the mask is not known aligned — {_join(params)} "
                                f"{'is' if len(params) == 1 else 'are'} not known to be a multiple of 16")
    if remark is None:
        shared_why = _shared_layout_cause(ctx, acc)
        if shared_why is not None:
            return "shared-layout", [], shared_why
    gathered = _gather_source(idx, site.args[0]) if site is not None and site.args else None
    if gathered is not None and (origin is None or origin < full_vec):
        return "gather", [], (f"a gather: its addresses come from values loaded on line {gathered}, which no compiler "
                              f"can prove contiguous — expected for an indexed access; sorting or grouping the "
                              f"indices so that runs are contiguous is the only way to wider accesses")
    strides = _inner_strides(idx, site.args[0], bad_ptr_ints) if site is not None and site.args else []
    if strides and (origin is None or origin < full_vec):
        return "stride", strides, (f"the addresses are not contiguous per thread — {_join(strides)} multiplies the "
                                   f"index along the contiguous axis, so each element is a separate access whatever "
                                   f"its divisibility; if it is 1 at run time Triton specializes it (hint "
                                   f"`{strides[0]}=1`), else make the innermost stride 1")
    bad_ptr_ints = [p for p in bad_ptr_ints if p not in strides]
    if (origin is None or origin < full_vec) and (bad_ptrs or bad_ptr_ints):
        params = bad_ptrs + bad_ptr_ints
        parts = []
        if bad_ptrs:
            parts.append(f"{_join(bad_ptrs)} {'is' if len(bad_ptrs) == 1 else 'are'} not known 16-byte aligned")
        if bad_ptr_ints:
            parts.append(f"{_join(bad_ptr_ints)} {'is' if len(bad_ptr_ints) == 1 else 'are'} not known to be a "
                         f"multiple of 16")
        return "pointer", params, "the pointer is not known aligned — " + " and ".join(parts)
    return "contiguity", [], ("the addresses are not known contiguous per thread (a stride that is not 1, a "
                              "gather, or an offset Triton cannot analyse)")


def _names(expr):
    import ast

    return [n for n in ast.walk(expr) if isinstance(n, ast.Name)]


def _join(names: list[str]) -> str:
    return ", ".join(names)


def _narrow(ctx, store: bool, code: str):
    verb, noun = ("stores", "store") if store else ("loads", "load")
    accesses = tensor_accesses(ctx, store)
    if not accesses:
        return
    stage, machine = _machine_accesses(ctx, store)
    by_stamp: dict[tuple[int, int], list] = {}
    by_line: dict[int, list] = {}
    for ir_line, loc, opcode, bits in machine:
        if bits is None or not in_kernel_file(ctx, loc):
            continue
        by_stamp.setdefault((loc.line, loc.col), []).append((ir_line, opcode, bits))
        by_line.setdefault(loc.line, []).append((ir_line, opcode, bits))
    lines_with_many = Counter(a.line for a in accesses.values())
    for key, acc in sorted(accesses.items()):
        instrs = by_stamp.get(key) or (by_line.get(acc.line, []) if lines_with_many[acc.line] == 1 else [])
        if not instrs:
            continue
        if acc.per_thread * acc.elem_bits < _FULL_BITS:
            continue  # each thread holds fewer than 128 bits: nothing wider is possible
        widths = Counter(bits for _, _, bits in instrs)
        narrow = {b: n for b, n in widths.items() if b < _FULL_BITS}
        if not narrow:
            continue
        full = widths.get(_FULL_BITS, 0) + sum(n for b, n in widths.items() if b > _FULL_BITS)
        span, site = anchor(ctx, acc.line, acc.col, (noun,))
        remark = _vectorization_remark(ctx, acc.line, acc.col)
        if remark is None and acc.layout_kind not in ("blocked", None):
            # an mma / linear layout fixes each thread's contiguous run itself (an accumulator stored straight from
            # the MFMA layout): without Triton's remark there is no evidence the user's code could do better
            continue
        cause, params, why = _cause(ctx, site, acc, remark, store)
        main_bits = max(narrow, key=lambda b: narrow[b])
        total = sum(widths.values())
        # software pipelining copies the op (prologue + loop body): count per copy, as each thread runs it
        copies = len(acc.ops)
        per_copy = total // copies if copies > 1 and total % copies == 0 else total
        copies_text = f" in each of {copies} pipelined copies" if per_copy != total else ""
        opcodes = Counter(op for _, op, bits in instrs if bits < _FULL_BITS)
        shown = ", ".join(f"{op} ×{n}" for op, n in opcodes.most_common(3))
        fell = ""
        full_vec = max(1, _FULL_BITS // acc.elem_bits)
        if remark and remark.get("origin_vec") and remark.get("vec") is not None and remark["vec"] < remark["origin_vec"]:
            fell = f"vectorization fell {remark['origin_vec']} → {remark['vec']} because "
        elif remark and remark.get("vec") is not None:
            fell = f"vectorization is {remark['vec']} (of {full_vec} possible) because "
        else:
            fell = "not vectorized because "
        full = full // copies if per_copy != total else full
        shown = ", ".join(f"{op} ×{n // copies if per_copy != total else n}" for op, n in opcodes.most_common(3))
        message = (f"{verb} are {main_bits}-bit ({per_copy} per thread{copies_text}, {full} of 128-bit: {shown}) for "
                   f"{acc.per_thread} × {acc.elem} per thread: {fell}{why}")
        seen: set[int] = set()
        rel = []
        for ir_line, opcode, bits in instrs:
            if bits < _FULL_BITS and ir_line not in seen and len(rel) < 8:
                seen.add(ir_line)
                rel.append(related(ctx, stage, ir_line, f"{opcode} ({bits}-bit)"))
        data = {"access": "store" if store else "load", "cause": cause, "params": params, "widths": {str(b): n for b, n in sorted(widths.items())},
                "elems_per_thread": acc.per_thread, "elem_type": acc.elem, "elem_bits": acc.elem_bits,
                "copies": copies,
                "vec": remark.get("vec") if remark else None,
                "origin_vec": remark.get("origin_vec") if remark else None,
                "merge_key": f"{code}:{cause}:{','.join(params)}"}
        short = f"{main_bits}-bit {verb}, not 128-bit: {_SHORT_CAUSE.get(cause, cause)}" + \
            (f" ({_join(params)})" if params else "")
        # A gather is narrow by nature: said (info), not alarmed.
        yield finding(ctx, span, code, message, data=data, related_info=rel,
                      severity="info" if cause == "gather" else "", short=one_line(short))


# The cause of a narrow access in a few words (the rule's full account says why, and what to change).
_SHORT_CAUSE = {"mask": "mask not known aligned", "shared-layout": "the shared-memory layout splits the runs",
                "gather": "a gather (indexed addresses)", "stride": "addresses not contiguous per thread",
                "pointer": "pointer not known aligned", "contiguity": "addresses not known contiguous"}


@rule("PTX001", "narrow-global-load", "warning", cost_cause="narrow", fixes=("memory", "tail"))
def narrow_global_load(ctx):
    """A tensor load uses global accesses narrower than 128 bits though its elements per thread would allow 128."""
    yield from _narrow(ctx, False, "PTX001")


@rule("PTX002", "narrow-global-store", "warning", cost_cause="narrow", fixes=("memory", "tail"))
def narrow_global_store(ctx):
    """A tensor store uses global accesses narrower than 128 bits though its elements per thread would allow 128."""
    yield from _narrow(ctx, True, "PTX002")
