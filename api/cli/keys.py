"""`planledger keys create/list/revoke`: access keys and their roles (an admin's).

On the embedded store the operator running the command holds the store's file, and is
its admin. With --url, the command sends an admin credential: an admin key in
PLANLEDGER_KEY, or the admin token as --token (PLANLEDGER_TOKEN).
"""

import json

from planledger.api.cli import output
from planledger.api.cli.common import emit, open_client
from planledger.api.cli.grammar import Values


def create(v: Values) -> None:
    with open_client(v["db"], v["url"], token=v["token"]) as client:
        issued = client.issue_key(v["key_name"], v["role"])
    if v["json"]:
        output.echo(json.dumps({"name": issued.name, "role": issued.role, "key": issued.key}))
        return
    output.line(f'key "{issued.name}" ({issued.role}) issued; it is shown once, below. Send '
                "it as `Authorization: Bearer <key>` or set PLANLEDGER_KEY.", stderr=True)
    output.echo(issued.key or "")


def list_keys(v: Values) -> None:
    with open_client(v["db"], v["url"], token=v["token"]) as client:
        emit(client.keys(), v["json"], _show_keys)


def revoke(v: Values) -> None:
    with open_client(v["db"], v["url"], token=v["token"]) as client:
        emit(client.revoke_key(v["key_name"]), v["json"],
             lambda k: output.line(f'key "{k["name"]}" revoked; its sessions stop now'))


def _show_keys(found: dict[str, object]) -> None:
    keys = found["keys"]
    assert isinstance(keys, list)
    if not keys:
        output.line("no keys: the server is open to anyone who can reach it on loopback; "
                    "issue one with `planledger keys create --name NAME --role ROLE`")
    for key in keys:
        state = "live" if key["live"] else f"revoked {key['revoked_at']:%Y-%m-%d %H:%M}"
        output.line(f"{key['name']:<24} {key['role']:<8} {state:<24} issued "
                    f"{key['issued_at']:%Y-%m-%d %H:%M} by {key['issued_by']}")
