"""`planledger replay …` (export, import, timeline, run, explore) and `planledger demo`.

Exit codes: 0 done; 1 a refused or unreadable recording, a determinism failure, or a
ledger refusal (e.g. the demo's plan already exists in `--db`).
"""

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from planledger.api import timeline_render as render
from planledger.api.cli import output
from planledger.api.cli.grammar import Values
from planledger.api.runtime import open_runtime
from planledger.infra.git_history import GitError, repository
from planledger.ledger.domain.errors import LedgerError
from planledger.projections.timeline import Timeline, TimelineModel
from planledger.replays import demo as demo_run
from planledger.replays import merged_render
from planledger.replays import race_transcripts as race_example
from planledger.replays.explore import explore
from planledger.replays.fixture import PLAN, seed_auth_refresh
from planledger.replays.format import Recording, RecordingError, Selection, write, write_file
from planledger.replays.reading import read_file
from planledger.replays.recording import decode, export, import_into
from planledger.replays.rerun import rerun
from planledger.replays.timeline_commits import commits_of, with_commits
from planledger.replays.transcript_timeline import merged
from planledger.replays.transcripts import TranscriptError

EXIT_ERROR = 1
EXAMPLE_THINK = 0.3  # seconds between an example agent's calls: room for its prose
# The seed's race as `planledger demo --race` recorded it, shipped inside the package.
SHIPPED_RACE = Path(__file__).resolve().parent / "two-agents-race.jsonl"


@contextmanager
def _refusing() -> Iterator[None]:
    """A refused recording or ledger call becomes its message on stderr and exit 1."""
    try:
        yield
    except (RecordingError, LedgerError, TranscriptError, GitError, ValueError) as error:
        output.line(str(error), stderr=True)
        raise SystemExit(EXIT_ERROR) from None


def _recording(v: Values) -> Path:
    """The recording the call names; by default the shipped two-agent race."""
    return Path(v["recording"]) if v["recording"] is not None else SHIPPED_RACE


def _when(text: str | None) -> datetime | None:
    if text is None:
        return None
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def export_command(v: Values) -> None:
    with _refusing():
        selection = Selection(v["plan"], tuple(v["sessions"] or ()), _when(v["since"]),
                              _when(v["until"]))
        file = v["file"]
        runtime = open_runtime(v["db"])
        try:
            recording = export(runtime.store, selection, exported_at=datetime.now(UTC))
        finally:
            runtime.close()
        if file == "-":
            write(recording, sys.stdout)
        else:
            write_file(recording, Path(file))
        output.line(f"recorded {recording.header.events} events ({recording.header.commands} "
                    f"commands){' (part of the log)' * recording.header.partial} to {file}",
                    stderr=True)


def import_command(v: Values) -> None:
    with _refusing():
        recording = read_file(Path(v["file"]))
        runtime = open_runtime(v["db"])
        try:
            count = import_into(runtime.store, recording)
        finally:
            runtime.close()
        output.line(f"imported {count} events into {runtime.db}")


def _timeline(recording: Recording, plan: str | None, sessions: tuple[str, ...]) -> Timeline:
    """The recording's timeline; by default, of the part of the log it was exported for."""
    model = TimelineModel()
    for position, event in decode(recording):
        model.apply(position, event)
    chosen = recording.header.selection
    return model.timeline(plan or chosen.plan, sessions or chosen.sessions,
                          chosen.since, chosen.until)


def timeline_command(v: Values) -> None:
    file = Path(v["recording"]) if v["recording"] is not None else None
    as_json, as_html = v["json"], v["html"]
    if v["transcripts"]:
        if v["repo"] is not None:
            output.line("--repo shows commits on a recording's timeline; it is not read "
                        "with --transcript", stderr=True)
            raise SystemExit(EXIT_ERROR)
        with _refusing():
            figure = merged([Path(t) for t in v["transcripts"]], file, v["db"], v["url"],
                            v["clock_threshold"], v["show_secrets"])
        if as_json:
            output.echo(json.dumps(figure.to_dict(), indent=2, ensure_ascii=False))
        elif as_html:
            output.write(merged_render.html(figure))
        else:
            merged_render.terminal(figure, title="transcripts and the log")
        return
    if file is None:
        output.line("name a recording (or --transcript files with a recording, --db or --url)",
                    stderr=True)
        raise SystemExit(EXIT_ERROR)
    with _refusing():
        timeline = _timeline(read_file(file), v["plan"], tuple(v["sessions"] or ()))
        if v["repo"] is not None:
            timeline = with_commits(timeline, commits_of(repository(Path(v["repo"]))))
    if as_json:
        output.echo(json.dumps(timeline.to_dict(), indent=2, ensure_ascii=False))
    elif as_html:
        output.write(render.html(timeline, f"planledger timeline: {file.name}"))
    else:
        render.terminal(timeline, title=file.name)


def run_command(v: Values) -> None:
    with _refusing():
        report = rerun(read_file(_recording(v)))
    output.text(report.describe())
    if not report.identical:
        raise SystemExit(EXIT_ERROR)


def explore_command(v: Values) -> None:
    with _refusing():
        report = explore(read_file(_recording(v)), limit=v["limit"], samples=v["samples"],
                         seed=v["seed"])
    if v["json"]:
        output.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        output.text(report.describe())


def demo(v: Values) -> None:
    if v["audit"] is not None:
        audit_demo(v)
        return
    race, record, example = v["race"], v["record"], v["example"]
    record = Path(record) if record is not None else None
    example = Path(example) if example is not None else None
    with _refusing():
        if example is not None and not race:
            raise ValueError("--example needs --race")
        runtime = open_runtime(v["db"])
        try:
            if race:
                result = demo_run.race(runtime, think=EXAMPLE_THINK if example else 0.0)
                agents = tuple(a.session_id for a in result.agents)
                timeline = TimelineModel(runtime.store).timeline(sessions=agents)
                if example is not None:
                    race_example.write_example(runtime, result, example)
            else:
                seed_auth_refresh(runtime.ledger, race=False)
                timeline = TimelineModel(runtime.store).timeline(plan=PLAN)
            if record is not None:
                write_file(export(runtime.store, exported_at=datetime.now(UTC)), record)
        finally:
            runtime.close()
    if v["json"]:
        output.echo(json.dumps(timeline.to_dict(), indent=2, ensure_ascii=False))
        return
    render.terminal(timeline, title="two agents, one step" if race else PLAN)
    if record is not None:
        output.line(f"recorded to {record}: `planledger replay run {record}` re-executes it")
    if not race:
        output.line("`planledger demo --race`: two agents race for step 5")


def audit_demo(v: Values) -> None:
    """`demo --audit DIR`: the example made, then audited; the exit code is the audit's."""
    from planledger.api.cli.audit_git import audit_git
    from planledger.replays.git_audit_demo import write_story
    from planledger.replays.verbs import CLOCK_BOUND

    if v["race"] or v["record"] or v["example"]:
        output.line("--audit makes its own store: it takes no --race, --record or --example",
                    stderr=True)
        raise SystemExit(EXIT_ERROR)
    folder = Path(v["audit"])
    with _refusing():
        story = write_story(folder)
    told = v["json"]  # (then stdout is the audit's JSON alone)
    output.line(f"made {story.repo} (agents A and B, plan auth) and its store {story.db}",
                stderr=told)
    output.line(f"$ planledger audit git --repo {story.repo} --db {story.db}", stderr=told)
    raise SystemExit(audit_git({"db": str(story.db), "url": None, "token": None,
                                "clock_bound": CLOCK_BOUND, "repo": str(story.repo),
                                "since": None, "json": v["json"]}))
