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
                # Its own temporary files (org.chromium.Chromium.*) go with the profile.
                env={**os.environ, "TMPDIR": self.profile.name},
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

    def tab(self, width: int = 1280, height: int = 900) -> Tab:
        """A new tab with scripts on (:class:`Tab`), for a session in a web app."""
        return Tab(self, width, height)

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


class Tab:
    """One tab with scripts on, driven step by step: a person's session in an app.

    Use as a context manager (from :meth:`Browser.tab`): go to a page, run
    JavaScript in it, wait until something holds, take a screenshot.
    """

    def __init__(self, browser: Browser, width: int = 1280, height: int = 900) -> None:
        self.browser = browser
        self.target = browser._new_tab()
        self.ws = websocket.create_connection(self.target["webSocketDebuggerUrl"], timeout=60)
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=False)  # fmt: skip
        self.call("Page.enable")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """A DevTools command's result."""
        return self.browser._call(self.ws, method, **params)

    def go(self, url: str) -> None:
        """Load ``url`` and wait for its load event (30 s at most)."""
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if json.loads(self.ws.recv()).get("method") == "Page.loadEventFired":
                return

    def run(self, expression: str) -> Any:
        """The value of ``expression`` in the page (awaited if it is a promise)."""
        result = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression!r} failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 60, what: str = "") -> Any:
        """Poll ``expression`` until it is truthy; its value. Fails after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(RuntimeError):
                value = self.run(expression)
                if value:
                    return value
            time.sleep(0.25)
        raise AssertionError(f"waited {timeout:g} s for {what or expression}")

    def click(self, selector: str, text: str = "", timeout: float = 60) -> None:
        """Click, as a person does with the mouse, the first ``selector`` showing ``text``.

        Waits until such an element is on the page; the mouse goes to its centre.
        """
        find = (
            f"(() => {{ const e = [...document.querySelectorAll({json.dumps(selector)})]"
            ".find(e => e.offsetParent !== null"
            f" && e.textContent.trim().includes({json.dumps(text)}));"
            " if (!e) return null; const r = e.getBoundingClientRect();"
            " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        x, y = self.wait_for(find, timeout, f"{selector} showing {text!r}")
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
        for kind, buttons in (("mousePressed", 1), ("mouseReleased", 0)):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                      buttons=buttons, clickCount=1)  # fmt: skip

    def screenshot(self, path: Path) -> Path:
        """The visible page as a PNG at ``path``."""
        import base64

        data = self.call("Page.captureScreenshot", format="png")["data"]
        Path(path).write_bytes(base64.b64decode(data))
        return Path(path)

    def __enter__(self) -> Tab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.ws.close()
        with contextlib.suppress(OSError):
            urllib.request.urlopen(
                f"http://127.0.0.1:{self.browser.port}/json/close/{self.target['id']}", timeout=10
            ).close()
