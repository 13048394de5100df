"""Re-execution: a recording's commands, in their recorded order and at their recorded
times, run against a fresh in-memory ledger with a virtual clock and the recorded ids.
The events appended must be the recorded ones byte for byte (stream, version, topic and
stored state); the first difference is reported as a determinism failure.
"""

import json
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from eventsourcing.persistence import StoredEvent

from planledger.api.runtime import Runtime, open_runtime
from planledger.ledger.chain import HASH_KEY
from planledger.ledger.domain.errors import LedgerError
from planledger.ledger.notification_log import decoder
from planledger.ledger.ports import Clock, IdGenerator
from planledger.projections.log import page_after
from planledger.replays.derive import execute
from planledger.replays.format import CommandRecord, EventRecord, Recording, RecordingError
from planledger.replays.recording import commands_of

MAX_EVENTS_PER_COMMAND = 1_000_000  # a plan created with all its steps is one command


class VirtualClock(Clock):
    """Stands at whatever time the replayer sets: each command's recorded time."""

    def __init__(self) -> None:
        self.at = datetime.fromisoformat("1970-01-01T00:00:00+00:00")

    def now(self) -> datetime:
        return self.at


class RecordedIds(IdGenerator):
    """Hands out the ids the command being replayed drew when it was recorded."""

    def __init__(self) -> None:
        self._queue: deque[str] = deque()

    def load(self, ids: Iterable[str]) -> None:
        self._queue = deque(ids)

    def new_id(self) -> str:
        if not self._queue:
            raise RecordingError("the command drew more new ids than it did when recorded")
        return self._queue.popleft()


@dataclass(frozen=True)
class Produced:
    """An event the re-executed command appended, as stored."""

    stream: str
    version: int
    topic: str
    state: bytes

    @classmethod
    def of(cls, recorded: EventRecord) -> "Produced":
        return cls(recorded.stream, recorded.version, recorded.topic, recorded.state_bytes())


class Replayer:
    """A fresh ledger that runs recorded commands one by one and returns what each
    appended, with the refusal (or failure) it met, if any."""

    def __init__(self, sealed: bool = True) -> None:
        self.clock, self.ids = VirtualClock(), RecordedIds()
        self.runtime: Runtime = open_runtime("memory", clock=self.clock, ids=self.ids)
        # A recording made before tamper evidence (ledger.chain) holds unsealed events.
        self.runtime.store.sealing = sealed
        self.position = 0

    def run(self, command: CommandRecord) -> tuple[list[Produced], str | None]:
        self.clock.at = command.at
        self.ids.load(command.ids)
        refusal = None
        try:
            execute(self.runtime.ledger, command)
        except LedgerError as error:
            refusal = str(error)
        except Exception as error:  # a crash is a difference too: report it, do not die
            refusal = f"{type(error).__name__}: {error}"
        notes = page_after(self.runtime.store, self.position, limit=MAX_EVENTS_PER_COMMAND)
        if notes:
            self.position = notes[-1].id
        return [Produced(str(n.originator_id), n.originator_version, n.topic, n.state)
                for n in notes], refusal

    def decode(self, event: Produced) -> object:
        return decoder(self.runtime.store)(
            StoredEvent(event.stream, event.version, event.topic, event.state))

    def close(self) -> None:
        self.runtime.close()


@dataclass(frozen=True)
class Mismatch:
    """The first event that came out different; `expected` None: an event the recording
    lacks; `got` None: the re-executed command did not append it."""

    number: int  # 1-based, among the recording's events
    total: int
    command: CommandRecord
    expected: EventRecord | None
    got: Produced | None
    refusal: str | None

    def describe(self) -> str:
        where = self.expected or self.got
        assert where is not None
        place = (f"position {self.expected.position}, " if self.expected else "") + \
            f"stream {where.stream}, version {where.version}"
        args = ", ".join(f"{k}={v!r}" for k, v in self.command.args.items() if k != "steps")
        lines = [f"determinism failure at event {self.number} of {self.total} ({place})",
                 f"  caused by command {self.command.seq}: {self.command.name}({args}) "
                 f"at {self.command.at.isoformat()}",
                 f"  expected: {_show(Produced.of(self.expected)) if self.expected else '(none)'}",
                 f"  got:      {_show(self.got) if self.got else '(nothing appended)'}"]
        if self.expected and self.got:
            lines.append(f"  differs in: {_differences(Produced.of(self.expected), self.got)}")
        if self.refusal:
            lines.append(f"  the command was refused: {self.refusal}")
        return "\n".join(lines)


def _show(event: Produced) -> str:
    return f"{event.topic.rsplit(':', 1)[-1]} {event.state.decode('utf-8')}"


def _differences(expected: Produced, got: Produced) -> str:
    if expected.topic != got.topic:
        return "the event type"
    want, have = json.loads(expected.state), json.loads(got.state)
    keys = [k for k in dict.fromkeys([*want, *have]) if want.get(k) != have.get(k)]
    return ", ".join(f"{k} (expected {json.dumps(want.get(k))}, got {json.dumps(have.get(k))})"
                     for k in keys) or "the bytes of the state (same values)"


@dataclass(frozen=True)
class RunReport:
    commands: int
    events: int
    refused: int  # commands refused when re-run (as they were when recorded)
    mismatch: Mismatch | None

    @property
    def identical(self) -> bool:
        return self.mismatch is None

    def describe(self) -> str:
        if self.mismatch is not None:
            return self.mismatch.describe()
        return (f"identical: {self.commands} commands re-executed, {self.events} events "
                f"equal byte for byte ({self.refused} refusals, as recorded)")


def is_sealed(recording: Recording) -> bool:
    """Whether the recording's events carry the hash chain (see ledger.chain)."""
    return any(HASH_KEY in e.state for e in recording.events[:1])


def rerun(recording: Recording) -> RunReport:
    """Re-execute every command of the recording and compare; stops at the first
    difference, since everything after it follows from it."""
    replayer = Replayer(sealed=is_sealed(recording))
    numbers = {e.position: i for i, e in enumerate(recording.events, 1)}
    total, compared, refused = len(recording.events), 0, 0
    try:
        for command, expected in commands_of(recording):
            got, refusal = replayer.run(command)
            refused += refusal is not None
            for i in range(max(len(expected), len(got))):
                want = expected[i] if i < len(expected) else None
                have = got[i] if i < len(got) else None
                if want is None or have is None or Produced.of(want) != have:
                    number = numbers[want.position] if want else compared + 1
                    return RunReport(command.seq, compared, refused,
                                     Mismatch(number, total, command, want, have, refusal))
                compared += 1
        return RunReport(len(recording.commands), compared, refused, None)
    finally:
        replayer.close()
