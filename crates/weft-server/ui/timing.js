// A run's time, folded from its events: when it started and ended, what it
// is doing now and since when (the planner deciding — a model call, when
// the planner calls a model —, tools running, waiting for a person,
// paused), how long each model call and each planner decision took, and
// the time spent waiting for a person.
//
// No event marks the start of a model call: the planner has the run from
// the moment the run starts or goes on (its start, a tool batch's last
// result, an answer, a continue) until it decides (a tool call, an await,
// the end); a model call ends at its `model_output`, and the next one of
// the same decision starts there. Event times are the server's; `now()` is
// the browser's clock moved forward by the most any event was ahead of it,
// so a browser clock behind the server's never shows a negative time.

import { duration } from "./dom.js";

/** The time of one run. */
export class Timing {
  constructor() {
    this.startedAt = null;
    this.endedAt = null;
    this.lastAt = null;
    /** Running tool calls: id → { tool, at }. */
    this.tools = new Map();
    /** Unanswered await items: id → when asked. */
    this.asked = new Map();
    this.awaitSince = null;
    this.awaitedMs = 0;
    this.pausedSince = null;
    /** Since when the planner has the run, or null. */
    this.planningSince = null;
    /** Since when the current model call runs (within planning). */
    this.modelSince = null;
    this.skew = 0;
  }

  /** The server's time now, as well as the browser can tell. */
  now() {
    return Date.now() + this.skew;
  }

  /** Folds one event in; says what it timed: `{ model }` (a model call's
   * milliseconds), `{ decided }` (a planner decision's), `{ waited }` (an
   * await item's), or nothing. */
  apply(e) {
    const at = typeof e.at === "number" ? e.at : null;
    if (at === null) return {};
    this.skew = Math.max(this.skew, at - Date.now());
    this.lastAt = at;
    const timed = {};
    switch (e.type) {
      case "run_started":
        this.startedAt = at;
        this.plan(at);
        break;
      case "model_output":
        if (this.modelSince !== null) timed.model = at - this.modelSince;
        this.modelSince = at;
        break;
      case "tool_started":
        Object.assign(timed, this.decide(at));
        this.tools.set(e.tool_call_id, { tool: e.tool, at });
        break;
      case "tool_finished": {
        const id = e.output?.tool_call_id;
        const call = this.tools.get(id);
        if (call) timed.tool = at - call.at;
        this.tools.delete(id);
        if (this.tools.size === 0) this.goOn(at);
        break;
      }
      case "await_requested":
        Object.assign(timed, this.decide(at));
        for (const item of e.items ?? []) this.asked.set(item.id, at);
        if (this.asked.size && this.awaitSince === null) this.awaitSince = at;
        break;
      case "await_satisfied":
      case "await_withdrawn":
        if (this.asked.has(e.item_id)) timed.waited = at - this.asked.get(e.item_id);
        this.asked.delete(e.item_id);
        if (this.asked.size === 0) {
          this.closeAwait(at);
          if (this.tools.size === 0) this.goOn(at);
        }
        break;
      case "run_paused":
        this.pausedSince = at;
        this.planningSince = null;
        break;
      case "run_continued":
        this.pausedSince = null;
        if (this.tools.size === 0 && this.asked.size === 0) this.plan(at);
        break;
      case "run_finished":
        Object.assign(timed, this.decide(at));
        this.endedAt = at;
        this.closeAwait(at);
        this.asked.clear();
        this.tools.clear();
        this.pausedSince = null;
        break;
      default:
    }
    return timed;
  }

  plan(at) {
    this.planningSince = at;
    this.modelSince = at;
  }

  /** The run goes back to its planner, unless it waits or is paused. */
  goOn(at) {
    if (this.endedAt === null && this.asked.size === 0 && this.pausedSince === null) this.plan(at);
  }

  /** The planner decided: how long it had the run. */
  decide(at) {
    if (this.planningSince === null) return {};
    const decided = at - this.planningSince;
    this.planningSince = null;
    this.modelSince = null;
    return { decided };
  }

  closeAwait(at) {
    if (this.awaitSince === null) return;
    this.awaitedMs += at - this.awaitSince;
    this.awaitSince = null;
  }

  /** How long the run has taken: start to end, or to now while it runs. */
  runMs(now = this.now()) {
    if (this.startedAt === null) return null;
    return Math.max(0, (this.endedAt ?? now) - this.startedAt);
  }

  /** How long the run has waited for a person, so far. */
  awaitedMsAt(now = this.now()) {
    return this.awaitedMs + (this.awaitSince === null ? 0 : Math.max(0, now - this.awaitSince));
  }

  /** What the run is doing now: `{ state, text, since }`; `state` is
   * "model", "tool", "awaiting", "paused", "ended" or "idle". */
  activity(now = this.now()) {
    const since = (t) => duration(Math.max(0, now - t));
    if (this.endedAt !== null) return { state: "ended", text: "" };
    if (this.asked.size) {
      return { state: "awaiting", since: this.awaitSince, text: `waiting for an answer… ${since(this.awaitSince)}` };
    }
    if (this.tools.size) {
      const calls = [...this.tools.values()].sort((a, b) => a.at - b.at);
      const names = [...new Set(calls.map((c) => `\`${c.tool}\``))];
      const what = names.length === 1 ? `tool ${names[0]} is` : `tools ${names.join(", ")} are`;
      return { state: "tool", since: calls[0].at, text: `${what} running… ${since(calls[0].at)}` };
    }
    if (this.pausedSince !== null) {
      return { state: "paused", since: this.pausedSince, text: `paused… ${since(this.pausedSince)}` };
    }
    if (this.modelSince !== null) {
      return { state: "model", since: this.modelSince, text: `model is thinking… ${since(this.modelSince)}` };
    }
    return { state: "idle", text: "" };
  }
}

/** `at` relative to the run's start, for people: "+1.20 s". */
export function relative(at, startedAt) {
  if (typeof at !== "number" || typeof startedAt !== "number") return "";
  return `+${duration(Math.max(0, at - startedAt))}`;
}
