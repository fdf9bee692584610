"""Where the time goes in `tritonlens report`: the ranked table and the drawings of kernels captured and timed on an
H200 (`capture --time`: bench/cost_kernels/kernels.py with bench/results/cost/cost-captures-timed.jsonl), checked
against the numbers in the capture file, in the page's markup and in a real browser (Chromium, offline); captures
without timings and no captures at all (the tutorial matmul's recorded H200 captures, an uncaptured file)."""
import json
import os
import re
import shutil
from collections import defaultdict

import pytest

from test_html_report import _artifacts, _open, _Page, browser  # noqa: F401 — the browser fixture
from test_lsp import client  # noqa: F401 — a language server on stdio
from tritonlens.cli import main
from tritonlens.device.virtual_gpu import lookup

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNELS = os.path.join(REPO, "bench", "cost_kernels", "kernels.py")
TIMED = os.path.join(REPO, "bench", "results", "cost", "cost-captures-timed.jsonl")
TUTORIAL = os.path.join(REPO, "bench", "autotune", "tutorial_matmul.py")
TUTORIAL_CAPTURES = os.path.join(REPO, "tests", "data", "autotune", "h200-captures.jsonl")
H200 = lookup("h200")
_ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "int32": 4, "int64": 8, "float8_e4m3fn": 1, "int8": 1}


def _workspace(tmp_path, source, captures, rel="kernels.py"):
    ws = tmp_path / "ws"
    os.makedirs(ws / ".tritonlens", exist_ok=True)
    os.makedirs(os.path.dirname(ws / rel), exist_ok=True)
    shutil.copy(source, ws / rel)
    if captures:
        shutil.copy(captures, ws / ".tritonlens" / "captures.jsonl")
    return ws


def _report(ws, rel, monkeypatch, out="r.html"):
    monkeypatch.chdir(ws)
    assert main(["report", rel, "-o", out, "--gpu", "h200"]) == 0
    return (ws / out).read_text(encoding="utf-8")


