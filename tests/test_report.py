"""Merging findings over specs: one finding per place, saying in which configs it holds by the values that differ."""
from tritonlens.model import Spec
from tritonlens.pipeline import Checker
from tritonlens.report.kernel import config_labels
from tritonlens.settings import Settings


def _spec(block_m, warps):
    return Spec(signature={"x": "*fp32", "n": "i32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr"},
                constants={"BLOCK_M": block_m, "BLOCK_N": 128}, attrs={"x": {"divisibility": 16}},
                options={"num_warps": warps, "num_stages": 3}, target="cuda:90", label="autotune config")


def test_labels_name_only_the_differing_values():
    a, b = _spec(64, 4), _spec(128, 8)
    labels = config_labels([a, b])
    assert labels[a.key()] == "BLOCK_M=64, num_warps=4"
    assert labels[b.key()] == "BLOCK_M=128, num_warps=8"
    assert config_labels([a])[a.key()] == "autotune config"


KERNEL = '''import triton
import triton.language as tl


# tritonlens: x_ptr=*fp32, out_ptr=*fp32, n_elements=i32
@triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE": 1024}, num_warps=4),
        triton.Config({"BLOCK_SIZE": 64}, num_warps=4),
    ],
    key=["n_elements"],
)
@triton.jit
def copy_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)
'''


def test_autotune_finding_says_in_which_configs(tmp_path):
    path = tmp_path / "copy.py"
    path.write_text(KERNEL)
    with Checker(Settings(target="cuda:90", max_workers=1)) as c:
        report = c.check_file(str(path))
    loads = [f for f in report.all_findings() if f.code == "PTX001"]
    # 1024 elements over 128 threads could use 128-bit loads; 64 elements give each thread less than 128 bits
    assert len(loads) == 1 and loads[0].line == 17
    assert "in 1 of 2 configs: BLOCK_SIZE=1024" in loads[0].details
    assert loads[0].data["configs"] == ["BLOCK_SIZE=1024"]


def test_every_rule_has_a_doc_page():
    import os

    from tritonlens.checks import load_rules

    docs = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "rules")
    codes = set(load_rules()) | {"PROF001"}
    for code in codes:
        page = os.path.join(docs, f"{code}.md")
        assert os.path.isfile(page), code
        with open(page) as f:
            text = f.read()
        assert text.startswith(f"# {code} ") and "**How to fix.**" in text and "**Before / after.**" in text


def test_a_kernel_of_several_specs_is_reported_once_early_then_whole(tmp_path):
    """`on_partial`: the editor shows a kernel's first findings after its first compiled spec, not after all of them
    (a dozen captured specs take seconds each); the full report follows and replaces it."""
    from tritonlens.compiler.cache import ArtifactCache

    path = tmp_path / "copy.py"
    path.write_text(KERNEL)
    partial, whole = [], []
    with Checker(Settings(target="cuda:90", max_workers=1), cache=ArtifactCache(str(tmp_path / "cache"))) as c:
        c.check_file(str(path), on_partial=partial.append, on_kernel=whole.append)
    (first,) = partial
    (final,) = whole
    assert first.pending == 1 and len(first.compiled) == 1
    assert final.pending == 0 and len(final.compiled) == 2
    assert "in 1 of 2 configs: BLOCK_SIZE=1024" in [f for f in final.findings if f.code == "PTX001"][0].details
