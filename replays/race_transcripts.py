"""The two-agent race as its agents' transcripts: what each agent of `planledger demo
--race` would have written had it been a Claude Code session calling planledger's MCP
tools, in Claude Code's transcript format (replays.transcripts), built from the log of
the run, so the transcripts and the recording tell one story on one clock.

The demo's agents are scripted threads, not models: their prose here is written from what
happened (what was ready, whom the claim bounced off, what was left), the tool answers are
the shapes planledger's MCP tools answer (session_start's carries the session's real token,
which the merged timeline masks), and a few calls to other tools stand for the work.
`write_example` writes the shipped example: the recording, both transcripts, and the merged
page (`planledger demo --race --example DIR`).
"""

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from planledger.api.identity import Identity
from planledger.api.runtime import Runtime
from planledger.ledger.domain import errors
from planledger.projections.timeline import TimelineModel
from planledger.projections.timeline_entries import Entry
from planledger.replays import merged_render
from planledger.replays.demo import RaceResult
from planledger.replays.fixture import CONSTRAINTS, PLAN, PLAN_TITLE
from planledger.replays.format import write_file
from planledger.replays.merge import merge
from planledger.replays.reading import read_file
from planledger.replays.recording import export
from planledger.replays.transcript_timeline import log_of_recording, read_transcripts

PROMPT = "pick up the next step of the plan"
SERVER = "mcp__planledger__"
CWD = "/home/dev/myapp"
MODEL = "claude-sonnet-4-5"
NAMESPACE = uuid.UUID("6f1c3a52-0b7e-4d1f-9a51-3c0e6d2b8a10")
MS = timedelta(milliseconds=1)


@dataclass(frozen=True)
class Steps:
    """The plan's steps as the agents see them: number and title by id, in order."""

    numbered: dict[str, tuple[int, str]]

    def ref(self, step_id: str) -> str:
        number, title = self.numbered[step_id]
        return f'step {number} "{title}"'


class _Writer:
    """One agent's transcript, line by line, in Claude Code's envelope."""

    def __init__(self, ledger_session: str, name: str) -> None:
        self.client_session = str(uuid.uuid5(NAMESPACE, ledger_session))
        self.name = name
        self.parent: str | None = None
        self.lines: list[dict[str, Any]] = []
        self.count = 0

    def _id(self, kind: str) -> str:
        self.count += 1
        return str(uuid.uuid5(NAMESPACE, f"{self.client_session}:{kind}:{self.count}"))

    def line(self, kind: str, at: datetime, message: dict[str, Any],
             **extra: Any) -> None:
        own = self._id(kind)
        self.lines.append({"parentUuid": self.parent, "isSidechain": False,
                           "userType": "external", "cwd": CWD, "sessionId": self.client_session,
                           "version": "demo", "gitBranch": "main", "type": kind,
                           "message": message, "uuid": own, "timestamp": _stamp(at), **extra})
        self.parent = own

    def prompt(self, at: datetime, text: str) -> None:
        self.line("user", at, {"role": "user", "content": text})

    def say(self, at: datetime, text: str, thinking: str | None = None) -> None:
        blocks: list[dict[str, Any]] = []
        if thinking:
            blocks.append({"type": "thinking", "thinking": thinking, "signature": "demo"})
        blocks.append({"type": "text", "text": text})
        self.line("assistant", at, {"role": "assistant", "model": MODEL, "content": blocks})

    def call(self, at: datetime, answered: datetime, tool: str, arguments: dict[str, Any],
             answer: str, is_error: bool = False) -> None:
        call_id = "toolu_" + self._id("call").replace("-", "")[:24]
        self.line("assistant", at, {"role": "assistant", "model": MODEL, "content": [
            {"type": "tool_use", "id": call_id, "name": tool, "input": arguments}]})
        self.line("user", answered, {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call_id, "is_error": is_error,
             "content": [{"type": "text", "text": answer}]}]})

    def text(self) -> str:
        return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in self.lines)


