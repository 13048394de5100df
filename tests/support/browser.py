"""A real headless Chromium for the console's tests: Debian's `/usr/bin/chromium` driven
by Playwright (never a browser Playwright downloads), and a watch over one page that
records what a person would object to: console errors, uncaught exceptions, and
requests to anywhere but the server under test."""

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Request, sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", "--disable-default-apps", "--disable-extensions"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@contextmanager
def chromium(*extra_args: str) -> Iterator[Browser]:
    """The system Chromium, headless (with `extra_args`, e.g. host resolver rules); the
    test is skipped where it is not installed (`.ci/run` installs it)."""
    if shutil.which(CHROMIUM) is None:
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM,
                                             args=[*ARGS, *extra_args])
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class PageWatch:
    """What one page logged and asked for while a test drove it."""

    origin: str
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def attach(self, page: Page) -> Page:
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(f"uncaught: {error}"))
        page.on("request", self._request)
        return page

    def _console(self, message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            self.errors.append(f"{message.type}: {message.text}")

    def _request(self, request: Request) -> None:
        self.requests.append(request.url)

    def outside(self) -> list[str]:
        """Requests that went anywhere but the server under test."""
        return [url for url in self.requests if not url.startswith(self.origin + "/")]


def screenshot(page: Page, name: str) -> Path:
    """Save a full-page screenshot under test-artifacts/ (not committed) for people."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    page.evaluate("window.scrollTo(0, 0)")  # the sticky bar sits at the top of the picture
    page.screenshot(path=str(path), full_page=True)
    return path
