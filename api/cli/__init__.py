"""The interfaces' commands of the `planledger` command line, each group in its module.

The program (planledger.main) adds these to its command line beside the replays' and the
benchmarks', which the interfaces never import. Every command works on the embedded store
(`--db`, default ./.planledger/ledger.sqlite) or, with `--url`, on a running server.
`--json` prints for scripts. Exit codes: 0 done, 1 error, 3 refused by the ledger
(bounced), 4 nothing ready (see api.cli.common).
"""

import typer

from planledger.api.cli import plans, serve, work
from planledger.api.cli.db import db_app
from planledger.api.mcp import stdio as mcp_stdio

HELP = "planledger: one dependency-aware queue of plan steps for many agents."


def register(app: typer.Typer) -> None:
    """Add the interfaces' commands to `app`, ONE line each: a group is
    `app.add_typer(group, name=…)` (planledger plan …), a command `app.command(name)(f)`."""
    app.command("serve")(serve.serve)
    app.add_typer(plans.plan_app, name="plan")
    app.add_typer(work.session_app, name="session")
    app.command("ready")(plans.ready)
    app.command("step")(plans.step)
    app.command("claim")(work.claim)
    app.command("claim-next")(work.claim_next)
    app.command("heartbeat")(work.heartbeat)
    app.command("complete")(work.complete)
    app.command("release")(work.release)
    app.command("drop")(work.drop)
    app.command("log")(plans.log)
    app.command("timeline")(plans.timeline)
    app.add_typer(db_app, name="db")  # planledger db init / status (api/cli/db.py)
    app.command("mcp")(mcp_stdio.mcp)  # planledger mcp [--db | --url]: MCP over stdio


# The interfaces' commands alone (the whole program's are planledger.main's `app`).
app = typer.Typer(help=HELP, no_args_is_help=True)
register(app)