def _stamp(at: datetime) -> str:
    """As Claude Code writes times: UTC, milliseconds, `Z`."""
    moment = at.astimezone(UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}Z"


def _step_out(step_id: str, steps: Steps) -> dict[str, Any]:
    number, title = steps.numbered[step_id]
    return {"step_id": step_id, "plan": PLAN, "position": number - 1, "title": title,
            "status": "open", "claimable": True, "fence": 0}


def transcripts(race: RaceResult, entries: tuple[Entry, ...], identity: Identity,
                ) -> dict[str, str]:
    """Each agent's transcript (by agent name), from its session's entries in the log."""
    titles = {e.step_id: (e.step_number, e.step_title) for e in entries
              if e.step_id and e.step_number is not None and e.step_title is not None}
    steps = Steps({s: (n, t) for s, (n, t) in titles.items() if n is not None and t})
    completions = [e.position for e in entries if e.kind == "completed"]
    progress = _Progress(len(race.steps), len(race.steps) - len(completions), completions)
    return {agent.name: _agent(agent.name, agent.session_id,
                               [e for e in entries if e.session_id == agent.session_id],
                               steps, identity, progress)
            for agent in race.agents}


@dataclass(frozen=True)
class _Progress:
    """The plan's progress line as each completion left it (in log order, whichever
    agent's transcript is being written)."""

    total: int
    done_before: int
    completions: list[int]

    def line(self, position: int) -> str:
        done = self.done_before + sum(1 for p in self.completions if p <= position)
        return f"{done}/{self.total} done"


def _agent(name: str, session: str, entries: list[Entry], steps: Steps, identity: Identity,
           progress: "_Progress") -> str:
    writer = _Writer(session, name)
    bounced = False
    for entry, after in zip(entries, [*entries[1:], None], strict=True):
        at = entry.at
        if entry.kind == "session_started":
            writer.prompt(at - 40 * MS, PROMPT)
            answer = {"session_id": session, "name": name, "started_at": at.isoformat(),
                      "token": identity.token_for(session), "replayed": False, "note": None,
                      "briefing": f"{PLAN}: {PLAN_TITLE}. Constraints: "
                                  + "; ".join(CONSTRAINTS), "plans": []}
            writer.call(at - 2 * MS, at + 2 * MS, SERVER + "session_start", {"name": name},
                        json.dumps(answer, indent=2))
        elif entry.kind == "ready_listed":
            _listed(writer, entry, steps, bounced)
        elif entry.kind == "bounced":
            bounced = True
            _bounce(writer, entry, steps)
        elif entry.kind == "claimed":
            _claimed(writer, entry, session, after)
        elif entry.kind == "completed":
            _completed(writer, entry, steps, progress)
        elif entry.kind == "session_ended":
            answer = {"session_id": session, "released": []}
            writer.call(at - 2 * MS, at + 2 * MS, SERVER + "session_end", {},
                        json.dumps(answer, indent=2))
    return writer.text()


def _listed(writer: _Writer, entry: Entry, steps: Steps, again: bool) -> None:
    at = entry.at
    ready = [_step_out(s, steps) for s in entry.step_ids]
    answer = {"plan": PLAN, "ready": ready, "held": [], "blocked": []}
    writer.call(at - 2 * MS, at + 2 * MS, SERVER + "tasks_ready", {"plan": PLAN},
                json.dumps(answer, indent=2))
    if not entry.step_ids:
        writer.say(at + 3 * MS, "Nothing is ready for me; stopping here.")
        return
    first = steps.ref(entry.step_ids[0])
    if again:
        writer.say(at + 3 * MS, f"That leaves {first}. Let me claim that one.")
        return
    others = ", ".join(steps.ref(s) for s in entry.step_ids[1:])
    constraint = next(iter(CONSTRAINTS))
    writer.say(at + 3 * MS,
               f"{len(entry.step_ids)} steps are ready: {first}{' and ' if others else ''}"
               f"{others}. I'll take the older one, {first} — and there's a directly "
               f"relevant project constraint ({constraint}) to honour. Let me claim it.",
               thinking="The oldest ready step comes first unless there is a reason not to.")


