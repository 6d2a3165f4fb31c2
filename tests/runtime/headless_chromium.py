"""Headless Chromium from the system's packages, driven over the DevTools protocol through a pipe
(`--remote-debugging-pipe`: JSON messages separated by NUL bytes on file descriptors 3 and 4), so the
browser tests need no Python package and no network access of their own."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

COMMAND_TIMEOUT = 20.0  # seconds for one DevTools command


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class HeadlessChromium:
    """One headless browser with one page (a tab), closed with the context manager."""

    def __init__(self, executable: str, *, width: int = 1280, height: int = 1100) -> None:
        self._profile = tempfile.TemporaryDirectory(prefix="sparrow-chromium-")
        to_browser, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire_pipes() -> None:  # in the child: the browser reads fd 3, writes fd 4
            reading, writing = (fcntl.fcntl(fd, fcntl.F_DUPFD, 5) for fd in (to_browser, from_browser_w))
            os.dup2(reading, 3)  # both out of the way first: either pipe end may itself be 3 or 4
            os.dup2(writing, 4)

        self.process = subprocess.Popen(
            [
                executable,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--mute-audio",
                "--remote-debugging-pipe",
                f"--user-data-dir={self._profile.name}",
                f"--window-size={width},{height}",
                "--hide-scrollbars",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-dev-shm-usage",
                "about:blank",
            ],
            preexec_fn=wire_pipes,
            pass_fds=(3, 4),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        os.close(to_browser)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self._session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable", session=True)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def __enter__(self) -> HeadlessChromium:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def call(self, method: str, *, session: bool = False, **params) -> dict:
        """Send one DevTools command and return its result; RuntimeError on an error answer."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self._session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + COMMAND_TIMEOUT
        while True:
            answer = self._read(deadline)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([self._from_browser], [], [], max(remaining, 0))
            if not ready:
                raise TimeoutError("the browser did not answer in time")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("the browser closed its DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def goto(self, url: str) -> None:
        self.call("Page.navigate", session=True, url=url)
        self.wait_for("document.readyState === 'complete'")

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (JSON-able values only)."""
        result = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 15.0):
        """Poll until `expression` is truthy in the page; returns its value, or raises TimeoutError."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"never true in the page: {expression}")
            time.sleep(0.1)

    def screenshot(self, path: str) -> None:
        """Save the whole page (not only the window) as a PNG."""
        data = self.call("Page.captureScreenshot", session=True, format="png", captureBeyondViewport=True)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(OSError, RuntimeError, TimeoutError):  # then killed below
                self.call("Browser.close")
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)
        self._profile.cleanup()
