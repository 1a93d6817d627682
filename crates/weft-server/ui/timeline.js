// A run's live timeline, folded from its events as they arrive: turns of the
// model (streamed assistant text, thinking, tool calls with their arguments,
// output, results and durations; each turn with its model calls' or
// planner's time), awaits with the forms that answer them and how long each
// waited, pauses, terminations and the outcome; each entry with its time
// since the run started (time is kept by a `Timing`, timing.js). Usage is
// summed into totals, its cost (`cost_usd`) too while every usage with
// tokens carries one: tokens without a price make the total cost unknown
// (null), never zero.

import { awaitForm, describeAnswer } from "./awaits.js";
import { append, duration, h, messageText, pre, when } from "./dom.js";
import { partView } from "./parts.js";
import { Timing, relative } from "./timing.js";

/** The most entries shown; older ones are dropped from the page. */
export const MAX_ENTRIES = 5000;

/** The timeline of one run, in `list` (an <ol>). */
export class Timeline {
  constructor(list, { onAnswer, onTotals, onOutcome }) {
    this.list = list;
    this.onAnswer = onAnswer;
    this.onTotals = onTotals;
    this.onOutcome = onOutcome;
    this.turn = 0;
    this.inTurn = false;
    this.text = null;
    this.calls = new Map();
    this.running = new Set();
    this.awaits = new Map();
    this.totals = { turns: 0, tool_calls: 0, input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_creation_tokens: 0, cost_usd: null, estimated: false };
    this.unpriced = false;
    this.lastSeq = 0;
    this.timing = new Timing();
    this.timed = {};
  }

  /** Adds one event (a RunEvent as the API sends it). */
  apply(event) {
    if (typeof event.seq === "number") {
      if (event.seq <= this.lastSeq) return;
      this.lastSeq = event.seq;
    }
    this.timed = this.timing.apply(event);
    const [open, turn] = [this.inTurn, this.turn];
    const handler = this[`on_${event.type}`];
    if (handler) handler.call(this, event);
    else this.entry(event, "event", event.type, pre(event));
    this.timeTurn(open || this.inTurn || this.turn !== turn);
  }

  /** Puts the time of the turn's model calls on its label, or, when the
   * planner called no model, the time it took to decide. */
  timeTurn(open) {
    const { model, decided } = this.timed;
    if (!this.turnTook) return;
    const took = this.turnTook;
    if (model !== undefined) {
      const ms = Number(took.dataset.model ?? 0) + model;
      const calls = Number(took.dataset.calls ?? 0) + 1;
      Object.assign(took.dataset, { model: String(ms), calls: String(calls), took: String(ms) });
      took.textContent = ` · ${calls > 1 ? `${calls} model calls, ` : "model "}${duration(ms)}`;
      took.title = "from when the planner had the run to the model's whole answer";
    } else if (decided !== undefined && open && took.dataset.model === undefined) {
      took.dataset.took = String(decided);
      took.textContent = ` · decided in ${duration(decided)}`;
      took.title = "from when the planner had the run to its decision";
    }
  }

  /** Moves what ticks while the run is live: the running calls' times. */
  tick(now = this.timing.now()) {
    for (const id of this.running) {
      const call = this.calls.get(id);
      if (call && typeof call.startedAt === "number") {
        call.state.textContent = `running… ${duration(Math.max(0, now - call.startedAt))}`;
      }
    }
  }

  entry(event, cls, title, ...body) {
    const li = h("li", { class: `entry entry-${cls}`, dataset: { seq: event.seq ?? "" } },
      h("div", { class: "entry-head" },
        h("span", { class: "entry-title" }, title),
        h("span", { class: "entry-meta", title: `event ${event.seq}` }, `#${event.seq} · ${when(event.at)} · `,
          h("span", { class: "entry-rel", title: "since the run started" }, relative(event.at, this.timing.startedAt)))),
      h("div", { class: "entry-body" }, ...body));
    this.list.append(li);
    this.trim();
    return li;
  }

