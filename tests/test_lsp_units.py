"""LSP pieces tested without a client. The profile lens: a GPU and ncu cannot exist here, so whether they do is
an argument of the lens function; the kernel report comes from a real CPU compile. Columns: UTF-8 -> UTF-16."""
import os

from tritonlens.lsp.profiling import PROFILE, profile_lens

from conftest import EXAMPLES


def capture(launch=True):
    cap = {"version": 1, "path": "examples/vector_add.py", "kernel": "add_kernel",
           "signature": {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32",
                         "BLOCK_SIZE": "constexpr"},
           "constants": {"BLOCK_SIZE": 1024}, "attrs": {}, "options": {"num_warps": 4, "num_stages": 3}}
    if launch:
        t = {"tensor": {"shape": [4096], "stride": [1], "dtype": "float32"}}
        cap["launch"] = {"grid": [4, 1, 1], "args": {"x_ptr": t, "y_ptr": t, "out_ptr": t,
                                                      "n_elements": {"value": 4096}}}
    return cap


def test_profile_lens_needs_gpu_and_a_replayable_capture(checker):
    report = checker.check_file(os.path.join(EXAMPLES, "vector_add.py"))
    kr = report.kernels[0]
    uri = "file:///x/vector_add.py"
    lens = profile_lens(uri, kr, [capture()], gpu_ready=True)
    assert lens is not None and lens.command.command == PROFILE
    assert lens.command.arguments == [{"uri": uri, "kernel": "add_kernel"}]
    assert lens.range.start.line == kr.kernel.decorator_line - 1
    assert profile_lens(uri, kr, [capture()], gpu_ready=False) is None
    assert profile_lens(uri, kr, [capture(launch=False)], gpu_ready=True) is None
    assert profile_lens(uri, kr, [], gpu_ready=True) is None


def test_diagnostic_columns_are_utf16_on_non_ascii_lines():
    from tritonlens.lsp.diagnostics import finding_range
    from tritonlens.model import Finding

    line = '    x = "π→∑𝄞"; y = tl.load(p)'
    byte_col = line.encode().index(b"tl.load") + 1  # 1-based, UTF-8 bytes: what ast and Triton report
    f = Finding("k.py", 1, byte_col, 1, byte_col + len("tl.load"), "PTX001", "warning", "m")
    rng = finding_range(f, [line])
    utf16 = line.encode("utf-16-le")
    start = len(line[:line.index("tl.load")].encode("utf-16-le")) // 2
    assert (rng.start.character, rng.end.character) == (start, start + len("tl.load"))
    assert len(utf16) // 2 > len(line)  # the test line really has a surrogate pair


def test_urgent_jobs_jump_the_queue_without_dropping_the_others(tmp_path):
    """A quick fix's re-compile (made under `pool.urgent()`) runs before save compiles queued earlier; those still
    all run, in their order. One worker, busy with a slow job, so the order in the queue is what decides."""
    import threading
    import time

    from tritonlens.compiler.pool import URGENT, CompileJob, CompileService, urgent
    from tritonlens.model import Spec

    spec = Spec(signature={"x_ptr": "*fp32"}, constants={}, attrs={"x_ptr": {"divisibility": 16}},
                options={"num_warps": 4}, target="cuda:90").to_json()
    kernel = "import triton\nimport triton.language as tl\n{pre}\n@triton.jit\ndef k(x_ptr):\n" \
             "    tl.store(x_ptr + tl.arange(0, 128), 1.0)\n"

    def job(pre: str = "") -> CompileJob:
        return CompileJob(path=str(tmp_path / "k.py"), text=kernel.format(pre=pre), qualname="k", spec=spec,
                          timeout=300)

    finished: list[str] = []
    with CompileService(max_workers=1) as service:
        futures = {"slow": service.submit(job("import time; time.sleep(2)"))}
        deadline = time.monotonic() + 120
        while not futures["slow"].running() and not futures["slow"].done() and time.monotonic() < deadline:
            time.sleep(0.01)  # the worker has taken the slow job: what follows waits in the queue
        assert futures["slow"].running(), "the slow job never started"
        futures.update({name: service.submit(job()) for name in ("save1", "save2")})
        other: list[CompileJob] = []
        with urgent():
            fix = job()
            t = threading.Thread(target=lambda: other.append(job()))  # a save compile's thread meanwhile
            t.start()
            t.join()
        assert fix.priority == URGENT and other[0].priority != URGENT and job().priority != URGENT
        futures["fix"] = service.submit(fix)
        for name, fut in futures.items():
            fut.add_done_callback(lambda f, name=name: finished.append(name))
        deadline = time.monotonic() + 240
        while len(finished) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(f.result(1).ok for f in futures.values()), [f.result(1).error for f in futures.values()]
    assert finished == ["slow", "fix", "save1", "save2"], finished


