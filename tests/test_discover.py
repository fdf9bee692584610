"""Kernel discovery from the AST, through imports and workspace shims; nothing is executed."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "server"))

from tritonlens.frontend.discover import discover, helpers_of  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "data", "discover")


def found(name, target="cuda:90"):
    path = os.path.join(DATA, name)
    with open(path, encoding="utf-8") as fh:
        result = discover(path, fh.read(), workspace_root=DATA, target=target)
    assert result.errors == []
    return {k.name: k for k in result.kernels}


@pytest.fixture(scope="module")
def forms():
    return found("forms.py")


def test_every_decorator_form(forms):
    assert set(forms) == {"plain", "no_spec", "bare", "aliased", "aliased_module", "stacked", "kernel",
                          "k_call", "k_heur", "k_tuned"}


def test_plain_kernel_fields(forms):
    k = forms["plain"]
    assert (k.func_name, k.def_line, k.decorator_line, k.end_line, k.col) == ("plain", 15, 14, 16, 1)
    x, n, block = k.params
    assert (x.name, x.line, x.col, x.end_col, x.is_pointer) == ("x_ptr", 15, 11, 16, True)
    assert not n.is_constexpr and n.is_pointer is None
    assert block.is_constexpr and block.annotation == "tl.constexpr" and (block.col, block.end_col) == (21, 26)
    assert k.source_hash and k.constexpr_names == ["BLOCK"]


def test_do_not_specialize_by_name_and_index_and_defaults(forms):
    k = forms["no_spec"]
    assert k.do_not_specialize == ["n", "m"]
    block = k.param("BLOCK")
    assert block.has_default and block.default_known and block.default == 128 and block.default_text == "128"


def test_full_dotted_constexpr_annotation(forms):
    assert forms["bare"].param("BLOCK").is_constexpr


def test_stacked_autotune_heuristics_custom_wrapper_and_hint(forms):
    k = forms["stacked"]
    assert k.decorator_line == 40 and k.def_line == 45
    assert k.autotune_configs == [{"kwargs": {"BLOCK_N": 32}, "num_warps": 4},
                                  {"kwargs": {"BLOCK_N": 64}, "num_warps": 8, "num_stages": 2}]
    assert k.autotune_key == ["n"]
    assert k.heuristics == {"EVEN": 'lambda args: args["n"] % args["BLOCK_N"] == 0'}
    assert [(h.line, h.values) for h in k.hints] == [(39, {"BLOCK_N": "64"})]


def test_staticmethod_in_class(forms):
    k = forms["kernel"]
    assert (k.class_name, k.qualname, k.def_line, k.decorator_line) == ("Ops", "Ops.kernel", 52, 50)


def test_module_level_calls(forms):
    assert (forms["k_call"].func_name, forms["k_call"].def_line, forms["k_call"].decorator_line) == ("_f", 56, 56)
    assert forms["k_heur"].func_name == "_g" and forms["k_heur"].heuristics == {"BLOCK": "lambda args: 256"}
    assert forms["k_tuned"].func_name == "_h" and forms["k_tuned"].autotune_configs == [{"kwargs": {"BLOCK": 64}}]


def test_other_dsls_are_not_triton():
    assert found("not_triton.py") == {}


def test_shims_in_the_workspace():
    kernels = found(os.path.join("pkg", "shimmed.py"))
    assert set(kernels) == {"via_from_import", "via_assignment"}
    assert set(found("absolute_shim.py")) == {"via_absolute"}


def test_helpers_are_transitive_and_name_workspace_modules():
    k = found(os.path.join("pkg", "shimmed.py"))["via_from_import"]
    assert helpers_of(k) == ["_square", "_cube", "pkg.helpers"]


def test_config_building_function_sees_the_target():
    cuda = found("configs_fn.py", "cuda:90")["tuned"]
    assert len(cuda.autotune_configs) == 4 and {c["num_stages"] for c in cuda.autotune_configs} == {4}
    assert found("configs_fn.py", "cuda:80")["tuned"].autotune_configs[0]["num_stages"] == 2
    assert found("configs_fn.py", "hip:gfx942")["tuned"].autotune_configs == [{"kwargs": {"BLOCK": 64},
                                                                               "num_warps": 4}]
    assert cuda.source_hash != found("configs_fn.py", "cuda:80")["tuned"].source_hash


def test_config_evaluation_failures_are_reasons_not_guesses():
    kernels = found("configs_fn.py")
    assert kernels["unknowable"].autotune_configs is None
    assert "load_from_disk" in kernels["unknowable"].autotune_error
    assert "steps" in kernels["endless"].autotune_error
    assert "__class__" in kernels["escape"].autotune_error


def test_syntax_error_is_one_finding():
    result = discover("bad.py", "import triton\n\n@triton.jit\ndef k(x:\n    pass\n")
    assert result.kernels == []
    (f,) = result.errors
    assert (f.code, f.severity, f.line) == ("SRC001", "error", 4) and "SyntaxError" in f.message


def test_hash_changes_with_helper_and_hint_but_not_elsewhere():
    src = ("import triton\nimport triton.language as tl\n\n\ndef helper(x):\n    return x\n\n\n"
           "# tritonlens: B=64\n@triton.jit\ndef k(x_ptr, B: tl.constexpr):\n    helper(x_ptr)\n\n\ny = 1\n")
    base = discover("a.py", src).kernels[0].source_hash
    assert discover("a.py", src.replace("y = 1", "y = 2")).kernels[0].source_hash == base
    assert discover("a.py", src.replace("return x", "return x + 1")).kernels[0].source_hash != base
    assert discover("a.py", src.replace("B=64", "B=128")).kernels[0].source_hash != base


def test_absolute_import_from_the_package_root_in_a_src_layout():
    # The workspace root (no src/ on it) does not hold `kpkg`; the folder above the file's top package does.
    root = os.path.join(DATA, "srclayout")
    path = os.path.join(root, "src", "kpkg", "ops", "copy.py")
    with open(path, encoding="utf-8") as fh:
        result = discover(path, fh.read(), workspace_root=root)
    assert [k.name for k in result.kernels] == ["copy_kernel"]
    assert result.kernels[0].constexpr_names == ["BLOCK"]


def test_heuristics_wrapped_around_an_already_jitted_name():
    kernels = found("rewrapped.py")
    assert set(kernels) == {"_scale"}
    assert kernels["_scale"].heuristics == {"EVEN": 'lambda args: args["n"] % args["BLOCK"] == 0'}


def test_kernels_inside_module_level_if_and_try_blocks():
    path = os.path.join(DATA, "conditional.py")
    with open(path, encoding="utf-8") as fh:
        result = discover(path, fh.read(), workspace_root=DATA)
    # The kernel inside a function is not compiled, and says so (SRC005), rather than vanish.
    assert [(f.code, f.kernel) for f in result.errors] == [("SRC005", "inner")]
    got = [(k.name, k.def_line, k.branch) for k in result.kernels]
    assert got == [
        ("fast_kernel", 15, "if HAS_TLE:"),
        ("fast_kernel", 23, "else: (of if HAS_TLE:)"),
        ("k3", 29, 'if triton.__version__ >= "3.0":'),
        ("k3", 33, 'elif triton.__version__ >= "2.0":'),
        ("fused", 41, "except ImportError: > if True:"),
    ]  # nothing from inside a function, nothing from `if __name__ == "__main__":`
    first, second = result.kernels[:2]
    assert first.display_name == "fast_kernel (under `if HAS_TLE:`)"
    # Each branch's kernel calls the `_helper` of its own branch: same kernel text, different hash.
    assert first.helpers == second.helpers == ["_helper"] and first.source_hash != second.source_hash
    assert found("forms.py")["plain"].branch is None


def test_int_pointers_through_locals_and_int_stores_and_constexpr_module_defaults():
    src = (
        "import triton\nimport triton.language as tl\n\nMODE_MEAN: tl.constexpr = tl.constexpr(3)\n\n\n"
        "@triton.jit\n"
        "def seg_sum(out_ptr, x_ptr, offsets_ptr, counts_ptr, MODE: tl.constexpr = MODE_MEAN):\n"
        "    seg = tl.program_id(0)\n"
        "    a = tl.load(offsets_ptr + seg)\n"
        "    n = tl.load(offsets_ptr + seg + 1) - a\n"
        "    span = n * 2\n"
        "    for i in range(0, span):\n"
        "        tl.store(out_ptr + i, tl.load(x_ptr + i))\n"
        "    tl.store(counts_ptr + seg, tl.zeros([1], dtype=tl.int32))\n"
    )
    [k] = discover("/ws/seg.py", src).kernels
    pointee = {p.name: p.pointee for p in k.params if p.is_pointer}
    assert pointee == {"out_ptr": None, "x_ptr": None, "offsets_ptr": "i32", "counts_ptr": "i32"}
    mode = k.param("MODE")
    assert mode.default_known and mode.default == 3


def test_pointer_whose_loaded_value_goes_to_cdiv_is_assumed_int():
    # tl.cdiv of an fp32 is a TypeError: a length loaded from memory and split with tl.cdiv points to integers.
    src = (
        "import triton\nimport triton.language as tl\n\n\n"
        "@triton.jit\n"
        "def split_sum(out_ptr, x_ptr, lens_ptr, SPLITS: tl.constexpr, BLOCK: tl.constexpr):\n"
        "    n = tl.load(lens_ptr + tl.program_id(0))\n"
        "    per_split = tl.cdiv(n, SPLITS)\n"
        "    offs = tl.arange(0, BLOCK)\n"
        "    x = tl.load(x_ptr + offs, mask=offs < per_split)\n"
        "    tl.store(out_ptr + tl.program_id(0), tl.sum(x))\n"
    )
    [k] = discover("/ws/split.py", src).kernels
    pointee = {p.name: p.pointee for p in k.params if p.is_pointer}
    assert pointee == {"out_ptr": None, "x_ptr": None, "lens_ptr": "i32"}


def test_kernel_inside_a_function_is_reported_not_silently_skipped():
    src = (
        "import triton.language as tl\n\n\ndef make():\n    import triton\n\n"
        "    @triton.jit\n    def inner(x_ptr):\n        tl.store(x_ptr, 1.0)\n    return inner\n"
    )
    r = discover("/ws/factory.py", src)
    assert r.kernels == []
    [f] = r.errors
    assert (f.code, f.severity, f.line, f.kernel) == ("SRC005", "info", 8, "inner")
    assert "inside `make()`" in f.message


def test_triton_re_exported_by_an_installed_package(tmp_path, monkeypatch):
    """`from somepkg.triton_utils import triton, tl` with somepkg installed (not in the workspace): its file is read as
    text to see that `triton` is triton — never imported."""
    site = tmp_path / "site"
    (site / "somepkg").mkdir(parents=True)
    (site / "somepkg" / "__init__.py").write_text("raise RuntimeError('importing this package is not allowed')\n")
    (site / "somepkg" / "triton_utils.py").write_text("import triton\nimport triton.language as tl\n")
    monkeypatch.syspath_prepend(str(site))
    ws = tmp_path / "ws"
    ws.mkdir()
    src = (
        "from somepkg.triton_utils import tl, triton\n\n\n@triton.jit\n"
        "def k(x_ptr, BLOCK: tl.constexpr):\n    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)\n"
    )
    [kernel] = discover(str(ws / "k.py"), src, str(ws)).kernels
    assert kernel.name == "k" and kernel.constexpr_names == ["BLOCK"]
