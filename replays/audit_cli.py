"""`planledger audit verify`: check the hash chain of a store or a recording (ledger.chain)
and name the first event that was changed, removed or reordered. A store's own checks (its
positions, its signed head) are the interfaces' (api.cli.audit); a recording is read here,
as the replays' format has it.

Exit codes: 0 every link holds; 1 a broken link, or a file or store that cannot be read.
"""

from collections.abc import Iterator
from pathlib import Path

from planledger.api.cli import output
from planledger.api.cli.audit import EXIT_BROKEN, check_store, report
from planledger.api.cli.grammar import Values
from planledger.ledger.chain import Entry, Verified, verify
from planledger.replays.format import RecordingError, canonical
from planledger.replays.jsonline import BadLine, parse_line
from planledger.replays.reading import read_file


class Unreadable(Exception):
    """A recording line that is not an event anyone could have written."""


def recording_entries(path: Path) -> Iterator[Entry]:
    """Every event line of a recording, in file order. Read leniently (unlike an import):
    a line that is gone or moved must reach the chain check, which names the event."""
    try:
        with path.open(encoding="utf-8") as lines:
            for number, text in enumerate(lines, 1):
                if text.strip():
                    entry = _entry(number, text)
                    if entry is not None:
                        yield entry
    except OSError as error:
        raise Unreadable(f"cannot read {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise Unreadable(f"{path} is not UTF-8 text: the file was changed") from None


def _entry(number: int, text: str) -> Entry | None:
    try:
        line = parse_line(text)
    except BadLine as error:
        raise Unreadable(f"line {number} is {error}: the file was changed") from None
    if not isinstance(line, dict) or line.get("type") != "event":
        return None
    fields = (line.get("position"), line.get("stream"), line.get("version"),
              line.get("topic"), line.get("state"))
    kinds = (int, str, int, str, dict)
    if not all(isinstance(v, k) and not isinstance(v, bool) for v, k in zip(fields, kinds,
                                                                              strict=True)):
        raise Unreadable(f"line {number} is not a whole event line: the file was changed")
    position, stream, version, topic, state = fields
    return Entry(position, stream, version, topic, canonical(state))  # type: ignore[arg-type]


def verify_command(v: Values) -> None:
    if v["recording"] is None:
        check_store(v["db"], v["json"])
        return
    recording = Path(v["recording"])
    try:
        result = verify(recording_entries(recording))
        if isinstance(result, Verified):
            # The chains hold: the file must also be whole as an import reads it
            # (a header, its counts met), or a cut or a stranger file passes as intact.
            read_file(recording)
    except (Unreadable, RecordingError) as error:
        output.line(f"TAMPERED or unreadable: {error}", stderr=True)
        raise SystemExit(EXIT_BROKEN) from None
    report(result, str(recording), v["json"])
