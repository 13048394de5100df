"""The seed's figure from transcripts: two agents' Claude Code transcripts (or Codex CLI
rollouts) merged with the ledger's events of their sessions on one clock; disagreements
between what the agents were told and what the log holds are findings."""

import json
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from planledger.api.runtime import open_runtime
from planledger.main import run as app
from planledger.replays.demo import race
from planledger.replays.merge import MergedTimeline, merge
from planledger.replays.race_transcripts import write_example
from planledger.replays.reading import read_file
from planledger.replays.transcript_timeline import log_of_recording, read_transcripts, sessions_of
from planledger.replays.transcripts import read_transcript
from tests.support.cli_runner import CliRunner
from tests.support.live_server import live_server

runner = CliRunner()
SHIPPED = Path("replays/two-agents-race")


class Race:
    """One run of the demo's race on an SQLite store, written as the shipped example is."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.db = str(directory / "ledger.sqlite")
        runtime = open_runtime(self.db)
        try:
            self.result = race(runtime, think=0.05)
            write_example(runtime, self.result, directory)
        finally:
            runtime.close()
        self.recording = directory / "recording.jsonl"
        self.a, self.b = directory / "agent-a.jsonl", directory / "agent-b.jsonl"

    def lines(self, path: Path) -> list[dict[str, Any]]:
        return [json.loads(line) for line in path.read_text().splitlines()]

    def rewrite(self, path: Path, target: Path,
                change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> Path:
        target.write_text("".join(json.dumps(line) + "\n" for line in change(self.lines(path))))
        return target

    def merged(self, a: Path | None = None, b: Path | None = None,
               recording: Path | None = None) -> MergedTimeline:
        transcripts = read_transcripts([a or self.a, b or self.b])
        log = log_of_recording(read_file(recording or self.recording), sessions_of(transcripts))
        return merge(transcripts, log)


@pytest.fixture(scope="module")
def raced(tmp_path_factory: pytest.TempPathFactory) -> Race:
    return Race(tmp_path_factory.mktemp("race"))


def _logged(figure: MergedTimeline) -> list[tuple[str, str, int | None]]:
    return [(figure.lanes[r.lane].label, r.kind, r.position) for r in figure.rows
            if r.position is not None]


def test_the_race_transcripts_and_the_log_merge_entry_by_entry(raced: Race) -> None:
    figure = raced.merged()
    winner, loser = raced.result.winner, raced.result.loser
    entries = log_of_recording(read_file(raced.recording),
                               [winner.session_id, loser.session_id]).entries
    labels = {winner.session_id: winner.name, loser.session_id: loser.name}

    assert figure.findings == ()
    assert [lane.ledger_sessions for lane in figure.lanes] == [
        (raced.result.agents[0].session_id,), (raced.result.agents[1].session_id,)]
    assert all(lane.client_session for lane in figure.lanes)
    # every event of the two sessions, once, in log order, each joined with its call
    assert _logged(figure) == [(labels[e.session_id or ""], e.kind, e.position)
                               for e in entries]
    assert {r.origin for r in figure.rows if r.position is not None} == {"both"}
    kinds = [(figure.lanes[r.lane].label, r.kind) for r in figure.rows]
    loser_rows = [k for lane, k in kinds if lane == loser.name]
    assert loser_rows == ["prompt", "session_started", "ready_listed", "prose", "bounced",
                          "prose", "ready_listed", "prose", "claimed", "prose", "tool",
                          "completed", "prose", "session_ended"]
    bounce = next(r for r in figure.rows if r.kind == "bounced")
    assert bounce.holder == winner.session_id
    assert bounce.text.startswith(f'tasks_claim step 5 → task already claimed: held by '
                                  f'"{winner.session_id}"')
    work = next(r for r in figure.rows if r.kind == "tool")
    assert work.text == "3\N{MULTIPLICATION SIGN} Read, Edit, Bash"
    assert "pivot:  " + loser.name + " claimed step 6" in "\n".join(figure.story)


def test_each_lane_keeps_its_transcript_order_and_the_log_its_own(raced: Race) -> None:
    figure = raced.merged()

    for lane in range(2):
        lines = [r.line for r in figure.rows if r.lane == lane]
        assert lines == sorted(lines, key=lambda n: n or 0)
    positions = [r.position for r in figure.rows if r.position is not None]
    assert positions == sorted(positions)


def test_unknown_line_types_and_blocks_are_skipped_and_counted(raced: Race, tmp_path: Path,
                                                              ) -> None:
    def noisy(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        stamp = lines[0]["timestamp"]
        extra = [{"type": "summary", "summary": "race", "leafUuid": "x"},
                 {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}},
                 {"type": "system", "subtype": "stop_hook_summary", "timestamp": stamp},
                 {"type": "queue-operation", "operation": "enqueue", "timestamp": stamp},
                 {**lines[1], "uuid": "side", "isSidechain": True},
                 {**lines[1], "uuid": "img", "message": {"role": "assistant", "content": [
                     {"type": "image", "source": {}}, {"type": "hologram", "data": 1}]},
                  "newField": {"anything": [1, 2]}}]
        return extra[:4] + lines[:1] + extra[4:] + lines[1:]

    path = raced.rewrite(raced.a, tmp_path / "a.jsonl", noisy)
    transcript = read_transcript(path)
    figure = raced.merged(a=path)

    assert transcript.skipped == {"block hologram": 1, "block image": 1, "block thinking": 1,
                                  "line type file-history-snapshot": 1,
                                  "line type queue-operation": 1, "line type summary": 1,
                                  "line type system": 1, "sidechain or meta line": 1}
    assert [(r.kind, r.text) for r in figure.rows] == [(r.kind, r.text)
                                                       for r in raced.merged().rows]
    assert figure.lanes[0].skipped == transcript.skipped


def _shifted(seconds: float) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    def shift(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for line in lines:
            moment = datetime.fromisoformat(line["timestamp"]) + timedelta(seconds=seconds)
            line["timestamp"] = moment.isoformat()
        return lines
    return shift


def test_a_clock_offset_is_estimated_from_joined_calls_reported_and_applied(
    raced: Race, tmp_path: Path,
) -> None:
    ahead = raced.rewrite(raced.a, tmp_path / "a.jsonl", _shifted(37.25))
    figure = raced.merged(a=ahead)
    straight = raced.merged()

    clock = figure.lanes[0].clock
    # Every call joined on the straight clock is joined and counted on the shifted one (how
    # many A made depends on whether it won the race: 6 as winner, fewer as loser).
    assert clock.applied and clock.pairs == straight.lanes[0].clock.pairs >= 4
    assert clock.offset == pytest.approx(-37.25, abs=0.01)
    assert [f.kind for f in figure.findings] == ["clock_offset"]
    assert "37.2" in figure.findings[0].text and "ahead of the ledger's" in figure.findings[0].text
    # shifted back onto the ledger's clock: each lane as before, the log in its order
    # (rows a millisecond apart in different lanes may trade places: the estimate's error)
    assert _logged(figure) == _logged(straight)
    for lane in range(2):
        mine = [(r.kind, r.text, r.at) for r in figure.rows if r.lane == lane]
        own = [(r.kind, r.text, r.at) for r in straight.rows if r.lane == lane]
        assert [m[:2] for m in mine] == [o[:2] for o in own]
        assert all(abs((m[2] - o[2]).total_seconds()) < 0.01 for m, o in zip(mine, own,
                                                                              strict=True))


def test_a_small_clock_difference_is_measured_but_left_alone_and_the_log_keeps_its_order(
    raced: Race, tmp_path: Path,
) -> None:
    winner = 0 if raced.result.winner.name == "agent A" else 1
    own = (raced.a, raced.b)[winner]
    # the winner's clock runs 0.4 s ahead: its prose before the claim reads later than
    # the loser's bounce, yet the claim the bounce hit must still come first
    close = raced.rewrite(own, tmp_path / "winner.jsonl", _shifted(0.4))
    figure = raced.merged(**{("a", "b")[winner]: close})

    assert figure.lanes[winner].clock.offset == pytest.approx(-0.4, abs=0.01)
    assert not figure.lanes[winner].clock.applied
    assert figure.findings == ()
    assert _logged(figure) == _logged(raced.merged())


def test_tool_calls_that_never_reached_this_ledger_are_findings_not_failures(
    raced: Race, tmp_path: Path,
) -> None:
    other = Race(tmp_path)  # another run: other sessions, another log
    figure = raced.merged(recording=other.recording)

    kinds = [f.kind for f in figure.findings]
    # the winner's start, claim, completion and end; the loser's start, bounce, claim,
    # completion and end
    assert kinds.count("no_event") == 9
    assert "no_event" in kinds and "not_in_transcript" not in kinds
    said = next(f for f in figure.findings if "tasks_claim" in f.text
                and "holder" in f.text)
    assert "the log holds no such event" in said.text and said.line is not None
    assert all(r.origin == "transcript" for r in figure.rows)


def test_an_event_the_transcript_never_mentions_is_a_finding(raced: Race, tmp_path: Path,
                                                             ) -> None:
    def without_completion(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        calls = {b["id"] for line in lines for b in _blocks(line)
                 if b.get("name", "").endswith("tasks_complete")}
        return [line for line in lines if not any(
            b.get("id") in calls or b.get("tool_use_id") in calls for b in _blocks(line))]

    path = raced.rewrite(raced.b, tmp_path / "b.jsonl", without_completion)
    figure = raced.merged(b=path)

    [finding] = figure.findings
    assert finding.kind == "not_in_transcript" and finding.lane == "agent B"
    assert "completed step" in finding.text and "never mentions it" in finding.text
    assert [r.origin for r in figure.rows if r.position == finding.position] == ["ledger"]


def test_an_answer_the_log_contradicts_is_a_finding(raced: Race, tmp_path: Path) -> None:
    loser = raced.a if raced.result.loser.name == "agent A" else raced.b

    def claims_it_won(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for line in lines:
            for block in _blocks(line):
                if block.get("is_error") and "already claimed" in json.dumps(block):
                    block["is_error"] = False
                    block["content"] = [{"type": "text", "text": json.dumps(
                        {"holder": raced.result.loser.session_id, "fence": 1})}]
        return lines

    path = raced.rewrite(loser, tmp_path / "loser.jsonl", claims_it_won)
    figure = raced.merged(**{"a" if loser == raced.a else "b": path})

    [finding] = figure.findings
    assert finding.kind == "disagrees"
    assert "but the log says: claim bounced: task already claimed" in finding.text


def test_a_transcript_without_planledger_calls_is_shown_alone_and_said_so(
    raced: Race, tmp_path: Path,
) -> None:
    def prose_only(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [line for line in lines if not any(
            b.get("type") in ("tool_use", "tool_result") for b in _blocks(line))]

    path = raced.rewrite(raced.a, tmp_path / "a.jsonl", prose_only)
    figure = raced.merged(a=path)

    assert figure.lanes[0].ledger_sessions == ()
    assert [f.kind for f in figure.findings] == ["unbound"]
    assert {r.origin for r in figure.rows if r.lane == 0} == {"transcript"}


def _blocks(line: dict[str, Any]) -> list[dict[str, Any]]:
    content = line.get("message", {}).get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _as_codex(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same session as a Codex CLI rollout (session_meta, response_item lines, and the
    event_msg display log beside them)."""
    out: list[dict[str, Any]] = [{"timestamp": lines[0]["timestamp"], "type": "session_meta",
                                  "payload": {"id": lines[0]["sessionId"], "cwd": "/x",
                                              "cli_version": "0.50.0"}}]
    for line in lines:
        at, content = line["timestamp"], line["message"]["content"]
        if isinstance(content, str):
            out.append({"timestamp": at, "type": "response_item", "payload": {
                "type": "message", "role": "user",
                "content": [{"type": "input_text", "text": content}]}})
            out.append({"timestamp": at, "type": "event_msg",
                        "payload": {"type": "user_message", "message": content}})
            continue
        for block in content:
            if block["type"] == "text":
                out.append({"timestamp": at, "type": "response_item", "payload": {
                    "type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": block["text"]}]}})
            elif block["type"] == "tool_use":
                out.append({"timestamp": at, "type": "response_item", "payload": {
                    "type": "function_call", "call_id": block["id"],
                    "name": block["name"].replace("mcp__planledger__", "planledger__"),
                    "arguments": json.dumps(block["input"])}})
            elif block["type"] == "tool_result":
                text = block["content"][0]["text"]
                output: Any = {"content": text, "success": False} if block["is_error"] else text
                out.append({"timestamp": at, "type": "response_item", "payload": {
                    "type": "function_call_output", "call_id": block["tool_use_id"],
                    "output": output}})
            elif block["type"] == "thinking":
                out.append({"timestamp": at, "type": "response_item", "payload": {
                    "type": "reasoning", "summary": [], "encrypted_content": "x"}})
    return out


