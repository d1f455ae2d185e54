"""A notebook run cell by cell through a Jupyter server, as JupyterLab runs it: the server started on
a free local port with a token, a kernel of the notebook's kernelspec (the venv's python3) started by
its REST API, each code cell sent as an execute_request over the kernel's websocket channel and its
outputs gathered from iopub, the kernel and the server stopped at the end. The tests run a page
this way (tests/book/test_jupyter.py); tools/browser_check.py opens JupyterLab itself.

    with Server(notebook_dir="book") as server:
        outputs = server.run_cells(["x = 1", "x + 1"])   # per cell: its outputs (nbformat's dicts)
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`jupyter server` in this environment, on 127.0.0.1 at a free port, until the block ends."""

    def __init__(self, notebook_dir: str | Path = ".", env: dict | None = None, timeout: float = 60.0,
                 app: str = "server", options: tuple[str, ...] = ()):
        """`app`: "server", or "lab" (JupyterLab's page too, for a browser); `options`: its own."""
        self.port, self.token, self.timeout = free_port(), secrets.token_hex(16), timeout
        self.dir, self.env, self.process, self.app, self.options = Path(notebook_dir), env, None, app, options

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "Server":
        jupyter = Path(sys.executable).parent / "jupyter"
        self.process = subprocess.Popen([str(jupyter), self.app, *self.options, f"--port={self.port}", "--ip=127.0.0.1",
                                         "--no-browser", f"--IdentityProvider.token={self.token}",
                                         f"--ServerApp.root_dir={self.dir.resolve()}",
                                         *(["--allow-root"] if os.geteuid() == 0 else [])],
                                        env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + self.timeout
        while time.time() < deadline:
            try:
                self.api("GET", "/api/status")
                return self
            except OSError:
                if self.process.poll() is not None:
                    raise RuntimeError(f"jupyter server exited: {self.process.stderr.read().decode()[-2000:]}")
                time.sleep(0.3)
        raise TimeoutError(f"jupyter server on port {self.port} did not answer in {self.timeout:g} s")

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def api(self, method: str, path: str, body: dict | None = None) -> dict:
        request = urllib.request.Request(f"{self.url}{path}", method=method,
                                         data=None if body is None else json.dumps(body).encode(),
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read().decode()
        return json.loads(text) if text else {}

    def run_cells(self, cells: list[str], kernel: str = "python3", cwd: str = "", timeout: float = 900.0) -> list[list]:
        """Each cell's outputs (stream, display_data, execute_result, error dicts), run in one kernel of
        `kernel` started in the server's `cwd` (a folder of its root, as JupyterLab starts a notebook's)."""
        from tornado.ioloop import IOLoop

        started = self.api("POST", "/api/kernels", {"name": kernel, "path": cwd})
        try:
            return IOLoop().run_sync(lambda: self._run(started["id"], cells), timeout=timeout)
        finally:
            self.api("DELETE", f"/api/kernels/{started['id']}")

    async def _run(self, kernel_id: str, cells: list[str]) -> list[list]:
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        ws_url = self.url.replace("http", "ws") + f"/api/kernels/{kernel_id}/channels"
        connection = await websocket_connect(HTTPRequest(ws_url, headers={"Authorization": f"token {self.token}"}))
        try:
            return [await self._cell(connection, code) for code in cells]
        finally:
            connection.close()

    @staticmethod
    async def _cell(connection, code: str) -> list:
        msg_id = uuid.uuid4().hex
        connection.write_message(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test", "session": msg_id,
                       "version": "5.3"}, "parent_header": {}, "metadata": {}, "channel": "shell",
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}))
        outputs = []
        while True:
            message = json.loads(await connection.read_message())
            if message.get("parent_header", {}).get("msg_id") != msg_id or message.get("channel") != "iopub":
                continue
            kind, content = message["msg_type"], message["content"]
            if kind in ("stream", "display_data", "execute_result", "error"):
                outputs.append({"output_type": kind, **content})
            elif kind == "status" and content["execution_state"] == "idle":
                return outputs
