"""Server-sent events as a test reads them off an httpx stream."""

from collections.abc import Iterator

import httpx

SentEvent = tuple[str, str, str]  # (event, id, data as sent)


def sent_events(response: httpx.Response) -> Iterator[SentEvent]:
    """Each message as (event, id, data); keep-alive comments are skipped. Keep the
    iterator while the stream is wanted: dropping it closes the connection."""
    event, ident, data = "message", "", []
    for line in response.iter_lines():
        if line == "" and data:
            yield event, ident, "\n".join(data)
            event, ident, data = "message", "", []
        elif line.startswith("event:"):
            event = line.removeprefix("event:").strip()
        elif line.startswith("id:"):
            ident = line.removeprefix("id:").strip()
        elif line.startswith("data:"):
            data.append(line.removeprefix("data:").strip())
