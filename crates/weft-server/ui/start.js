// The form that starts a run: an agent and a user message (and optionally
// the session to run on), posted to POST /v1/runs; then the run's page.

import { api } from "./api.js";
import { h } from "./dom.js";

/** Renders the start form into `root`. */
export function startPage(root, params) {
  const agent = h("input", { id: "start-agent", name: "agent", required: true, value: params.get("agent") ?? "" });
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
