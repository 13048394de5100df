"""Recordings edited as a forger would: lines as JSON objects, events picked by type, and
every stream's hash chain recomputed so that `audit verify FILE` passes."""

import json
from typing import Any

from planledger.ledger.chain import HASH_KEY, PREV_KEY, seal

Lines = list[dict[str, Any]]


def events(lines: Lines, kind: str = "") -> list[dict[str, Any]]:
    """The event lines (of the type whose topic ends with `kind`), in file order."""
    return [line for line in lines if line["type"] == "event"
            and str(line["topic"]).endswith(kind)]


def resealed(lines: Lines) -> Lines:
    """Every stream's chain recomputed in log order, and the header's count made to agree."""
    heads: dict[str, str] = {}
    for line in sorted(events(lines), key=lambda e: int(e["position"])):
        body = {k: v for k, v in line["state"].items() if k not in (PREV_KEY, HASH_KEY)}
        raw = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        sealed, digest = seal(heads.get(line["stream"], ""), line["stream"], line["version"],
                              line["topic"], raw)
        line["state"] = json.loads(sealed)
        heads[line["stream"]] = digest
    lines[0]["events"] = len(events(lines))
    return lines
