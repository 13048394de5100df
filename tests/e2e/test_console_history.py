"""A step's history in the console names who did each thing, in a real headless Chromium
against a real `planledger serve`: the session that planned it, the session that claimed
it, and the admin who force-released it (for the session that held it)."""

from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, expect

from planledger.api.runtime import open_runtime
from planledger.bench.servers import Agent, Replica, start_replica
from tests.support.browser import PageWatch, chromium

ADMIN = "console-history-admin-token-0123456789abcdef"


@pytest.fixture(scope="module")
def replica(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replica]:
    db = str(tmp_path_factory.mktemp("console-history") / "ledger.sqlite")
    open_runtime(db).close()
    served = start_replica(db, {"PLANLEDGER_ADMIN_TOKEN": ADMIN})
    yield served
    served.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


def test_the_step_history_names_who_planned_claimed_and_force_released_it(
    replica: Replica, browser: Browser,
) -> None:
    planner, agent = Agent(replica, "planner P"), Agent(replica, "agent F")
    created = planner.http.post("/api/plans", json={
        "slug": "authored", "title": "Authored",
        "steps": [{"title": "Sign the release", "key": "sign"}]})
    assert created.status_code == 201, created.text
    step = created.json()["steps"][0]["step_id"]
    assert agent.claim(step).status_code == 200
    forced = httpx.post(f"{replica.url}/api/steps/{step}/force-release", timeout=30,
                        headers={"Authorization": f"Bearer {ADMIN}"})
    assert forced.status_code == 200, forced.text

    watch = PageWatch(replica.url)
    page = watch.attach(browser.new_page(viewport={"width": 1280, "height": 900}))
    page.goto(replica.url + "/#plan=authored")
    expect(page.locator("#live")).to_have_text("live")
    page.locator(f'[data-key="step-{step}"]').click()
    # The panel names the step by the references a person types into the next command.
    expect(page.locator("#detail .step-ref")).to_have_text("authored#1 · authored/sign")
    history = page.locator("#detail .history > li")
    added = history.filter(has_text="added to the plan")
    expect(added.locator(".by")).to_have_text("by planner P")
    claimed = history.filter(has_text="claimed")
    expect(claimed.locator(".by")).to_have_text("by agent F")
    released = history.filter(has_text="released")
    expect(released.locator(".by")).to_contain_text("by admin")
    expect(released.locator(".by")).to_have_attribute("data-actor", "admin")
    assert watch.errors == [] and watch.outside() == []
    planner.close()
    agent.close()


def test_the_step_history_shows_a_completions_evidence_with_its_change_request_linked(
    replica: Replica, browser: Browser,
) -> None:
    planner, agent = Agent(replica, "planner P"), Agent(replica, "agent E")
    created = planner.http.post("/api/plans", json={
        "slug": "evidenced", "title": "Evidenced", "steps": [{"title": "Ship the limiter"}]})
    assert created.status_code == 201, created.text
    step = created.json()["steps"][0]["step_id"]
    fence = agent.claim(step).json()["fence"]
    pr = "https://github.com/example/app/pull/31"
    done = agent.http.post(f"/api/steps/{step}/complete", json={"fence": fence, "evidence": {
        "commits": ["9fceb02d0ae598e95dc970b74767f19372d61af8"], "branch": "limiter", "pr": pr,
        "checks": [{"name": "tests", "result": "pass", "summary": "383 passed"},
                   {"name": "lint", "result": "fail", "command": "ruff check ."}]}})
    assert done.status_code == 200, done.text

    watch = PageWatch(replica.url)
    page = watch.attach(browser.new_page(viewport={"width": 1280, "height": 900}))
    page.goto(replica.url + "/#plan=evidenced")
    expect(page.locator("#live")).to_have_text("live")
    page.locator(f'[data-key="step-{step}"]').click()
    completed = page.locator("#detail .history > li").filter(has_text="completed")
    evidence = completed.locator(".evidence")
    expect(evidence).to_contain_text("1 commit on limiter: 9fceb02")
    expect(evidence.locator("a")).to_have_attribute("href", pr)
    expect(evidence.locator(".check.pass")).to_contain_text("tests pass — 383 passed")
    expect(evidence.locator(".check.fail")).to_contain_text("lint fail")
    assert watch.errors == [] and watch.outside() == []
    planner.close()
    agent.close()


def test_the_step_panel_shows_its_epic_its_origin_and_its_labels(
    replica: Replica, browser: Browser,
) -> None:
    planner = Agent(replica, "planner R")
    created = planner.http.post("/api/plans", json={
        "slug": "related", "title": "Related",
        "steps": [{"key": "epic", "title": "Rotate the tokens"},
                  {"key": "issue", "title": "Issue a pair", "parent": "epic"},
                  {"key": "found", "title": "Fix the clock skew", "parent": "epic",
                   "discovered_from": "issue", "labels": ["bug", "auth"],
                   "links": [{"kind": "related", "target": "bd-x9"}]}]})
    assert created.status_code == 201, created.text
    epic, _, found = (s["step_id"] for s in created.json()["steps"])

    watch = PageWatch(replica.url)
    page = watch.attach(browser.new_page(viewport={"width": 1280, "height": 900}))
    page.goto(replica.url + "/#plan=related")
    expect(page.locator("#live")).to_have_text("live")
    page.locator(f'[data-key="step-{found}"]').click()
    facts = page.locator("#detail .facts")
    expect(facts).to_contain_text("parentrelated#1")
    expect(facts).to_contain_text("discovered fromrelated#2")
    expect(facts).to_contain_text("labelsbug, auth")
    expect(facts).to_contain_text("linksrelated bd-x9")
    page.locator(f'[data-key="step-{epic}"]').click()
    expect(page.locator("#detail .facts")).to_contain_text("children0/2 children done")
    assert watch.errors == [] and watch.outside() == []
    planner.close()
