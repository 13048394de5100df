"""The `planledger` command line: one typer app; each command group lives in its module.

Every command works on the embedded store (`--db`, default ./.planledger/ledger.sqlite)
or, with `--url`, on a running server. `--json` prints for scripts. Exit codes: 0 done,
1 error, 3 refused by the ledger (bounced), 4 nothing ready (see api.commands.common).
"""

import typer

from planledger.api.audit_cli import audit_app
from planledger.api.commands import plans, serve, work
from planledger.api.db_cli import db_app
from planledger.api.mcp import stdio as mcp_stdio
from planledger.bench import cli as bench_cli
from planledger.replays import cli as replays_cli

app = typer.Typer(help="planledger: one dependency-aware queue of plan steps for many agents.",
                  no_args_is_help=True)


@app.callback()
def _root() -> None:
    """planledger: one dependency-aware queue of plan steps for many agents."""


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

# Commands from other packages register here, ONE line each, e.g.
#   app.add_typer(replays_cli.app, name="replay")     (a group: planledger replay …)
#   app.command("demo")(replays_cli.demo)            (a single command: planledger demo)
app.add_typer(db_app, name="db")  # planledger db init / status (api/db_cli.py)
app.add_typer(replays_cli.app, name="replay")  # planledger replay … (replays/cli.py)
app.command("demo")(replays_cli.demo)  # planledger demo [--race] (replays/cli.py)
app.command("bench", context_settings=bench_cli.SETTINGS)(bench_cli.bench)  # bench/cli.py
app.add_typer(audit_app, name="audit")  # planledger audit verify (api/audit_cli.py)
app.command("mcp")(mcp_stdio.mcp)  # planledger mcp [--db | --url]: MCP over stdio (api/mcp)


def main() -> None:
    app()
