"""`tritonlens report`: the HTML page of real compiles of the examples — its structure read back from the file, and
its behaviour in a real browser (Debian's Chromium, headless, through selenium), opened from a file:// URL offline."""
import glob
import json
import os
import re
import shutil
import tempfile
import time
from html.parser import HTMLParser

import pytest
from conftest import missing

from tritonlens.cli import main
from tritonlens.report.html import render_report, write_report
from tritonlens.pipeline import Checker
from tritonlens.settings import Settings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(REPO, "examples")
UNALIGNED = os.path.join(EXAMPLES, "bad", "vector_add_unaligned.py")


class _Page(HTMLParser):
    """The page as a list of elements: (tag, attrs, the index of the enclosing kernel section), plus the text of
    every <script> by id."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict, int | None]] = []
        self.scripts: dict[str, str] = {}
        self.texts: dict[int, str] = {}
        self._kernel: int | None = None
        self._depth = 0
        self._section_depth: int | None = None
        self._script: str | None = None
        self._open: list[int] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section" and "kernel" in (a.get("class") or "").split():
            self._kernel = len(self.elements)
            self._section_depth = self._depth
        self.elements.append((tag, a, self._kernel))
        self._open.append(len(self.elements) - 1)
        if tag == "script":
            self._script = a.get("id") or f"_{len(self.elements)}"
            self.scripts[self._script] = ""
        if tag not in ("meta", "br", "input", "link", "img"):
            self._depth += 1
        else:
            self._open.pop()

    def handle_endtag(self, tag):
        if tag in ("meta", "br", "input", "link", "img"):
            return
        self._depth -= 1
        if self._open:
            self._open.pop()
        if tag == "script":
            self._script = None
        if tag == "section" and self._section_depth == self._depth:
            self._kernel = None
            self._section_depth = None

    def handle_data(self, data):
        if self._script is not None:
            self.scripts[self._script] += data
        for i in self._open:
            self.texts[i] = self.texts.get(i, "") + data

    def find(self, tag=None, cls=None, kernel=None, **attrs):
        out = []
        for i, (t, a, k) in enumerate(self.elements):
            if tag and t != tag:
                continue
            if cls and cls not in (a.get("class") or "").split():
                continue
            if kernel is not None and k != kernel:
                continue
            if all(a.get(name.replace("_", "-")) == value for name, value in attrs.items()):
                out.append(i)
        return out

    def attrs(self, i):
        return self.elements[i][1]

    def text(self, i):
        return self.texts.get(i, "")

    def kernel(self, name, path):
        found = self.find("section", "kernel", data_kernel=name, data_path=path)
        assert len(found) == 1, (name, path, found)
        return found[0]


def _ir_lines_for(page: _Page, pane: int, src_line: int) -> list[str]:
    """The IR lines a pane's line map ties to `src_line`, as text."""
    blob = json.loads(page.scripts[page.attrs(pane)["data-blob"]])
    lines = blob["text"].split("\n")
    runs = blob["map"]
    out = []
    for i in range(0, len(runs), 3):
        first, count, src = runs[i:i + 3]
        if src == src_line:
            out += [lines[j - 1] for j in range(first, first + count)]
    return out


@pytest.fixture(scope="module")
def examples(checker):
    files = sorted(glob.glob(os.path.join(EXAMPLES, "*.py")) + glob.glob(os.path.join(EXAMPLES, "bad", "*.py")))
    return list(checker.check_files(files))


