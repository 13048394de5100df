"""Agents' own transcripts, read as untrusted input: Claude Code sessions and Codex CLI
rollouts, each a JSON Lines file, into one neutral shape (`Transcript`).

Claude Code (`~/.claude/projects/<project>/<session id>.jsonl`): every line has `type`
(`user`, `assistant`, `system`, `summary`, `file-history-snapshot`, …), `timestamp`,
`sessionId`, `uuid`/`parentUuid`; `user` and `assistant` lines carry `message.content`: a
string (a prompt) or blocks — `text`, `tool_use` (`id`, `name`, `input`), `tool_result`
(`tool_use_id`, `content`, `is_error`), `thinking`. Codex CLI
(`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`): every line is
`{"timestamp", "type", "payload"}`; `session_meta` (`payload.id`) comes first, then
`response_item` lines (`message` with `input_text`/`output_text` content, `function_call`
with `name`, `arguments` as a JSON string and `call_id`, `function_call_output` with
`call_id` and `output`), beside `event_msg` and `turn_context` lines that mirror them.

What is read: prompts, the agent's prose, tool calls with their results. What is skipped,
and counted per kind: every other line type (system lines, summaries, snapshots, Codex's
display log), thinking and reasoning, images, sidechain (sub-agent) and meta lines, and
Codex's scaffolding messages. Nothing in a transcript is executed or followed; a line
that is not JSON, too long, too deep, or a known line whose needed fields have the wrong
type refuses the file, naming the line. Secrets are masked as lines are read
(replays.masking) unless `reveal`.
"""

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO, Literal

from planledger.replays.jsonline import BadLine, parse_line
from planledger.replays.masking import mask_text, mask_value

MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_LINE_BYTES = 16 * 1024 * 1024  # a tool result holding a whole file fits
MAX_LINES = 1_000_000
MAX_KEPT_CHARS = 20_000  # of a prompt, prose or tool result: enough to read, not a dump

Format = Literal["claude-code", "codex"]
ItemKind = Literal["prompt", "prose", "tool"]

# planledger's MCP tools; clients prefix them with the server's name
# (`mcp__planledger__tasks_claim` in Claude Code and current Codex, `planledger__…` before).
TOOLS = frozenset({
    "session_start", "session_end", "tasks_ready", "tasks_claim", "tasks_claim_next",
    "tasks_complete", "tasks_release", "tasks_drop", "tasks_add", "tasks_update",
    "tasks_list", "plans_create", "plans_list", "plans_show",
})


class TranscriptError(ValueError):
    """A transcript this planledger will not read; the message names the file and line."""


@dataclass(frozen=True)
class ToolCall:
    """One tool call and (once read) its answer. `tool` is the planledger tool it names,
    None for any other tool (Bash, Read, …)."""

    call_id: str
    name: str
    tool: str | None
    arguments: Any
    result: str | None = None
    is_error: bool = False
    answered_at: datetime | None = None
    result_line: int | None = None


@dataclass(frozen=True)
class Item:
    """A prompt, a stretch of the agent's prose, or a tool call, at the time its line
    was written (the agent's clock)."""

    at: datetime
    kind: ItemKind
    text: str
    line: int
    call: ToolCall | None = None


@dataclass(frozen=True)
class Transcript:
    name: str  # the file's name
    format: Format
    session: str | None  # the client's own session id (not the ledger's)
    items: tuple[Item, ...]
    lines: int
    skipped: dict[str, int] = field(default_factory=dict)


def planledger_tool(name: str) -> str | None:
    """The planledger tool a client's tool name calls (`mcp__planledger__tasks_claim`,
    `planledger__tasks_claim`, `tasks_claim`), else None."""
    last = name.rsplit("__", 1)[-1]
    return last if last in TOOLS else None


