"""A held step over the HTTP API, on a real socket and a real SQLite file (issue 19): a
bounce's 409 names the holder by id and by name and says when its lease runs out, and only
the holder (or the admin) revises a held step; anyone else's PATCH is 409 held_elsewhere."""

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from planledger.api.runtime import open_runtime
from planledger.api.settings import Settings
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.live_server import LiveServer, live_server, session
from tests.support.seed import seed_auth_refresh

ADMIN = "admin-token-for-held-steps-0123456789abcdef"
LEASE = 900


@pytest.fixture
def served(tmp_path: Path, clock: FakeClock) -> Iterator[tuple[LiveServer, str]]:
    """The seed's plan served; its fifth step (claimable) is the one these tests hold."""
    runtime = open_runtime(str(tmp_path / "ledger.sqlite"), clock=clock, ids=SequentialIds())
    step = str(seed_auth_refresh(runtime.ledger, race=False)[4])
    settings = Settings(db=runtime.db, lease_default=LEASE, admin_token=ADMIN)
    with live_server(runtime, settings) as live:
        yield live, step
    runtime.close()


def test_a_bounce_names_the_holders_session_name_and_when_its_lease_runs_out(
    served: tuple[LiveServer, str], clock: FakeClock,
) -> None:
    live, step = served
    with live.client() as http:
        a_id, as_a = session(http, "agent A")
        _, as_b = session(http, "agent B")
        granted = http.post(f"/api/steps/{step}/claim", headers=as_a)
        assert granted.status_code == 200, granted.text
        clock.advance(60)
        bounced = http.post(f"/api/steps/{step}/claim", headers=as_b)
    assert bounced.status_code == 409
    body = bounced.json()
    assert (body["reason"], body["step_id"], body["holder"], body["holder_name"]) == (
        "already_claimed", step, a_id, "agent A")
    assert (body["fence"], body["retry_after"]) == (granted.json()["fence"], LEASE - 60)
    assert body["message"].startswith(f'task already claimed: held by "{a_id}" (agent A)')


def test_only_the_holder_or_the_admin_patches_a_held_step(
    served: tuple[LiveServer, str],
) -> None:
    live, step = served
    with live.client() as http:
        a_id, as_a = session(http, "agent A")
        _, as_b = session(http, "agent B")
        assert http.post(f"/api/steps/{step}/claim", headers=as_a).status_code == 200

        refused = http.patch(f"/api/steps/{step}", headers=as_b, json={"title": "hijacked"})
        assert refused.status_code == 409, refused.text
        body = refused.json()
        assert (body["reason"], body["step_id"], body["holder"], body["holder_name"]) == (
            "held_elsewhere", step, a_id, "agent A")
        assert _title(http, step) != "hijacked"

        by_holder = http.patch(f"/api/steps/{step}", headers=as_a, json={"body": "mine"})
        assert by_holder.status_code == 200, by_holder.text
        admin = {"Authorization": f"Bearer {ADMIN}"}
        by_admin = http.patch(f"/api/steps/{step}", headers=admin, json={"title": "renamed"})
        assert by_admin.status_code == 200, by_admin.text
        shown = http.get(f"/api/steps/{step}").json()
        assert (shown["title"], shown["body"], shown["holder"]) == ("renamed", "mine", a_id)


def _title(http: httpx.Client, step: str) -> str:
    title: str = http.get(f"/api/steps/{step}").json()["title"]
    return title