def captured_time(path):
    """Per kernel, Σ count × time per launch over its distinct captured launches, straight from the capture file (a
    launch's count summed over the lines that name it, its time from the line that timed it)."""
    counts, times = defaultdict(int), {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            for c in rec.get("launch_counts") or ():
                key = (rec["kernel"], json.dumps(rec.get("constants"), sort_keys=True),
                       json.dumps(rec.get("options"), sort_keys=True), json.dumps(c["launch"], sort_keys=True))
                counts[key] += c["count"]
                if c.get("time_us") is not None:
                    times[key] = c["time_us"]
    out = defaultdict(float)
    for key, n in counts.items():
        if key in times:
            out[key[0]] += n * times[key]
    return dict(out)


def matmul_launches(path):
    """(FLOPs, bytes of its tensors, time per launch) of each timed matmul launch in the capture file."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            if rec["kernel"] != "matmul":
                continue
            for c in rec.get("launch_counts") or ():
                if c.get("time_us") is None:
                    continue
                args = c["launch"]["args"]
                flops = 2 * args["M"]["value"] * args["N"]["value"] * args["K"]["value"]
                nbytes = 0
                for a in args.values():
                    if "tensor" in a:
                        n = 1
                        for d in a["tensor"]["shape"]:
                            n *= d
                        nbytes += n * _ITEMSIZE[a["tensor"]["dtype"]]
                out.append((flops, nbytes, c["time_us"]))
    return out


@pytest.fixture(scope="module")
def timed_page(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("timed")
    ws = _workspace(tmp, KERNELS, TIMED)
    mp = pytest.MonkeyPatch()
    try:
        text = _report(ws, "kernels.py", mp)
    finally:
        mp.undo()
    return ws / "r.html", text


def _rows(text):
    section = text[text.index('<section id="time">'):]
    section = section[:section.index("</section>")]
    return [dict(re.findall(r'data-([a-z-]+)="([^"]*)"', row)) for row in
            re.findall(r'<tr class="rank-row"([^>]*)>', section)]


def test_ranked_table_is_the_captured_time_from_the_capture_file(timed_page):
    _, text = timed_page
    assert text.index('<section id="time">') < text.index('<section class="file"')  # the page opens on the time
    want = captured_time(TIMED)
    rows = _rows(text)
    assert [r["kernel"] for r in rows] == sorted(want, key=lambda k: -want[k])
    total = sum(want.values())
    for r in rows:
        assert float(r["captured-us"]) == pytest.approx(want[r["kernel"]], rel=1e-4)
        assert float(r["share"]) == pytest.approx(want[r["kernel"]] / total, rel=1e-4)
    assert rows[0]["kernel"] == "sum_one_program"  # one program on 132 SMs: 26.4 ms a launch, ¾ of the time
    page = _Page(text)
    first = page.find("tr", "rank-row")[0]
    assert "LAUNCH002" in page.text(first) and "75.8%" in page.text(first) and "parallelism-bound" in page.text(first)
    # measured ÷ floor: the one-program reduction runs hundreds of times its floor, a streaming kernel near it
    ratios = {r["kernel"]: float(r["floor-ratio"]) for r in rows}
    assert ratios["sum_one_program"] > 100 and 1.0 <= ratios["sum_partials"] < 1.5


def test_roofline_points_and_ceilings_match_the_captures_and_the_gpu(timed_page):
    _, text = timed_page
    page = _Page(text)
    k = page.kernel("matmul", "kernels.py")
    svg = [i for i in page.find("svg", "roofline") if page.elements[i][2] == k]
    assert len(svg) == 1
    ceilings = {page.attrs(i)["data-ceiling"]: page.attrs(i) for i in page.find("line", "ceiling", kernel=k)}
    assert float(ceilings["dram"]["data-bytes-per-s"]) == pytest.approx(H200.memory_bandwidth, rel=1e-5)
    assert float(ceilings["fma"]["data-flops-per-s"]) == pytest.approx(H200.peak_flops["fp32"], rel=1e-5)
    assert float(ceilings["tensor-tf32"]["data-flops-per-s"]) == pytest.approx(H200.peak_flops["tf32"], rel=1e-5)
    measured = sorted((float(page.attrs(i)["data-intensity"]), float(page.attrs(i)["data-flops-per-s"]))
                      for i in page.find("circle", "measured", kernel=k))
    want = sorted((flops / nbytes, flops / (t * 1e-6)) for flops, nbytes, t in matmul_launches(TIMED))
    assert len(measured) == len(want) == 2
    for (ai, rate), (wai, wrate) in zip(measured, want):
        assert ai == pytest.approx(wai, rel=1e-4) and rate == pytest.approx(wrate, rel=1e-4)
    assert len(page.find("circle", "estimate", kernel=k)) == 2  # the model's estimate beside each, hollow
    assert "<title" in text[text.index('id="roofline-'):] and "<desc" in text[text.index('id="roofline-'):]
    # the cost model's parts of the launch that carries the most time, and the numbers as a table
    parts = {page.attrs(i)["data-part"] for i in page.find("rect", "part", kernel=k)}
    assert {"dot_us", "issue_us"} <= parts
    assert len(page.find("table", "launch-numbers", kernel=k)) == 1
    # a kernel without counted FLOPs: its DRAM bandwidth against the peak
    s = page.kernel("sum_partials", "kernels.py")
    bw = page.find("circle", "measured", kernel=s)
    assert len(bw) == 1 and 0.5 * H200.memory_bandwidth < float(page.attrs(bw[0])["data-bytes-per-s"]) \
        < H200.memory_bandwidth


def test_a_change_tune_measured_faster_is_the_best_fix_and_a_point(tmp_path, monkeypatch):
    ws = _workspace(tmp_path, KERNELS, TIMED)
    # a line as `tritonlens tune` writes it (report/tuning.tuned reads it): written here, not measured
    row = {"path": "kernels.py", "kernel": "matmul", "proposal": "BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, num_warps=8",
           "change": "num_warps 4 → 8", "set": {"num_warps": 8}, "chosen_us": 2784.704, "time_us": 2100.0,
           "verdict": "faster", "gpu": "NVIDIA H200", "source": "tune"}
    slower = dict(row, change="num_warps 4 → 2", set={"num_warps": 2}, proposal="x", time_us=3000.0,
                  verdict="slower")
    (ws / ".tritonlens" / "proposals.jsonl").write_text(json.dumps(row) + "\n" + json.dumps(slower) + "\n")
    text = _report(ws, "kernels.py", monkeypatch)
    page = _Page(text)
    row_i = next(i for i in page.find("tr", "rank-row") if page.attrs(i)["data-kernel"] == "matmul")
    assert "num_warps 4 → 8: 2.78 ms → 2.10 ms (1.33× on NVIDIA H200)" in page.text(row_i)
    assert "4 → 2" not in page.text(row_i)
    k = page.kernel("matmul", "kernels.py")
    fixed = page.find("path", "fixed", kernel=k)
    assert len(fixed) == 1
    assert float(page.attrs(fixed[0])["data-flops-per-s"]) == pytest.approx(2 * 4096 ** 3 / 2100e-6, rel=1e-4)


def test_captures_without_timings_invent_no_time(tmp_path, monkeypatch):
    ws = _workspace(tmp_path, TUTORIAL, TUTORIAL_CAPTURES, "bench/autotune/tutorial_matmul.py")
    text = _report(ws, "bench/autotune/tutorial_matmul.py", monkeypatch)
    page = _Page(text)
    assert "the captures hold no timings" in text and "tritonlens capture --time -- CMD" in text
    rows = _rows(text)
    assert [r["kernel"] for r in rows] == ["matmul_kernel"] and "share" not in rows[0]
    assert float(rows[0]["captured-us"]) == 0 and rows[0]["count"] == "6"
    row = page.text(page.find("tr", "rank-row")[0])
    assert "not timed" in row and "floor" in row  # the physical floor of the launch carrying the most time
    assert not page.find("circle", "measured") and not page.find("path", "fixed")
    assert page.find("circle", "estimate")  # the model's estimate, hollow, labelled as such

    bare = tmp_path / "bare"
    os.makedirs(bare / ".tritonlens")
    shutil.copy(KERNELS, bare / "kernels.py")
    text = _report(bare, "kernels.py", monkeypatch)
    assert "no captured launch" in text and "capture --time" in text
    assert "<svg" not in text and 'class="rank-row"' not in text


def test_browser_opens_on_the_ranking_and_draws_the_roofline(browser, timed_page, tmp_path):  # noqa: F811
    from selenium.webdriver.common.by import By

    path, _ = timed_page
    _open(browser, str(path))
    assert not [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]  # no CSP violation, no error
    time_section = browser.find_element(By.ID, "time")
    assert time_section.location["y"] < 400  # in the first screen
    rows = browser.find_elements(By.CSS_SELECTOR, "#time tr.rank-row")
    want = captured_time(TIMED)
    assert [r.get_attribute("data-kernel") for r in rows] == sorted(want, key=lambda k: -want[k])
    assert rows[0].find_elements(By.TAG_NAME, "td")[5].text.startswith("75.8%")
    svg = browser.find_element(By.CSS_SELECTOR, "section[data-kernel='matmul'] svg.roofline")
    browser.execute_script("arguments[0].scrollIntoView()", svg)
    assert svg.size["width"] > 300 and svg.size["height"] > 150
    measured = svg.find_elements(By.CSS_SELECTOR, "circle.pt.measured")
    estimate = svg.find_elements(By.CSS_SELECTOR, "circle.pt.estimate")
    assert len(measured) == 2 and len(estimate) == 2
    style = lambda e, p: browser.execute_script(f"return getComputedStyle(arguments[0]).{p}", e)  # noqa: E731
    assert style(measured[0], "fill") not in ("none", "") and style(estimate[0], "fill") == "none"
    dram = svg.find_element(By.CSS_SELECTOR, "line.ceiling.dram")
    assert style(dram, "stroke") not in ("none", "") and dram.size["width"] > 50
    # the points lie under their ceilings: inside the plot, below the highest flat
    top = min(float(c.get_attribute("y1")) for c in svg.find_elements(By.CSS_SELECTOR, "line.ceiling"))
    assert all(float(c.get_attribute("cy")) > top for c in measured)
    folder = _artifacts(tmp_path)
    time_section.screenshot(os.path.join(folder, "report-time-ranking.png"))
    browser.find_element(By.CSS_SELECTOR, "section[data-kernel='matmul'] details.time").screenshot(
        os.path.join(folder, "report-time-roofline.png"))


# ---------------------------------------------------------------- in the editor (the language server)
async def test_editor_hover_lens_and_page_of_the_time(client, tmp_path):  # noqa: F811
    from lsprotocol import types
    from test_lsp import OPTIONS, open_doc, settled, start

    ws = _workspace(tmp_path, KERNELS, TIMED)
    (ws / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    uri = (ws / "kernels.py").as_uri()
    text = (ws / "kernels.py").read_text()
    await start(client, ws, dict(OPTIONS, gpu="h200"))
    open_doc(client, uri, text)
    await settled(client, uri)
    def_line = next(i for i, line in enumerate(text.splitlines()) if line.startswith("def matmul("))
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(def_line, 6)))
    assert "17.0% of this file's captured GPU time: 136.08 ms over 46 launches, 10.53× its physical floor" \
        in hover.contents.value
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    time_lenses = {lens.command.title: lens for lens in lenses if lens.command.command == "tritonlens.showTimeReport"}
    assert "where the time goes: 17.0% of this file's captured GPU time" in time_lenses
    assert "where the time goes: 75.8% of this file's captured GPU time" in time_lenses
    page = await client.protocol.send_request_async("tritonlens/timeReport", {"uri": uri})
    page = page._asdict() if hasattr(page, "_asdict") else page
    assert page["title"] == "where the time goes — kernels.py"
    rows = _rows(page["html"])
    want = captured_time(TIMED)
    assert [r["kernel"] for r in rows] == sorted(want, key=lambda k: -want[k])
    assert await client.protocol.send_request_async("tritonlens/timeReport", {"uri": "file:///nope.py"}) is None