  /** Keeps at most MAX_ENTRIES entries: drops the oldest, and says so. */
  trim() {
    let dropped = 0;
    while (this.list.children.length > MAX_ENTRIES) {
      const first = this.list.firstElementChild;
      if (first.dataset.call) this.calls.delete(first.dataset.call);
      if (first.dataset.item) this.awaits.delete(first.dataset.item);
      first.remove();
      dropped += 1;
    }
    if (dropped) {
      this.dropped = (this.dropped ?? 0) + dropped;
      this.list.dataset.dropped = String(this.dropped);
      this.list.title = `${this.dropped} older entries are not shown`;
    }
  }

  /** Model output: opens a new turn unless one is open. */
  modelOutput() {
    if (this.inTurn) return;
    this.inTurn = true;
    this.turn += 1;
    this.totals.turns = this.turn;
    this.turnName = h("span", { class: "turn-name" }, `Turn ${this.turn}`);
    this.turnTook = h("span", { class: "turn-took" });
    this.turnLabel = h("li", { class: "turn", dataset: { turn: this.turn } }, this.turnName, this.turnTook);
    if (this.prompt) {
      // The prompt the planner rendered for this turn, on hover.
      this.turnLabel.title = this.prompt;
      this.turnLabel.dataset.prompt = this.prompt;
      this.prompt = null;
    }
    this.list.append(this.turnLabel);
    this.onTotals(this.totals);
  }

  /** Anything that is not the model's: the next model output is a new turn. */
  endTurn() {
    this.inTurn = false;
    this.text = null;
  }

  on_run_started(e) {
    const input = (e.input ?? []).map((m) => h("div", { class: "message" }, h("b", {}, m.role), " ", messageText(m)));
    this.entry(e, "start", `Run started · ${e.agent_id}`, ...input);
    this.endTurn();
  }

  on_assistant_chunk(e) {
    this.modelOutput();
    if (!this.text) {
      this.text = h("div", { class: "assistant-text", dataset: { kind: "assistant" } });
      this.entry(e, "assistant", "Assistant", this.text);
    }
    this.text.append(document.createTextNode(e.text ?? ""));
  }

  on_thinking(e) {
    this.modelOutput();
    const t = e.thinking ?? {};
    const text = t.kind === "text" ? t.text : t.kind === "redacted" ? "(redacted)" : "(encrypted reasoning)";
    this.entry(e, "thinking", "Thinking", h("details", {}, h("summary", {}, "show"), h("div", { class: "thinking-text" }, text)));
  }

  /** A model call's whole answer, recorded for replay: its parts are
   * already on the page, so only the model's name is shown, on the turn. */
  on_model_output(e) {
    this.modelOutput();
    if (e.model) this.turnName.textContent = `Turn ${this.turn} · ${e.model}`;
  }

  /** A prompt rendered through the prompt registry: told on the next turn. */
  on_prompt_rendered(e) {
    const scope = e.override ? ` (override ${JSON.stringify(e.override)})` : "";
    this.prompt = `prompt ${e.template_id} ${e.version}${scope}`;
  }

  /** A toolset that could not start or stopped working, with the cause. */
  on_toolset_unavailable(e) {
    this.entry(e, "termination", `Toolset ${e.toolset} unavailable`, h("div", {}, e.cause));
  }

  on_toolset_available(e) {
    this.entry(e, "thought", `Toolset ${e.toolset} available again`);
  }

  on_planner_thought(e) {
    this.entry(e, "thought", "Planner note", h("div", {}, e.text));
  }

  call(id, tool, e) {
    let call = this.calls.get(id);
    if (call) return call;
    call = {
      tool: h("span", { class: "tool-name" }, tool ?? ""),
      state: h("span", { class: "call-state" }, "requested"),
      args: h("pre", { class: "json args" }),
      output: h("pre", { class: "output", hidden: true }),
      result: h("div", { class: "result" }),
      startedAt: null,
    };
    const li = this.entry(e, "call", "Tool call", h("div", { class: "call-head" }, call.tool, " ", call.state),
      h("div", { class: "label" }, "Arguments"), call.args, call.output, call.result);
    li.dataset.call = id;
    call.li = li;
    this.calls.set(id, call);
    this.totals.tool_calls = this.calls.size;
    this.onTotals(this.totals);
    return call;
  }

