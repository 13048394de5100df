"""The console in a real headless Chromium against a real `planledger serve` process.

The seed's race runs through the HTTP API while the page stays open: it must show the
winner holding step 5 with a countdown, the loser's bounce naming the winner in the
timeline, and 6/6 once both finish, all without a reload. An operator then works a
narrow window by keyboard: a short lease lapses into Loose ends, and the admin token
unlocks a force-release. No test here tolerates a console error or a request that
leaves the server. Screenshots land in test-artifacts/ for people to look at.
"""

import re
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from planledger.api.runtime import open_runtime
from planledger.bench.servers import Agent, Replica, author_at, start_replica
from tests.support.browser import PageWatch, chromium, screenshot
from tests.support.seed import AUTH_REFRESH_STEPS, seed_auth_refresh

ADMIN = "console-admin-token-0123456789abcdef"
COUNTDOWN = re.compile(r"^1[45]:\d\d$")  # a fresh 900 s lease, read a moment later
RATE_LIMIT = AUTH_REFRESH_STEPS[4]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Replica, list[str]]]:
    db = str(tmp_path_factory.mktemp("console") / "ledger.sqlite")
    runtime = open_runtime(db)
    steps = seed_auth_refresh(runtime.ledger)
    runtime.close()
    replica = start_replica(db, {"PLANLEDGER_ADMIN_TOKEN": ADMIN})
    yield replica, [str(s) for s in steps]
    replica.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


def _open(browser: Browser, replica: Replica, path: str, width: int, height: int,
          ) -> tuple[Page, PageWatch]:
    watch = PageWatch(replica.url)
    page = watch.attach(browser.new_page(viewport={"width": width, "height": height}))
    page.goto(replica.url + path)
    expect(page.locator("#live")).to_have_text("live")
    page.evaluate("window.__sameDocument = true")  # gone if anything reloads the page
    return page, watch


def _watch_for(page: Page, selector: str) -> float:
    """Note, on the page's own clock, when `selector` first matches (checked every
    frame); returns the page's time now, before the change is made."""
    return float(page.evaluate("""(selector) => {
        const look = () => {
            if (!document.querySelector(selector)) return requestAnimationFrame(look);
            document.documentElement.dataset.seenAt = String(performance.now());
        };
        delete document.documentElement.dataset.seenAt;
        look();
        return performance.now();
    }""", selector))


def _assert_clean(page: Page, watch: PageWatch) -> None:
    assert page.evaluate("window.__sameDocument === true"), "the page reloaded"
    assert watch.errors == []
    assert watch.outside() == []
    assert any("/api/console/events" in url for url in watch.requests)


def test_the_race_shows_live_winner_bounce_and_six_of_six_without_reload(
    server: tuple[Replica, list[str]], browser: Browser,
) -> None:
    replica, steps = server
    step5, step6 = steps[4], steps[5]
    page, watch = _open(browser, replica, "/", 1440, 900)
    rollup = page.locator('[data-rollup="auth-refresh"]')
    expect(rollup).to_have_text("auth-refresh: 4/6 done, 2 claimable, 0 in flight")

    agent_a, agent_b = Agent(replica, "agent A"), Agent(replica, "agent B")
    for agent in (agent_a, agent_b):  # both list the ready steps, recorded, as in the seed
        ready = agent.http.post("/api/plans/auth-refresh/ready").json()["ready"]
        assert [s["step_id"] for s in ready] == [step5, step6]
    expect(page.locator('.chip[data-kind="ready_listed"]')).to_have_count(2)

    held = f'article.session[data-session="{agent_b.session_id}"] [data-step="{step5}"]'
    before = _watch_for(page, f"{held} .countdown")
    assert agent_b.claim(step5).status_code == 200
    page.wait_for_selector("html[data-seen-at]", state="attached", timeout=5000)
    seen = float(page.evaluate("document.documentElement.dataset.seenAt"))
    assert seen - before < 1000, f"the claim reached the page {seen - before:.0f} ms after the call"
    expect(page.locator(held)).to_contain_text(RATE_LIMIT)
    expect(page.locator(f"{held} .countdown .left")).to_have_text(COUNTDOWN)
    expect(page.locator(f"{held} .fence")).to_have_text("fence 1")

    bounced = agent_a.claim(step5)
    assert bounced.status_code == 409 and bounced.json()["holder"] == agent_b.session_id
    bounce = page.locator('.chip[data-kind="bounced"]')
    expect(bounce).to_contain_text("bounced off agent B")
    expect(bounce).to_contain_text(f'task already claimed: held by "{agent_b.session_id}"')
    expect(bounce).to_have_attribute("aria-label", re.compile(r"^agent A: claim bounced"))
    bounce.hover()
    expect(page.locator("#tip")).to_contain_text(f'held by "{agent_b.session_id}"')
    bounce.click()  # the event itself, as the log holds it
    expect(page.locator("#detail .facts.raw")).to_contain_text("ClaimBounced")
    expect(page.locator("#detail .facts.raw")).to_contain_text(agent_b.session_id)
    page.keyboard.press("Escape")
    expect(page.locator("#detail")).to_be_hidden()
    page.mouse.move(0, 0)
    expect(page.locator("#tip")).to_be_hidden()
    assert agent_a.claim(step6).status_code == 200
    expect(rollup).to_have_text("auth-refresh: 4/6 done, 0 claimable, 2 in flight")
    screenshot(page, "console-race-held.png")

    assert agent_b.complete(step5, 1).status_code == 200
    assert agent_a.complete(step6, 1).status_code == 200
    expect(rollup).to_have_text("auth-refresh: 6/6 done, 0 claimable, 0 in flight")
    for agent in (agent_a, agent_b):
        card = page.locator(f'article.session[data-session="{agent.session_id}"]')
        expect(card.locator(".badge")).to_have_text("idle")
    expect(page.locator('.chip[data-kind="completed"]')).to_have_count(6)
    screenshot(page, "console-race.png")
    _assert_clean(page, watch)
    agent_a.close()
    agent_b.close()