def _bounce(writer: _Writer, entry: Entry, steps: Steps) -> None:
    assert entry.step_id is not None and entry.holder is not None
    at = entry.at
    bounce = errors.AlreadyClaimed(entry.step_id, entry.step_title or "", entry.holder,
                                   entry.fence or 0)
    writer.call(at - 2 * MS, at + 2 * MS, SERVER + "tasks_claim", {"id": entry.step_id},
                str(bounce), is_error=True)
    writer.say(at + 3 * MS, f"{steps.ref(entry.step_id)} is already being worked by "
               f'another session ("{entry.holder}"). I will not touch it; let me see what '
               "else is ready.")


def _claimed(writer: _Writer, entry: Entry, session: str, after: Entry | None) -> None:
    assert entry.step_id is not None
    at = entry.at
    answer = {"step_id": entry.step_id, "plan": PLAN, "title": entry.step_title,
              "holder": session, "fence": entry.fence,
              "expires_at": (at + timedelta(seconds=900)).isoformat(), "renewed": False,
              "took_over_from": None}
    writer.call(at - 2 * MS, at + 2 * MS, SERVER + "tasks_claim", {"id": entry.step_id},
                json.dumps(answer, indent=2))
    # The work, until the next thing the log holds of this session.
    until = after.at - 4 * MS if after is not None else at + 20 * MS
    start = at + 3 * MS
    span = max(until - start, 4 * MS) / (len(_WORK) + 1)
    writer.say(start, f'Claimed step {entry.step_number}: "{entry.step_title}". Working on '
               "it now.")
    for n, (tool, arguments) in enumerate(_WORK, 1):
        writer.call(start + span * n, start + span * n + span / 8, tool, arguments, "ok")


_WORK = (("Read", {"file_path": f"{CWD}/internal/auth/refresh.go"}),
         ("Edit", {"file_path": f"{CWD}/internal/auth/refresh.go", "old_string": "…",
                   "new_string": "…"}),
         ("Bash", {"command": "go test ./internal/auth/..."}))


def _completed(writer: _Writer, entry: Entry, steps: Steps, progress: _Progress) -> None:
    assert entry.step_id is not None
    at = entry.at
    answer = {"step_id": entry.step_id, "status": "done", "plan": PLAN,
              "progress": progress.line(entry.position)}
    writer.call(at - 2 * MS, at + 2 * MS, SERVER + "tasks_complete",
                {"id": entry.step_id, "fence": entry.fence}, json.dumps(answer, indent=2))
    number, title = steps.numbered[entry.step_id]
    writer.say(at + 3 * MS, f'Done. Step {number} of the {PLAN} plan — "{title}" — is '
               f"complete, and the plan is now {progress.line(entry.position)}.")


def example_files(directory: Path) -> Iterator[Path]:
    """The shipped example's files, in the order `write_example` writes them."""
    yield from (directory / "recording.jsonl", directory / "agent-a.jsonl",
                directory / "agent-b.jsonl", directory / "timeline.html")


def write_example(runtime: Runtime, race: RaceResult, directory: Path) -> list[Path]:
    """The recording of the run, both agents' transcripts, and the page merging them (as
    `planledger replay timeline --transcript … recording.jsonl --html` prints it)."""
    directory.mkdir(parents=True, exist_ok=True)
    recording, a, b, page = example_files(directory)
    write_file(export(runtime.store, exported_at=datetime.now(UTC)), recording)
    agents = tuple(agent.session_id for agent in race.agents)
    entries = TimelineModel(runtime.store).timeline(sessions=agents).entries
    written = transcripts(race, entries, Identity(runtime.secret))
    a.write_text(written["agent A"], encoding="utf-8")
    b.write_text(written["agent B"], encoding="utf-8")
    read = read_transcripts([a, b])
    sessions = list(agents)
    merged = merge(read, log_of_recording(read_file(recording), sessions))
    page.write_text(merged_render.html(merged), encoding="utf-8")
    return [recording, a, b, page]
