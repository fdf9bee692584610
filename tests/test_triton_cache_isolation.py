"""Two files holding the same kernel (same source at the same line) share one entry of Triton's on-disk cache, whose
files `triton.compile` reads its IR back from: compiled at the same time, each would get the other's IR (locations
in the other file, so no line of the kernel maps to any IR). Each worker compiles in a Triton cache folder of its own
(worker.private_triton_cache)."""
import os

from tritonlens.checks import CheckContext
from tritonlens.compiler import worker

from test_lsp import VECTOR_ADD

LOAD_LINE = VECTOR_ADD.splitlines().index("    x = tl.load(x_ptr + offsets, mask=mask)") + 1


def test_same_kernel_of_two_files_compiled_together_keeps_its_own_ir(checker, tmp_path):
    """Both compiles submitted before either is collected, on two workers: each report's IR is its own file's."""
    for round_ in range(4):  # in one shared folder, about half of such pairs swapped some stage's IR
        paths = []
        for name in ("a", "b"):
            p = tmp_path / f"r{round_}" / f"{name}.py"
            p.parent.mkdir(exist_ok=True)
            p.write_text(VECTOR_ADD)
            paths.append(str(p))
        plans = [checker.plan_file(p) for p in paths]
        for path, plan in zip(paths, plans):
            (kr,) = checker.finish(plan).kernels
            art = kr.compiled[0].artifacts
            assert art.ok, art.error
            other = next(p for p in paths if p != path)
            for stage in ("ttir", "ttgir", "ptx"):
                assert path in art.asm[stage], (round_, path, stage)
                assert other not in art.asm[stage], (round_, path, stage)
            ptx = CheckContext(kr.kernel, kr.compiled[0].spec, art, checker.settings).ptx
            lines = set(ptx.linemap.lines_for(LOAD_LINE, path))
            assert any(i.kind == "ld.global" and i.ir_line in lines for i in ptx.instrs), (round_, path)


def test_the_private_triton_cache_is_emptied_and_the_environment_restored(monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", "/somewhere/else")
    with worker.private_triton_cache() as folder:
        assert os.environ["TRITON_CACHE_DIR"] == folder
        os.makedirs(os.path.join(folder, "abc"))
        open(os.path.join(folder, "abc", "k.ttir"), "w").close()
    assert os.environ["TRITON_CACHE_DIR"] == "/somewhere/else" and os.listdir(folder) == []