def _plan(replica: Replica) -> tuple[str, str]:
    created = httpx.post(f"{replica.url}/api/plans", timeout=30,
                         headers=author_at(replica.url), json={
        "slug": "key-rotation", "title": "Signing-key rotation",
        "constraints": {"no-downtime": "Old tokens verify until the new key is everywhere"},
        "steps": [{"key": "a", "title": "Publish the new signing key"},
                  {"key": "b", "title": "Backfill the audit rows"}]})
    assert created.status_code == 201, created.text
    first, second = (s["step_id"] for s in created.json()["steps"])
    return first, second


def test_a_lapse_becomes_a_loose_end_and_an_operator_force_releases_by_keyboard(
    server: tuple[Replica, list[str]], browser: Browser,
) -> None:
    replica, _ = server
    short, long = _plan(replica)
    page, watch = _open(browser, replica, "/#plan=key-rotation", 420, 860)
    agent_c, agent_d = Agent(replica, "agent C"), Agent(replica, "agent D")
    assert agent_c.http.post(f"/api/steps/{short}/claim", json={"lease_seconds": 2}).is_success
    assert agent_d.claim(long).status_code == 200

    brief = page.locator(f'article.session[data-session="{agent_c.session_id}"] .countdown')
    expect(brief).to_have_class(re.compile(r"\bwarn\b"))  # amber: near its expiry
    steady = page.locator(f'article.session[data-session="{agent_d.session_id}"] .countdown')
    expect(steady).not_to_have_class(re.compile(r"\bwarn\b"))
    # Nothing is written when a lease lapses: the page must notice by itself.
    loose = page.locator(f'#loose-list [data-step="{short}"]')
    expect(loose).to_contain_text("agent C\u2019s lease expired", timeout=10_000)
    expect(page.locator(f'.step-row[data-step="{short}"] .pill')).to_have_text("lapsed")

    page.locator("#operator").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#token-dialog")).to_be_visible()
    page.keyboard.type(ADMIN)
    page.keyboard.press("Enter")
    expect(page.locator("#operator")).to_have_text("operator")

    page.locator(f'[data-key="step-{long}"]').focus()
    page.keyboard.press("Enter")
    drawer = page.locator("#detail")
    expect(drawer.locator("h3")).to_have_text("Backfill the audit rows")
    expect(drawer.locator(".history")).to_contain_text("claimed")
    page.keyboard.press("Tab")
    expect(page.locator('[data-key="force-release"]')).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator('[data-key="force-release"]')).to_have_text(re.compile("^Confirm"))
    page.keyboard.press("Enter")
    expect(drawer.locator(".history")).to_contain_text("forced (held by agent D)")
    expect(page.locator(f'.step-row[data-step="{long}"] .pill')).to_have_text("claimable")
    page.keyboard.press("Escape")
    expect(drawer).to_be_hidden()
    expect(page.locator(f'[data-key="step-{long}"]')).to_be_focused()
    screenshot(page, "console-operator-narrow.png")
    _assert_clean(page, watch)
    agent_c.close()
    agent_d.close()



def test_a_handoff_note_shows_in_the_step_detail_and_the_timeline_and_the_badge_counts(
    server: tuple[Replica, list[str]], browser: Browser,
) -> None:
    replica, _ = server
    created = httpx.post(f"{replica.url}/api/plans", timeout=30,
                         headers=author_at(replica.url), json={
        "slug": "handoff", "title": "Handoff", "steps": [{"title": "Migrate the schema"}]})
    assert created.status_code == 201, created.text
    step = created.json()["steps"][0]["step_id"]
    agent_e, agent_f = Agent(replica, "agent E"), Agent(replica, "agent F")
    assert agent_e.claim(step).status_code == 200
    note = "blocked on the schema migration;\ntried X"
    released = agent_e.http.post(f"/api/steps/{step}/release", json={"note": note})
    assert released.status_code == 200, released.text
    page, watch = _open(browser, replica, "/#plan=handoff", 1440, 900)
    live = httpx.get(f"{replica.url}/api/console", timeout=30).json()
    live_count = len(live["sessions"]) + live["idle_hidden"]
    holding = sum(1 for s in live["sessions"] if s["holds"])
    expect(page.locator("#now-count")).to_have_text(f"{holding} holding · {live_count} live")

    chip = page.locator('.chip[data-kind="noted"]')
    expect(chip).to_contain_text("note on #1")
    expect(chip).to_contain_text("blocked on the schema migration;")
    page.locator(f'[data-key="step-{step}"]').click()
    history = page.locator("#detail .history")
    expect(history).to_contain_text("note")
    expect(history.locator(".note-text")).to_have_text(f"(with the release) {note}")

    assert agent_f.claim(step).status_code == 200  # a holder more, counted live
    expect(page.locator("#now-count")).to_have_text(
        f"{holding + 1} holding · {live_count} live")
    page.keyboard.press("Escape")
    _assert_clean(page, watch)
    agent_e.close()
    agent_f.close()