def test_a_codex_rollout_merges_as_its_claude_code_twin_does(raced: Race, tmp_path: Path,
                                                            ) -> None:
    codex = raced.rewrite(raced.a, tmp_path / "rollout-a.jsonl", _as_codex)
    figure = raced.merged(a=codex)
    twin = raced.merged()

    assert read_transcript(codex).format == "codex"
    assert figure.lanes[0].format == "codex" and figure.findings == ()
    assert [(r.lane, r.kind, r.text, r.position) for r in figure.rows] == [
        (r.lane, r.kind, r.text, r.position) for r in twin.rows]
    assert figure.lanes[0].skipped == {"item reasoning": 1, "line type event_msg": 1}


def test_the_figure_is_the_same_from_the_recording_the_store_and_the_server(raced: Race,
                                                                           ) -> None:
    args = ["replay", "timeline", "--transcript", str(raced.a), "--transcript", str(raced.b),
            "--json"]
    from_file = runner.invoke(app, [*args, str(raced.recording)])
    from_store = runner.invoke(app, [*args, "--db", raced.db])
    runtime = open_runtime(raced.db)
    try:
        with live_server(runtime) as server:
            from_server = runner.invoke(app, [*args, "--url", server.url])
    finally:
        runtime.close()

    assert from_file.exit_code == 0, from_file.output
    assert json.loads(from_file.stdout) == json.loads(from_store.stdout) \
        == json.loads(from_server.stdout)
    assert json.loads(from_file.stdout)["findings"] == []


