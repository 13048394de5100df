"""`planledger replay timeline --transcript A.jsonl --transcript B.jsonl [RECORDING | --db |
--url]`: read the transcripts, find their ledger sessions, fetch those sessions' events
from a recording, a store or a running server, and merge (replays.merge)."""

from collections.abc import Sequence
from pathlib import Path

from planledger.api.cli.common import open_client
from planledger.api.client import Client
from planledger.projections.timeline import TimelineModel
from planledger.replays.format import Recording
from planledger.replays.merge import LedgerLog, MergedTimeline, bound_sessions, merge
from planledger.replays.reading import read_file
from planledger.replays.recording import decode
from planledger.replays.transcripts import Transcript, TranscriptError, read_transcript

MAX_TRANSCRIPTS = 16


def read_transcripts(paths: Sequence[Path], reveal: bool = False) -> list[Transcript]:
    if len(paths) > MAX_TRANSCRIPTS:
        raise TranscriptError(f"{len(paths)} transcripts: at most {MAX_TRANSCRIPTS} at once")
    return [read_transcript(path, reveal) for path in paths]


def sessions_of(transcripts: list[Transcript]) -> list[str]:
    return list(dict.fromkeys(s for t in transcripts for s in bound_sessions(t)))


def log_of_recording(recording: Recording, sessions: list[str]) -> LedgerLog:
    model = TimelineModel()
    for position, event in decode(recording):
        model.apply(position, event)
    timeline = model.timeline(sessions=tuple(sessions)) if sessions else None
    if timeline is None:
        return LedgerLog((), ())
    return LedgerLog(timeline.lanes, timeline.entries, tuple(p.rollup for p in timeline.progress))


def log_of_client(client: Client, sessions: list[str]) -> LedgerLog:
    if not sessions:
        return LedgerLog((), ())
    answer = client.timeline(None, sessions)
    return LedgerLog(tuple(answer.lanes), tuple(answer.entries),
                     tuple(p.rollup for p in answer.progress))


def merged(transcript_paths: Sequence[Path], recording: Path | None, db: str | None,
           url: str | None, clock_threshold: float, reveal: bool) -> MergedTimeline:
    """The merged figure; raises TranscriptError, RecordingError or a client error."""
    transcripts = read_transcripts(transcript_paths, reveal)
    sessions = sessions_of(transcripts)
    if recording is not None:
        log = log_of_recording(read_file(recording), sessions)
    else:
        with open_client(db, url) as client:  # its errors: a message and exit 1
            log = log_of_client(client, sessions)
    return merge(transcripts, log, clock_threshold)
