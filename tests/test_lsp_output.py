"""What the server writes besides its answers, read as a client does: the `window/logMessage` notifications and
stderr (an editor shows both in one log), and the requests it sends. A real server process on stdio, spoken to
with plain JSON-RPC, opening a real kernel that Triton compiles on the CPU."""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time

from conftest import EXAMPLES

SERVER = [sys.executable, "-c", "from tritonlens.lsp.server import main; main()"]


class RawClient:
    """JSON-RPC over the server's stdin/stdout; everything it sent, in order, in `received`."""

    def __init__(self, cwd: str, argv: list[str] | None = None, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(argv or SERVER, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env)
        self.inbox: queue.Queue = queue.Queue()
        self.received: list[dict] = []
        self.stderr: list[str] = []
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(l.decode(errors="replace") for l in self.proc.stderr),
                         daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while (line := out.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if length is None:
                return
            self.inbox.put(json.loads(out.read(length)))

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def request(self, method: str, params) -> int:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        return self.next_id

    def wait_for(self, match, timeout: float = 180) -> dict:
        """The next message that `match`es; server requests met meanwhile are answered with null."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                msg = self.inbox.get(timeout=0.5)
            except queue.Empty:
                continue
            self.received.append(msg)
            if "id" in msg and "method" in msg:
                self.send({"id": msg["id"], "result": None})
            if match(msg):
                return msg
        raise AssertionError(f"timed out; received {[m.get('method', m.get('id')) for m in self.received]}")

    def close(self) -> None:
        try:
            rid = self.request("shutdown", None)
            self.wait_for(lambda m: m.get("id") == rid and "method" not in m, timeout=30)
            self.send({"method": "exit"})
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


def test_a_session_logs_each_line_once_sends_no_protocol_warning_and_refreshes_lenses(tmp_path):
    src = os.path.join(EXAMPLES, "bad", "vector_add_unaligned.py")
    path = tmp_path / "vector_add_unaligned.py"
    path.write_text(open(src, encoding="utf-8").read())
    uri = path.as_uri()
    client = RawClient(str(tmp_path))
    try:
        rid = client.request("initialize", {
            "processId": os.getpid(), "rootUri": tmp_path.as_uri(),
            "workspaceFolders": [{"uri": tmp_path.as_uri(), "name": "ws"}],
            "initializationOptions": {"target": "cuda:90", "maxWorkers": 1, "compileTimeout": 120},
            "capabilities": {"workspace": {"codeLens": {"refreshSupport": True}},
                             "window": {"workDoneProgress": True}}})
        client.wait_for(lambda m: m.get("id") == rid)
        client.send({"method": "initialized", "params": {}})
        # What VS Code does on every start: cancel a request the server has already answered.
        client.send({"method": "$/cancelRequest", "params": {"id": rid}})
        client.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": path.read_text()}}})
        diags = client.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                                and m["params"]["diagnostics"])
        assert {d["code"] for d in diags["params"]["diagnostics"]} == {"PTX001", "PTX002"}
        # The lens the client asked for when the file opened predates the compile: it is asked again.
        client.wait_for(lambda m: m.get("method") == "workspace/codeLens/refresh", timeout=30)
    finally:
        client.close()

    logged = [m["params"]["message"] for m in client.received if m.get("method") == "window/logMessage"]
    assert any(line.startswith("tritonlens ") and "target cuda:90" in line for line in logged), logged
    stderr = "".join(client.stderr)
    # One log, one line per message: what went out as a logMessage is not on stderr too.
    assert not [line for line in logged if line in stderr], stderr
    assert "Cancel notification" not in stderr, stderr