def read_transcript(path: Path, reveal: bool = False) -> Transcript:
    """Read a Claude Code transcript or a Codex rollout (told apart by their lines)."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise TranscriptError(f"{path.name}: {size} bytes is more than a transcript may "
                                  f"hold ({MAX_FILE_BYTES})")
        with path.open("rb") as raw:
            reader = _Reader(path.name, reveal)
            for number, value in _lines(path.name, raw):
                reader.add(number, value)
            return reader.finish()
    except OSError as error:
        raise TranscriptError(f"cannot read {path}: {error.strerror}") from None


def _lines(name: str, raw: BinaryIO) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each non-blank line's JSON object, with its number; refusing the file at a bad one."""
    number, total = 0, 0
    while True:
        data = raw.readline(MAX_LINE_BYTES + 1)
        if not data:
            return
        number += 1
        total += len(data)
        if number > MAX_LINES or total > MAX_FILE_BYTES:
            raise TranscriptError(f"{name}: more than a transcript may hold "
                                  f"({MAX_LINES} lines, {MAX_FILE_BYTES} bytes)")
        if len(data) > MAX_LINE_BYTES:
            raise TranscriptError(f"{name}: line {number} is longer than {MAX_LINE_BYTES} "
                                  "bytes")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise TranscriptError(f"{name}: line {number} is not UTF-8 text") from None
        if not text.strip():
            continue
        try:
            value = parse_line(text)
        except BadLine as error:
            raise TranscriptError(f"{name}: line {number}: {error}") from None
        if not isinstance(value, dict):
            raise TranscriptError(f"{name}: line {number}: not a JSON object")
        yield number, value


