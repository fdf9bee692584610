"""slice_module on conditional definitions: the selected branch is forced, line numbers and columns never move."""
import textwrap

from tritonlens.frontend.loader import slice_module

SRC = textwrap.dedent('''\
    import triton
    import triton.language as tl
    try:
        import triton_lang_extension as tle
        HAS_TLE = True
    except ImportError:
        HAS_TLE = False

    if HAS_TLE:
        print("using tle")
        @triton.jit
        def fast_kernel(x_ptr):
            tle.fast(x_ptr)
    elif open("/no/such/file").read():
        @triton.jit
        def fast_kernel(x_ptr):
            tl.store(x_ptr, 2)
    else:
        @triton.jit
        def fast_kernel(x_ptr):
            tl.store(x_ptr, 1)
    ''')


def lines_of(text):
    return text.splitlines()


def check_shape(s):
    compile(s.text, "sliced.py", "exec")
    assert len(lines_of(s.text)) == len(lines_of(SRC))
    for got, want in zip(lines_of(s.text), lines_of(SRC)):  # a kept line is the source line, untouched
        assert got == "" or got == want or got.strip() in ("pass", "if True:", "if False:", "elif True:",
                                                           "elif False:")


def test_if_branch_is_forced_and_its_try_loses_the_fallback():
    s = slice_module(SRC, ["fast_kernel"], definitions=[12])
    check_shape(s)
    out = lines_of(s.text)
    assert out[2] == "if True:" and out[3] == "    import triton_lang_extension as tle"
    assert out[5] == "if False:" and out[6] == "    pass"  # no `HAS_TLE = False` fallback
    assert out[8] == "if True:" and "print" not in s.text  # the condition is not evaluated, the print not run
    assert "tle.fast" in s.text and "tl.store" not in s.text and "open(" not in s.text


def test_elif_branch_never_evaluates_its_condition():
    s = slice_module(SRC, ["fast_kernel"], definitions=[16])
    check_shape(s)
    out = lines_of(s.text)
    assert out[8] == "if False:" and out[9] == "    pass" and out[13] == "elif True:"
    assert "open(" not in s.text and "x_ptr, 2" in s.text and "x_ptr, 1" not in s.text
    assert "tle" not in s.text  # this branch does not use the extension: its import is not even kept


def test_else_branch_only_holds_its_own_definition():
    s = slice_module(SRC, ["fast_kernel"], definitions=[20])
    check_shape(s)
    out = lines_of(s.text)
    assert (out[8], out[13], out[17]) == ("if False:", "elif False:", "else:")
    assert s.text.count("def fast_kernel") == 1 and "x_ptr, 1" in s.text


def test_try_body_kernel_and_except_fallback_kernel():
    src = textwrap.dedent('''\
        import triton
        import triton.language as tl
        try:
            import fast_ext
            @triton.jit
            def k(x_ptr):
                fast_ext.op(x_ptr)
        except (ImportError,
                AttributeError):
            @triton.jit
            def k(x_ptr):
                tl.store(x_ptr, 0)
        else:
            READY = True
        finally:
            DONE = True
        ''')
    body = slice_module(src, ["k"], definitions=[6])
    compile(body.text, "b.py", "exec")
    out = lines_of(body.text)
    assert out[2] == "if True:" and out[3] == "    import fast_ext" and out[7] == "if False:"
    assert out[12] == "else:" and out[14] == "if True:"  # `else:` follows `if False:`, so it runs
    assert body.text.count("def k") == 1 and "tl.store" not in body.text
    fallback = slice_module(src, ["k"], definitions=[11])
    compile(fallback.text, "f.py", "exec")
    out = lines_of(fallback.text)
    assert out[2] == "if False:" and out[7] == "if True:" and out[8] == ""
    assert "fast_ext" not in fallback.text and "READY" not in fallback.text
    assert out[10] == "    def k(x_ptr):" and out[11] == "        tl.store(x_ptr, 0)"
    assert len(lines_of(fallback.text)) == len(lines_of(src))


def test_main_guard_and_unselected_definitions_are_left_alone():
    src = "import triton\nif __name__ == '__main__':\n    @triton.jit\n    def k(x):\n        pass\n"
    assert slice_module(src, ["k"], definitions=[4]).text.strip() == ""


def test_if_whose_condition_has_side_effects_is_not_kept_for_a_helper():
    src = textwrap.dedent('''\
        import triton
        if open("/no/such/file").read():
            def helper(x):
                return x
        @triton.jit
        def k(x):
            helper(x)
        ''')
    s = slice_module(src, ["k"], definitions=[6])
    assert "open(" not in s.text and "def helper" not in s.text


def test_fallbacks_that_rebind_the_name_stay_fallbacks():
    src = textwrap.dedent('''\
        try:
            from triton.language.extra import libdevice
        except ImportError:
            from triton.language.math import libdevice
        import triton

        @triton.jit
        def k(x):
            libdevice.exp(x)
        ''')
    s = slice_module(src, ["k"], definitions=[8])
    assert s.text.startswith("try:\n") and "except ImportError:" in s.text


def test_names_bound_inside_kernels_and_helpers_are_not_module_dependencies():
    src = textwrap.dedent('''\
        import triton
        import triton.language as tl
        from mylib import load_data

        acc = load_data()
        offs = load_data()
        SCALE = 2.0
        idx = load_data()
        out = load_data()
        BLOCK = 128


        @triton.jit
        def helper(v, factor):
            out = v * factor  # local: `out` above is not needed
            for idx in tl.static_range(2):
                out += idx
            return out


        @triton.jit
        def kernel(x_ptr, N: tl.constexpr = BLOCK):
            offs = tl.arange(0, N)
            acc = tl.load(x_ptr + offs)
            tl.store(x_ptr + offs, helper(acc, SCALE))
        ''')
    s = slice_module(src, ["kernel"], definitions=[22])
    kept = {ln.strip() for ln in s.text.splitlines() if ln.strip()}
    # Read from the module: SCALE (by the kernel), BLOCK (a default, evaluated at definition).
    assert {"SCALE = 2.0", "BLOCK = 128"} <= kept
    # Bound inside the kernel or its helper: their module-level namesakes, and the import they need, are not run.
    assert not any("load_data" in ln for ln in kept) and s.withheld == {}


def test_a_name_a_function_declares_global_is_still_the_modules():
    src = textwrap.dedent('''\
        import triton
        COUNT = 0
        TABLE = [1, 2]


        def bump():
            global COUNT
            COUNT = COUNT + 1
            return [t for t in TABLE if t]


        @triton.jit
        def kernel(x_ptr):
            bump()
        ''')
    kept = {ln.strip() for ln in slice_module(src, ["kernel"]).text.splitlines() if ln.strip()}
    assert {"COUNT = 0", "TABLE = [1, 2]"} <= kept
