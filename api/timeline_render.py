"""The merged timeline for people: a plain table in the terminal with a column per session
(api.cli.output), a self-contained HTML page, and the story in a few lines (who won, who
bounced off whom, who pivoted where, what got done). The `planledger timeline` command and
the replays' (recordings, the demo, transcripts) show it alike."""

from collections.abc import Iterable, Sequence
from datetime import datetime
from html import escape

from planledger.api.cli import output
from planledger.projections.timeline import Entry, Timeline

TIME_WIDTH = len("00:00:00.000")
MIN_LANE_WIDTH = 44  # narrower lanes fold a bounce message into a column of words


def label(timeline: Timeline, session_id: str | None) -> str:
    lane = next((lane for lane in timeline.lanes if lane.session_id == session_id), None)
    return lane.label if lane else str(session_id)


def story(timeline: Timeline) -> list[str]:
    """Every bounce with its winner and the loser's pivot; then completions and progress."""
    entries, lines = timeline.entries, []
    for bounce in (e for e in entries if e.kind == "bounced"):
        won = [e for e in entries if e.kind == "claimed" and e.step_id == bounce.step_id
               and e.session_id == bounce.holder and e.position < bounce.position]
        if won:
            lines.append(f'winner: {label(timeline, bounce.holder)} ("{bounce.holder}") '
                         f"claimed {_titled(won[-1])}")
        lines.append(f"bounce: {label(timeline, bounce.session_id)} → {bounce.text}")
        pivot = next((e for e in entries if e.kind == "claimed" and e.position > bounce.position
                      and e.session_id == bounce.session_id), None)
        if pivot is not None:
            lines.append(f"pivot:  {label(timeline, pivot.session_id)} claimed {_titled(pivot)}")
    lines += [f"done:   {label(timeline, e.session_id)} completed {_titled(e)}"
              for e in entries if e.kind == "completed"]
    lines += [f"plan:   {p.rollup}" for p in timeline.progress]
    return lines


def _titled(entry: Entry) -> str:
    return f'step {entry.step_number} "{entry.step_title}"'


def clock(moment: datetime) -> str:
    """A moment on the timeline's clock, to the millisecond."""
    return f"{moment:%H:%M:%S}.{moment.microsecond // 1000:03d}"


def steps_named(timeline: Timeline) -> list[tuple[int, str, str]]:
    """(number, id, title) of every step the entries name, in plan order."""
    seen = {(e.step_number, e.step_id, e.step_title) for e in timeline.entries
            if e.step_number is not None and e.step_id and e.step_title is not None}
    return sorted((n, i, t) for n, i, t in seen if n is not None and i and t is not None)


def steps_table(steps: Sequence[tuple[int, str, str]]) -> None:
    """The steps a timeline names, by number, whole id and title (cut to fit)."""
    if steps:
        output.table(("step", "id", "title"), [(str(n), i, t) for n, i, t in steps],
                     "steps", cut=(2,))


def lanes_table(title: str, lanes: Sequence[str], rows: Iterable[tuple[datetime, int, str]],
                lane_word: str = "session") -> None:
    """Rows `(time, lane, text)` on one clock. In a terminal wide enough, a column per lane
    headed by its label in `lanes`, each row's text in its lane's column; otherwise, and
    into a pipe (one line a row, for grep), a column naming each row's lane. Texts fold
    onto the lines below to fit the width, never cut: they name ids."""
    limit = output.width()
    per_lane = len(output.GAP) + MIN_LANE_WIDTH
    if lanes and limit is not None and TIME_WIDTH + len(lanes) * per_lane <= limit:
        cells = []
        for at, lane, text in rows:
            texts = [""] * len(lanes)
            texts[lane] = text
            cells.append((clock(at), *texts))
        output.table(("time", *lanes), cells, title, fold=range(1, len(lanes) + 1))
    else:
        output.table(("time", lane_word, "what"),
                     [(clock(at), lanes[lane], text) for at, lane, text in rows], title,
                     fold=(2,))


def terminal(timeline: Timeline, title: str = "timeline") -> None:
    """The steps named, each lane's session, the entries (a column per lane while they
    fit), then the story."""
    steps_table(steps_named(timeline))
    lanes = timeline.lanes
    if lanes:
        output.table(("lane", "session"),
                     [(lane.label, lane.session_id or "") for lane in lanes], "lanes")
    day = timeline.entries[0].at.strftime("%Y-%m-%d %Z") if timeline.entries else ""
    column = {lane.session_id: i for i, lane in enumerate(lanes)}
    lanes_table(f"{title} {day}".strip(), [lane.label for lane in lanes],
                ((e.at, column[e.session_id], e.text) for e in timeline.entries))
    for line in story(timeline):
        output.line(line)


def html(timeline: Timeline, title: str = "planledger timeline") -> str:
    """A self-contained page: inline style, no scripts, nothing fetched."""
    heads = "".join(f"<th>{escape(lane.label)}<br><small>{escape(lane.session_id or '')}"
                    f"</small></th>" for lane in timeline.lanes)
    column = {lane.session_id: i for i, lane in enumerate(timeline.lanes)}
    rows = "".join(_row(entry, column[entry.session_id], len(timeline.lanes))
                   for entry in timeline.entries)
    summary = "".join(f"<li>{escape(line)}</li>" for line in story(timeline))
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8>"
            f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
            f"<h1>{escape(title)}</h1><ul class=story>{summary}</ul>"
            f"<table><thead><tr><th>time (UTC)</th>{heads}</tr></thead>"
            f"<tbody>{rows}</tbody></table></body></html>\n")


def _row(entry: Entry, column: int, lanes: int) -> str:
    cells = ["<td></td>"] * lanes
    cells[column] = (f'<td class="{entry.kind}" title="position {entry.position}">'
                     f"{escape(entry.text)}</td>")
    return f"<tr><td class=time>{escape(entry.at.isoformat())}</td>{''.join(cells)}</tr>"


_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #ddd;padding:4px 8px;
vertical-align:top;text-align:left}th{position:sticky;top:0;background:#f6f6f6}
td.time{white-space:nowrap;color:#777;font-family:monospace}
.claimed{color:#0a7d28;font-weight:600}.completed{color:#066;font-weight:600}
.bounced,.refused,.stale_fence{color:#b00020;font-weight:600}.ready_listed{color:#7a2a8a}
.released,.dropped{color:#a66b00}.session_started,.session_ended,.renewed{color:#888}
ul.story{background:#f6f6f6;padding:1em 2em}
"""
