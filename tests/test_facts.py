"""Facts several rules read (checks/facts.py), worked out in one place: one answer to "are neighbouring lanes
adjacent in memory", read by LAUNCH003 (uncoalesced access) and PTX001/PTX002 (the stride cause of narrow accesses).
They answered differently on a tile whose rows are contiguous and whose columns are a stride apart."""
import ast
import json

from tritonlens.checks import _common, facts
from tritonlens.pipeline import Checker
from tritonlens.settings import Settings
from conftest import evidence

KERNEL = '''import triton
import triton.language as tl


@triton.jit
def column_tile(x, out, stride, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_C)
    tile = tl.load(x + cols[None, :] * stride + rows[:, None])
    tl.store(out + rows, tl.sum(tile, axis=1))
'''


def test_one_stride_one_axis_makes_the_tile_contiguous():
    idx = _common._index_for(KERNEL, None)
    expr = ast.parse("x + cols[None, :] * stride + rows[:, None]", mode="eval").body
    terms = facts.lane_terms(idx, expr)
    assert sorted(ast.unparse(t) if t is not None else "1" for t in terms) == ["1", "stride"]
    assert facts.contiguous(terms) is True
    strided = ast.parse("x + cols[None, :] * stride + rows[:, None] * 2", mode="eval").body
    assert facts.contiguous(facts.lane_terms(idx, strided)) is False


def test_the_rules_agree_on_a_tile_with_contiguous_rows(tmp_path):
    """Compiled for real with a captured launch whose stride (4097) is not a multiple of 16: the loads are narrow
    because each column starts unaligned — an alignment cause the stride's divisibility settles, not "a stride:
    the elements are not adjacent" (the rows are the tile's contiguous axis); and no uncoalesced access."""
    (tmp_path / "tile.py").write_text(KERNEL)
    (tmp_path / ".tritonlens").mkdir()
    (tmp_path / ".tritonlens" / "captures.jsonl").write_text(json.dumps({
        "version": 1, "path": "tile.py", "kernel": "column_tile",
        "signature": {"x": "*fp32", "out": "*fp32", "stride": "i32", "BLOCK_R": "constexpr", "BLOCK_C": "constexpr"},
        "constants": {"BLOCK_R": 64, "BLOCK_C": 64},
        "attrs": {"x": {"divisibility": 16}, "out": {"divisibility": 16}},
        "options": {"num_warps": 4, "num_stages": 3}, "target": "cuda:90", "triton_version": "3.6.0",
        "launch": {"grid": [1], "args": {
            "x": {"tensor": {"shape": [64, 4097], "stride": [4097, 1], "dtype": "float32", "align16": True}},
            "out": {"tensor": {"shape": [64], "stride": [1], "dtype": "float32", "align16": True}},
            "stride": {"value": 4097}}}}) + "\n")
    with Checker(Settings(target="cuda:90", max_workers=1)) as c:
        report = c.check_file(str(tmp_path / "tile.py"))
    assert report.kernels and report.kernels[0].compiled, report.problems
    found = report.kernels[0].findings
    assert not [f for f in found if f.code == "LAUNCH003"], [f.message for f in found]
    [narrow] = [f for f in found if f.code == "PTX001"]
    assert narrow.data.get("cause") != "stride", narrow.message
    assert "stride" in evidence(narrow) and "multiple of" in evidence(narrow), evidence(narrow)
