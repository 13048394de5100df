"""`planledger keys create/list/revoke`: access keys and their roles (an admin's).

On the embedded store the operator running the command holds the store's file, and is
its admin. With --url, the command sends an admin credential: an admin key in
PLANLEDGER_KEY, or the admin token as --token (PLANLEDGER_TOKEN).
"""

import json
from typing import Annotated

import typer

from planledger.api.cli.common import emit, open_client
from planledger.api.cli.options import DbOption, JsonOption, TokenOption, UrlOption

keys_app = typer.Typer(help="Issue, list and revoke access keys.", no_args_is_help=True)

ROLE_HELP = ("reader (every read), worker (its own sessions and claims, notes, new steps), "
             "planner (plans, priorities, dependencies, others' steps) or admin "
             "(force-release, keys); each includes the ones before it.")
NameOption = Annotated[str, typer.Option("--name", metavar="NAME", help=(
    "Who or what holds the key (1-64 letters, digits, '.', '_', '@', '-'): the log names "
    "it beside every write made with it."))]
RoleOption = Annotated[str, typer.Option("--role", metavar="ROLE", help=ROLE_HELP)]
NameArg = Annotated[str, typer.Argument(metavar="NAME", help="The key's name.")]


@keys_app.command("create")
def create(name: NameOption, role: RoleOption, db: DbOption = None, url: UrlOption = None,
           token: TokenOption = None, json_out: JsonOption = False) -> None:
    """Issue a key with a role and print it once, alone on the last line (the store keeps
    only its hash: keep the key now). --json: {"name", "role", "key"}."""
    with open_client(db, url, token=token) as client:
        issued = client.issue_key(name, role)
    if json_out:
        typer.echo(json.dumps({"name": issued.name, "role": issued.role, "key": issued.key}))
        return
    typer.echo(f'key "{issued.name}" ({issued.role}) issued; it is shown once, below. Send '
               "it as `Authorization: Bearer <key>` or set PLANLEDGER_KEY.", err=True)
    typer.echo(issued.key)


@keys_app.command("list")
def list_keys(db: DbOption = None, url: UrlOption = None, token: TokenOption = None,
              json_out: JsonOption = False) -> None:
    """Every key name with its role, and whether it is live (never the keys themselves)."""
    with open_client(db, url, token=token) as client:
        emit(client.keys(), json_out, _show_keys)


@keys_app.command("revoke")
def revoke(name: NameArg, db: DbOption = None, url: UrlOption = None,
           token: TokenOption = None, json_out: JsonOption = False) -> None:
    """Revoke a key: it and every session started with it stop working at once."""
    with open_client(db, url, token=token) as client:
        emit(client.revoke_key(name), json_out,
             lambda k: typer.echo(f'key "{k["name"]}" revoked; its sessions stop now'))


def _show_keys(found: dict[str, object]) -> None:
    keys = found["keys"]
    assert isinstance(keys, list)
    if not keys:
        typer.echo("no keys: the server is open to anyone who can reach it on loopback; "
                   "issue one with `planledger keys create --name NAME --role ROLE`")
    for key in keys:
        state = "live" if key["live"] else f"revoked {key['revoked_at']:%Y-%m-%d %H:%M}"
        typer.echo(f"{key['name']:<24} {key['role']:<8} {state:<24} issued "
                   f"{key['issued_at']:%Y-%m-%d %H:%M} by {key['issued_by']}")