def test_capture_lens_on_a_kernel_without_a_complete_spec(checker, tmp_path):
    """A GPU cannot exist here: whether one is visible is an argument of the lens function."""
    from tritonlens.lsp.capturing import CAPTURE, capture_lens

    path = tmp_path / "k.py"
    path.write_text("import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
                    "def scale(x_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n"
                    "    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)\n")
    (missing,) = checker.check_file(str(path)).kernels
    uri = path.as_uri()
    lens = capture_lens(uri, missing, "cuda:90")
    assert lens.command.title == "Capture launches (cuda:90)" and lens.command.command == CAPTURE
    assert lens.command.arguments[0]["kernel"] == "scale" and lens.command.arguments[0]["gpu"] == "cuda:90"
    assert lens.range.start.line == 4  # the decorator
    assert lens.command.arguments[0]["noGpu"] is None
    on_cpu = capture_lens(uri, missing, None, "cuda:80")
    assert on_cpu.command.title == "Capture launches without a GPU" and on_cpu.command.command == CAPTURE
    assert on_cpu.command.arguments[0]["gpu"] is None and on_cpu.command.arguments[0]["noGpu"] == "cuda:80"
    assert "virtualGpu" not in on_cpu.command.arguments[0]  # the target's default GPU: no --gpu
    named = capture_lens(uri, missing, None, "cuda:90", "h200")  # tritonlens.gpu: the capture answers as it
    assert named.command.arguments[0]["virtualGpu"] == "h200" and named.command.arguments[0]["noGpu"] == "cuda:90"
    complete = checker.check_file(os.path.join(EXAMPLES, "vector_add.py")).kernels[0]
    assert capture_lens(uri, complete, "cuda:90") is None  # compiled from its hint: nothing to capture


def test_a_request_still_running_at_its_limit_is_answered_once_with_an_error():
    """A handler that never finishes (a stand-in for one stuck on a compile) gets RequestFailed at its limit, and
    its late result is not sent as a second answer; a quick one is answered normally."""
    import asyncio
    import json

    from tritonlens.lsp.server import create_server

    server = create_server()
    sent = []

    class Writer:
        def write(self, data):
            sent.append(json.loads(data.decode().split("\r\n\r\n", 1)[1]))

        def close(self):
            pass

    server.protocol.set_writer(Writer())
    release = asyncio.Event()

    @server.feature("tritonlens/testSlow")
    async def slow(ls, params):
        await release.wait()
        return "late"

    @server.feature("tritonlens/testQuick")
    async def quick(ls, params):
        return "quick"

    server.protocol.request_limits["tritonlens/testSlow"] = 0.3

    async def run():
        for i, method in enumerate(("tritonlens/testSlow", "tritonlens/testQuick")):
            message = json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": {}})
            server.protocol.handle_message(json.loads(message, object_hook=server.protocol.structure_message))
        await asyncio.sleep(1.0)
        release.set()
        await asyncio.sleep(0.2)

    asyncio.run(run())
    answers = {m["id"]: m for m in sent if "id" in m}
    assert answers[1]["result"] == "quick"
    assert answers[0]["error"]["code"] == -32803, answers[0]  # RequestFailed
    assert "tritonlens/testSlow" in answers[0]["error"]["message"] and "in 0.3 s" in answers[0]["error"]["message"]
    assert [m["id"] for m in sent if "id" in m].count(0) == 1


def test_a_pointer_fix_is_a_command_that_shows_where_the_value_is_set_and_a_program_fix_an_edit():
    """The adapter from fixes/ to LSP: a pointer (no edit) becomes a code action whose command opens (path, line); a
    program edit a WorkspaceEdit of TextEdits at the same 0-based positions, preferred as the fix says."""
    from lsprotocol import types

    from tritonlens.fixes.edit import Edit
    from tritonlens.fixes.search import Fix
    from tritonlens.lsp import actions

    diag = types.Diagnostic(range=types.Range(types.Position(8, 0), types.Position(8, 3)), message="spill")
    action = actions._action("file:///norm.py", diag, Fix("num_warps comes from …", pointer=True,
                                                          show=("/ws/pkg/utils.py", 10)))
    assert action.edit is None and action.command.command == actions.SHOW_SOURCE
    assert action.command.arguments == ["/ws/pkg/utils.py", 10]
    action = actions._action("file:///mm.py", diag, Fix("Use num_warps=8 …", [Edit.replace(29, 60, 29, 61, "8")],
                                                        preferred=True))
    (edit,) = action.edit.changes["file:///mm.py"]
    assert (edit.range.start.line, edit.range.start.character, edit.range.end.character, edit.new_text) == \
        (29, 60, 61, "8")
    assert action.is_preferred and action.command is None
