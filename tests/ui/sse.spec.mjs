// The run viewer's event-stream reader (crates/weft-server/ui/sse.js), in
// Node.js: the parser decodes a stream the same however it is cut into
// chunks (CRLF split across chunks, BOM, comments, multi-line data, ids,
// retry), and `follow` reconnects with Last-Event-ID after a dropped
// connection and stops after the last event. Run by
// crates/weft/tests/ui_browser.rs; needs no browser and no npm package.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import { SseParser, follow } from "../../crates/weft-server/ui/sse.js";

function decode(chunks) {
  const events = [];
  const parser = new SseParser((e) => events.push(e));
  for (const c of chunks) parser.feed(c);
  parser.end();
  return events;
}

// A stream exercising the format's corners.
const stream =
  "\uFEFF: a comment\r\n" +
  "retry: 1500\r\n" +
  "id: 1\r\nevent: run_started\r\ndata: {\"seq\":1}\r\n\r\n" +
  "data: line one\ndata:line two\ndata\n\n" +
  "id: 7\revent: usage\rdata: {\"seq\":7}\r\r" +
  "event: ignored\n\n" +
  "id: bad\u0000id\ndata: keeps id 7\n\n" +
  "field-without-colon\ndata: x\n\n" +
  "data: unfinished at the end";

const expected = [
  { id: "1", event: "run_started", data: "{\"seq\":1}" },
  { id: "1", event: "message", data: "line one\nline two\n" },
  { id: "7", event: "usage", data: "{\"seq\":7}" },
  { id: "7", event: "message", data: "keeps id 7" },
  { id: "7", event: "message", data: "x" },
];

assert.deepEqual(decode([stream]), expected, "whole");
// Every cut into two chunks, and one character at a time.
for (let i = 0; i <= stream.length; i++) {
  assert.deepEqual(decode([stream.slice(0, i), stream.slice(i)]), expected, `cut at ${i}`);
}
assert.deepEqual(decode([...stream]), expected, "one character at a time");
// Random cuts into many chunks.
let seed = 42;
const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
for (let round = 0; round < 500; round++) {
  const chunks = [];
  let at = 0;
  while (at < stream.length) {
    const n = 1 + Math.floor(random() * 12);
    chunks.push(stream.slice(at, at + n));
    at += n;
  }
  assert.deepEqual(decode(chunks), expected, `round ${round}`);
}
{
  const parser = new SseParser(() => {});
  parser.feed("retry: 2500\n");
  assert.equal(parser.retry, 2500);
  assert.throws(() => parser.feed("x".repeat(5 * 1024 * 1024)), /longer than 4 MiB/);
}
// A lone CR at the end of the stream still ends its line.
assert.deepEqual(decode(["data: a\r", "\r"]), [{ id: "", event: "message", data: "a" }]);

// `follow`: the first connection sends events 1 and 2 and drops; the
// second must ask from 2 and gets 3, the last.
const seen = [];
const server = createServer((req, res) => {
  seen.push({ lastEventId: req.headers["last-event-id"] ?? null, accept: req.headers.accept });
  res.writeHead(200, { "Content-Type": "text/event-stream" });
  const frame = (seq, type) => `id: ${seq}\nevent: ${type}\ndata: ${JSON.stringify({ seq, type })}\n\n`;
  if (seen.length === 1) {
    res.write(frame(1, "run_started"));
    res.write(frame(2, "assistant_chunk"));
    setTimeout(() => res.socket.destroy(), 50);
  } else {
    res.end(frame(3, "run_finished"));
  }
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const url = `http://127.0.0.1:${server.address().port}/v1/runs/r/events`;
const events = [];
const states = [];
const errors = [];
await follow(url, {
  signal: new AbortController().signal,
  isLast: (e) => e.type === "run_finished",
  onEvent: (e) => events.push(e.seq),
  onState: (s) => states.push(s),
  onError: (e) => errors.push(e),
});
server.close();
assert.deepEqual(events, [1, 2, 3], "every event once, in order");
assert.deepEqual(seen.map((s) => s.lastEventId), [null, "2"], "reconnected with Last-Event-ID");
assert.equal(seen[0].accept, "text/event-stream");
assert.deepEqual(states, ["connecting", "live", "reconnecting", "connecting", "live", "ended"]);
assert.equal(errors.length, 1, "the dropped connection was reported");
console.log("sse: ok");
