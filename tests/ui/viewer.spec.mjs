// The run viewer in a real browser: playwright-core drives the system's
// headless Chromium against a running `weft serve` (started by
// crates/weft/tests/ui_browser.rs, which passes its address and token).
//
// The flow: with no token the list says so; paste the token; start a run
// of the `clarify` agent from the start form; on the run's page watch the
// timeline fill in live (the tool call with its arguments, result and
// duration, then the clarification with its form); answer it in the form;
// watch the run continue and finish without reloading; then the run list
// with its filters and "load more".
//
// Last, a run of the `streamer` agent (a model on a slow local provider):
// its answer grows in the timeline while it streams, and the token totals
// add up.
//
// Then a run of `coordinator` (examples/coordinator.toml), whose calls run
// the `researcher` and `writer` agents as child runs: each child's events
// show nested under the call that runs it, with a link to the child's own
// page (see childRunsNestUnderTheirCalls at the end).
//
// Time: the start form offers the served agents; the streamer's page says
// the model is thinking while it streams, and times each model call; a run
// of `slow` shows what runs and for how long (time.mjs).
//
// Environment: WEFT_URL (server), WEFT_TOKEN (a tenant's token),
// WEFT_STREAM_WORDS (the streamer's answer, pieces joined by `|`),
// WEFT_CHROMIUM (default /usr/bin/chromium), WEFT_OUT_DIR (where a failure
// screenshot goes), WEFT_SCREENSHOT (where the screenshot of the finished
// run goes on success; none when unset). Exits 0 on success, 1 on failure.

import { chromium } from "playwright-core";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { msOf, timeIsShown } from "./time.mjs";

const base = process.env.WEFT_URL;
const token = process.env.WEFT_TOKEN;
const outDir = process.env.WEFT_OUT_DIR ?? ".";
const executablePath = process.env.WEFT_CHROMIUM ?? "/usr/bin/chromium";
const STEP = 15_000;

if (!base || !token) {
  console.error("set WEFT_URL and WEFT_TOKEN");
  process.exit(2);
}

/** Calls the JSON API directly (to set up runs the UI then shows). */
async function api(path, body) {
  const r = await fetch(`${base}${path}`, {
    method: body ? "POST" : "GET",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
  assert.ok(r.ok, `${path}: HTTP ${r.status} ${await r.clone().text()}`);
  return r.json();
}

const problems = [];
const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const page = await browser.newPage({ viewport: { width: 1180, height: 1000 } });
page.setDefaultTimeout(STEP);
page.on("console", (m) => {
  if (m.type() === "error") problems.push(`console: ${m.text()}`);
});
page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));

const step = (name) => console.log(`viewer: ${name}`);

