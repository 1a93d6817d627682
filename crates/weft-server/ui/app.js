// The run viewer's entry point: the token bar and the router. Pages live
// in the address's hash: `#/` (runs, with filters as a query),
// `#/runs/<id>` (one run) and `#/new` (start a run). Changing page aborts
// the previous page's streams and timers.

import { setToken, token } from "./api.js";
import { runPage } from "./run.js";
import { runsPage } from "./runs.js";
import { startPage } from "./start.js";

let current = null;

function route() {
  current?.abort();
  current = new AbortController();
  const root = document.getElementById("app");
  root.replaceChildren();
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query = ""] = hash.split("?");
  const params = new URLSearchParams(query);
  if (path.startsWith("/runs/")) runPage(root, decodeURIComponent(path.slice("/runs/".length)), current.signal);
  else if (path === "/new") startPage(root, params, current.signal);
  else runsPage(root, params, current.signal);
}

function showTokenState() {
  const state = document.getElementById("token-state");
  state.textContent = token() ? "token set for this tab" : "no token: paste one";
  state.dataset.set = token() ? "yes" : "no";
}

function init() {
  const form = document.getElementById("token-form");
  const input = document.getElementById("token");
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    setToken(input.value);
    input.value = "";
    showTokenState();
    route();
  });
  document.getElementById("token-forget").addEventListener("click", () => {
    setToken("");
    showTokenState();
    route();
  });
  window.addEventListener("hashchange", route);
  showTokenState();
  route();
}

init();
