"""Path reservations from the command line, on the embedded store: `planledger claim
--path/--shared-path` reserves more paths, a colliding claim exits 3 naming the holder,
and `planledger paths check` answers who holds what."""

import json
from pathlib import Path

from planledger.api.runtime import open_runtime
from planledger.ledger.application import NewStep
from planledger.ledger.domain.paths import PathSpec
from planledger.main import run as app
from tests.support import OPERATOR
from tests.support.cli_runner import CliRunner


def test_claim_with_paths_a_colliding_claim_and_paths_check(tmp_path: Path) -> None:
    db = str(tmp_path / "ledger.sqlite")
    runtime = open_runtime(db)
    a = runtime.ledger.start_session("agent A").id
    b = runtime.ledger.start_session("agent B").id
    _, (rotate, limit) = runtime.ledger.create_plan("auth", "Auth", steps=[
        NewStep("Rotate", paths=(PathSpec("internal/auth/**"),)),
        NewStep("Limit", paths=(PathSpec("internal/auth/limit.go"),))], actor=OPERATOR)
    runtime.close()
    runner = CliRunner()

    held = runner.invoke(app, ["claim", rotate, "--path", "go.mod", "--shared-path", "docs/",
                               "--db", db, "--session", b])
    assert held.exit_code == 0, held.output
    assert "reserved: internal/auth/**, go.mod, docs/** (shared)" in held.output

    bounced = runner.invoke(app, ["claim", limit, "--db", db, "--session", a])
    assert bounced.exit_code == 3
    assert f'paths reserved: "internal/auth/**" held by "{b}"' in bounced.output

    asked = runner.invoke(app, ["paths", "check", "--file", "internal/auth/x.go", "--db", db,
                                "--json"])
    assert asked.exit_code == 0, asked.output
    (found,) = json.loads(asked.output)["reserved"]
    assert (found["holder"], found["step_id"], found["patterns"]) == (
        b, rotate, ["internal/auth/**"])
    shared = runner.invoke(app, ["paths", "check", "docs/*.md", "--exclusive-only",
                                 "--db", db])
    assert shared.exit_code == 0 and "no live reservation" in shared.output
    exclusive = runner.invoke(app, ["paths", "check", "go.mod", "--exclusive-only", "--db", db])
    assert exclusive.exit_code == 3 and "go.mod: held by" in exclusive.output