  on_tool_call_args_delta(e) {
    this.modelOutput();
    this.text = null;
    const call = this.call(e.tool_call_id, e.tool, e);
    call.state.textContent = "streaming arguments";
    call.args.append(document.createTextNode(e.delta ?? ""));
  }

  on_tool_started(e) {
    this.modelOutput();
    this.text = null;
    const call = this.call(e.tool_call_id, e.tool, e);
    call.tool.textContent = e.tool;
    call.args.textContent = JSON.stringify(e.payload ?? {}, null, 2);
    if (e.description) call.li.querySelector(".call-head").append(h("span", { class: "muted" }, ` — ${e.description}`));
    call.state.textContent = "running";
    call.li.classList.add("running");
    call.startedAt = e.at;
    this.running.add(e.tool_call_id);
  }

  on_tool_output_delta(e) {
    const call = this.calls.get(e.tool_call_id) ?? this.call(e.tool_call_id, "", e);
    call.output.hidden = false;
    call.output.append(document.createTextNode(e.stream && e.stream !== "stdout" ? `[${e.stream}] ${e.delta}` : e.delta));
  }

  on_tool_finished(e) {
    const out = e.output ?? {};
    const call = this.calls.get(out.tool_call_id) ?? this.call(out.tool_call_id, out.name, e);
    if (!call.startedAt && call.args.textContent === "") call.args.textContent = JSON.stringify(out.payload ?? {}, null, 2);
    this.running.delete(out.tool_call_id);
    const took = out.telemetry?.duration_ms ?? (call.startedAt ? e.at - call.startedAt : undefined);
    const failed = out.result?.kind === "error";
    call.li.classList.remove("running");
    call.li.classList.add(failed ? "failed" : "done");
    call.state.textContent = `${failed ? "failed" : "done"}${took !== undefined ? ` in ${duration(took)}` : ""}`;
    call.result.replaceChildren(h("div", { class: "label" }, failed ? "Error" : "Result"), resultView(out.result));
    if (out.retry_hint) append(call.result, [h("div", { class: "label" }, "Retry hint"), pre(out.retry_hint)]);
    if (this.running.size === 0) this.endTurn();
  }

  /** A call runs an agent as a child run: linked from the call. */
  on_child_run_linked(e) {
    const call = this.calls.get(e.tool_call_id) ?? this.call(e.tool_call_id, "", e);
    if (call.child) return;
    call.child = h("ul", { class: "child-events", dataset: { child: e.child_run_id } });
    call.li.append(h("div", { class: "label" }, "Child run ",
      h("a", { href: `#/runs/${encodeURIComponent(e.child_run_id)}` }, e.child_run_id), ` (${e.agent_id})`), call.child);
  }

  /** A child's tool calls and outcome, nested under the parent's call. */
  on_child_event(e) {
    const list = this.list.querySelector(`ul.child-events[data-child="${CSS.escape(e.child_run_id)}"]`);
    const ev = e.event ?? {};
    let line = null;
    if (ev.type === "tool_started") line = `→ ${ev.tool}`;
    else if (ev.type === "tool_finished") line = `← ${ev.output?.name} ${ev.output?.result?.kind === "error" ? "failed" : "done"}`;
    else if (ev.type === "await_requested") line = "waiting for an answer";
    else if (ev.type === "run_finished") line = `finished: ${ev.outcome?.kind}`;
    // A call run again after a crash may show the child's events twice.
    const seen = list?.querySelector(`li[data-child-seq="${CSS.escape(String(e.child_seq))}"]`);
    if (list && line && !seen) list.append(h("li", { dataset: { childSeq: String(e.child_seq) } }, line));
  }

