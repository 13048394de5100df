"""The `planledger` command line."""

from typing import Annotated

import typer

from api.db_cli import db_app
from api.runtime import open_runtime
from ledger.domain.errors import AlreadyClaimed, LedgerError

app = typer.Typer(help="planledger: one dependency-aware queue of plan steps for many agents.",
                  no_args_is_help=True)

DbOption = Annotated[str | None, typer.Option("--db", envvar="PLANLEDGER_DB",
                                              help="SQLite path, 'memory' or postgresql:// URL")]

EXIT_BOUNCED = 3
EXIT_ERROR = 1


@app.callback()
def _root() -> None:
    """planledger: one dependency-aware queue of plan steps for many agents."""


def _fail(error: LedgerError) -> None:
    typer.echo(str(error), err=True)
    raise typer.Exit(EXIT_BOUNCED if isinstance(error, AlreadyClaimed) else EXIT_ERROR)


@app.command()
def ready(plan: str, db: DbOption = None) -> None:
    """List the steps of PLAN a claim would accept now."""
    runtime = open_runtime(db)
    try:
        for step_id in runtime.reads.ready(plan):
            _, definition, _ = runtime.ledger.step(step_id)
            typer.echo(f"{step_id}  {definition.title}")
    except (LedgerError, KeyError) as error:
        _fail(error if isinstance(error, LedgerError) else LedgerError(f"unknown plan {plan}"))
    finally:
        runtime.close()


app.add_typer(db_app, name="db")  # planledger db init / status (api/db_cli.py)


def main() -> None:
    app()
