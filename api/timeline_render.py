"""The merged timeline for people: a terminal table with a column per session (rich), a
self-contained HTML page, and the story in a few lines (who won, who bounced off whom,
who pivoted where, what got done). The `planledger timeline` command and the replays'
(recordings, the demo, transcripts) show it alike."""

from datetime import datetime
from html import escape

from rich.console import Console
from rich.table import Table
from rich.text import Text

from planledger.projections.timeline import Entry, Timeline

TIME_WIDTH = 16
MIN_LANE_WIDTH = 44  # narrower lanes wrap a bounce message into a column of words
STYLES = {"claimed": "bold green", "completed": "bold cyan", "bounced": "bold red",
          "refused": "red", "stale_fence": "red", "released": "yellow", "dropped": "yellow",
          "ready_listed": "magenta", "renewed": "dim green", "session_started": "dim",
          "session_ended": "dim"}


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


def _clock(moment: datetime) -> str:
    return f"{moment:%H:%M:%S}.{moment.microsecond // 1000:03d}"


def steps_named(timeline: Timeline) -> list[tuple[int, str, str]]:
    """(number, id, title) of every step the entries name, in plan order."""
    seen = {(e.step_number, e.step_id, e.step_title) for e in timeline.entries
            if e.step_number is not None and e.step_id and e.step_title is not None}
    return sorted((n, i, t) for n, i, t in seen if n is not None and i and t is not None)


def terminal(timeline: Timeline, console: Console, title: str = "timeline") -> None:
    """The steps named, the lanes side by side (one column each while they fit), then
    the story."""
    legend = Table(box=None, show_header=False, padding=(0, 1))
    for number, step_id, step_title in steps_named(timeline):
        legend.add_row(f"step {number}", step_id, step_title)
    console.print(legend)
    day = timeline.entries[0].at.strftime("%Y-%m-%d %Z") if timeline.entries else ""
    table = Table(title=f"{title} {day}".strip(), expand=True)
    table.add_column("time", no_wrap=True, style="dim")
    lanes = timeline.lanes
    by_column = TIME_WIDTH + len(lanes) * MIN_LANE_WIDTH <= console.width
    if by_column:
        for lane in lanes:
            table.add_column(lane.label if not (lane.name and lane.session_id)
                             else f"{lane.label}\n{lane.session_id}", ratio=1)
    else:
        table.add_column("session", no_wrap=True)
        table.add_column("what", ratio=1)
    column = {lane.session_id: i for i, lane in enumerate(lanes)}
    for entry in timeline.entries:
        text = Text(entry.text, style=STYLES.get(entry.kind, ""))
        if by_column:
            cells: list[str | Text] = [""] * len(lanes)
            cells[column[entry.session_id]] = text
            table.add_row(_clock(entry.at), *cells)
        else:
            table.add_row(_clock(entry.at), label(timeline, entry.session_id), text)
    console.print(table)
    for line in story(timeline):
        console.print(line, highlight=False)


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
