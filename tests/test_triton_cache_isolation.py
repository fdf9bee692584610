"""Two files holding the same kernel (same source at the same line) share one entry of Triton's on-disk cache, whose
files `triton.compile` reads its IR back from: compiled at the same time, each would get the other's IR (locations
in the other file, so no line of the kernel maps to any IR). The pipeline never runs such compiles at once."""
import threading
import time
from concurrent.futures import Future

from tritonlens.checks import CheckContext
from tritonlens.compiler.cache import ArtifactCache
from tritonlens.model import Artifacts, CompileError
from tritonlens.pipeline import Checker
from tritonlens.settings import Settings

from test_lsp import BROKEN, VECTOR_ADD

LOAD_LINE = VECTOR_ADD.splitlines().index("    x = tl.load(x_ptr + offsets, mask=mask)") + 1


def test_same_kernel_of_two_files_compiled_together_keeps_its_own_ir(checker, tmp_path):
    """Both compiles submitted before either is collected, on two workers: each report's IR is its own file's."""
    for round_ in range(4):  # unguarded, about half of such pairs swap some stage's IR
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


class FakePool:
    """A `CompileService` whose jobs resolve when the test says; `cancel` resolves futures under its lock, as the real
    one does (so a job released from there must not be submitted from that thread)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.jobs: list = []

    def submit(self, job) -> Future:
        with self.lock:
            fut: Future = Future()
            self.jobs.append((job, fut))
            return fut

    def cancel(self, group: str, kill_after: float = 2.0) -> int:
        with self.lock:
            return sum(1 for job, fut in self.jobs if job.group == group and fut.cancel())

    def groups(self) -> list:
        with self.lock:
            return [job.group for job, _ in self.jobs]

    def shutdown(self) -> None:
        pass


def until(pred, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.01)
    return False


def test_a_compile_waits_for_the_same_kernel_of_another_file_only(tmp_path):
    pool = FakePool()
    checker = Checker(Settings(target="cuda:90"), service=pool, cache=ArtifactCache(str(tmp_path / "cache")))
    files = {}
    for name, text in (("a", VECTOR_ADD), ("b", VECTOR_ADD), ("c", BROKEN), ("d", VECTOR_ADD)):
        files[name] = tmp_path / f"{name}.py"
        files[name].write_text(text)

    def plan(name, group):
        (item,) = checker.plan_file(str(files[name]), group=group).kernels
        return item.jobs[0][1]

    a1, a2 = plan("a", "a1"), plan("a", "a2")  # one file: never held back by itself
    b = plan("b", "b")  # add_kernel of another file: waits for both
    c = plan("c", "c")  # another kernel: does not wait
    assert pool.groups() == ["a1", "a2", "c"]

    _, fut_a1 = pool.jobs[0]
    fut_a1.set_result(Artifacts(kernel="add_kernel", spec_key="", target="cuda:90",
                                error=CompileError("Cancelled", "test")))
    assert a1.done() and not b.done()
    time.sleep(0.2)
    assert "b" not in pool.groups()  # a2 is still in flight
    # a2 cancelled inside the pool's lock: b is submitted all the same, from another thread (no deadlock)
    assert pool.cancel("a2") == 1 and a2.cancelled()
    assert until(lambda: "b" in pool.groups()), pool.groups()

    d = plan("d", "d")  # waits for b; cancelled while waiting, it never starts
    assert checker.cancel("d") == 1 and d.cancelled()
    fut_b = next(f for job, f in pool.jobs if job.group == "b")
    fut_b.cancel()
    assert b.cancelled()
    time.sleep(0.2)
    assert pool.groups() == ["a1", "a2", "c", "b"] and not c.done()
    checker.close()
