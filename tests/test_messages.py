"""A finding's message is one line — the cause and its cost — and everything the long message used to carry (every
number, the config it was compiled under, the verdict's reason) is one step away: in the finding's details, in the
hover over its range, in `check --verbose`, JSON and SARIF. Checked over the examples and, when it is beside the
checkout, the real-code corpus (Liger-Kernel's ops with their captured launches)."""
from __future__ import annotations

import glob
import json
import os
import re
import shutil

import pytest
from conftest import EXAMPLES, evidence, missing

from tritonlens.lsp.hover import findings_markdown
from tritonlens.model import MESSAGE_MAX
from tritonlens.pipeline import Checker
from tritonlens.settings import Settings, default_workers
from test_corpus import LIGER, _skip_reason  # where the corpus is, and why its tests skip

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def _plain(markdown: str) -> str:
    """The hover's text as a reader sees it: markdown's escapes undone, whitespace runs as one space."""
    return " ".join(re.sub(r"\\(.)", r"\1", markdown).split())


def _long_text(f) -> str:
    """The message as it used to be made: the rule's account, the spec, the cost, the specs it holds in and the
    verdict's reason, run together — now the one line and its details."""
    return " ".join([f.message, *f.details])


def _assert_one_step_away(reports) -> int:
    seen = 0
    for report in reports:
        for kr in report.kernels:
            for f in kr.findings:
                seen += 1
                where = f"{f.code} {os.path.basename(f.path)}:{f.line}"
                assert "\n" not in f.message and 0 < len(f.message) <= MESSAGE_MAX, (where, f.message)
                hover = _plain(findings_markdown(kr.findings, f.line))
                long = " ".join(_long_text(f).split())
                # every number of the long text is in the hover over the finding's range
                missing_numbers = [n for n in _NUMBER.findall(long) if n not in hover]
                assert not missing_numbers, (where, missing_numbers, hover[:400])
                # the config it was compiled under, and the verdict's reason, in its details and in the hover
                if f.config:
                    assert any(f.config in d for d in f.details), (where, f.details)
                    assert f.config in hover, (where, hover[:400])
                note = " ".join((f.data.get("verdict_note") or "").split())
                for reason in re.findall(r"an? (?:info|hint|warning|error): ([^\]\)]+)", note):
                    assert reason.strip() in " ".join(evidence(f).split()), (where, reason)
                    assert reason.strip() in hover, (where, reason)
    return seen


def test_every_example_finding_is_one_line_with_its_evidence_in_the_hover(checkers):
    c = checkers("cuda:90")
    paths = sorted(glob.glob(os.path.join(EXAMPLES, "**", "*.py"), recursive=True))
    reports = [c.check_file(p) for p in paths]
    assert _assert_one_step_away(reports) >= 10  # the bad examples' spills, narrow accesses, storms, dots


def test_check_prints_one_line_a_finding_and_the_evidence_under_verbose(capsys):
    from tritonlens.cli import main as cli_main

    spill = os.path.join(EXAMPLES, "bad", "matmul_spill.py")
    cli_main(["check", spill, "--target", "cuda:90", "--select", "SASS001", "-q"])
    plain = capsys.readouterr().out.splitlines()
    (line,) = [ln for ln in plain if "SASS001" in ln]
    assert re.search(r"SASS001 \[warning\] spills 176 B a thread \(120 B reloaded\) in loops \(lines 20–24\), "
                     r"255 registers$", line), line
    assert not [ln for ln in plain if ln.startswith("    ")]
    cli_main(["check", spill, "--target", "cuda:90", "--select", "SASS001", "-q", "--show-evidence"])
    verbose = capsys.readouterr().out.splitlines()
    at = verbose.index(line)
    assert "176 B spill stores and 120 B spill loads at 255 registers per thread" in verbose[at + 1]
    # the spec is said once, on the kernel's line, not again under each finding
    assert not [ln for ln in verbose if ln.strip().startswith("compiled under")]


def test_json_and_sarif_keep_the_line_the_details_and_the_lines(capsys):
    from tritonlens.cli import main as cli_main

    path = os.path.join(EXAMPLES, "bad", "matmul_spill.py")
    cli_main(["check", path, "--target", "cuda:90", "--select", "SASS001", "--format", "json"])
    (f,) = json.loads(capsys.readouterr().out)
    assert f["message"].startswith("spills 176 B a thread") and f["config"] in f["details"][-1]
    assert any("spill code on line 20 (44 STL, 0 LDL)" in d for d in f["details"]), f["details"]
    cli_main(["check", path, "--target", "cuda:90", "--select", "SASS001", "--format", "sarif"])
    (result,) = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    assert result["message"]["text"] == f["message"]
    assert "spill code on line 20 \\(44 STL, 0 LDL\\)" in result["message"]["markdown"]
    lines = {r["physicalLocation"]["region"]["startLine"] for r in result["relatedLocations"]}
    assert {20, 21, 24} <= lines, result["relatedLocations"]


def test_the_diagnostic_relates_every_line_the_finding_names(tmp_path):
    """A LAUNCH001 names the lines with the same mask (the load's and the store's): each is related information of
    the diagnostic, not only the first."""
    from test_checks_launch import _record, _tensor, _workspace
    from tritonlens.lsp.diagnostics import to_diagnostic

    tiled = _record("tiled_add", {"x_ptr": "*fp32", "n_elements": "i32", "BLOCK": "constexpr"}, {"BLOCK": 1024},
                    {"x_ptr": {"divisibility": 16}}, [1],
                    {"x_ptr": _tensor([100]), "n_elements": {"value": 100}, "BLOCK": {"value": 1024}})
    path = _workspace(tmp_path, [tiled])
    with Checker(Settings(target="cuda:90", max_workers=1)) as checker:
        report = checker.check_file(path)
    (f,) = [f for f in report.all_findings() if f.code == "LAUNCH001"]
    assert f.message.startswith("90% of the lanes idle at n_elements = 100 (BLOCK = 1024)"), f.message
    related = {r.location.range.start.line + 1 for r in to_diagnostic(f).related_information or []}
    assert {18, 19} <= related, related
    kr = next(kr for kr in report.kernels if kr.name == "tiled_add")
    hover = _plain(findings_markdown(kr.findings, f.line))
    assert "same mask on lines 18, 19" in hover and "19: masked access (line 19)" in hover, hover


@pytest.mark.corpus
@pytest.mark.slow
def test_corpus_findings_are_one_line_with_their_evidence_in_the_hover(tmp_path):
    reason = _skip_reason()
    if reason:
        missing("corpus", reason)
    root = tmp_path / "liger-kernel"
    shutil.copytree(LIGER, root)
    files = sorted(glob.glob(str(root / "src" / "liger_kernel" / "ops" / "*.py")))
    settings = Settings(target="cuda:90", compile_timeout=300)
    settings.max_workers = default_workers(editor=False)
    with Checker(settings) as checker:
        reports = list(checker.check_files(files))
    assert _assert_one_step_away(reports) >= 100


def test_explain_gives_every_rules_one_line_form(capsys):
    from tritonlens.checks import load_rules
    from tritonlens.cli import main as cli_main

    for code in sorted(load_rules()):
        assert cli_main(["explain", code]) == 0
        out = capsys.readouterr().out
        assert "**Message.** One line: " in out, code
