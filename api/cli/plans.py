"""`plan create` (from a plan file) and `timeline`: the verbs of plans beyond
api.cli.calls' table."""

from pathlib import Path

from planledger.api.cli import render
from planledger.api.cli.common import emit, open_client
from planledger.api.cli.grammar import Values


def plan_create(v: Values) -> None:
    from planledger.api.cli.planfile import load_plan  # YAML: only this verb reads it

    with open_client(v["db"], v["url"], v["session"], v["token"]) as client:
        emit(client.create_plan(load_plan(Path(v["file"]))), v["json"], render.created)


def timeline(v: Values) -> None:
    with open_client(v["db"], v["url"]) as client:
        shown = client.timeline(v["plan"], v["sessions"] or [])
        emit(shown, v["json"], lambda _: render.timeline(shown))
