"""The autotune-config evaluator against a hostile file: compile options that read files of the attacker's choosing,
the checking process's secrets, one file's code changing what the next file's configs evaluate to, and the known
walks around its attribute guard. Each test writes the file an attacker would and asserts what a user sees."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from tritonlens.cli import main as cli_main
from tritonlens.device.config_eval import ConfigEvaluator
from tritonlens.frontend.discover import discover

SECRET = "tritonlens-config-secret-71d0e4"


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_config_options_cannot_read_files(tmp_path, capsys):
    """`ptx_options="--options-file /etc/passwd"` put that file's text in the PTX; `ir_override` made another file
    the kernel's PTX (configs built by code: the evaluator runs them). Only the launch options Triton documents reach
    the compile."""
    fake = tmp_path / "fake.ptx"
    fake.write_text("// ATTACKER-PTX\n.version 8.0\n")
    path = write(tmp_path, "opts.py", f'''\
        import triton
        import triton.language as tl


        @triton.autotune(configs=[triton.Config({{"BLOCK": 128}}, num_warps=w, **options) for w, options in [
                             (4, {{"ptx_options": "--options-file /etc/passwd"}}),
                             (2, {{"ir_override": {str(fake)!r}}})]],
                         key=["n"])
        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)
        ''')
    code = cli_main(["check", path, "--target", "cuda:90", "--workers", "1", "--format", "json"])
    findings = json.loads(capsys.readouterr().out)
    assert code == 0 and findings == [], findings
    assert cli_main(["ir", f"{path}::k", "--stage", "ptx", "--target", "cuda:90"]) == 0
    ptx = capsys.readouterr().out
    assert ".entry k" in ptx or ".visible .entry" in ptx, ptx[:300]
    assert "root:" not in ptx and "ATTACKER-PTX" not in ptx


def test_config_code_never_sees_the_checking_process_secrets(tmp_path):
    """Config code that puts an environment variable into a constexpr: the value would be in every finding's
    label. The evaluator gets the compile workers' clean environment."""
    path = write(tmp_path, "envcfg.py", '''\
        import os
        import triton
        import triton.language as tl


        @triton.autotune(configs=[triton.Config({"BLOCK": 128, "TAG": os.environ.get("TRITONLENS_CFG_TOKEN", "none")})],
                         key=["n"])
        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr, TAG: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)
        ''')
    env = {**os.environ, "TRITONLENS_CFG_TOKEN": SECRET}
    run = subprocess.run([sys.executable, "-m", "tritonlens", "check", path, "--target", "cuda:90", "--workers", "1",
                          "--format", "json"], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode in (0, 1), run.stderr
    assert SECRET not in run.stdout + run.stderr


POISON = '''\
    import math
    import triton
    import triton.language as tl


    def poisoned():
        math.ceil = lambda x: 4096
        return [triton.Config({"BLOCK": 64})]


    @triton.autotune(configs=poisoned(), key=["n"])
    @triton.jit
    def a(x_ptr, n, BLOCK: tl.constexpr):
        tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)
    '''
VICTIM = '''\
    import math
    import triton
    import triton.language as tl


    @triton.autotune(configs=[triton.Config({"BLOCK": math.ceil(100.5)})], key=["n"])
    @triton.jit
    def b(x_ptr, n, BLOCK: tl.constexpr):
        tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)
    '''


def test_one_files_config_code_cannot_change_the_next_files(tmp_path):
    evaluator = ConfigEvaluator()
    try:
        poison = write(tmp_path, "poison.py", POISON)
        victim = write(tmp_path, "victim.py", VICTIM)
        (a,) = discover(poison, open(poison).read(), str(tmp_path), evaluator=evaluator).kernels
        assert a.autotune_configs == [{"kwargs": {"BLOCK": 64}}], a.autotune_error
        (b,) = discover(victim, open(victim).read(), str(tmp_path), evaluator=evaluator).kernels
        assert b.autotune_configs == [{"kwargs": {"BLOCK": 101}}], (b.autotune_configs, b.autotune_error)
    finally:
        evaluator.close()


BYPASSES = {
    "attrgetter": 'operator.attrgetter("__class__")(triton)',
    "reduce_getattr": 'functools.reduce(getattr, ["__class__", "__mro__"], triton)',
    "getattr_value": '(lambda g: g(triton, "__class__"))(getattr)',
    "format_string": '"{0.__class__}".format(triton)',
    "vars": 'vars(triton)',
}


def test_the_guard_refuses_the_known_walks_around_it(tmp_path):
    evaluator = ConfigEvaluator()
    try:
        for name, expr in BYPASSES.items():
            path = write(tmp_path, f"{name}.py", f'''\
                import functools
                import operator
                import triton
                import triton.language as tl


                @triton.autotune(configs=[triton.Config({{"BLOCK": 64}}) for _ in [{expr}]], key=["n"])
                @triton.jit
                def k(x_ptr, n, BLOCK: tl.constexpr):
                    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)
                ''')
            (k,) = discover(path, open(path).read(), str(tmp_path), evaluator=evaluator).kernels
            assert not k.autotune_configs and "not evaluated" in (k.autotune_error or ""), (name, k.autotune_error)
    finally:
        evaluator.close()


# A format string built at run time reads what its fields name (`"{0.__class__}".format(x)` gives the class), and an
# annotation built at run time is code for typing.get_type_hints; each piece looks harmless to a check of literals.
RUNTIME_STRINGS = {
    "concatenated": '("{0._" + "_cl" + "ass_" + "_}").format(triton)',
    "str_format": 'str.format("{0._" + "_class_" + "_}", triton)',
    "format_map": '("{t._" + "_class_" + "_}").format_map({"t": triton})',
    "getattr_format": 'getattr(str, "format")("{0._" + "_class_" + "_}", triton)',
    "joined": '"".join(["{0._", "_class_", "_}"]).format(triton)',
    "private_field": '"{0._spec}".format(triton)',
    "nested_spec": '"{0:{1._spec}}".format(1, triton)',
    "type_hints": 'str(typing.get_type_hints(annotated))',
    "getattr_type_hints": 'str(getattr(typing, "get_type_hints")(annotated))',
    # %-formatting looks keys up, never attributes: it may run, and reaches nothing
    "percent": '("%(_" + "_class_" + "_)s") % {"_" + "_class_" + "_": triton}',
}


def test_strings_built_at_run_time_reach_no_dunder(tmp_path):
    evaluator = ConfigEvaluator()
    try:
        for name, expr in RUNTIME_STRINGS.items():
            path = write(tmp_path, f"{name}.py", f'''\
                import typing
                import triton
                import triton.language as tl


                def annotated(a: "triton._" + "_class_" + "_"):
                    return a


                @triton.autotune(configs=[triton.Config({{"BLOCK": 64, "TAG": {expr}}})], key=["n"])
                @triton.jit
                def k(x_ptr, n, BLOCK: tl.constexpr, TAG: tl.constexpr):
                    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)
                ''')
            (k,) = discover(path, open(path).read(), str(tmp_path), evaluator=evaluator).kernels
            if name == "percent":
                (config,) = k.autotune_configs
                assert "class" not in str(config["kwargs"]["TAG"]), config
            else:
                assert not k.autotune_configs and "not evaluated" in (k.autotune_error or ""), (name, k.autotune_configs)
    finally:
        evaluator.close()


def test_literal_format_strings_still_evaluate(tmp_path):
    """What real config code writes (`"BLOCK_{}".format(b)`, `"{0.x}"`) is not refused."""
    path = write(tmp_path, "fmt.py", '''\
        import triton
        import triton.language as tl


        @triton.autotune(configs=[triton.Config({"BLOCK": b, "TAG": "b{}_{n:>3}".format(b, n=1)}) for b in (32, 64)],
                         key=["n"])
        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr, TAG: tl.constexpr):
            tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)
        ''')
    evaluator = ConfigEvaluator()
    try:
        (k,) = discover(path, open(path).read(), str(tmp_path), evaluator=evaluator).kernels
        assert [c["kwargs"] for c in k.autotune_configs] == [{"BLOCK": 32, "TAG": "b32_  1"},
                                                              {"BLOCK": 64, "TAG": "b64_  1"}], k.autotune_error
    finally:
        evaluator.close()
