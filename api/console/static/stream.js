// The live stream, read with fetch rather than EventSource: EventSource cannot send an
// Authorization header, and an access key must never travel in a URL. This reads the
// server-sent events format (https://html.spec.whatwg.org/#event-stream-interpretation)
// and reconnects as EventSource would, resuming with Last-Event-ID. A server that follows
// as many streams as it is set to answers 503: the next try waits its Retry-After.

import { askForKey, withKey } from "./access.js";

const LINE = /\r\n|\r|\n/;

// `on(name, data)` for each message, `down(busy)` when the connection breaks or is refused
// (`busy`: the server follows as many consoles as it may, and said when to come back).
export function openStream(url, on, down) {
  let lastId = null;
  let retry = 3000;
  let busyFor = 0;  // milliseconds the server asked us to wait (Retry-After) before the next try

  function take(event) {
    if (event.id !== null) lastId = event.id;
    if (event.data.length) on(event.event, event.data.join("\n"));
  }

  function field(event, line) {
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "event") event.event = value;
    else if (name === "data") event.data.push(value);
    else if (name === "id" && !value.includes("\0")) event.id = value;
    else if (name === "retry" && /^\d+$/.test(value)) retry = Number(value);
  }

  async function readOnce() {
    const headers = withKey({ Accept: "text/event-stream" });
    if (lastId !== null) headers["Last-Event-ID"] = lastId;
    const response = await fetch(url, { headers, cache: "no-store" });
    if (response.status === 401) {
      const body = await response.json().catch(() => ({}));
      await askForKey(body.message || "unauthorized");
      return;
    }
    if (response.status === 503) {
      const seconds = Number(response.headers.get("Retry-After"));
      busyFor = 1000 * (Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds, 300) : 5);
    }
    if (!response.ok || !response.body) throw new Error(`stream answered ${response.status}`);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    let event = { event: "message", data: [], id: null };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      for (let found = buffer.match(LINE); found; found = buffer.match(LINE)) {
        // A lone CR at the end may be the first half of CRLF: wait for the next chunk.
        if (found[0] === "\r" && found.index === buffer.length - 1) break;
        const line = buffer.slice(0, found.index);
        buffer = buffer.slice(found.index + found[0].length);
        if (line === "") {
          take(event);
          event = { event: "message", data: [], id: null };
        } else if (!line.startsWith(":")) {
          field(event, line);
        }
      }
    }
  }

  (async () => {
    for (;;) {
      try {
        await readOnce();
      } catch (error) {
        // the connection broke: said below, then tried again
      }
      down(busyFor > 0);
      // Spread out: many consoles refused at once should not all come back at once.
      const wait = Math.max(retry, busyFor) * (busyFor ? 1 + Math.random() : 1);
      busyFor = 0;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  })();
}
