"""Headless Chromium (Debian's ``chromium``) for looking at pages as a person would.

One browser serves a whole test: :meth:`Browser.look` loads a page at a
window width and evaluates a JavaScript expression in it, over the DevTools
protocol (``websocket-client``, already a Jupyter dependency). Tests that need
it skip only where no ``chromium`` is installed at all; ``make setup`` installs
it where it can (as root, with apt).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import websocket

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
    "--remote-allow-origins=*",
]


class Browser:
    """A running headless Chromium; use as a context manager."""

    def __init__(self) -> None:
        if CHROMIUM is None:
            raise RuntimeError("chromium is not installed (apt-get install chromium)")
        self.profile = tempfile.TemporaryDirectory(prefix="chromium-")
        self.log = Path(self.profile.name) / "stderr.log"
        with self.log.open("w") as log:  # a file, not a pipe: Chromium never blocks on it
            self.process = subprocess.Popen(
                [CHROMIUM, *FLAGS, f"--user-data-dir={self.profile.name}/profile", "about:blank"],
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,  # its own process group, so all of it can be stopped
            )
        self.port = self._port()
        self.next_id = 0

    def _port(self) -> int:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", self.log.read_text())
            if found:
                return int(found.group(1))
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"chromium did not start its DevTools server: {self.log.read_text()}")

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        # Chromium's helpers (renderer, GPU, crash handler) outlive a killed main
        # process for a moment and keep writing to the profile: stop the group, then
        # remove the profile, trying again while a straggler finishes a write.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        for _ in range(50):
            try:
                self.profile.cleanup()
                return
            except OSError:
                time.sleep(0.1)
        shutil.rmtree(self.profile.name, ignore_errors=True)

    def _call(self, ws: Any, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(ws.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def _new_tab(self) -> dict[str, Any]:
        """A new tab's DevTools target; retried while Chromium is still settling in."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/json/new?about:blank", method="PUT"
        )
        for attempt in range(20):
            try:
                with urllib.request.urlopen(request, timeout=10) as reply:
                    return json.load(reply)
            except OSError:
                if attempt == 19:
                    raise
                time.sleep(0.25)
        raise AssertionError("unreachable")

    def look(self, page: Path | str, expression: str, width: int = 1280, height: int = 900) -> Any:
        """Load ``page`` (a file or URL) ``width`` pixels wide; the value of ``expression``.

        Scripts are off: a page must read right without JavaScript (the
        expression still runs, through the debugger).
        """
        url = Path(page).resolve().as_uri() if isinstance(page, Path) else page
        target = self._new_tab()
        ws = websocket.create_connection(target["webSocketDebuggerUrl"], timeout=30)
        try:
            self._call(
                ws,
                "Emulation.setDeviceMetricsOverride",
                width=width,
                height=height,
                deviceScaleFactor=1,
                mobile=False,
            )
            self._call(ws, "Emulation.setScriptExecutionDisabled", value=True)
            self._call(ws, "Page.enable")
            self._call(ws, "Page.navigate", url=url)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                message = json.loads(ws.recv())
                if message.get("method") == "Page.loadEventFired":
                    break
            result = self._call(ws, "Runtime.evaluate", expression=expression, returnByValue=True)
            if "exceptionDetails" in result:
                raise RuntimeError(f"{expression!r} failed: {result['exceptionDetails']}")
            return result["result"].get("value")
        finally:
            ws.close()
            urllib.request.urlopen(
                f"http://127.0.0.1:{self.port}/json/close/{target['id']}", timeout=10
            ).close()


# What a page at its width hides behind a horizontal scrollbar: the page itself,
# or any element whose text is wider than its box (a message that does not wrap).
OVERFLOW = """
(() => {
  const page = document.documentElement;
  const wide = [];
  if (page.scrollWidth > page.clientWidth + 1) wide.push('the page: ' + page.scrollWidth + 'px');
  for (const el of document.querySelectorAll('pre, code, .message, td, table')) {
    if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'visible') {
      wide.push(el.tagName + ': ' + el.textContent.slice(0, 80));
    }
  }
  return wide;
})()
"""