class _Reader:
    """Folds lines into items; tells the format apart by the first line it knows."""

    def __init__(self, name: str, reveal: bool) -> None:
        self.name, self.reveal = name, reveal
        self.format: Format | None = None
        self.session: str | None = None
        self.items: list[Item] = []
        self.calls: dict[str, int] = {}  # call id -> index of its item
        self.skipped: Counter[str] = Counter()
        self.lines = 0

    def fail(self, number: int, problem: str) -> TranscriptError:
        return TranscriptError(f"{self.name}: line {number}: {problem}")

    def add(self, number: int, line: dict[str, Any]) -> None:
        self.lines += 1
        kind = line.get("type")
        if not isinstance(kind, str):
            raise self.fail(number, 'no "type": not a Claude Code or Codex transcript line')
        if self.format is None:
            self.format = "codex" if kind in _CODEX_TYPES else "claude-code"
        if self.format == "codex":
            self._codex(number, kind, line)
        else:
            self._claude(number, kind, line)

    def finish(self) -> Transcript:
        return Transcript(self.name, self.format or "claude-code", self.session,
                          tuple(self.items), self.lines, dict(sorted(self.skipped.items())))

    # --- shared ------------------------------------------------------------------

    def _time(self, number: int, line: dict[str, Any]) -> datetime:
        text = line.get("timestamp")
        if not isinstance(text, str):
            raise self.fail(number, 'missing "timestamp"')
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise self.fail(number, f'"timestamp" is not an ISO 8601 time: {text[:40]!r}'
                            ) from None
        if moment.tzinfo is None:
            raise self.fail(number, f'"timestamp" has no time zone: {text[:40]!r}')
        return moment

    def _text(self, text: str) -> str:
        kept = mask_text(text, self.reveal)
        return kept if len(kept) <= MAX_KEPT_CHARS else kept[:MAX_KEPT_CHARS] + " […]"

    def _say(self, number: int, at: datetime, kind: ItemKind, text: str) -> None:
        if text.strip():
            self.items.append(Item(at, kind, self._text(text.strip()), number))

    def _call(self, number: int, at: datetime, call_id: Any, name: Any, arguments: Any) -> None:
        if not isinstance(call_id, str) or not isinstance(name, str):
            raise self.fail(number, "a tool call without a string id and name")
        call = ToolCall(call_id, name[:200], planledger_tool(name),
                        mask_value(arguments, self.reveal))
        self.calls[call_id] = len(self.items)
        self.items.append(Item(at, "tool", name[:200], number, call))

    def _answer(self, number: int, at: datetime, call_id: Any, text: str,
                is_error: bool) -> None:
        index = self.calls.get(call_id) if isinstance(call_id, str) else None
        if index is None:
            self.skipped["tool result without its call"] += 1
            return
        item = self.items[index]
        assert item.call is not None
        answered = replace(item.call, result=self._text(text), is_error=is_error,
                           answered_at=at, result_line=number)
        self.items[index] = replace(item, call=answered)

    def _session(self, number: int, value: Any) -> None:
        if value is None:
            return
        if not isinstance(value, str):
            raise self.fail(number, "the session id is not a string")
        if self.session is None:
            self.session = value[:100]
        elif value[:100] != self.session:
            self.skipped["lines of another client session"] += 1

    # --- Claude Code -------------------------------------------------------------

    def _claude(self, number: int, kind: str, line: dict[str, Any]) -> None:
        if kind not in ("user", "assistant"):
            self.skipped[f"line type {kind[:40]}"] += 1
            return
        if line.get("isSidechain") is True or line.get("isMeta") is True:
            self.skipped["sidechain or meta line"] += 1
            return
        at = self._time(number, line)
        self._session(number, line.get("sessionId"))
        message = line.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            self._say(number, at, "prompt" if kind == "user" else "prose", content)
            return
        if not isinstance(content, list):
            raise self.fail(number, '"message.content" is neither text nor a list of blocks')
        for block in content:
            self._claude_block(number, at, kind, block)

    def _claude_block(self, number: int, at: datetime, kind: str, block: Any) -> None:
        what = block.get("type") if isinstance(block, dict) else None
        if not isinstance(block, dict) or not isinstance(what, str):
            raise self.fail(number, "a content block without a type")
        if what == "text" and isinstance(block.get("text"), str):
            self._say(number, at, "prompt" if kind == "user" else "prose", block["text"])
        elif what == "tool_use":
            self._call(number, at, block.get("id"), block.get("name"), block.get("input"))
        elif what == "tool_result":
            self._answer(number, at, block.get("tool_use_id"), _result_text(block.get("content")),
                         block.get("is_error") is True)
        else:
            self.skipped[f"block {what[:40]}"] += 1

    # --- Codex CLI ---------------------------------------------------------------

    def _codex(self, number: int, kind: str, line: dict[str, Any]) -> None:
        payload = line.get("payload")
        if kind not in ("session_meta", "response_item"):
            self.skipped[f"line type {kind[:40]}"] += 1
            return
        if not isinstance(payload, dict):
            raise self.fail(number, '"payload" is not an object')
        at = self._time(number, line)
        if kind == "session_meta":
            self._session(number, payload.get("id"))
            return
        item = payload.get("type")
        if item == "message":
            self._codex_message(number, at, payload)
        elif item in ("function_call", "custom_tool_call"):
            arguments = payload.get("arguments", payload.get("input"))
            self._call(number, at, payload.get("call_id"), payload.get("name"),
                       _arguments(arguments))
        elif item in ("function_call_output", "custom_tool_call_output"):
            text, failed = _codex_output(payload.get("output"))
            self._answer(number, at, payload.get("call_id"), text, failed)
        else:
            self.skipped[f"item {str(item)[:40]}"] += 1

    def _codex_message(self, number: int, at: datetime, payload: dict[str, Any]) -> None:
        role, content = payload.get("role"), payload.get("content")
        if role not in ("user", "assistant") or not isinstance(content, list):
            self.skipped[f"message from {str(role)[:20]}"] += 1
            return
        texts = [b["text"] for b in content if isinstance(b, dict)
                 and b.get("type") in ("input_text", "output_text")
                 and isinstance(b.get("text"), str)]
        text = "\n".join(texts)
        if role == "user" and text.lstrip().startswith(_CODEX_SCAFFOLDING):
            self.skipped["scaffolding message"] += 1
            return
        self._say(number, at, "prompt" if role == "user" else "prose", text)


_CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context",
                          "compacted"})
_CODEX_SCAFFOLDING = ("<environment_context>", "<user_instructions>", "<permissions",
                      "# AGENTS.md")


def _result_text(content: Any) -> str:
    """A tool result's text: a string, or the text of its text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict)
                         and isinstance(b.get("text"), str))
    return ""


def _arguments(value: Any) -> Any:
    """Codex writes a call's arguments as JSON inside a string; parsed when it is."""
    if isinstance(value, str):
        try:
            return parse_line(value)
        except BadLine:
            return value
    return value


def _codex_output(output: Any) -> tuple[str, bool]:
    """A Codex call's output: a string, or `{content, success}`, or content items."""
    if isinstance(output, dict):
        failed = output.get("success") is False
        return _result_text(output.get("content")), failed
    return _result_text(output), False


def result_json(call: ToolCall) -> dict[str, Any] | None:
    """A tool result that is a JSON object (planledger's answers are), else None."""
    if call.result is None or call.is_error:
        return None
    try:
        value = parse_line(call.result)
    except BadLine:
        return None
    return value if isinstance(value, dict) else None
