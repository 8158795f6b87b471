"""A real headless Chromium for tests, driven over the DevTools protocol on a pipe.

Debian's ``chromium`` package is used (``ensure_chromium`` installs it with apt-get when it
is missing and the runner may; otherwise the caller skips). ``--remote-debugging-pipe``
makes Chromium read protocol messages from fd 3 and write its answers to fd 4, each a JSON
object ended by a NUL byte, so no WebSocket client and no browser download is needed.
Every wait is bounded and fails with what was seen.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Self

LIMIT = 90.0
"""How long a wait lasts at most (generous: a 2-core machine under load)."""

ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--remote-debugging-pipe",
)

TRAMPOLINE = """
import os, sys
read_end, write_end = (os.dup(int(fd)) for fd in sys.argv[1:3])
os.dup2(read_end, 3)
os.dup2(write_end, 4)
os.set_inheritable(3, True)  # dup2 onto itself keeps the close-on-exec flag of dup
os.set_inheritable(4, True)
os.execv(sys.argv[3], sys.argv[3:])
"""
"""Run by ``python -c``: put the pipe ends on fds 3 and 4, then become Chromium."""


def ensure_chromium() -> tuple[str | None, str]:
    """Chromium's path, installing Debian's package if needed; else ``None`` and why."""
    found = shutil.which("chromium")
    if found:
        return found, ""
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        return None, "chromium is not installed and apt-get cannot be run here (not root)"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for command in ([apt, "update", "-qq"], [apt, "install", "-y", "-qq", "chromium"]):
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return None, f"installing chromium failed: {done.stderr.strip()[-500:]}"
    found = shutil.which("chromium")
    return found, "" if found else "apt-get installed chromium but it is not on PATH"


class BrowserError(AssertionError):
    """Chromium answered with an error, exited, or did not answer in time."""


class Browser:
    """One headless Chromium process and one page in it."""

    def __init__(self, executable: str, profile: Path, *, width: int = 1280, height: int = 900):
        self._executable = executable
        self._profile = profile
        self._size = (width, height)
        self._popen: subprocess.Popen[bytes] | None = None
        self._to_browser: int | None = None
        self._next_id = 0
        self._answers: dict[int, dict[str, Any]] = {}
        self._changed = threading.Condition()
        self._closed = False
        self._reader: threading.Thread | None = None
        self._session = ""

    def __enter__(self) -> Self:
        to_child, self._to_browser = os.pipe()
        from_child, to_us = os.pipe()
        # A small Python trampoline puts the two pipe ends on fds 3 and 4 (where Chromium
        # expects them) and runs Chromium; a shell redirect would limit fds to one digit.
        self._popen = subprocess.Popen(
            [
                sys.executable,
                "-c",
                TRAMPOLINE,
                str(to_child),
                str(to_us),
                self._executable,
                *ARGS,
                f"--user-data-dir={self._profile}",
                f"--window-size={self._size[0]},{self._size[1]}",
                "about:blank",
            ],
            pass_fds=(to_child, to_us),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_child)
        os.close(to_us)
        self._reader = threading.Thread(target=self._read, args=(from_child,), daemon=True)
        self._reader.start()
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self._session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=self._size[0],
            height=self._size[1],
            deviceScaleFactor=1,
            mobile=False,
        )
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        process = self._popen
        if process is None:
            return
        try:
            if process.poll() is None:
                self._send("Browser.close", {}, session="")
            process.wait(20)
        except (BrowserError, OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()
        finally:
            if self._to_browser is not None:
                os.close(self._to_browser)
                self._to_browser = None
            if self._reader is not None:
                self._reader.join(5)

    def _read(self, fd: int) -> None:
        buffer = b""
        try:
            with os.fdopen(fd, "rb", buffering=0) as stream:
                while chunk := stream.read(65536):
                    buffer += chunk
                    *messages, buffer = buffer.split(b"\0")
                    for raw in messages:
                        message = json.loads(raw)
                        if "id" in message:
                            with self._changed:
                                self._answers[message["id"]] = message
                                self._changed.notify_all()
        finally:
            with self._changed:
                self._closed = True
                self._changed.notify_all()

    def _send(self, method: str, params: dict[str, Any], *, session: str) -> int:
        if self._to_browser is None:
            raise BrowserError("the browser is not running")
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        return self._next_id

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one protocol command (to the page once attached) and return its result."""
        number = self._send(method, params, session=self._session)
        with self._changed:
            self._changed.wait_for(lambda: number in self._answers or self._closed, LIMIT)
            answer = self._answers.pop(number, None)
        if answer is None:
            raise BrowserError(f"{method}: no answer (browser closed: {self._closed})")
        if "error" in answer:
            raise BrowserError(f"{method}: {answer['error']}")
        result: dict[str, Any] = answer.get("result", {})
        return result

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, url: str) -> None:
        """Load ``url`` and wait until the document is complete."""
        self.call("Page.navigate", url=url)
        self.wait_until(
            lambda: (
                self.evaluate("location.href") == url
                and self.evaluate("document.readyState") == "complete"
            ),
            f"{url} to load",
        )

    def text(self, selector: str = "main") -> str:
        """The rendered text of the first element matching ``selector`` ("" if none)."""
        found = self.evaluate(
            f"(document.querySelector({json.dumps(selector)}) || {{}}).innerText || ''"
        )
        return str(found)

    def wait_until(self, check: Callable[[], object], what: str, limit: float = LIMIT) -> None:
        """Poll ``check`` until it is true; fail after ``limit`` with the page's text."""
        deadline = time.monotonic() + limit
        while True:
            if check():
                return
            if time.monotonic() > deadline:
                raise BrowserError(f"waited {limit:.0f}s for {what}; page says:\n{self.text()}")
            time.sleep(0.25)

    def screenshot(self, path: Path) -> Path:
        """Save a PNG of the whole page at ``path``."""
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.write_bytes(base64.b64decode(data["data"]))
        return path
