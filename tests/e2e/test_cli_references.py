"""Step references on the command line, on the embedded store and against a server with
--url: `planledger claim auth-refresh#2`, `complete auth-refresh/ui`, `step ui`; the
tables of `ready`, `plan show` and `plan create` name steps by reference and never cut an
id; an unknown reference exits 1 saying `step not found`."""

from pathlib import Path

from planledger.api.runtime import Runtime
from planledger.main import run as app
from tests.e2e.test_cli_embedded import Cli
from tests.support.live_server import live_server

PLAN = """\
slug: auth-refresh
title: Refresh-token rotation
steps:
  - key: rotate
    title: Rotate refresh tokens on every use and revoke the family on reuse
  - key: ui
    title: Checkout UI
  - key: limit
    title: Rate-limit POST /auth/refresh (per-IP and per-family)
    depends_on: [ui]
"""


def _plan(cli: Cli, tmp_path: Path, *where: str) -> list[str]:
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(PLAN)
    made = cli.json("plan", "create", str(plan_file), *where)
    return [s["step_id"] for s in made["steps"]]


def test_a_step_is_claimed_completed_and_shown_by_its_references(tmp_path: Path) -> None:
    cli = Cli(str(tmp_path / "ledger.sqlite"))
    _, ui, limit = _plan(cli, tmp_path)
    session = cli.json("session", "start", "--name", "agent A")["session_id"]
    blocked = cli.runner.invoke(app, ["claim", "auth-refresh/limit", "--session", session],
                                env=cli.env)
    assert blocked.exit_code == 3
    assert ('waits on auth-refresh#2 "Checkout UI"') in blocked.stderr

    claimed = cli.run("claim", "auth-refresh#2", "--session", session)
    assert claimed.startswith('claimed auth-refresh#2 "Checkout UI"')
    done = cli.run("complete", "auth-refresh/ui", "--session", session).splitlines()
    assert done[0] == "auth-refresh#2: done"  # then the steps it unblocked, if any
    shown = cli.json("step", "limit")
    assert (shown["step_id"], shown["ref"], shown["key"]) == (limit, "auth-refresh#3", "limit")
    assert cli.json("step", "auth-refresh#2")["step_id"] == ui

    unknown = cli.runner.invoke(app, ["claim", "auth-refresh#7", "--session", session],
                                env=cli.env)
    assert unknown.exit_code == 1 and 'step not found: "auth-refresh#7"' in unknown.stderr
    assert "Traceback" not in unknown.stderr


def test_tables_name_steps_by_reference_and_never_cut_an_id(tmp_path: Path) -> None:
    cli = Cli(str(tmp_path / "ledger.sqlite"))
    narrow = {"COLUMNS": "60"}  # titles must give way; references and ids must not
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(PLAN)
    created = cli.run("plan", "create", str(plan_file), **narrow)
    ids = [s["step_id"] for s in cli.json("plan", "show", "auth-refresh")["steps"]]
    # Steps made together share most of their ids (their first ten characters, unless the
    # write crossed a millisecond): each must show whole, or not at all.
    for step_id in ids:
        assert step_id in created
    assert "auth-refresh#3" in created and "auth-refresh#2" in created  # depends on
    for table in (created, cli.run("ready", "auth-refresh", **narrow),
                  cli.run("plan", "show", "auth-refresh", **narrow)):
        for line in table.splitlines():
            for word in line.split():
                cut = word.removesuffix("…")
                if cut != word and len(cut) >= 4:  # a word cut short: no id, no reference
                    assert not any(i.startswith(cut) for i in ids), line
                    assert not cut.startswith("auth-refresh"), line
    shown = cli.run("plan", "show", "auth-refresh", **narrow)
    assert 'waits on auth-refresh#2 "Checkout UI"' in shown
    rows = [line.split()[:2] for line in shown.splitlines() if line.startswith("auth-refresh#")]
    assert rows == [["auth-refresh#1", "rotate"], ["auth-refresh#2", "ui"],
                    ["auth-refresh#3", "limit"]]


def test_references_reach_a_server_with_url(rt: Runtime, tmp_path: Path) -> None:
    cli = Cli(str(tmp_path / "unused.sqlite"))
    with live_server(rt) as server:
        url = ["--url", server.url]
        token = cli.json("session", "start", "--name", "planner", *url)["token"]
        _, ui, _ = _plan(cli, tmp_path, *url, "--token", token)
        claimed = cli.json("claim", "auth-refresh/ui", *url, "--token", token)
        assert (claimed["step_id"], claimed["ref"]) == (ui, "auth-refresh#2")
        cli.run("note", "auth-refresh#2", "half done", *url, "--token", token)
        done = cli.json("complete", "auth-refresh#2", *url, "--token", token)
        assert done["status"] == "done"
        assert cli.json("step", "auth-refresh/ui", *url)["status"] == "done"
        ready = cli.run("ready", "auth-refresh", *url)
        assert "auth-refresh#1" in ready and "auth-refresh#3" in ready
        unknown = cli.runner.invoke(app, ["step", "auth-refresh#9", *url], env=cli.env)
        assert unknown.exit_code == 1 and 'step not found: "auth-refresh#9"' in unknown.stderr
