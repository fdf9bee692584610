"""What a worker answers, what a capture file says, is the checked repository's word: module code runs inside the
worker, so it can wrap the analysis and forge its metrics and findings, and a committed `captures.jsonl` holds any
strings. At the boundary numbers must be numbers and texts bounded; every presenter escapes — the HTML report runs
no script but its own (its CSP allows none inline by default), links only to the project's rule pages, and the
editor's hover never turns a string into a trusted `command:` link."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import textwrap

from tritonlens.cli import main as cli_main
from conftest import evidence

KERNEL = '''
# tritonlens: x_ptr=*fp32, n=i32, BLOCK=1024
@triton.jit
def add_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)
'''

# Module code that wraps the worker's analysis: what it sends back is whatever `forge` makes of the real one.
WRAP = '''
import sys
_worker = sys.modules["tritonlens.compiler.worker"]
_real = _worker.analyse_compile


def _forged(art, request):
    metrics, findings = _real(art, request)
{forge}
    return metrics, findings


_worker.analyse_compile = _forged
'''


def workspace(tmp_path, forge: str) -> str:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    path = tmp_path / "k.py"
    path.write_text("import triton\nimport triton.language as tl\n" + WRAP.format(forge=textwrap.indent(
        textwrap.dedent(forge), "    ")) + KERNEL)
    return str(path)


def report(tmp_path, capsys, path) -> str:
    out = tmp_path / "report.html"
    code = cli_main(["report", path, "-o", str(out), "--target", "cuda:90", "--workers", "1",
                     "--module-execution", "full"])
    capsys.readouterr()
    assert code in (0, 1), code
    return out.read_text()


def scripts_are_only_the_pages_own(page: str) -> None:
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    script_src = next(p for p in csp.split(";") if p.strip().startswith("script-src"))
    assert "unsafe-inline" not in script_src, csp
    runnable = re.findall(r"<script(?![^>]*application/json)[^>]*>(.*?)</script>", page, re.S)
    assert len(runnable) == 1, len(runnable)
    digest = base64.b64encode(hashlib.sha256(runnable[0].encode()).digest()).decode()
    assert f"'sha256-{digest}'" in script_src


def test_a_forged_numeric_metric_is_a_malformed_answer_not_markup(tmp_path, capsys):
    path = workspace(tmp_path, '''metrics["registers"] = "<script>alert(1)</script>"''')
    page = report(tmp_path, capsys, path)
    assert "<script>alert(1)" not in page
    code = cli_main(["check", path, "--target", "cuda:90", "--workers", "1", "--format", "json",
                     "--module-execution", "full"])
    findings = json.loads(capsys.readouterr().out)
    assert [f["code"] for f in findings] == ["SRC007"] and "malformed answer" in evidence(findings[0]), findings
    assert "metric 'registers' is not a number" in evidence(findings[0])
    assert code == 0
    scripts_are_only_the_pages_own(page)


def test_forged_texts_are_escaped_and_doc_links_are_the_projects(tmp_path, capsys):
    """A text the answer may carry (the occupancy's limiter, a finding's message) holds markup; a finding's doc link
    is `javascript:`; another finding of a code nobody knows links to a look-alike page."""
    path = workspace(tmp_path, '''
        from tritonlens.model import Finding
        metrics["occupancy"]["limiter"] = "<img src=x onerror=alert(2)>"
        findings.append(Finding(path=request["kernel"].path, line=8, column=1, end_line=8,
                                end_column=4, code="PTX001", severity="warning",
                                message="<script>alert(3)</script>", data={"doc": "javascript:alert(4)"}))
        findings.append(Finding(path=request["kernel"].path, line=8, column=1, end_line=8, end_column=4,
                                code="ZZZ999", severity="warning", message="look",
                                data={"doc": "https://evil.example/docs/rules/ZZZ999.md"}))
        ''')
    page = report(tmp_path, capsys, path)
    for raw in ("<img src=x", "<script>alert(3)", "javascript:", "evil.example"):
        assert raw not in page, raw
    assert "&lt;img src=x onerror=alert(2)&gt;" in page and "&lt;script&gt;alert(3)&lt;/script&gt;" in page
    docs = re.findall(r'class="doc" href="([^"]+)"', page)
    assert docs and all(d.startswith("https://github.com/tritonlens/tritonlens/blob/main/docs/rules/") for d in docs)
    scripts_are_only_the_pages_own(page)


def test_a_huge_error_message_is_bounded(tmp_path, capsys):
    """Module code reads a big file (a key, a token) and raises it: what reaches JSON, SARIF and the report is at
    most 64 KB of it, and says it was cut."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    path = tmp_path / "k.py"
    path.write_text("import triton\nimport triton.language as tl\nraise RuntimeError('x' * 5_000_000)\n" + KERNEL)
    for fmt in ("json", "sarif"):
        cli_main(["check", str(path), "--target", "cuda:90", "--workers", "1", "--format", fmt,
                  "--module-execution", "full"])
        out = capsys.readouterr().out
        assert 64 << 10 < len(out) < 200_000, (fmt, len(out))
        assert "more characters cut by tritonlens" in out


def test_a_capture_string_never_becomes_a_trusted_command_link(tmp_path):
    """A committed captures.jsonl whose constexpr value is markdown for a link to one of our trusted commands."""
    from tritonlens.lsp.hover import line_hover, metrics_table
    from tritonlens.pipeline import Checker
    from tritonlens.settings import Settings

    evil = "[run](command:tritonlens.compare?%5B%7B%22python%22%3A%22%2Ftmp%2Fx%22%7D%5D) `x` <b>"
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (tmp_path / ".tritonlens").mkdir()
    path = tmp_path / "k.py"
    path.write_text("import triton\nimport triton.language as tl\n" + KERNEL.replace(
        "BLOCK: tl.constexpr)", "BLOCK: tl.constexpr, MODE: tl.constexpr)"))
    capture = {"version": 1, "path": "k.py", "kernel": "add_kernel",
               "signature": {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr", "MODE": "constexpr"},
               "constants": {"BLOCK": 1024, "MODE": evil}, "attrs": {"x_ptr": {"divisibility": 16}},
               "options": {"num_warps": 4, "num_stages": 3}, "target": "cuda:90", "triton_version": "3.6.0"}
    (tmp_path / ".tritonlens" / "captures.jsonl").write_text(json.dumps(capture) + "\n")
    settings = Settings.from_dict({"target": "cuda:90", "maxWorkers": 1})
    with Checker(settings) as checker:
        (kr,) = checker.check_file(str(path)).kernels
    assert any(evil in cs.spec.describe() for cs in kr.compiled), [cs.spec.describe() for cs in kr.compiled]
    uri = path.as_uri()
    texts = [metrics_table(uri, kr, settings), line_hover(uri, kr, 7, settings) or ""]
    for text in texts:
        targets = re.findall(r"(?<!\\)\]\(([^)\s]*)", text)  # every markdown link's target
        assert all(t.startswith(("command:tritonlens.showIr?", "file://")) for t in targets), targets
        assert "compare" not in " ".join(targets) and "<b>" not in text, text
    assert "run" in texts[0]  # said, as text
    assert os.path.exists(path)