try {
  step("open the viewer without a token");
  await page.goto(`${base}/ui/`);
  await page.locator("#token-state[data-set='no']").waitFor();
  await page.locator("main .error", { hasText: "token" }).waitFor();
  // The failed list call is logged by the browser as a 401; nothing else may be.
  problems.length = 0;

  step("paste the token");
  await page.fill("#token", token);
  await page.click("#token-form button[type=submit]");
  await page.locator("#token-state[data-set='yes']").waitFor();
  const stored = await page.evaluate(() => sessionStorage.getItem("weft.token"));
  assert.equal(stored, token, "the token is kept in sessionStorage");
  assert.equal(await page.inputValue("#token"), "", "the token field is emptied");

  step("the start form offers the served agents");
  await page.click("a[href='#/new']");
  await page.locator("#start-agent[data-loaded=yes]").waitFor({ state: "attached" });
  const offered = await page.locator("#start-agent option").evaluateAll((os) => os.map((o) => o.value).filter(Boolean));
  const served = (await api("/v1/agents")).agents.map((a) => a.id);
  assert.deepEqual(offered, served);
  for (const id of ["clarify", "coordinator", "slow", "streamer"]) assert.ok(offered.includes(id), `${id} in ${offered}`);
  // An agent the server does not serve: the 400 names the served ones.
  const unknown = await fetch(`${base}/v1/runs`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: JSON.stringify({ agent: "nobody", input: "x" }),
  });
  assert.equal(unknown.status, 400);
  assert.match((await unknown.json()).errors[0].message, /^unknown agent `nobody`; served agents: .*`clarify`.*`streamer`/);

  step("start a run from the form");
  await page.selectOption("#start-agent", "clarify");
  await page.fill("#start-input", "Add 2 and 3, then <b>multiply</b>");
  await page.click("#start-form button[type=submit]");
  await page.waitForURL(/#\/runs\/run_[0-9a-f]+$/);
  const runId = decodeURIComponent(new URL(page.url()).hash.slice("#/runs/".length));
  // A marker that a reload or a navigation would lose.
  await page.evaluate(() => {
    window.weftMarker = "same page";
  });

  step("watch the tool call and the clarification arrive");
  const call = page.locator("li.entry-call");
  await call.locator(".call-state", { hasText: /^done in / }).waitFor();
  assert.equal(await call.locator(".tool-name").textContent(), "calc.add");
  assert.deepEqual(JSON.parse(await call.locator("pre.args").textContent()), { a: 2, b: 3 });
  assert.equal((await call.locator(".result pre").textContent()).trim(), "5");
  // The user's text is shown as text: the markup in it is not parsed.
  const start = page.locator("li.entry-start .message");
  assert.match(await start.textContent(), /<b>multiply<\/b>/);
  assert.equal(await start.locator("b").count(), 1, "only the role label is bold");
  const ask = page.locator("li.entry-await[data-item='ask-2']");
  await ask.locator(".question", { hasText: "Which two numbers should I multiply next?" }).waitFor();
  assert.doesNotMatch(await ask.textContent(), /null|undefined/, "no absent field printed");
  await page.locator("[data-field=status] .badge", { hasText: "awaiting" }).waitFor();
  await page.locator("[data-field=stream][data-state=live]").waitFor();
  assert.equal(await page.locator("#outcome").isHidden(), true, "no outcome yet");

  step("answer the clarification in the form");
  await ask.locator("textarea").fill("3 and 4");
  await ask.locator("button[type=submit]").click();
  await ask.locator(".await-state", { hasText: "answered: 3 and 4" }).waitFor();
  assert.equal(await ask.locator("textarea").isDisabled(), true);

  step("watch the run continue and finish live");
  await page.locator("li.entry-continue").waitFor();
  const text = page.locator("[data-kind=assistant]");
  await text.waitFor();
  assert.equal(await text.textContent(), "Thanks! 3 * 4 = 12.");
  await page.locator("#outcome[data-kind=response] .outcome-text", { hasText: "3 * 4 = 12" }).waitFor();
  await page.locator("li.entry-finish").waitFor();
  await page.locator("[data-field=status] .badge", { hasText: "completed" }).waitFor();
  await page.locator("[data-field=stream][data-state=ended]").waitFor();
  assert.equal(await page.evaluate(() => window.weftMarker), "same page", "the page was not reloaded");
  assert.equal(await page.locator("[data-total='Turns']").textContent(), "3");
  assert.equal(await page.locator("[data-total='Tool calls']").textContent(), "1");
  // Every event once, in order.
  const seqs = await page.locator("li.entry").evaluateAll((els) => els.map((e) => Number(e.dataset.seq)));
  assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), "events in order");
  assert.equal(new Set(seqs).size, seqs.length, "no event twice");
  const view = await api(`/v1/runs/${runId}`);
  assert.equal(view.status, "completed");
  assert.equal(Math.max(...seqs) <= view.event_seq, true);

  const shot = process.env.WEFT_SCREENSHOT;
  if (shot) {
    await page.screenshot({ path: shot, fullPage: true });
    step(`screenshot of the finished run: ${shot}`);
  }

  step("the run list: filters and load more");
  // Runs that stop at the clarification, so they stay awaiting.
  const waiting = [];
  for (let i = 0; i < 26; i++) {
    const r = await api("/v1/runs", { agent: "clarify", input: `run ${i}`, labels: { batch: "b1" } });
    waiting.push(r.run_id);
  }
  await page.click("a[href='#/']");
  const rows = page.locator("#runs tr");
  await page.locator(`#runs tr[data-run='${waiting[25]}']`).waitFor();
  assert.equal(await rows.count(), 25, "one page of 25");
  await page.click("#load-more");
  await page.locator(`#runs tr[data-run='${runId}']`).waitFor();
  assert.equal(await rows.count(), 27);
  assert.equal(await page.locator("#load-more").isHidden(), true, "the last page has no cursor");
  assert.equal(await page.locator(`#runs tr[data-run='${runId}']`).getAttribute("data-status"), "completed");

  await page.selectOption("#filter-status", "completed");
  await page.click("#filters button[type=submit]");
  await page.waitForURL(/status=completed/);
  // The old list stays on screen until the router swaps pages.
  await page.locator("#runs[data-loaded='status=completed']").waitFor({ state: "attached" });
  await page.locator(`#runs tr[data-run='${runId}']`).waitFor();
  assert.equal(await rows.count(), 1, "only the completed run");

  await page.selectOption("#filter-status", "");
  await page.fill("#filter-label", "batch=b1");
  await page.click("#filters button[type=submit]");
  await page.waitForURL(/label=batch/);
  await page.locator(`#runs tr[data-run='${waiting[25]}']`).waitFor();
  assert.equal(await page.locator(`#runs tr[data-run='${runId}']`).count(), 0, "the unlabelled run is filtered out");

  await page.fill("#filter-label", "");
  await page.fill("#filter-agent", "nobody");
  await page.click("#filters button[type=submit]");
  await page.waitForURL(/agent=nobody/);
  await page.locator("main p.muted", { hasText: "No runs." }).waitFor();

  step("auto-refresh shows a new run without a reload");
  await page.fill("#filter-agent", "clarify");
  await page.click("#filters button[type=submit]");
  await page.waitForURL(/agent=clarify/);
  await page.locator(`#runs tr[data-run='${waiting[25]}']`).waitFor();
  const fresh = await api("/v1/runs", { agent: "clarify", input: "late" });
  await page.locator(`#runs tr[data-run='${fresh.run_id}']`).waitFor({ timeout: 10_000 });
  assert.equal(await rows.first().getAttribute("data-run"), fresh.run_id, "the newest run on top");

  step("a model's answer streams into the timeline word by word");
  const words = (process.env.WEFT_STREAM_WORDS ?? "").split("|");
  const streamed = await api("/v1/runs", { agent: "streamer", input: "What is 20 + 22?" });
  await page.goto(`${base}/ui/#/runs/${encodeURIComponent(streamed.run_id)}`);
  const answer = page.locator("[data-kind=assistant]");
  // Part of the answer is there while the rest is still coming.
  await page.waitForFunction(
    ([first, last]) => {
      const t = document.querySelector("[data-kind=assistant]")?.textContent ?? "";
      return t.startsWith(first) && !t.includes(last);
    },
    [words[0], words[words.length - 1]],
  );
  assert.equal(await page.locator("#outcome").isHidden(), true, "no outcome while streaming");
  // No event marks a model call's start: the viewer counts from the tool's result.
  await page.locator("#activity[data-state=model]", { hasText: /^model is thinking… \d/ }).waitFor();
  await page.locator("#outcome[data-kind=response]").waitFor();
  assert.equal(await answer.textContent(), words.join(""));
  const add = page.locator("li.entry-call");
  assert.equal(await add.locator(".tool-name").textContent(), "calc.add");
  assert.deepEqual(JSON.parse(await add.locator("pre.args").textContent()), { a: 20, b: 22 });
  assert.equal((await add.locator(".result pre").textContent()).trim(), "42");
  // Two model calls of 40 input and 9 output tokens each.
  await page.locator("[data-total='Input tokens']", { hasText: /^80$/ }).waitFor();
  assert.equal(await page.locator("[data-total='Output tokens']").textContent(), "18");
  // At the streamer's price ($100 in, $1000 out per million tokens).
  assert.equal(await page.locator("[data-total='Cost']").textContent(), "$0.0260");
  assert.equal(await page.locator("[data-total='Turns']").textContent(), "2");
  assert.equal(await page.locator("li.entry-event").count(), 0, "every event type has its own view");
  // Each turn's model call, timed: the second streams its words slowly.
  assert.match(await page.locator(".turn[data-turn='1'] .turn-took").textContent(), /^ · model \d/);
  const second = msOf(await page.locator(".turn[data-turn='2'] .turn-took").textContent());
  assert.ok(second >= 2000, `the streamed call took ${second} ms`);
  await page.locator("#activity[data-state=ended]").waitFor({ state: "attached" });

  step("the page reconnects with Last-Event-ID when the server restarts");
  const again = await api("/v1/runs", { agent: "clarify", input: "once more" });
  await page.goto(`${base}/ui/#/runs/${encodeURIComponent(again.run_id)}`);
  const againAsk = page.locator("li.entry-await[data-item='ask-2']");
  await againAsk.locator("textarea").waitFor();
  await page.locator("[data-field=stream][data-state=live]").waitFor();
  const stream = page.locator("[data-field=stream]");
  const before = Number(await stream.getAttribute("data-received"));
  writeFileSync(join(outDir, "restart-server"), "");
  await page.locator("[data-field=stream]:not([data-reconnects='0'])").waitFor();
  const deadline = Date.now() + STEP;
  while (!existsSync(join(outDir, "server-restarted"))) {
    assert.ok(Date.now() < deadline, "the server was not restarted");
    await new Promise((r) => setTimeout(r, 50));
  }
  await page.locator("[data-field=stream][data-state=live]").waitFor();
  // The browser logged the refused connections while the server was down.
  assert.ok(problems.every((p) => /ERR_CONNECTION_REFUSED|ERR_EMPTY_RESPONSE|Failed to load resource/.test(p)), problems.join("\n"));
  problems.length = 0;
  await againAsk.locator("textarea").fill("5 and 6");
  await againAsk.locator("button[type=submit]").click();
  await page.locator("[data-field=stream][data-state=ended]").waitFor();
  const finished = await api(`/v1/runs/${again.run_id}`);
  assert.equal(finished.status, "completed");
  // Every event exactly once: the reconnection asked for what came after.
  assert.equal(Number(await stream.getAttribute("data-received")), finished.event_seq);
  assert.ok(before < finished.event_seq);
  const againSeqs = await page.locator("li.entry").evaluateAll((els) => els.map((e) => Number(e.dataset.seq)));
  assert.equal(new Set(againSeqs).size, againSeqs.length, "no event twice");

  await childRunsNestUnderTheirCalls();

  await timeIsShown({ page, base, api, step });

  step("the start form selects the agent its address names");
  await page.goto(`${base}/ui/#/new?agent=slow`);
  await page.locator("#start-agent[data-loaded=yes]").waitFor({ state: "attached" });
  assert.equal(await page.inputValue("#start-agent"), "slow");

  step("every kind of await gets its form; untrusted text stays text");
  await page.goto(`${base}/ui/#/new`);
  await page.evaluate(async () => {
    const { Timeline } = await import("/ui/timeline.js");
    const list = document.createElement("ol");
    list.id = "synthetic";
    document.getElementById("app").replaceChildren(list);
    window.answers = [];
    const timeline = new Timeline(list, {
      onAnswer: async (id, answer) => {
        window.answers.push({ id, answer });
      },
      onTotals() {},
      onOutcome() {},
    });
    const evil = "<img src=x onerror=\"window.pwned=1\">";
    timeline.apply({ seq: 1, at: 0, type: "tool_started", tool_call_id: "c0", tool: "web.fetch", payload: { url: evil } });
    timeline.apply({
      seq: 2, at: 5, type: "tool_finished",
      output: { tool_call_id: "c0", name: "web.fetch", payload: {}, result: { kind: "error", value: { code: "timeout", message: evil } } },
    });
    timeline.apply({
      seq: 3, at: 6, type: "await_requested", items: [
        { kind: "questions", id: "q", tool_name: "t.choose", tool_call_id: "c1", payload: {}, title: evil,
          questions: [{ id: "color", prompt: "Which color?", allow_multiple: false,
            options: [{ id: "red", label: "Red" }, { id: "blue", label: "Blue" }] }] },
        { kind: "confirmation", id: "ok", tool_name: "fs.delete", tool_call_id: "c2", payload: { path: "/tmp/x" } },
        { kind: "elicitation", id: "el", tool_call_id: "c3", tool: "crm.lookup", message: "Who is it?", mode: "form",
          requested_schema: { type: "object", required: ["name"], properties: {
            name: { type: "string", title: "Name" }, age: { type: "integer" },
            vip: { type: "boolean" }, tier: { type: "string", enum: ["gold", "silver"] } } } },
        { kind: "elicitation", id: "link", tool_call_id: "c4", tool: "crm.login", message: "Sign in", mode: "url",
          url: "javascript:window.pwned=1" },
      ],
    });
    timeline.apply({ seq: 4, at: 7, type: "await_withdrawn", item_id: "link" });
  });
  const form = (id) => page.locator(`#synthetic li[data-item='${id}']`);
  await form("q").locator("input[value=blue]").check();
  await form("q").locator("button[type=submit]").click();
  await form("ok").locator("input[name=reason]").fill("not today");
  await form("ok").locator("button.deny").click();
  await form("el").getByLabel("Name").fill("Ada");
  await form("el").getByLabel("age").fill("36");
  await form("el").getByLabel("vip").check();
  await form("el").getByLabel("tier").selectOption({ label: "silver" });
  await form("el").locator("button.approve").click();
  await page.waitForFunction(() => window.answers.length === 3);
  assert.deepEqual(await page.evaluate(() => window.answers), [
    { id: "q", answer: { kind: "questions", answers: { color: ["blue"] } } },
    { id: "ok", answer: { kind: "confirmation", approved: false, reason: "not today" } },
    { id: "el", answer: { kind: "elicitation", action: "accept", content: { name: "Ada", age: 36, vip: true, tier: "silver" } } },
  ]);
  assert.equal(await form("link").locator("a").count(), 0, "a javascript: URL is not a link");
  assert.match(await form("link").locator(".await-state").textContent(), /withdrawn/);
  assert.equal(await form("link").locator("button:enabled").count(), 0, "a withdrawn item cannot be answered");
  assert.equal(await page.locator("#synthetic img").count(), 0, "no markup from event data");
  assert.match(await page.locator("#synthetic li.entry-call .error").textContent(), /timeout: <img src=x/);
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  // A long log: the page keeps the newest MAX_ENTRIES entries.
  const bounded = await page.evaluate(async () => {
    const { Timeline, MAX_ENTRIES } = await import("/ui/timeline.js");
    const list = document.createElement("ol");
    const timeline = new Timeline(list, { onAnswer() {}, onTotals() {}, onOutcome() {} });
    for (let seq = 1; seq <= MAX_ENTRIES + 10; seq++) {
      timeline.apply({ seq, at: seq, type: "planner_thought", text: `note ${seq}` });
    }
    return { max: MAX_ENTRIES, shown: list.children.length, dropped: list.dataset.dropped, first: list.firstElementChild.dataset.seq };
  });
  assert.deepEqual(bounded, { max: 5000, shown: 5000, dropped: "10", first: "11" });

  assert.deepEqual(problems, [], "no console errors or CSP violations");
  step("ok");
  await browser.close();
} catch (error) {
  mkdirSync(outDir, { recursive: true });
  const path = join(outDir, "viewer-failure.png");
  await page.screenshot({ path, fullPage: true }).catch(() => {});
  console.error(`viewer: FAILED: ${error.stack ?? error}`);
  console.error(`viewer: screenshot of the failure: ${path}`);
  if (problems.length) console.error(`viewer: console:\n  ${problems.join("\n  ")}`);
  await browser.close().catch(() => {});
  process.exit(1);
}