@pytest.fixture(scope="module")
def page_file(examples, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "report.html"
    stats = write_report(examples, str(out), Settings(target="cuda:90"), base=REPO)
    assert stats.kernels == 10 and stats.specs == 11
    return str(out)


@pytest.fixture(scope="module")
def page(page_file):
    with open(page_file, encoding="utf-8") as f:
        return _Page(f.read())


# ---------------------------------------------------------------- the file
def test_every_finding_of_check_is_on_its_source_line(examples, page):
    for report in examples:
        rel = os.path.relpath(report.path, REPO)
        for kr in report.kernels:
            k = page.kernel(kr.name, rel)
            for f in kr.findings:
                shown = page.find("div", "finding", kernel=k, data_code=f.code, data_line=str(f.line))
                assert shown, (rel, kr.name, f.code, f.line)
                assert any(f.message in page.text(i) for i in shown)
    k = page.kernel("add_kernel", "examples/bad/vector_add_unaligned.py")
    loads = page.find("div", "finding", kernel=k, data_code="PTX001")
    assert [page.attrs(i)["data-line"] for i in loads] == ["13", "14"]
    assert "vectorization fell 4 → 1" in page.text(loads[0])
    assert page.attrs(loads[0])["data-severity"] == "warning"
    # a finding follows the source line it is about
    row = page.find("div", "src-line", kernel=k, data_source_line="13")[0]
    assert row < loads[0] < page.find("div", "src-line", kernel=k, data_source_line="14")[0]
    # and links to the rule's page, which the report carries (offline)
    assert page.find("details", id="rule-PTX001")
    assert "vectoriz" in page.text(page.find("details", id="rule-PTX001")[0]).lower()


def test_panes_for_ttgir_ptx_sass_with_line_maps(page):
    k = page.kernel("add_kernel", "examples/bad/vector_add_unaligned.py")
    panes = page.find("div", "pane", kernel=k)
    assert [page.attrs(i)["data-stage"] for i in panes] == ["ttgir", "ptx", "sass"]
    by_stage = {page.attrs(i)["data-stage"]: i for i in panes}
    assert page.attrs(by_stage["ptx"])["data-scope"] == "source.tritonlens.ptx"
    assert page.attrs(by_stage["sass"])["data-scope"] == "source.nvsass"
    # the map ties line 13's tl.load to its narrow loads in PTX and SASS and to tt.load in TTGIR
    assert sum("ld.global.b32" in t for t in _ir_lines_for(page, by_stage["ptx"], 13)) == 8
    assert any(re.search(r"\bLDG\.E\b", t) for t in _ir_lines_for(page, by_stage["sass"], 13))
    assert any("tt.load" in t for t in _ir_lines_for(page, by_stage["ttgir"], 13))
    assert not any("tt.load" in t for t in _ir_lines_for(page, by_stage["ttgir"], 15))


def test_metrics_table_and_cost_bars_data(page):
    k = page.kernel("matmul_spill", "examples/bad/matmul_spill.py")
    table = page.find("table", "spec-metrics", kernel=k)[0]
    text = page.text(table)
    assert "registers255" in text.replace(" ", "")
    assert "176 B stored, 120 B loaded" in text
    assert "occupancy (estimate)" in text and "limited by registers" in text
    specs = json.loads(page.text(page.find("script", "kernel-data", kernel=k)[0]))
    assert specs[0]["cost_stage"] == "SASS"
    # line 20 holds 44 spill stores (SASS001's own evidence): the bar counts them
    assert specs[0]["cost"]["20"][1] == 44


def test_config_matrix_for_autotune_configs(page):
    k = page.kernel("matmul_kernel", "examples/matmul.py")
    rows = page.find("tr", "matrix-row", kernel=k)
    assert len(rows) == 2
    first, second = (page.text(r) for r in rows)
    assert "BLOCK_M=128" in first and "126" in first and "96.0 KB" in first
    assert "BLOCK_M=64" in second and "114" in second and "48.0 KB" in second
    assert len(page.find("button", "spec-tab", kernel=k)) == 2
    assert len(page.find("div", "spec-panes", kernel=k)) == 2
    note = "".join(page.text(i) for i in page.find("p", "note", kernel=k))
    assert "no capture says which config the autotuner chose" in note
    varying = page.text(page.find("div", "varying", kernel=k)[0])
    assert "BLOCK_M (128, 64)" in varying and "num_warps (8, 4)" in varying


TWO_SPECS = '''import triton
import triton.language as tl


# tritonlens: x_ptr=*fp32, out_ptr=*fp32, n_elements=i32, BLOCK_SIZE=1024, num_warps=4
# tritonlens: x_ptr=*fp32, out_ptr=*fp32, n_elements=i32%16, BLOCK_SIZE=1024, num_warps=4
@triton.jit
def copy_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)
'''


def _page_of(report, tmp_path) -> "_Page":
    return _Page(render_report([report], base=str(tmp_path))[0])


def _checked_page(checker, tmp_path, name: str, text: str):
    """Write `text` as `name`, check it and render its page: (page, the file's report)."""
    src = tmp_path / name
    src.write_text(text)
    report = checker.check_file(str(src))
    return _page_of(report, tmp_path), report


def test_matrix_says_which_launch_value_a_finding_follows(checker, tmp_path):
    page, report = _checked_page(checker, tmp_path, "copy.py", TWO_SPECS)
    k = page.kernel("copy_kernel", "copy.py")
    follows = [page.text(i) for i in page.find("div", "follows", kernel=k)]
    assert "PTX001 on line 11 follows n_elements: with i32, not with i32%16" in follows
    rows = [page.text(r) for r in page.find("tr", "matrix-row", kernel=k)]
    assert "PTX001×1" in rows[0] and "PTX001" not in rows[1]
    # the finding is marked with the spec it holds in, so the page can dim it under the other one
    f = page.find("div", "finding", kernel=k, data_code="PTX001")[0]
    assert page.attrs(f)["data-specs"] == report.kernels[0].compiled[0].spec.key()


AUTOTUNED = '''import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=4), triton.Config({"BLOCK": 1024}, num_warps=4)],
                 key=["n"])
@triton.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)
'''


def _capture(block, role, launches):
    return {"version": 1, "path": "scale.py", "kernel": "scale_kernel",
            "signature": {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, "constants": {"BLOCK": block},
            "attrs": {"x_ptr": {"divisibility": 16}, "n": {"divisibility": 16}},
            "options": {"num_warps": 4, "num_stages": 3}, "target": "cuda:90", "triton_version": "3.6.0",
            "autotune": role, "launches": launches}


def test_chosen_config_is_marked(tmp_path):
    (tmp_path / "scale.py").write_text(AUTOTUNED)
    (tmp_path / ".tritonlens").mkdir()
    (tmp_path / ".tritonlens" / "captures.jsonl").write_text(
        "\n".join(json.dumps(c) for c in (_capture(256, "trial", 3), _capture(1024, "chosen", 40))) + "\n")
    with Checker(Settings(target="cuda:90", max_workers=1)) as checker:
        report = checker.check_file(str(tmp_path / "scale.py"))
    # by default the autotuner's trial is left out, and the page says so
    page = _page_of(report, tmp_path)
    k = page.kernel("scale_kernel", "scale.py")
    assert "1 of 2 captured spec(s) compiled, 1 autotuner trial(s) left out" in page.text(
        page.find("p", "captures", kernel=k)[0])
    assert [page.text(t) for t in page.find("button", "spec-tab", kernel=k)] == ["capture 2 ★"]
    # with every capture, the matrix shows both and marks the choice
    with Checker(Settings(target="cuda:90", max_workers=1, all_captures=True)) as checker:
        report = checker.check_file(str(tmp_path / "scale.py"))
    page = _page_of(report, tmp_path)
    k = page.kernel("scale_kernel", "scale.py")
    rows = page.find("tr", "matrix-row", kernel=k)
    chosen = [r for r in rows if "chosen" in page.attrs(r)["class"]]
    assert len(chosen) == 1 and "BLOCK=1024" in page.text(chosen[0]) and "★ chosen" in page.text(chosen[0])
    assert "40" in page.text(chosen[0])  # its launch count
    assert not any("autotuner chose" in page.text(i) for i in page.find("p", "note", kernel=k))
    assert any("★" in page.text(t) for t in page.find("button", "spec-tab", kernel=k))


def test_hip_report_shows_amdgcn(checkers):
    report = checkers("hip:gfx942").check_file(os.path.join(EXAMPLES, "vector_add.py"))
    page = _Page(render_report([report], base=REPO)[0])
    panes = page.find("div", "pane")
    assert [page.attrs(i)["data-stage"] for i in panes] == ["ttgir", "amdgcn"]
    assert page.attrs(panes[1])["data-scope"] == "source.tritonlens.amdgcn"
    assert any("global_load" in t for t in _ir_lines_for(page, panes[1], 13))


def test_page_is_self_contained(page_file, page):
    with open(page_file, encoding="utf-8") as f:
        text = f.read()
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    for tag in ("script", "link", "img", "iframe", "style"):
        for i in page.find(tag):
            a = page.attrs(i)
            assert "src" not in a and "href" not in a, (tag, a)
    # the grammars in the page are syntaxes/ as the editor reads them: one grammar source
    embedded = json.loads(page.scripts["tl-grammars"])
    for path in glob.glob(os.path.join(REPO, "syntaxes", "*.tmLanguage.json")):
        with open(path, encoding="utf-8") as f:
            grammar = json.load(f)
        assert embedded[grammar["scopeName"]] == grammar


def test_cli_report(tmp_path, capsys):
    out = tmp_path / "r.html"
    rc = main(["report", UNALIGNED, "-o", str(out), "--target", "cuda:90", "--timeout", "120"])
    assert rc == 0
    assert "report of 1 kernel(s), 1 spec(s) written to" in capsys.readouterr().out
    page = _Page(out.read_text(encoding="utf-8"))
    assert page.find("div", "finding", data_code="PTX002", data_line="15")
    assert main(["report", str(tmp_path / "missing.py"), "-o", str(tmp_path / "x.html")]) == 2
    assert main(["report", UNALIGNED]) == 2  # -o is required


# ---------------------------------------------------------------- in a real browser
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@pytest.fixture(scope="module")
def browser():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing("selenium", "selenium is not installed (pip install -e '.[test]')")
    if not os.path.exists(CHROMEDRIVER) or not os.path.exists(CHROMIUM):
        missing("chromium", "Debian's chromium and chromium-driver are not installed (apt-get install chromium "
                            "chromium-driver)")
    os.environ["SE_AVOID_STATS"] = "true"
    profile = tempfile.mkdtemp(prefix="tritonlens-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
                 "--window-size=1600,1000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        # Offline: the page must need nothing from the network.
        driver.set_network_conditions(offline=True, latency=0, download_throughput=0, upload_throughput=0)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _open(browser, path):
    browser.get("file://" + path)
    for _ in range(100):
        if browser.execute_script("return document.documentElement.dataset.ready") == "true":
            return
        time.sleep(0.05)
    raise AssertionError("the report's script did not start")


def _artifacts(tmp_path):
    folder = os.environ.get("TRITONLENS_TEST_ARTIFACTS") or str(tmp_path)
    os.makedirs(folder, exist_ok=True)
    return folder


def test_browser_click_source_line_highlights_ir(browser, page_file, tmp_path):
    from selenium.webdriver.common.by import By

    _open(browser, page_file)
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors
    # nothing was fetched: not a script, a style, a font
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    k = browser.find_element(By.CSS_SELECTOR, 'section.kernel[data-kernel="add_kernel"]'
                                              '[data-path="examples/bad/vector_add_unaligned.py"]')
    browser.execute_script("arguments[0].scrollIntoView()", k)
    finding = k.find_element(By.CSS_SELECTOR, '.finding[data-code="PTX001"][data-line="13"]')
    assert "32-bit loads, not 128-bit" in finding.text  # the one-line message; the evidence is folded under it
    k.find_element(By.CSS_SELECTOR, '.src-line[data-source-line="13"]').click()
    assert "selected" in k.find_element(By.CSS_SELECTOR, '.src-line[data-source-line="13"]').get_attribute("class")
    panes = {p.get_attribute("data-stage"): p for p in k.find_elements(By.CSS_SELECTOR, ".spec-panes .pane")}
    assert set(panes) == {"ttgir", "ptx", "sass"}
    for stage, pane in panes.items():
        selected = pane.find_elements(By.CSS_SELECTOR, ".ir-line.selected")
        assert selected, stage
        assert {s.get_attribute("data-src") for s in selected} == {"13"}
    ptx = [s.text for s in panes["ptx"].find_elements(By.CSS_SELECTOR, ".ir-line.selected")]
    assert sum("ld.global.b32" in t for t in ptx) == 8
    # scrolled to the first of them, and coloured by the PTX grammar's scopes
    first = panes["ptx"].find_element(By.CSS_SELECTOR, ".ir-line.selected")
    assert browser.execute_script(
        "const r = arguments[0].getBoundingClientRect(), s = arguments[1].getBoundingClientRect();"
        "return r.top >= s.top && r.bottom <= s.bottom;", first, panes["ptx"].find_element(By.CSS_SELECTOR, ".ir-scroll"))
    load = next(s for s in panes["ptx"].find_elements(By.CSS_SELECTOR, ".ir-line.selected") if "ld.global" in s.text)
    assert load.find_element(By.CSS_SELECTOR, ".tk-mem").text == "ld"
    browser.save_screenshot(os.path.join(_artifacts(tmp_path), "report-click-line-13.png"))


def test_browser_click_ir_line_selects_its_source_line(browser, page_file):
    from selenium.webdriver.common.by import By

    _open(browser, page_file)
    k = browser.find_element(By.CSS_SELECTOR, 'section.kernel[data-kernel="matmul_spill"]')
    browser.execute_script("arguments[0].scrollIntoView()", k)
    sass = k.find_element(By.CSS_SELECTOR, '.pane[data-stage="sass"]')
    browser.execute_script("arguments[0].scrollIntoView(); const p = tritonlens.kernel('matmul_spill').panesOf(0)"
                           ".find(p => p.stage === 'sass'); p.load(); p.scroller.scrollTop = 18 * 300; p.render();",
                           sass)
    from selenium.webdriver.support.ui import WebDriverWait

    from selenium.common.exceptions import StaleElementReferenceException

    wait = WebDriverWait(browser, 30)  # a loaded machine renders late: wait for what the user would see

    def click_visible_mapped_line(d):
        """A mapped line inside the pane's view (lines around it render too), clicked; the pane renders its lines as
        it scrolls, so a line found a moment ago may be replaced: then look again."""
        line = d.execute_script(
            "const box = arguments[0].querySelector('.ir-scroll').getBoundingClientRect();"
            "return [...arguments[0].querySelectorAll('.ir-line.mapped')].find(e => {"
            "  const r = e.getBoundingClientRect(); return r.top >= box.top && r.bottom <= box.bottom; });", sass)
        if line is None:
            return None
        try:
            src = line.get_attribute("data-src")
            line.click()
        except StaleElementReferenceException:
            return None
        return src

    src = wait.until(click_visible_mapped_line)
    row = k.find_element(By.CSS_SELECTOR, f'.src-line[data-source-line="{src}"]')
    wait.until(lambda d: "selected" in row.get_attribute("class"))
    assert len(k.find_elements(By.CSS_SELECTOR, ".src-line.selected")) == 1
    # the other panes follow the source line
    assert wait.until(lambda d: k.find_elements(By.CSS_SELECTOR, '.pane[data-stage="ptx"] .ir-line.selected'))


def test_browser_spec_tabs_switch_panes(browser, page_file):
    from selenium.webdriver.common.by import By

    _open(browser, page_file)
    k = browser.find_element(By.CSS_SELECTOR, 'section.kernel[data-kernel="matmul_kernel"]')
    browser.execute_script("arguments[0].scrollIntoView()", k)
    k.find_elements(By.CSS_SELECTOR, ".matrix-row")[1].click()
    assert k.get_attribute("data-spec") == "1"
    visible = [p for p in k.find_elements(By.CSS_SELECTOR, ".spec-panes") if p.is_displayed()]
    assert [p.get_attribute("data-spec") for p in visible] == ["1"]
    k.find_element(By.CSS_SELECTOR, '.src-line[data-source-line="42"]').click()
    assert visible[0].find_elements(By.CSS_SELECTOR, '.pane[data-stage="ttgir"] .ir-line.selected')


def _grammar_assertions(path):
    """The scope assertions of a vscode-tmgrammar-test file: (source lines, [(line, first col, last col, scopes,
    scopes that must be absent)])."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    head = re.match(r'(\S+)\s+SYNTAX TEST\s+"([^"]+)"', lines[0])
    comment, scope = head.group(1), head.group(2)
    src, checks = [], []
    for line in lines[1:]:
        m = re.match(r"(\s*)(\^+|<-+)\s+(.*)$", line[len(comment):]) if line.startswith(comment) and src else None
        if not m:
            src.append(line)
            continue
        if m.group(2).startswith("<"):
            first, n = 0, len(m.group(2)) - 1
        else:
            first, n = len(comment) + len(m.group(1)), len(m.group(2))
        words = m.group(3).split()
        want = [w for w in words if not w.startswith("-")]
        absent = [w.lstrip("-") for w in words if w.startswith("-") and w != "-"]
        checks.append((len(src) - 1, first, first + n, want, absent))
    return scope, src, checks


def test_browser_tokenizer_agrees_with_the_grammar_tests(browser, page_file):
    """The page colours IR with the grammar tests' scopes: every assertion of test/grammar holds for its tokens."""
    _open(browser, page_file)
    files = sorted(glob.glob(os.path.join(REPO, "test", "grammar", "*.test.*")))
    assert files
    for path in files:
        scope, src, checks = _grammar_assertions(path)
        tokens = browser.execute_script("return tritonlens.tokenize(arguments[0], arguments[1])", scope, src)
        assert tokens is not None, scope
        for line, first, end, want, absent in checks:
            for col in range(first, end):
                have = next((t[2].split() for t in tokens[line] if t[0] <= col < t[1]), [])
                assert all(w in have for w in want), (os.path.basename(path), src[line], col, want, have)
                assert not any(a in have for a in absent), (os.path.basename(path), src[line], col, absent)


BIG = '''import triton
import triton.language as tl


# tritonlens: x_ptr=*fp32, out_ptr=*fp32, n_elements=i32%16, BLOCK_SIZE=2048, num_warps=1
@triton.jit
def big_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.sin(x) * tl.cos(x)  # libdevice, inlined per element: 15k lines of PTX
    tl.store(out_ptr + offsets, y, mask=mask)
'''


def test_browser_big_kernel_renders_lazily(browser, checker, tmp_path):
    src = tmp_path / "big.py"
    src.write_text(BIG)
    report = checker.check_file(str(src))
    out = tmp_path / "big.html"
    write_report([report], str(out), base=str(tmp_path))
    _open(browser, str(out))
    n = browser.execute_script(
        "const p = tritonlens.kernel('big_kernel').panesOf(0).find(p => p.stage === 'ptx'); p.load();"
        "return p.lines.length;")
    assert n > 10000
    # only the lines in view are in the DOM, however long the text
    assert len(browser.find_elements("css selector", ".ir-line")) < 600
    took = browser.execute_script(
        "const k = tritonlens.kernel('big_kernel'); const t = performance.now(); k.selectSource(12, true);"
        "return performance.now() - t;")
    assert took < 3000
    last = browser.execute_script(
        "const p = tritonlens.kernel('big_kernel').panesOf(0).find(p => p.stage === 'ptx');"
        "return [...p.el.querySelectorAll('.ir-line.selected')].map(e => +e.dataset.irLine);")
    assert last and min(last) > 100  # scrolled far down to the store's lines, which are in the DOM now


BROKEN = '''import triton
import triton.language as tl


@triton.jit
def no_block(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


# tritonlens: x_ptr=*fp32, BLOCK=128
@triton.jit
def bad_shape(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.reshape(offs, (3, 5)))
'''


def test_kernels_that_do_not_compile_keep_their_findings(checker, tmp_path):
    page, _ = _checked_page(checker, tmp_path, "broken.py", BROKEN)
    k = page.kernel("no_block", "broken.py")
    assert page.find("div", "finding", kernel=k, data_code="SRC002", data_line="6")
    assert not page.find("div", "pane", kernel=k)
    assert "not compiled" in "".join(page.text(i) for i in page.find("p", "note", kernel=k))
    k = page.kernel("bad_shape", "broken.py")
    assert page.find("div", "finding", kernel=k, data_code="SRC001", data_line="14")
    assert "did not compile" in page.text(page.find("div", "compile-error", kernel=k)[0])


def test_report_with_a_baseline_says_what_changed_per_kernel(tmp_path, monkeypatch):
    """`report --baseline`: the page says, per kernel, what changed since the baseline (from the same comparison
    `diff` and `check --baseline` make) — here the hint that makes n_elements a multiple of 16 widens the loads."""
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "bad",
                       "vector_add_unaligned.py")
    (tmp_path / ".git").mkdir()
    kernel = tmp_path / "k.py"
    shutil.copy(src, kernel)
    monkeypatch.chdir(tmp_path)
    assert main(["baseline", "save", "k.py", "--target", "cuda:90"]) == 0
    kernel.write_text(kernel.read_text().replace("n_elements=i32", "n_elements=i32%16"))
    assert main(["report", "k.py", "-o", "r.html", "--target", "cuda:90",
                 "--baseline", ".tritonlens/baseline.json"]) == 0
    html = (tmp_path / "r.html").read_text()
    assert '<div class="baseline"><h3>since the baseline</h3>' in html
    assert re.search(r"ld\.global widths 16×32-bit → 4×128-bit.*PTX001 -2", html)
    assert main(["report", "k.py", "-o", "r2.html", "--baseline", "missing.json"]) == 2
