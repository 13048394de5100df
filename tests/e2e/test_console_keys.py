"""The console and the origin guard in a real headless Chromium against a real
`planledger serve`: once the store holds keys the console asks for one, keeps it for the
tab (never in a URL) and goes live with it; a DNS-rebinding page (its own name resolved
to 127.0.0.1) can neither read nor write; a cross-site form POST starts nothing."""

from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Route, expect

from planledger.api.access import new_key
from planledger.api.runtime import open_runtime
from planledger.bench.servers import Replica, start_replica
from planledger.ledger import commands as c
from planledger.ledger.domain.access import digest_of
from tests.support import OPERATOR
from tests.support.browser import PageWatch, chromium
from tests.support.seed import seed_auth_refresh

REBIND = "rebind.test"
ATTACKER = "http://attacker.test"


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Replica, str]]:
    db = str(tmp_path_factory.mktemp("console-keys") / "ledger.sqlite")
    runtime = open_runtime(db)
    seed_auth_refresh(runtime.ledger)
    reader = new_key()
    runtime.ledger.execute(c.IssueKey("wall", "reader", digest_of(reader), OPERATOR))
    runtime.close()
    replica = start_replica(db)
    yield replica, reader
    replica.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium(f"--host-resolver-rules=MAP {REBIND} 127.0.0.1") as launched:
        yield launched


def sessions(replica: Replica, key: str) -> int:
    listed = httpx.get(f"{replica.url}/api/log", params={"limit": 1000},
                       headers={"Authorization": f"Bearer {key}"}).json()["events"]
    return sum(e["type"] == "SessionStarted" for e in listed)


def test_the_console_asks_for_a_key_once_and_goes_live_with_it(
        browser: Browser, keyed: tuple[Replica, str]) -> None:
    replica, reader = keyed
    watch = PageWatch(replica.url)
    page = watch.attach(browser.new_page())
    page.goto(replica.url + "/")
    dialog = page.locator("#key-dialog")
    expect(dialog).to_be_visible()
    page.fill("#key-input", "plk_not-a-key-of-this-server")
    page.click("#key-submit")
    expect(page.locator("#key-error")).to_contain_text("refused")
    page.fill("#key-input", reader)
    page.click("#key-submit")
    expect(page.locator("#live")).to_have_text("live")
    expect(page.locator("#plan-list")).to_contain_text("auth-refresh")
    page.reload()  # the same tab keeps the key: no second question
    expect(page.locator("#live")).to_have_text("live")
    expect(dialog).to_be_hidden()
    assert all(reader not in url for url in watch.requests)
    assert watch.outside() == []
    assert [e for e in watch.errors if "401" not in e] == []  # the refused reads only
    page.close()


def test_a_rebinding_page_can_neither_read_nor_write(
        browser: Browser, keyed: tuple[Replica, str]) -> None:
    replica, reader = keyed
    before = sessions(replica, reader)
    page = browser.new_page()
    served = page.goto(f"http://{REBIND}:{replica.port}/")
    assert served is not None and served.status == 403
    answers = page.evaluate("""async () => {
        const write = await fetch("/api/sessions", {method: "POST",
            headers: {"Content-Type": "application/json"}, body: '{"name": "rebound"}'});
        const read = await fetch("/api/log");
        return [write.status, read.status, (await read.json()).reason];
    }""")
    assert answers == [403, 403, "forbidden_host"]
    assert sessions(replica, reader) == before
    page.close()


def test_a_cross_site_form_post_starts_nothing(browser: Browser, tmp_path_factory:
                                               pytest.TempPathFactory) -> None:
    db = str(tmp_path_factory.mktemp("console-open") / "ledger.sqlite")
    replica = start_replica(db)  # no keys: open to this machine, as on a laptop
    try:
        page = browser.new_page()
        form = (f'<form id="f" method="POST" action="{replica.url}/api/sessions" '
                'enctype="text/plain"><input name=\'{"name": "x", "pad": "\' value=\'"}\'>'
                '</form><script>document.getElementById("f").submit()</script>')

        def attacker(route: Route) -> None:
            route.fulfill(status=200, content_type="text/html", body=form)

        page.route(f"{ATTACKER}/**", attacker)
        with page.expect_response(f"{replica.url}/api/sessions") as posted:
            page.goto(f"{ATTACKER}/page")
        assert posted.value.status == 403
        log = httpx.get(f"{replica.url}/api/log").json()["events"]
        assert [e for e in log if e["type"] == "SessionStarted"] == []
        page.close()
    finally:
        replica.stop()
