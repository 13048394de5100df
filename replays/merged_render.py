"""The merged figure for people: transcripts and the log on one clock, in the terminal
(plain columns, api.cli.output) or as one self-contained HTML page (inline style, no
script, nothing fetched)."""

from html import escape

from planledger.api.cli import output
from planledger.api.timeline_render import clock, lanes_table, steps_table
from planledger.replays.merge import MergedLane, MergedTimeline, Row

NO_FINDINGS = ("<li>none: every answer the agents were given is in the log, and every event "
               "of their sessions is in their transcripts</li>")


def _cell_text(row: Row) -> str:
    """What a row reads as: the prompt marked as such, ledger-only events marked."""
    if row.kind == "prompt":
        return f"> {row.text}"
    if row.origin == "ledger":
        return f"[log] {row.text}"
    return row.text


def terminal(merged: MergedTimeline, title: str = "timeline") -> None:
    """Steps named, each lane's sessions, lanes side by side (while they fit), then
    findings and the story."""
    steps_table(merged.steps)
    output.table(("lane", "client session", "ledger sessions"),
                 [(lane.label, lane.client_session or "",
                   ", ".join(lane.ledger_sessions) or "not bound") for lane in merged.lanes],
                 "lanes")
    day = merged.rows[0].at.strftime("%Y-%m-%d %Z") if merged.rows else ""
    lanes_table(f"{title} {day}".strip(), [lane.label for lane in merged.lanes],
                ((row.at, row.lane, _cell_text(row)) for row in merged.rows), lane_word="lane")
    for finding in merged.findings:
        output.line(f"finding ({finding.kind}): {finding.text}")
    for line in merged.story:
        output.line(line)


def html(merged: MergedTimeline,
         title: str = "planledger: the agents' transcripts and the ledger on one clock") -> str:
    """A page in the spirit of the seed's figure: a pane per agent headed by its session
    ids, one clock down the side, the bounce highlighted, findings and the story below."""
    heads = "".join(f"<th class=pane>{_pane_head(lane)}</th>" for lane in merged.lanes)
    rows = "".join(_row(row, len(merged.lanes)) for row in merged.rows)
    legend = "".join(f"<li><b>step {n}</b> {escape(t)} <small>{escape(i)}</small></li>"
                     for n, i, t in merged.steps)
    findings = "".join(f"<li class={escape(f.kind)}><b>{escape(f.kind)}</b> "
                       f"{escape(f.text)}</li>" for f in merged.findings)
    story = "".join(f"<li>{escape(line)}</li>" for line in merged.story)
    day = merged.rows[0].at.strftime("%Y-%m-%d") if merged.rows else ""
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8>"
            f"<meta name=viewport content='width=device-width,initial-scale=1'>"
            f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
            f"<h1>{escape(title)}</h1>"
            f"<p class=sub>{len(merged.lanes)} agents' transcripts merged with the ledger's "
            f"log on one clock (the ledger's, UTC {escape(day)}); what the log holds is "
            f"ordered as it was written, which is what decided every race.</p>"
            f"<ul class=story>{story}</ul><ul class=steps>{legend}</ul>"
            f"<table><thead><tr><th class=clock>time</th>{heads}</tr></thead>"
            f"<tbody>{rows}</tbody></table>"
            f"<h2>Findings</h2><ul class=findings>{findings or NO_FINDINGS}</ul>"
            f"<p class=sub>{_skipped(merged.lanes)}</p></body></html>\n")


def _pane_head(lane: MergedLane) -> str:
    ids = "".join(f"<div class=id>ledger session {escape(s)}</div>"
                  for s in lane.ledger_sessions) or "<div class=id>not bound to a session</div>"
    client = (f"<div class=id>{escape(lane.format)} session {escape(lane.client_session)}</div>"
              if lane.client_session else "")
    offset = lane.clock.offset
    clock = (f"<div class=id>clock shifted {offset:+.3f} s</div>"
             if lane.clock.applied and offset is not None else "")
    return (f"<div class=agent>{escape(lane.label)}</div>{client}{ids}{clock}"
            f"<div class=id>{escape(lane.transcript)}</div>")


def _row(row: Row, lanes: int) -> str:
    cells = ["<td></td>"] * lanes
    cells[row.lane] = f"<td class='{escape(row.kind)} {row.origin}'>{_body(row)}</td>"
    marked = " class=bounce" if row.kind == "bounced" else ""
    return (f"<tr{marked}><td class=clock>{escape(clock(row.at))}</td>"
            f"{''.join(cells)}</tr>")


def _body(row: Row) -> str:
    text = escape(_cell_text(row))
    if row.ledger and row.origin == "both":
        text += f"<div class=log>log #{row.position}: {escape(row.ledger)}</div>"
    if row.full:
        return f"<details><summary>{text}</summary><pre>{escape(row.full)}</pre></details>"
    return text


def _skipped(lanes: tuple[MergedLane, ...]) -> str:
    parts = []
    for lane in lanes:
        counts = ", ".join(f"{n} {what}" for what, n in lane.skipped.items()) or "nothing"
        parts.append(f"{escape(lane.transcript)} ({escape(lane.format)}): skipped {escape(counts)}")
    return "Read from the transcripts: prompts, prose, tool calls and their answers. " + \
        "; ".join(parts) + "."


_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#1d1d1f;
padding:0 1em}h1{font-size:1.4em}.sub{color:#666}
table{border-collapse:collapse;width:100%;table-layout:fixed}
th,td{padding:6px 10px;vertical-align:top;text-align:left;border-bottom:1px solid #eee}
th.clock,td.clock{width:7.5em;font-family:ui-monospace,monospace;color:#888;white-space:nowrap}
th.pane{background:#f4f4f6;position:sticky;top:0;border-bottom:2px solid #ccc}
.agent{font-weight:700;font-size:1.1em}.id{font:11px ui-monospace,monospace;color:#666}
td.prompt{font-weight:600}td.prompt,td.prose{font-family:Georgia,serif}
td.tool{color:#888;font-size:.9em}td.call{font-style:italic}
td.claimed,td.renewed{color:#0a7d28;font-family:ui-monospace,monospace}
td.completed{color:#066;font-family:ui-monospace,monospace;font-weight:600}
td.ready_listed{color:#7a2a8a;font-family:ui-monospace,monospace}
td.session_started,td.session_ended,td.released{color:#888;font-family:ui-monospace,monospace}
td.refused,td.stale_fence{color:#b00020;font-family:ui-monospace,monospace}
tr.bounce td{background:#fde8ea}td.bounced{color:#b00020;font-weight:700;
font-family:ui-monospace,monospace;border-left:4px solid #b00020}
td.ledger{opacity:.85}.log{font:11px ui-monospace,monospace;color:#777;margin-top:2px}
details summary{cursor:pointer}pre{white-space:pre-wrap;font-size:12px;background:#fafafa;
padding:6px}ul.story{background:#f4f4f6;padding:1em 2em;font-family:ui-monospace,monospace}
ul.steps{columns:2;font-size:.9em;color:#444}ul.findings li{margin:.3em 0}
"""