  on_await_requested(e) {
    this.modelOutput();
    for (const item of e.items ?? []) {
      const status = h("p", { class: "await-state" }, "waiting for an answer");
      const li = this.entry(e, "await", `Awaiting ${item.kind.replace("_", " ")}`, status,
        awaitForm(item, (answer) => this.onAnswer(item.id, answer)));
      li.dataset.item = item.id;
      this.awaits.set(item.id, { li, status });
    }
    this.endTurn();
  }

  on_await_satisfied(e) {
    const a = this.awaits.get(e.item_id);
    if (!a) return;
    a.li.classList.add("answered");
    a.status.textContent = `answered: ${describeAnswer(e.answer)}`;
    this.waited(a, "answered");
    for (const el of a.li.querySelectorAll("input, textarea, select, button")) el.disabled = true;
    this.endTurn();
  }

  on_await_withdrawn(e) {
    const a = this.awaits.get(e.item_id);
    if (!a) return;
    a.li.classList.add("withdrawn");
    a.status.textContent = "withdrawn: the call or the run that asked ended";
    this.waited(a, "withdrawn");
    for (const el of a.li.querySelectorAll("input, textarea, select, button")) el.disabled = true;
  }

  /** How long an await item waited, under its state. */
  waited(a, how) {
    const ms = this.timed.waited;
    if (ms === undefined) return;
    a.status.after(h("p", { class: "await-waited muted", dataset: { waited: String(ms) } }, `${how} after ${duration(ms)}`));
  }

  on_usage(e) {
    const u = e.usage ?? {};
    let tokens = 0;
    for (const k of ["input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens"]) {
      const n = Number(u[k] ?? 0);
      this.totals[k] += n;
      tokens += n;
    }
    if (u.estimated === true && tokens > 0) this.totals.estimated = true;
    const cost = typeof u.cost_usd === "number" && Number.isFinite(u.cost_usd) ? u.cost_usd : null;
    if (cost !== null && !this.unpriced) this.totals.cost_usd = (this.totals.cost_usd ?? 0) + cost;
    else if (cost === null && tokens > 0) {
      this.unpriced = true;
      this.totals.cost_usd = null;
    }
    this.onTotals(this.totals);
  }

  on_termination(e) {
    const t = e.termination ?? {};
    this.entry(e, "termination", `Termination: ${t.reason}`, h("div", {}, t.message));
    this.endTurn();
  }

  on_run_paused(e) {
    this.entry(e, "pause", "Paused", h("div", {}, e.reason));
    this.endTurn();
  }

  on_run_continued(e) {
    this.entry(e, "continue", "Continued");
    this.endTurn();
  }

  on_run_finished(e) {
    this.entry(e, "finish", `Finished: ${e.outcome?.kind}`, outcomeView(e.outcome));
    this.endTurn();
    this.onOutcome(e.outcome);
  }
}

/** A tool result body: JSON, content parts, an omission or an error. */
function resultView(result) {
  switch (result?.kind) {
    case "json":
      return pre(result.value);
    case "content": {
      const parts = (result.value?.parts ?? []).map(partView);
      if (result.value?.structured !== undefined) parts.push(pre(result.value.structured));
      return h("div", {}, ...parts);
    }
    case "omitted":
      return h("div", { class: "muted" }, `omitted: ${JSON.stringify(result.value)}`);
    case "error":
      return h("div", { class: "error" }, `${result.value?.code ?? "error"}: ${result.value?.message ?? JSON.stringify(result.value)}`);
    default:
      return pre(result ?? null);
  }
}

/** How a run ended. */
export function outcomeView(outcome) {
  switch (outcome?.kind) {
    case "response":
      return h("div", { class: "outcome-text" }, messageText(outcome.message),
        outcome.termination ? h("p", { class: "muted" }, `forced by ${outcome.termination.reason}: ${outcome.termination.message}`) : null);
    case "tool_result":
      return pre(outcome.result);
    case "failed": {
      const f = outcome.failure ?? {};
      return h("div", { class: "error" }, `${f.kind}: ${f.message ?? f.tool_name ?? JSON.stringify(f)}`);
    }
    case "cancelled":
      return h("div", {}, `cancelled: ${outcome.reason}`);
    default:
      return pre(outcome ?? null);
  }
}
