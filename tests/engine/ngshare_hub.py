"""ngshare as a hub runs it, for the engine's tests: its own environment, a stand-in hub.

ngshare asks the hub whose each request's token is (``GET /hub/api/user``):
:class:`StandInHub` answers that from a table of tokens, as JupyterHub would
for its users and services, and nothing else. ngshare itself is the real one,
from its own environment (``make ngshare-env``), started by the course's
launcher (``hub/ngshare/run.py``: the loopback only, no debug mode).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = ROOT / "hub" / "ngshare" / "run.py"
PREFIX = "/services/ngshare/"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StandInHub:
    """``/hub/api/user`` for the tokens of ``users`` ({token: model}), on the loopback."""

    def __init__(self, users: dict[str, dict[str, str]]) -> None:
        self.users = users
        table = users

        class Answer(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                token = (self.headers.get("Authorization") or "").removeprefix("token ")
                model = table.get(token)
                if self.path.rstrip("/").endswith("/hub/api/user") and model is not None:
                    body, status = json.dumps(model).encode(), 200
                else:
                    body, status = b'{"status": 403, "message": "no"}', 403
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Answer)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hub/api"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def build_env(where: Path) -> Path:
    """ngshare's environment, built as ``make ngshare-env`` builds it."""
    built = subprocess.run(
        ["make", "--no-print-directory", "ngshare-env", f"NGSHARE_ENV={where}"],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return where


def start(env: Path, hub: StandInHub, data: Path, log: Path, admins: str) -> tuple[Any, str]:
    """ngshare, as a hub starts its managed service: ``(process, its URL)``."""
    port = free_port()
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "JUPYTERHUB_API_URL": hub.url,
        "JUPYTERHUB_API_TOKEN": "ngshare-own-token",
        "JUPYTERHUB_CLIENT_ID": "service-ngshare",
        "JUPYTERHUB_SERVICE_PREFIX": PREFIX,
        "JUPYTERHUB_SERVICE_URL": f"http://127.0.0.1:{port}",
    }
    data.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        process = subprocess.Popen(
            [str(env / "bin" / "python"), str(LAUNCHER), "--admins", admins,
             "--database", f"sqlite:///{data / 'ngshare.db'}", "--storage", str(data / "files")],
            env=environment, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}{PREFIX}"
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"{url}healthz", timeout=5):
                return process, url.rstrip("/")
        except OSError:
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.3)


def listening_on(port: int) -> set[str]:
    """The addresses a TCP socket of this machine listens on at ``port`` (from /proc/net)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: listening
                raw = bytes.fromhex(address)
                if len(raw) == 4:
                    found.add(socket.inet_ntop(socket.AF_INET, raw[::-1]))
                else:
                    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
                    found.add(socket.inet_ntop(socket.AF_INET6, words))
    return found
