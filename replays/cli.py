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
from typing import Annotated

import typer
from rich.console import Console

from planledger.api import timeline_render as render
from planledger.api.cli.common import DbOption, JsonOption, UrlOption
from planledger.api.runtime import open_runtime
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
from planledger.replays.transcript_timeline import merged
from planledger.replays.transcripts import TranscriptError

app = typer.Typer(help="Recordings of the log: export, import, timeline, re-execute, explore.",
                  no_args_is_help=True)
console = Console()
EXIT_ERROR = 1
EXAMPLE_THINK = 0.3  # seconds between an example agent's calls: room for its prose

FileArg = Annotated[Path, typer.Argument(help="A recording (JSON Lines, see replays/README.md).",
                                         show_default=False)]
PlanOption = Annotated[str | None, typer.Option("--plan", help="Only this plan.")]
SessionsOption = Annotated[list[str] | None, typer.Option(
    "--session", help="Only this session (repeat for several).", show_default=False)]
SinceOption = Annotated[str | None, typer.Option(
    "--since", help="From this time (ISO 8601; UTC unless it says otherwise).")]
UntilOption = Annotated[str | None, typer.Option("--until", help="Up to this time (ISO 8601).")]
# The seed's race as `planledger demo --race` recorded it, shipped inside the package.
SHIPPED_RACE = Path(__file__).resolve().parent / "two-agents-race.jsonl"
RecordingArg = Annotated[Path | None, typer.Argument(
    help="A recording (JSON Lines, see replays/README.md); default: the shipped two-agent "
    "race.", show_default=False)]


@contextmanager
def _refusing() -> Iterator[None]:
    """A refused recording or ledger call becomes its message on stderr and exit 1."""
    try:
        yield
    except (RecordingError, LedgerError, TranscriptError, ValueError) as error:
        typer.echo(str(error), err=True)
        raise typer.Exit(EXIT_ERROR) from None


def _when(text: str | None) -> datetime | None:
    if text is None:
        return None
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@app.command("export")
def export_command(
    file: Annotated[str, typer.Argument(help="Where to write the recording ('-': stdout).")],
    db: DbOption = None, plan: PlanOption = None, session: SessionsOption = None,
    since: SinceOption = None, until: UntilOption = None,
) -> None:
    """Export the log (all of it, a plan, some sessions, a time window) to a recording."""
    with _refusing():
        selection = Selection(plan, tuple(session or ()), _when(since), _when(until))
        runtime = open_runtime(db)
        try:
            recording = export(runtime.store, selection, exported_at=datetime.now(UTC))
        finally:
            runtime.close()
        if file == "-":
            write(recording, sys.stdout)
        else:
            write_file(recording, Path(file))
        typer.echo(f"recorded {recording.header.events} events ({recording.header.commands} "
                   f"commands){' (part of the log)' * recording.header.partial} to {file}",
                   err=True)


@app.command("import")
def import_command(file: FileArg, db: DbOption = None) -> None:
    """Import a recording into a fresh (empty) store: all of it, or nothing."""
    with _refusing():
        recording = read_file(file)
        runtime = open_runtime(db)
        try:
            count = import_into(runtime.store, recording)
        finally:
            runtime.close()
        typer.echo(f"imported {count} events into {runtime.db}")


def _timeline(recording: Recording, plan: str | None, sessions: tuple[str, ...]) -> Timeline:
    """The recording's timeline; by default, of the part of the log it was exported for."""
    model = TimelineModel()
    for position, event in decode(recording):
        model.apply(position, event)
    chosen = recording.header.selection
    return model.timeline(plan or chosen.plan, sessions or chosen.sessions,
                          chosen.since, chosen.until)


TranscriptsOption = Annotated[list[Path] | None, typer.Option(
    "--transcript", help="An agent's transcript (Claude Code JSONL or a Codex CLI rollout; "
    "repeat for each agent): merged with its sessions' events from RECORDING, --db or --url.",
    show_default=False)]