/** Agents called as tools: a run of `coordinator` calls `researcher`, then
 * `writer`, each a child run. On the coordinator's page each call shows its
 * child's tool calls, questions and outcome nested under it (ul.child-events)
 * as they happen; the writer's question, asked through the coordinator's
 * call, is answered in the coordinator's page; the child's link opens its
 * own page. */
async function childRunsNestUnderTheirCalls() {
  step("child runs: their events nest under the calls that run them");
  const run = await api("/v1/runs", { agent: "coordinator", input: "Report on 6 * 7" });
  await page.goto(`${base}/ui/#/runs/${encodeURIComponent(run.run_id)}`);
  const callOf = (tool) =>
    page.locator("li.entry-call", { has: page.locator(".tool-name", { hasText: new RegExp(`^${tool.replace(".", "\\.")}$`) }) });
  const nestedLines = (call) => call.locator("ul.child-events > li").allTextContents();

  const researcher = callOf("team.researcher");
  await researcher.locator("ul.child-events > li", { hasText: "finished: response" }).waitFor();
  assert.deepEqual(await nestedLines(researcher), ["→ calc.multiply", "← calc.multiply done", "finished: response"]);
  await researcher.locator(".call-state", { hasText: /^done/ }).waitFor();

  step("child runs: the writer's question is answered in the parent's page");
  const writer = callOf("team.writer");
  await writer.locator("ul.child-events > li", { hasText: "waiting for an answer" }).waitFor();
  const ask = page.locator("li.entry-await", { hasText: "Which tone should the report take?" });
  await ask.getByLabel("answer").fill("cheerful");
  await ask.locator("button.approve").click();
  await ask.locator(".await-state", { hasText: /^answered/ }).waitFor();
  await page.locator("#outcome[data-kind=response] .outcome-text", { hasText: "the writer reported it" }).waitFor();
  await writer.locator("ul.child-events > li", { hasText: "finished: response" }).waitFor();
  assert.deepEqual(await nestedLines(writer), ["waiting for an answer", "finished: response"]);
  await page.locator("[data-field=stream][data-state=ended]").waitFor();
  assert.equal(await page.locator("li.entry-event").count(), 0, "child events have their own view");

  // Each nested list is the child the API links to the parent, and links to it.
  const children = await api(`/v1/runs?label=${encodeURIComponent(`weft.parent_run=${run.run_id}`)}`);
  const childOf = (agent) => children.runs.find((r) => r.agent_id === agent)?.run_id;
  for (const [call, agent] of [[researcher, "researcher"], [writer, "writer"]]) {
    const id = childOf(agent);
    assert.ok(id, `a ${agent} child run in ${JSON.stringify(children)}`);
    assert.equal(await call.locator("ul.child-events").getAttribute("data-child"), id);
    assert.equal(await call.locator(`a[href='#/runs/${encodeURIComponent(id)}']`).textContent(), id);
  }
  // Each child line is there once.
  const childSeqs = await page.locator("ul.child-events > li").evaluateAll((els) =>
    els.map((e) => `${e.parentElement.dataset.child}#${e.dataset.childSeq}`));
  assert.equal(new Set(childSeqs).size, childSeqs.length, "no child event twice");

  step("child runs: the link opens the child's own page");
  await researcher.locator("a", { hasText: childOf("researcher") }).click();
  await page.waitForURL((url) => decodeURIComponent(url.hash) === `#/runs/${childOf("researcher")}`);
  await page.locator("#run-id", { hasText: childOf("researcher") }).waitFor();
  await page.locator("[data-field=agent]", { hasText: "researcher" }).waitFor();
  const own = page.locator("li.entry-call");
  await own.locator(".call-state", { hasText: /^done/ }).waitFor();
  assert.equal(await own.locator(".tool-name").textContent(), "calc.multiply");
  assert.equal((await own.locator(".result pre").textContent()).trim(), "42");
  await page.locator("[data-field=status] .badge", { hasText: "completed" }).waitFor();

  step("child runs: a child's event shown again (its call ran again) is listed once");
  const lines = await page.evaluate(async () => {
    const { Timeline } = await import("/ui/timeline.js");
    const list = document.createElement("ol");
    const timeline = new Timeline(list, { onAnswer() {}, onTotals() {}, onOutcome() {} });
    const child = "run_p.call_1";
    const linked = { type: "child_run_linked", tool_call_id: "call_1", child_run_id: child, agent_id: "researcher" };
    const started = { type: "tool_started", tool_call_id: "call_1", tool: "calc.multiply", payload: {} };
    const finished = { type: "run_finished", outcome: { kind: "response" } };
    timeline.apply({ seq: 1, at: 0, type: "tool_started", tool_call_id: "call_1", tool: "team.researcher", payload: {} });
    timeline.apply({ seq: 2, at: 1, ...linked });
    timeline.apply({ seq: 3, at: 2, type: "child_event", child_run_id: child, child_seq: 2, event: started });
    // After a crash the call runs again: it links the same child and shows its events again.
    timeline.apply({ seq: 4, at: 3, ...linked });
    timeline.apply({ seq: 5, at: 4, type: "child_event", child_run_id: child, child_seq: 2, event: started });
    timeline.apply({ seq: 6, at: 5, type: "child_event", child_run_id: child, child_seq: 5, event: finished });
    return [...list.querySelectorAll("ul.child-events > li")].map((li) => li.textContent);
  });
  assert.deepEqual(lines, ["→ calc.multiply", "finished: response"]);
}
