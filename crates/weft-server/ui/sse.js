// Server-Sent Events over fetch(): EventSource cannot send an Authorization
// header, so the viewer reads the stream itself. `SseParser` decodes the
// event-stream format (lines ended by CRLF, LF or CR; `data`, `event`, `id`,
// `retry`; comments) chunk by chunk; `follow` reads a run's events and
// reconnects with Last-Event-ID until the run finishes.

import { ApiError, problemOf, withAuth } from "./api.js";

/** The longest line accepted before the stream is treated as broken. */
const MAX_LINE = 4 * 1024 * 1024;

/** An event-stream decoder: feed it text, it calls `onEvent` per event. */
export class SseParser {
  constructor(onEvent) {
    this.onEvent = onEvent;
    this.buffer = "";
    this.started = false;
    this.data = [];
    this.type = "";
    this.lastId = "";
    this.retry = null;
  }

  /** Decodes a chunk of the stream's text. */
  feed(text) {
    let buf = this.buffer + text;
    if (!this.started && buf.length > 0) {
      this.started = true;
      if (buf.charCodeAt(0) === 0xfeff) buf = buf.slice(1);
    }
    let start = 0;
    for (;;) {
      let end = start;
      while (end < buf.length && buf[end] !== "\n" && buf[end] !== "\r") end++;
      if (end >= buf.length) break;
      // A CR at the end of the chunk may be the first half of a CRLF.
      if (buf[end] === "\r" && end + 1 >= buf.length) break;
      const next = buf[end] === "\r" && buf[end + 1] === "\n" ? end + 2 : end + 1;
      this.line(buf.slice(start, end));
      start = next;
    }
    this.buffer = buf.slice(start);
    if (this.buffer.length > MAX_LINE) {
      this.buffer = "";
      throw new Error("the event stream has a line longer than 4 MiB");
    }
  }

  /** The stream ended: a last CR ends its line; an unfinished event is dropped. */
  end() {
    if (this.buffer.endsWith("\r")) this.line(this.buffer.slice(0, -1));
    this.buffer = "";
    this.data = [];
    this.type = "";
  }

  line(line) {
    if (line === "") {
      this.dispatch();
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.data.push(value);
    else if (field === "event") this.type = value;
    else if (field === "id") {
      if (!value.includes("\0")) this.lastId = value;
    } else if (field === "retry" && /^[0-9]+$/.test(value)) this.retry = Number(value);
  }

  dispatch() {
    const data = this.data;
    const type = this.type;
    this.data = [];
    this.type = "";
    if (data.length === 0) return;
    this.onEvent({ id: this.lastId, event: type || "message", data: data.join("\n") });
  }
}

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });

/**
 * Follows `url` (a run's events) until `isLast(event)` or `signal` aborts.
 * Each event's parsed JSON goes to `onEvent`; `onState` hears "connecting",
 * "live", "reconnecting", "ended" or "failed"; `onError` gets errors. A
 * dropped connection is opened again with the last id seen as Last-Event-ID,
 * after a back-off (0.5 s doubling to 10 s); 401 and 404 are final.
 */
export async function follow(url, { onEvent, onState, onError, isLast, signal }) {
  let lastId = "";
  let backoff = 500;
  while (!signal.aborted) {
    onState("connecting");
    let finished = false;
    try {
      const headers = withAuth({ Accept: "text/event-stream" });
      if (lastId) headers["Last-Event-ID"] = lastId;
      const response = await fetch(url, { headers, signal, cache: "no-store" });
      if (!response.ok) {
        const error = await problemOf(response);
        if ([400, 401, 403, 404].includes(response.status)) {
          onError(error);
          onState("failed");
          return;
        }
        throw error;
      }
      onState("live");
      const parser = new SseParser((frame) => {
        if (frame.event === "error") {
          let problem = null;
          try {
            problem = JSON.parse(frame.data);
          } catch {
            problem = null;
          }
          onError(new ApiError(problem?.status ?? 500, problem));
          return;
        }
        const event = JSON.parse(frame.data);
        lastId = frame.id || String(event.seq ?? lastId);
        backoff = 500;
        onEvent(event);
        if (isLast(event)) finished = true;
      });
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.feed(value);
        if (finished) {
          await reader.cancel();
          break;
        }
      }
      parser.end();
    } catch (error) {
      if (signal.aborted) return;
      onError(error);
    }
    if (finished) {
      onState("ended");
      return;
    }
    if (signal.aborted) return;
    onState("reconnecting");
    await sleep(backoff, signal);
    backoff = Math.min(backoff * 2, 10000);
  }
}