@app.command("timeline")
def timeline_command(
    file: Annotated[Path | None, typer.Argument(
        help="A recording (JSON Lines, see replays/README.md).", show_default=False)] = None,
    plan: PlanOption = None, session: SessionsOption = None,
    as_json: JsonOption = False,
    as_html: Annotated[bool, typer.Option("--html", help="Print a self-contained HTML page.")]
    = False,
    transcript: TranscriptsOption = None, db: DbOption = None, url: UrlOption = None,
    clock_threshold: Annotated[float, typer.Option(
        "--clock-threshold", help="Seconds a transcript's clock may differ from the ledger's "
        "before the offset is reported and applied.")] = 1.0,
    show_secrets: Annotated[bool, typer.Option(
        "--show-secrets", help="Copy tokens found in transcripts as they are (masked by "
        "default).")] = False,
) -> None:
    """The merged timeline: one clock, a lane per session, bounces naming the holder.
    With --transcript: the agents' own transcripts merged with the ledger's events."""
    if transcript:
        with _refusing():
            figure = merged(transcript, file, db, url, clock_threshold, show_secrets)
        if as_json:
            typer.echo(json.dumps(figure.to_dict(), indent=2, ensure_ascii=False))
        elif as_html:
            typer.echo(merged_render.html(figure), nl=False)
        else:
            merged_render.terminal(figure, console, title="transcripts and the log")
        return
    if file is None:
        typer.echo("name a recording (or --transcript files with a recording, --db or --url)",
                   err=True)
        raise typer.Exit(EXIT_ERROR)
    with _refusing():
        timeline = _timeline(read_file(file), plan, tuple(session or ()))
    if as_json:
        typer.echo(json.dumps(timeline.to_dict(), indent=2, ensure_ascii=False))
    elif as_html:
        typer.echo(render.html(timeline, f"planledger timeline: {file.name}"), nl=False)
    else:
        render.terminal(timeline, console, title=file.name)


@app.command("run")
def run_command(file: RecordingArg = None) -> None:
    """Re-execute the recorded commands (virtual clock, recorded ids) and check the events
    come out byte for byte the same; exit 1 naming the first event that differs."""
    with _refusing():
        report = rerun(read_file(file or SHIPPED_RACE))
    typer.echo(report.describe())
    if not report.identical:
        raise typer.Exit(EXIT_ERROR)


@app.command("explore")
def explore_command(
    file: RecordingArg = None, as_json: JsonOption = False,
    limit: Annotated[int, typer.Option(help="Try every interleaving up to this many.")] = 1000,
    samples: Annotated[int, typer.Option(help="Otherwise, draw this many.")] = 200,
    seed: Annotated[int, typer.Option(help="Seed of the draw.")] = 0,
) -> None:
    """What if the sessions had interleaved otherwise? Each session keeps its own order;
    prints the distinct outcomes and how many interleavings lead to each."""
    with _refusing():
        report = explore(read_file(file or SHIPPED_RACE), limit=limit, samples=samples,
                         seed=seed)
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        typer.echo(report.describe())


def demo(
    race: Annotated[bool, typer.Option(
        "--race", help="Step 6 waits on 4, so 5 and 6 are both claimable: two agents race.")]
    = False,
    db: Annotated[str, typer.Option(
        "--db", help="Where to seed (an SQLite path, 'memory' or a postgresql:// URL).")]
    = "memory",
    record: Annotated[Path | None, typer.Option(
        "--record", help="Write the log to this recording file.", show_default=False)] = None,
    as_json: JsonOption = False,
    example: Annotated[Path | None, typer.Option(
        "--example", help="With --race: write the run's recording, both agents' transcripts "
        "(Claude Code format) and the merged HTML page into this folder.",
        show_default=False)] = None,
) -> None:
    """Seed the seed's plan auth-refresh (steps 1-4 done); with --race, two agents on real
    threads race for step 5: one wins, the other bounces naming it and takes step 6."""
    with _refusing():
        if example is not None and not race:
            raise ValueError("--example needs --race")
        runtime = open_runtime(db)
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
    if as_json:
        typer.echo(json.dumps(timeline.to_dict(), indent=2, ensure_ascii=False))
        return
    render.terminal(timeline, console, title="two agents, one step" if race else PLAN)
    if record is not None:
        console.print(f"recorded to {record}: `planledger replay run {record}` re-executes it")
    if not race:
        console.print("`planledger demo --race`: two agents race for step 5", highlight=False)
