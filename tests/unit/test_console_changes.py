"""The console's changes are built once per log position for every console waiting there,
and a build that failed is built again for the next console that asks."""

import asyncio
import threading
from datetime import UTC, datetime

import pytest

from planledger.api.console.changes import Message, SharedChanges
from planledger.api.console.schemas import ChangeOut


def _message(after: int) -> Message:
    change = ChangeOut(after=after, next_after=after + 1, more=False, events=[],
                       now=datetime(2025, 1, 1, tzinfo=UTC), steps=[], plans=[],
                       stale_plans=[], sessions=[], live_sessions=0, names={})
    return Message(change, change.model_dump_json())


class CountedBuilds:
    """Builds messages, counting them; each build waits until `release` is set, so every
    console has asked before the first build ends."""

    def __init__(self, fail_first: bool = False) -> None:
        self.count = 0
        self.fail_first = fail_first
        self.release = threading.Event()

    def __call__(self, after: int) -> Message:
        self.count += 1
        assert self.release.wait(10)
        if self.fail_first and self.count == 1:
            raise ConnectionError("the store went away")
        return _message(after)


def test_consoles_waiting_at_one_position_share_one_build() -> None:
    builds = CountedBuilds()
    shared = SharedChanges(builds)

    async def three_consoles() -> list[Message]:
        asked = [asyncio.create_task(shared.after(7)) for _ in range(3)]
        await asyncio.sleep(0)  # let every console ask before the build ends
        builds.release.set()
        return await asyncio.gather(*asked)

    found = asyncio.run(three_consoles())
    assert builds.count == 1
    assert {m.change.next_after for m in found} == {8}
    assert len({id(m) for m in found}) == 1


def test_a_failed_build_is_built_again_for_the_next_console() -> None:
    builds = CountedBuilds(fail_first=True)
    builds.release.set()
    shared = SharedChanges(builds)

    async def twice() -> Message:
        with pytest.raises(ConnectionError):
            await shared.after(3)
        return await shared.after(3)

    assert asyncio.run(twice()).change.after == 3
    assert builds.count == 2


def test_a_console_that_leaves_does_not_cancel_the_build_for_the_others() -> None:
    builds = CountedBuilds()
    shared = SharedChanges(builds)

    async def one_leaves() -> Message:
        leaving = asyncio.create_task(shared.after(5))
        staying = asyncio.create_task(shared.after(5))
        await asyncio.sleep(0)
        leaving.cancel()
        builds.release.set()
        return await staying

    assert asyncio.run(one_leaves()).change.after == 5
    assert builds.count == 1
