"""Reading a recording: every line is checked before any is used, so a malformed file is
refused as a whole, with the number of the line that is wrong.

Readers are kept per schema version, so recordings written by older versions stay
readable; a newer schema than this code knows is refused with a clear message.
"""

from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from planledger.ledger.answers import AnswerRecorded
from planledger.ledger.domain import events as ev
from planledger.replays.format import (
    COMMAND_NAMES,
    FORMAT,
    SCHEMA,
    CommandRecord,
    EventRecord,
    Header,
    Recording,
    RecordingError,
    Selection,
    canonical,
)
from planledger.replays.jsonline import BadLine, parse_line

ANSWER_TOPIC = AnswerRecorded.TOPIC  # the API's idempotency records (riders)
# The event types a planledger log holds: a recording naming any other is refused before
# anything decodes it.
KNOWN_TOPICS = frozenset({*(kind.TOPIC for kind in ev.LedgerEvent.__subclasses__()),
                          ANSWER_TOPIC})


def read_file(path: Path) -> Recording:
    try:
        with path.open(encoding="utf-8") as lines:
            return read(lines)
    except OSError as error:
        raise RecordingError(f"cannot read {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise RecordingError(f"{path} is not UTF-8 text") from None


def read(lines: Iterable[str]) -> Recording:
    """Parse and check a whole recording; raises RecordingError naming the bad line."""
    numbered = ((n, text) for n, text in enumerate(lines, 1) if text.strip())
    first = next(numbered, None)
    if first is None:
        raise RecordingError("empty recording: no header line")
    raw = _object(*first)
    if raw.get("type") != "header" or raw.get("format") != FORMAT:
        raise RecordingError(f'line {first[0]}: not a {FORMAT} header (expected '
                             f'{{"type": "header", "format": "{FORMAT}", ...}})')
    schema = raw.get("schema")
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise RecordingError(f"line {first[0]}: the header has no schema version")
    if schema > SCHEMA:
        raise RecordingError(f"recording schema version {schema} is newer than this "
                             f"planledger reads (up to {SCHEMA}); upgrade planledger")
    if schema not in READERS:
        raise RecordingError(f"unknown recording schema version {schema}")
    return READERS[schema](first[0], raw, numbered)


def _object(number: int, text: str) -> dict[str, Any]:
    try:
        value = parse_line(text)
    except BadLine as error:
        raise RecordingError(f"line {number}: {error}") from None
    if not isinstance(value, dict):
        raise RecordingError(f"line {number}: not a JSON object")
    return value


class _Line:
    """Typed access to one line's fields; every miss names the line and the field."""

    def __init__(self, number: int, raw: dict[str, Any]) -> None:
        self.number, self.raw = number, raw

    def fail(self, problem: str) -> RecordingError:
        return RecordingError(f"line {self.number}: {problem}")

    def get(self, key: str, kind: type | tuple[type, ...], *, optional: bool = False) -> Any:
        if key not in self.raw:
            if optional:
                return None
            raise self.fail(f'missing "{key}"')
        value = self.raw[key]
        if value is None and optional:
            return None
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
            raise self.fail(f'"{key}" has the wrong type ({type(value).__name__})')
        return value

    def time(self, key: str, *, optional: bool = False) -> datetime | None:
        text = self.get(key, str, optional=optional)
        if text is None:
            return None
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise self.fail(f'"{key}" is not an ISO 8601 time: {text!r}') from None
        if moment.tzinfo is None:
            raise self.fail(f'"{key}" has no time zone: {text!r}')
        return moment


class _ReaderV1:
    def __init__(self, number: int, raw: dict[str, Any]) -> None:
        line = _Line(number, raw)
        sel = _Line(number, line.get("selection", dict))
        sessions = sel.get("sessions", list)
        if not all(isinstance(s, str) for s in sessions):
            raise line.fail('"selection.sessions" must list session ids')
        selection = Selection(sel.get("plan", str, optional=True), tuple(sessions),
                              sel.time("since", optional=True), sel.time("until", optional=True))
        self.header = Header(selection, line.get("partial", bool), line.get("commands", int),
                             line.get("events", int), line.time("exported_at", optional=True),
                             schema=1)
        self.commands: dict[int, CommandRecord] = {}
        self.events: list[EventRecord] = []
        self.versions: dict[str, int] = {}

    def add(self, line: _Line) -> None:
        kind = line.get("type", str)
        if kind == "command":
            self._command(line)
        elif kind == "event":
            self._event(line)
        else:
            raise line.fail(f'unknown line type "{kind}"')

    def _command(self, line: _Line) -> None:
        seq, name = line.get("seq", int), line.get("name", str)
        if self.commands and seq <= max(self.commands):
            raise line.fail(f"command {seq} is out of order")
        if name not in COMMAND_NAMES:
            raise line.fail(f'unknown command "{name}"')
        ids = line.get("ids", list)
        if not all(isinstance(i, str) for i in ids):
            raise line.fail('"ids" must list strings')
        at = line.time("at")
        assert at is not None
        self.commands[seq] = CommandRecord(seq, at, line.get("session", str, optional=True),
                                           name, line.get("args", dict), tuple(ids))

    def _event(self, line: _Line) -> None:
        position, stream, version = (line.get("position", int), line.get("stream", str),
                                     line.get("version", int))
        if self.events and position <= self.events[-1].position:
            raise line.fail(f"position {position} is out of order")
        if version <= self.versions.get(stream, 0):
            raise line.fail(f"stream {stream} version {version} is out of order")
        command = line.get("command", int, optional=True)
        if command is not None and command not in self.commands:
            raise line.fail(f"event names command {command}, which no earlier line defines")
        topic = line.get("topic", str)
        if topic not in KNOWN_TOPICS:
            raise line.fail(f'unknown event type "{topic[:80]}"')
        time, session, state = line.time("time"), line.get("session", str, optional=True), \
            line.get("state", dict)
        assert time is not None
        _check_agrees(line, time, session, state)
        try:
            canonical(state)
        except UnicodeEncodeError:
            raise line.fail("the state holds text that is not Unicode (a lone surrogate)"
                            ) from None
        self.versions[stream] = version
        self.events.append(EventRecord(position, time, session, stream, version,
                                       topic, state, command,
                                       bool(line.get("context", bool, optional=True)),
                                       line=line.number))

    def finish(self) -> Recording:
        counts = (len(self.commands), len(self.events))
        if counts != (self.header.commands, self.header.events):
            raise RecordingError(
                f"the header announces {self.header.commands} commands and "
                f"{self.header.events} events; the file holds {counts[0]} and {counts[1]} "
                f"(truncated or edited?)")
        return Recording(self.header, tuple(self.commands.values()), tuple(self.events))


def _check_agrees(line: _Line, time: datetime, session: str | None, state: dict[str, Any]) -> None:
    """The readable `time` and `session` must say what the event's own state says."""
    stamp = state.get("timestamp")
    if isinstance(stamp, dict):
        try:
            own = datetime.fromisoformat(str(stamp.get("_data_")))
        except ValueError:
            raise line.fail("the event's own timestamp is not an ISO 8601 time") from None
        if own != time:
            raise line.fail('"time" disagrees with the event\'s own timestamp')
    if "session_id" in state and state["session_id"] != session:
        raise line.fail('"session" disagrees with the event\'s own session_id')


def _read_v1(number: int, raw: dict[str, Any], rest: Iterable[tuple[int, str]]) -> Recording:
    reader = _ReaderV1(number, raw)
    for n, text in rest:
        reader.add(_Line(n, _object(n, text)))
    return reader.finish()


READERS: dict[int, Callable[[int, dict[str, Any], Iterable[tuple[int, str]]], Recording]] = {
    1: _read_v1,
}
