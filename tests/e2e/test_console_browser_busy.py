"""The console in headless Chromium when the server follows as many streams as it may
(issue 28, point 7): the page says the server is busy instead of failing, waits as the
server's Retry-After says, and goes live once a place frees, without a reload."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from planledger.api.runtime import open_runtime
from planledger.bench.servers import Replica, start_replica
from tests.support.browser import PageWatch, chromium, screenshot
from tests.support.seed import seed_auth_refresh

JOIN_MS = 30_000  # bounds a failure; the page retries after about a second


@pytest.fixture
def one_stream(tmp_path: Path) -> Iterator[Replica]:
    db = str(tmp_path / "ledger.sqlite")
    runtime = open_runtime(db)
    seed_auth_refresh(runtime.ledger)
    runtime.close()
    replica = start_replica(db, {"PLANLEDGER_MAX_CONSOLE_STREAMS": "1"})
    yield replica
    replica.stop()


def test_a_console_past_the_cap_says_busy_then_goes_live_when_a_place_frees(
    one_stream: Replica,
) -> None:
    with chromium() as browser:
        first = _page(browser, one_stream)
        expect(first.locator("#live")).to_have_text("live", timeout=JOIN_MS)

        watch = PageWatch(one_stream.url)
        second = watch.attach(browser.new_page())
        second.goto(one_stream.url + "/")
        expect(second.locator("#live")).to_have_text("server busy, retrying…",
                                                     timeout=JOIN_MS)
        expect(second.locator("#plans")).to_contain_text("auth-refresh")  # its first view
        second.evaluate("window.__sameDocument = true")
        screenshot(second, "console-busy.png")

        first.close()  # its stream closes, and its place frees
        expect(second.locator("#live")).to_have_text("live", timeout=JOIN_MS)
        assert second.evaluate("window.__sameDocument === true"), "the page reloaded"
        refused = [e for e in watch.errors if "503" not in e]
        assert refused == [], watch.errors
        assert watch.outside() == []


def _page(browser: Browser, replica: Replica) -> Page:
    page = browser.new_page()
    page.goto(replica.url + "/")
    return page
