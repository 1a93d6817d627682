// The form that starts a run: one of the agents the server serves (listed
// by GET /v1/agents, every page of it), a user message and optionally the
// session to run on, posted to POST /v1/runs; then the run's page.

import { api } from "./api.js";
import { h } from "./dom.js";

/** The most pages of agents read (of 500 each). */
const MAX_AGENT_PAGES = 20;

/** The ids of the served agents, in order. */
async function servedAgents(signal) {
  const ids = [];
  let cursor = null;
  for (let page = 0; page < MAX_AGENT_PAGES; page++) {
    const query = new URLSearchParams({ limit: "500" });
    if (cursor) query.set("cursor", cursor);
    const list = await api(`/v1/agents?${query}`, { signal });
    ids.push(...(list.agents ?? []).map((a) => a.id));
    cursor = list.next_cursor;
    if (!cursor) break;
  }
  return ids;
}

/** Renders the start form into `root`. */
export function startPage(root, params, signal) {
  const wanted = params.get("agent") ?? "";
  const agent = h("select", { id: "start-agent", name: "agent", required: true, dataset: { loaded: "no" } },
    h("option", { value: "" }, "loading the served agents…"));
  const input = h("textarea", { id: "start-input", name: "input", rows: 4, required: true });
  const session = h("input", { id: "start-session", name: "session", placeholder: "a new session when empty" });
  const error = h("p", { class: "error", role: "alert", hidden: true });
  const submit = h("button", { type: "submit" }, "Start");
  const form = h("form", { class: "start", id: "start-form" },
    h("label", { for: "start-agent" }, "Agent"), agent,
    h("label", { for: "start-input" }, "User message"), input,
    h("label", { for: "start-session" }, "Session (optional)"), session,
    h("div", { class: "actions" }, submit),
    error);
  servedAgents(signal).then((ids) => {
    const options = ids.map((id) => h("option", { value: id, selected: id === wanted }, id));
    if (!ids.length) options.push(h("option", { value: "" }, "this server serves no agent"));
    else if (!ids.includes(wanted)) options.unshift(h("option", { value: "", selected: true }, "choose an agent"));
    agent.replaceChildren(...options);
    agent.dataset.loaded = "yes";
  }, (err) => {
    if (signal?.aborted) return;
    agent.replaceChildren(h("option", { value: "" }, "the served agents could not be listed"));
    agent.dataset.loaded = "failed";
    error.textContent = err.message;
    error.hidden = false;
  });
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    submit.disabled = true;
    error.hidden = true;
    try {
      const body = { agent: agent.value.trim(), input: input.value };
      if (session.value.trim()) body.session_id = session.value.trim();
      const run = await api("/v1/runs", { method: "POST", body });
      location.hash = `#/runs/${encodeURIComponent(run.run_id)}`;
    } catch (err) {
      error.textContent = err.message;
      error.hidden = false;
    } finally {
      submit.disabled = false;
    }
  });
  root.append(h("h1", {}, "Start a run"), form);
}
