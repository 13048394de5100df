"""The API docs pages (`/docs`, Swagger UI; `/redoc`) in a real headless Chromium with
every request off the server under test aborted, as on a machine without internet: each
renders the planledger API from scripts the package serves, never a CDN (Redoc's
"powered by" logo aside)."""

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from planledger.api.runtime import open_runtime
from planledger.bench.servers import Replica, start_replica
from tests.support.browser import PageWatch, chromium


@pytest.fixture(scope="module")
def replica(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replica]:
    db = str(tmp_path_factory.mktemp("docs") / "ledger.sqlite")
    open_runtime(db).close()
    served = start_replica(db)
    yield served
    served.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


def _offline(replica: Replica, browser: Browser) -> tuple[Page, PageWatch, list[str]]:
    watch, aborted = PageWatch(replica.url), []
    page = watch.attach(browser.new_page())

    def only_the_server(route: Route) -> None:
        if route.request.url.startswith(replica.url + "/"):
            route.continue_()
        else:
            aborted.append(route.request.url)
            route.abort()

    page.route("**/*", only_the_server)
    return page, watch, aborted


def test_swagger_ui_renders_every_route_offline(replica: Replica, browser: Browser) -> None:
    page, watch, aborted = _offline(replica, browser)

    page.goto(replica.url + "/docs")

    expect(page.locator(".swagger-ui .info .title")).to_contain_text("planledger")
    expect(page.locator(".opblock-summary-path").first).to_be_visible()
    shown = page.locator(".opblock-summary-path").all_inner_texts()
    assert any("/api/steps/{step_id}/claim" in p for p in shown), shown[:10]
    assert aborted == [] and watch.outside() == []
    assert [e for e in watch.errors if "favicon" not in e] == []
    page.close()


def test_redoc_renders_offline(replica: Replica, browser: Browser) -> None:
    page, _, aborted = _offline(replica, browser)

    page.goto(replica.url + "/redoc")

    expect(page.locator("h1").first).to_contain_text("planledger")
    expect(page.get_by_text("/api/steps/{step_id}/claim").first).to_be_attached()
    # (Redoc's bundle asks for its own "powered by" logo; the page does without it.)
    assert [u for u in aborted if not u.startswith("https://cdn.redoc.ly/")] == []
    page.close()