def test_the_html_page_is_self_contained_with_a_pane_per_agent_and_the_bounce_marked(
    raced: Race,
) -> None:
    page = runner.invoke(app, ["replay", "timeline", "--transcript", str(raced.a),
                               "--transcript", str(raced.b), str(raced.recording), "--html"])

    assert page.exit_code == 0
    html = page.stdout
    assert "<script" not in html and "http://" not in html and "https://" not in html
    assert "src=" not in html and "@import" not in html and "url(" not in html
    assert html.count("<th class=pane>") == 2
    for agent in raced.result.agents:
        assert f"ledger session {agent.session_id}" in html
    assert html.count("<tr class=bounce>") == 1
    assert "<details><summary>" in html  # the long prose folds, the whole text a click away


def test_the_terminal_shows_a_column_per_agent_and_each_lanes_sessions(raced: Race) -> None:
    args = ["replay", "timeline", "--transcript", str(raced.a), "--transcript", str(raced.b),
            str(raced.recording)]
    wide = runner.invoke(app, args, env={"COLUMNS": "200"}).output.splitlines()
    piped = runner.invoke(app, args).output.splitlines()

    figure = raced.merged()
    for lane in figure.lanes:  # each lane's client and ledger sessions, whole
        assert [lane.label, lane.client_session, *lane.ledger_sessions] in [
            re.split(r"\s{2,}", line) for line in wide]
    header = next(line for line in wide if line.startswith("TIME"))
    assert re.split(r"\s{2,}", header) == ["TIME", *(lane.label.upper() for lane in figure.lanes)]
    bounced = next(line for line in wide if "task already claimed" in line)
    assert bounced.index("tasks_claim") == header.index(raced.result.loser.name.upper())
    rows = [line for line in piped if re.match(r"\d\d:\d\d:\d\d\.\d{3}  ", line)]
    assert len(rows) == len(figure.rows)  # into a pipe, one line a row, naming its lane
    assert [re.split(r"\s{2,}", row)[1] for row in rows] == [
        figure.lanes[r.lane].label for r in figure.rows]


def test_the_shipped_example_is_what_its_files_merge_into(tmp_path: Path) -> None:
    files = [SHIPPED / "agent-a.jsonl", SHIPPED / "agent-b.jsonl"]
    page = runner.invoke(app, ["replay", "timeline", "--transcript", str(files[0]),
                               "--transcript", str(files[1]), str(SHIPPED / "recording.jsonl"),
                               "--html"])
    rerun = runner.invoke(app, ["replay", "run", str(SHIPPED / "recording.jsonl")])

    assert rerun.exit_code == 0, rerun.output
    shipped = (SHIPPED / "timeline.html").read_text()
    assert shipped == page.stdout
    assert "tasks_claim step 5 → task already claimed" in shipped
    assert "none: every answer" in shipped
