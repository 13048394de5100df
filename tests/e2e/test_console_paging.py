"""The console on a plan larger than a page, in a real headless Chromium against a real
`planledger serve`: the first view lists a page of the plan's steps, more come on demand
or by kind or title, and a claim redraws its own step from the stream alone (no row but
the claimed one is rebuilt, nothing of the plan is read again)."""

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect

from planledger.api.runtime import open_runtime
from planledger.bench.servers import Agent, Replica, start_replica
from tests.support.browser import PageWatch, chromium, screenshot

COUNTDOWN = re.compile(r"^1[45]:\d\d$")  # a fresh 900 s lease, read a moment later


@pytest.fixture(scope="module")
def replica(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replica]:
    db = str(tmp_path_factory.mktemp("console-paging") / "ledger.sqlite")
    open_runtime(db).close()
    served = start_replica(db)
    yield served
    served.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


def _first_view_reads(watch: PageWatch) -> int:
    """How often the page read its first view or a page of steps."""
    return sum(1 for url in watch.requests
               if re.search(r"/api/console(\?|$)|/api/console/steps", url))


def test_a_large_plan_shows_a_page_loads_more_on_demand_and_a_claim_redraws_its_step_in_place(
    replica: Replica, browser: Browser,
) -> None:
    planner = Agent(replica, "planner")
    created = planner.http.post("/api/plans", json={
        "slug": "big-plan", "title": "A plan larger than a page",
        "steps": [{"title": f"step {i + 1}"} for i in range(180)]})
    assert created.status_code == 201, created.text
    ids = [s["step_id"] for s in created.json()["steps"]]
    watch = PageWatch(replica.url)
    page = watch.attach(browser.new_page(viewport={"width": 1440, "height": 900}))
    page.goto(replica.url + "/#plan=big-plan")
    expect(page.locator("#live")).to_have_text("live")
    card = page.locator('article.plan[data-plan="big-plan"]')
    rows = card.locator(".step-rows > .step-row")
    expect(rows).to_have_count(50)
    expect(card.locator(".steps-more")).to_contain_text("50 of 180 steps")

    # A claim redraws its own row and the plan's line from the stream alone: no row but
    # the claimed one is rebuilt, and the page reads nothing of the plan again.
    page.evaluate("(id) => { document.querySelector(`.step-row[data-step='${id}']`)"
                  ".dataset.mark = 'kept'; }", ids[1])
    reads_before = _first_view_reads(watch)
    agent = Agent(replica, "agent E")
    assert agent.claim(ids[0]).status_code == 200
    claimed = card.locator(f'.step-row[data-step="{ids[0]}"]')
    expect(claimed.locator(".pill")).to_have_text("in progress")
    expect(claimed.locator(".holder")).to_contain_text("agent E")
    expect(claimed.locator(".countdown .left")).to_have_text(COUNTDOWN)
    expect(card.locator('[data-rollup="big-plan"]')).to_have_text(
        "big-plan: 0/180 done, 179 claimable, 1 in flight")
    expect(card.locator(f'.step-row[data-step="{ids[1]}"]')).to_have_attribute("data-mark", "kept")
    assert _first_view_reads(watch) == reads_before

    more = card.locator('[data-key="more-big-plan"]')
    more.click()
    expect(rows).to_have_count(150)
    more.click()
    expect(rows).to_have_count(180)
    expect(more).to_have_count(0)
    expect(card.locator(".steps-more")).to_contain_text("180 of 180 steps")
    expect(rows.last).to_contain_text("step 180")

    card.locator("select.show").select_option("held")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("agent E")
    card.locator("select.show").select_option("all")
    card.locator("input.find").fill("step 11")
    expect(rows).to_have_count(11)  # step 11 and steps 110-119
    screenshot(page, "console-large-plan.png")
    assert watch.errors == [] and watch.outside() == []
    agent.close()
    planner.close()
