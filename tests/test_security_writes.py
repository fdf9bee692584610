"""What tritonlens writes or deletes never goes through a link out of the workspace: a repository that commits
`kern.py -> ../victim.py`, `.tritonlens/baseline.json -> ../victim` (a shell's start-up file, say), a
`.tritonlens/baseline/` folder linked elsewhere, `.tritonlens/captures.jsonl` or a report path linked out. Each
test plants the link, runs the command as a user would, and asserts that the file outside is byte for byte what it
was — and that the command said why it wrote nothing."""
from __future__ import annotations

import os
import shutil

from conftest import EXAMPLES
from tritonlens.cli import main as cli_main

CUDA = ("--target", "cuda:90", "--workers", "1")
VICTIM = "export PATH=/usr/bin\n"


def workspace(tmp_path, monkeypatch):
    """`ws/` (the workspace, the current folder) beside `outside/` (what the links point at)."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (ws / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    monkeypatch.chdir(ws)
    return ws, outside


def test_check_fix_never_writes_through_a_link_out_of_the_workspace(tmp_path, monkeypatch, capsys):
    ws, outside = workspace(tmp_path, monkeypatch)
    victim = outside / "victim.py"
    shutil.copy(os.path.join(EXAMPLES, "bad", "vector_add_unaligned.py"), victim)  # a kernel --fix would fix
    before = victim.read_bytes()
    os.symlink(os.path.relpath(victim, ws), ws / "kern.py")
    code = cli_main(["check", str(ws / "kern.py"), "--fix", *CUDA])
    out, err = capsys.readouterr()
    assert victim.read_bytes() == before, "check --fix rewrote a file outside the workspace"
    assert os.path.islink(ws / "kern.py")
    # a workspace file is read only inside the workspace (reads): the link out is neither read nor written
    assert f"{ws / 'kern.py'} is outside the workspace ({ws}); not read" in err, err
    assert "0 fix(es) applied in 0 file(s)" in out, out
    assert code == 0, code  # nothing read, nothing found: the line above says why


def test_check_fix_writes_a_link_inside_the_workspace_at_its_target(tmp_path, monkeypatch, capsys):
    ws, _ = workspace(tmp_path, monkeypatch)
    (ws / "src").mkdir()
    real = ws / "src" / "vector_add.py"
    shutil.copy(os.path.join(EXAMPLES, "bad", "vector_add_unaligned.py"), real)
    os.chmod(real, 0o640)
    os.symlink("src/vector_add.py", ws / "kern.py")
    cli_main(["check", str(ws / "kern.py"), "--fix", *CUDA])
    out, _ = capsys.readouterr()
    assert "1 fix(es) applied in 1 file(s)" in out, out
    assert os.path.islink(ws / "kern.py") and "if (pid + 1) * BLOCK_SIZE <= n_elements:" in real.read_text()
    assert oct(os.stat(real).st_mode & 0o777) == oct(0o640)  # replaced atomically, its mode kept
    assert not [n for n in os.listdir(ws / "src") if n.endswith(".tmp")]


def test_baseline_save_never_replaces_a_linked_baseline(tmp_path, monkeypatch, capsys):
    ws, outside = workspace(tmp_path, monkeypatch)
    shutil.copy(os.path.join(EXAMPLES, "vector_add.py"), ws / "k.py")
    victim = outside / "bashrc"
    victim.write_text(VICTIM)
    (ws / ".tritonlens").mkdir()
    os.symlink(victim, ws / ".tritonlens" / "baseline.json")
    code = cli_main(["baseline", "save", str(ws / "k.py"), *CUDA])
    err = capsys.readouterr().err
    assert victim.read_text() == VICTIM, "baseline save replaced a file outside the workspace"
    assert code == 2 and "baseline.json" in err and "is outside" in err, err


def test_baseline_save_never_touches_a_linked_ir_folder(tmp_path, monkeypatch, capsys):
    """`.tritonlens/baseline/` linked to a folder outside: its `.ptx` would have been deleted as stale IR and the
    new IR written there."""
    ws, outside = workspace(tmp_path, monkeypatch)
    shutil.copy(os.path.join(EXAMPLES, "vector_add.py"), ws / "k.py")
    (outside / "keep.ptx").write_text("// someone's PTX\n")
    (ws / ".tritonlens").mkdir()
    os.symlink(outside, ws / ".tritonlens" / "baseline")
    code = cli_main(["baseline", "save", str(ws / "k.py"), *CUDA])
    err = capsys.readouterr().err
    assert sorted(os.listdir(outside)) == ["keep.ptx"] and (outside / "keep.ptx").read_text() == "// someone's PTX\n"
    assert code == 2 and "is outside" in err, err


def test_baseline_save_removes_a_linked_stale_ir_file_not_its_target(tmp_path, monkeypatch, capsys):
    ws, outside = workspace(tmp_path, monkeypatch)
    shutil.copy(os.path.join(EXAMPLES, "vector_add.py"), ws / "k.py")
    (outside / "victim.ptx").write_text("// someone's PTX\n")
    (ws / ".tritonlens" / "baseline").mkdir(parents=True)
    os.symlink(outside / "victim.ptx", ws / ".tritonlens" / "baseline" / "old.ptx")
    assert cli_main(["baseline", "save", str(ws / "k.py"), *CUDA]) == 0
    capsys.readouterr()
    assert (outside / "victim.ptx").read_text() == "// someone's PTX\n"
    assert not os.path.lexists(ws / ".tritonlens" / "baseline" / "old.ptx")  # the link itself, as stale IR
    assert os.path.isfile(ws / ".tritonlens" / "baseline.json")


def test_a_linked_tritonlens_folder_is_not_written_through(tmp_path, monkeypatch, capsys):
    ws, outside = workspace(tmp_path, monkeypatch)
    shutil.copy(os.path.join(EXAMPLES, "vector_add.py"), ws / "k.py")
    os.symlink(outside, ws / ".tritonlens")
    code = cli_main(["baseline", "save", str(ws / "k.py"), *CUDA])
    err = capsys.readouterr().err
    assert os.listdir(outside) == [] and code == 2 and "is outside" in err, err


def test_the_report_is_not_written_through_a_link(tmp_path, monkeypatch, capsys):
    ws, outside = workspace(tmp_path, monkeypatch)
    shutil.copy(os.path.join(EXAMPLES, "vector_add.py"), ws / "k.py")
    victim = outside / "profile"
    victim.write_text(VICTIM)
    os.symlink(victim, ws / "report.html")
    code = cli_main(["report", str(ws / "k.py"), "-o", str(ws / "report.html"), *CUDA])
    err = capsys.readouterr().err
    assert victim.read_text() == VICTIM and code == 2 and "is outside" in err, err


def test_captures_are_not_appended_through_a_link(tmp_path, monkeypatch):
    """`tritonlens capture` appends to `.tritonlens/captures.jsonl`; committed as a link to a file outside, the
    writer refuses it (the run's own program still runs; it says the capture could not be written)."""
    from tritonlens.gpu.capture_file import CaptureWriter
    from tritonlens.writes import RefusedWrite

    ws, outside = workspace(tmp_path, monkeypatch)
    victim = outside / "profile"
    victim.write_text(VICTIM)
    (ws / ".tritonlens").mkdir()
    os.symlink(victim, ws / ".tritonlens" / "captures.jsonl")
    writer = CaptureWriter(str(ws / ".tritonlens" / "captures.jsonl"))
    try:
        writer.append({"version": 1, "path": "k.py", "kernel": "add_kernel", "signature": {}})
    except RefusedWrite as exc:
        assert "is outside" in str(exc)
    else:
        raise AssertionError("the capture was appended through the link")
    assert victim.read_text() == VICTIM
