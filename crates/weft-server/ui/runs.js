// The list of the caller's runs, newest first: filters (status, agent,
// label) kept in the page's address, "load more" through next_cursor, and
// an auto-refresh that reloads the first page and merges it in.

import { api } from "./api.js";
import { badge, h, when } from "./dom.js";

const STATUSES = ["running", "awaiting", "paused", "completed", "failed", "cancelled"];
const PAGE = 25;
const REFRESH_MS = 3000;

/** Renders the run list into `root` until `signal` aborts. */
export function runsPage(root, params, signal) {
  const filters = {
    status: params.get("status") ?? "",
    agent: params.get("agent") ?? "",
    label: params.get("label") ?? "",
  };
  const status = h("select", { id: "filter-status", name: "status" },
    h("option", { value: "" }, "any"),
    STATUSES.map((s) => h("option", { value: s, selected: s === filters.status }, s)));
  const agent = h("input", { id: "filter-agent", name: "agent", value: filters.agent, placeholder: "agent id" });
  const label = h("input", { id: "filter-label", name: "label", value: filters.label, placeholder: "key=value" });
  const auto = h("input", { id: "auto-refresh", type: "checkbox", checked: true });
  const form = h("form", { class: "filters", id: "filters" },
    h("label", { for: "filter-status" }, "Status"), status,
    h("label", { for: "filter-agent" }, "Agent"), agent,
    h("label", { for: "filter-label" }, "Label"), label,
    h("button", { type: "submit" }, "Filter"),
    h("label", { class: "auto" }, auto, " auto-refresh"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const q = new URLSearchParams();
    for (const [k, el] of [["status", status], ["agent", agent], ["label", label]]) {
      if (el.value.trim()) q.set(k, el.value.trim());
    }
    const hash = `#/${q.size ? `?${q}` : ""}`;
    if (location.hash === hash) location.reload();
    else location.hash = hash;
  });
  const body = h("tbody", { id: "runs" });
  const more = h("button", { type: "button", id: "load-more", hidden: true }, "Load more");
  const error = h("p", { class: "error", role: "alert", hidden: true });
  const empty = h("p", { class: "muted", hidden: true }, "No runs.");
  root.append(
    h("h1", {}, "Runs"),
    form,
    error,
    h("table", { class: "runs" },
      h("thead", {}, h("tr", {}, ["Run", "Status", "Agent", "Created", "Updated", "Labels"].map((t) => h("th", {}, t)))),
      body),
    empty,
    more,
  );

  const rows = new Map();
  let cursor = null;
  // The filters of the list on screen, set once its first page is in, so
  // a reader can tell this list from the one it replaced.
  const shown = new URLSearchParams(Object.entries(filters).filter(([, v]) => v)).toString();

  const query = (after) => {
    const q = new URLSearchParams({ limit: String(PAGE) });
    for (const [k, v] of Object.entries(filters)) if (v) q.set(k, v);
    if (after) q.set("cursor", after);
    return `/v1/runs?${q}`;
  };

  const row = (run) => {
    const labels = Object.entries(run.labels ?? {}).filter(([k]) => !k.startsWith("weft."));
    return h("tr", { dataset: { run: run.run_id, status: run.status } },
      h("td", {}, h("a", { href: `#/runs/${encodeURIComponent(run.run_id)}` }, run.run_id)),
      h("td", {}, badge(run.status)),
      h("td", {}, run.agent_id),
      h("td", {}, when(run.created_at)),
      h("td", {}, when(run.updated_at)),
      h("td", {}, labels.map(([k, v]) => h("span", { class: "label-chip" }, `${k}=${v}`))));
  };

  const fail = (e) => {
    if (signal.aborted) return;
    error.textContent = e.message;
    error.hidden = false;
  };

  /** Adds a page at the end (older runs). */
  const load = async () => {
    more.disabled = true;
    try {
      const page = await api(query(cursor), { signal });
      for (const run of page.runs) {
        if (rows.has(run.run_id)) continue;
        const tr = row(run);
        rows.set(run.run_id, tr);
        body.append(tr);
      }
      cursor = page.next_cursor ?? null;
      more.hidden = !cursor;
      empty.hidden = rows.size > 0;
      error.hidden = true;
      body.dataset.loaded = shown;
    } catch (e) {
      fail(e);
    } finally {
      more.disabled = false;
    }
  };

  /** Reloads the first page: updates known runs, puts new ones on top. */
  const refresh = async () => {
    try {
      const page = await api(query(null), { signal });
      let anchor = body.firstChild;
      for (const run of page.runs) {
        const tr = row(run);
        const old = rows.get(run.run_id);
        if (old) {
          old.replaceWith(tr);
          if (anchor === old) anchor = tr;
        } else {
          body.insertBefore(tr, anchor);
        }
        rows.set(run.run_id, tr);
      }
      if (rows.size === page.runs.length && !cursor) {
        cursor = page.next_cursor ?? null;
        more.hidden = !cursor;
      }
      empty.hidden = rows.size > 0;
      error.hidden = true;
    } catch (e) {
      fail(e);
    }
  };

  more.addEventListener("click", load);
  const timer = setInterval(() => auto.checked && !document.hidden && refresh(), REFRESH_MS);
  signal.addEventListener("abort", () => clearInterval(timer));
  load();
}
