// The page of one run: its summary (status, agent, session, times, its
// duration and time spent waiting for a person), what it is doing now (a
// line that ticks while it runs), totals (turns, tool calls, tokens, cost),
// outcome, controls (pause, continue, cancel) and the live timeline, fed by
// the run's event stream.

import { api, runPath } from "./api.js";
import { badge, duration, h, when } from "./dom.js";
import { follow } from "./sse.js";
import { Timeline, outcomeView } from "./timeline.js";

const REFRESHING = new Set(["run_paused", "run_continued", "run_finished", "await_requested", "await_satisfied"]);

/** Renders run `runId` into `root` until `signal` aborts. */
export function runPage(root, runId, signal) {
  const field = (name) => h("dd", { dataset: { field: name } });
  const fields = {
    status: field("status"),
    agent: field("agent"),
    session: field("session"),
    created: field("created"),
    updated: field("updated"),
    duration: field("duration"),
    awaited: field("awaited"),
    stream: field("stream"),
  };
  const activity = h("p", { class: "activity", id: "activity", role: "status", hidden: true });
  const totals = h("dl", { class: "totals", id: "totals" });
  const outcome = h("section", { class: "outcome", id: "outcome", hidden: true });
  const error = h("p", { class: "error", role: "alert", hidden: true });
  const list = h("ol", { class: "timeline", id: "timeline" });
  const control = (action, label) =>
    h("button", {
      type: "button",
      dataset: { action },
      onclick: async () => {
        try {
          const body = action === "cancel" ? { reason: "cancelled from the run viewer" } : {};
          show(await api(runPath(runId, `/${action}`), { method: "POST", body }));
        } catch (e) {
          fail(e);
        }
      },
    }, label);
  const controls = h("div", { class: "controls" },
    control("pause", "Pause"), control("continue", "Continue"), control("cancel", "Cancel"));
  root.append(
    h("p", {}, h("a", { href: "#/" }, "← all runs")),
    h("h1", {}, "Run ", h("code", { id: "run-id" }, runId)),
    h("dl", { class: "summary" },
      h("dt", {}, "Status"), fields.status,
      h("dt", {}, "Agent"), fields.agent,
      h("dt", {}, "Session"), fields.session,
      h("dt", {}, "Created"), fields.created,
      h("dt", {}, "Updated"), fields.updated,
      h("dt", {}, "Duration"), fields.duration,
      h("dt", {}, "Waiting for a person"), fields.awaited,
      h("dt", {}, "Events"), fields.stream),
    activity,
    controls,
    error,
    h("h2", {}, "Totals"),
    totals,
    outcome,
    h("h2", {}, "Timeline"),
    list,
  );

  function fail(e) {
    error.textContent = e.message;
    error.hidden = false;
  }

  function show(view) {
    fields.status.replaceChildren(badge(view.status));
    fields.agent.textContent = view.agent_id;
    fields.session.textContent = view.session_id;
    fields.created.textContent = when(view.created_at);
    fields.updated.textContent = when(view.updated_at);
    const finished = ["completed", "failed", "cancelled"].includes(view.status);
    for (const b of controls.querySelectorAll("button")) {
      const a = b.dataset.action;
      b.disabled = finished || (a === "pause" && view.paused) || (a === "continue" && !view.paused);
    }
    if (view.outcome) showOutcome(view.outcome);
  }

  function showOutcome(o) {
    outcome.replaceChildren(h("h2", {}, "Outcome"), outcomeView(o));
    outcome.dataset.kind = o.kind;
    outcome.hidden = false;
  }

  function showTotals(t) {
    const rows = [
      ["Turns", t.turns], ["Tool calls", t.tool_calls],
      // "≈ … (estimated)" when the provider reported no usage and weft counted about four bytes a token.
      ["Input tokens", t.estimated ? `≈${t.input_tokens} (estimated)` : t.input_tokens],
      ["Output tokens", t.estimated ? `≈${t.output_tokens} (estimated)` : t.output_tokens],
      ["Cache read", t.cache_read_tokens], ["Cache written", t.cache_creation_tokens],
      // "—" when no price is known for the run's model (or nothing was used yet).
      ["Cost", t.cost_usd === null ? "—" : `$${t.cost_usd.toFixed(4)}`],
    ];
    totals.replaceChildren(...rows.flatMap(([k, v]) => [h("dt", {}, k), h("dd", { dataset: { total: k } }, String(v))]));
  }

  let pending = null;
  const refresh = () => {
    clearTimeout(pending);
    pending = setTimeout(() => {
      if (signal.aborted) return;
      api(runPath(runId), { signal }).then(show, (e) => signal.aborted || fail(e));
    }, 150);
  };

  const timeline = new Timeline(list, {
    onAnswer: (itemId, answer) =>
      api(runPath(runId, "/answers"), { method: "POST", body: { item_id: itemId, answer } }).then((r) => {
        refresh();
        return r;
      }),
    onTotals: showTotals,
    onOutcome: showOutcome,
  });
  showTotals(timeline.totals);
  refresh();

  // Time: the run's duration, its waits and what it is doing, from its
  // events; ticking while it runs.
  function showTime() {
    const timing = timeline.timing;
    const now = timing.now();
    const ms = timing.runMs(now);
    fields.duration.textContent = ms === null ? "" : `${duration(ms)}${timing.endedAt === null ? " so far" : ""}`;
    fields.duration.dataset.ms = ms === null ? "" : String(ms);
    const awaited = timing.awaitedMsAt(now);
    fields.awaited.textContent = ms === null ? "" : duration(awaited);
    fields.awaited.dataset.ms = String(awaited);
    const doing = timing.activity(now);
    activity.textContent = doing.text;
    activity.dataset.state = doing.state;
    activity.hidden = !doing.text;
    timeline.tick(now);
    // A finished run's times no longer move.
    if (timing.endedAt !== null) clearInterval(ticker);
  }
  const ticker = setInterval(showTime, 200);
  signal.addEventListener("abort", () => clearInterval(ticker));
  // What the stream delivered, for people and tests: events received and
  // reconnections made.
  let received = 0;
  let reconnects = 0;
  follow(runPath(runId, "/events"), {
    signal,
    isLast: (e) => e.type === "run_finished",
    onEvent: (e) => {
      received += 1;
      fields.stream.dataset.received = String(received);
      timeline.apply(e);
      showTime();
      if (REFRESHING.has(e.type)) refresh();
    },
    onState: (state) => {
      if (state === "reconnecting") reconnects += 1;
      // Back online: the error that dropped the stream is over.
      if (state === "live") error.hidden = true;
      fields.stream.textContent = reconnects ? `${state} (${reconnects} reconnection(s))` : state;
      fields.stream.dataset.state = state;
      fields.stream.dataset.reconnects = String(reconnects);
    },
    onError: fail,
  });
}
