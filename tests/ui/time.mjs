// The run viewer shows time, in a real browser (part of viewer.spec.mjs):
// a run of `slow` (a tool call that sleeps WEFT_SLOW_TOOL_MS, a question,
// an answer) shows what it is doing with a ticking elapsed time ("tool
// `journal.put` is running… 1.20 s", "waiting for an answer… 0.80 s"),
// the call's duration, the turn's decision time, how long the question
// waited, the run's duration (ticking, then fixed) and its time waiting
// for a person, and each entry's time since the run started.

import assert from "node:assert/strict";

/** Milliseconds of the duration a text ends with ("… 1.23 s", "12 ms",
 * "2 min 05 s"), or NaN. */
export function msOf(text) {
  const t = String(text ?? "").trim();
  let m = t.match(/(\d+) h (\d+) min$/);
  if (m) return (Number(m[1]) * 3600 + Number(m[2]) * 60) * 1000;
  m = t.match(/(\d+) min (\d+) s$/);
  if (m) return (Number(m[1]) * 60 + Number(m[2])) * 1000;
  m = t.match(/(\d+(?:\.\d+)?) s$/);
  if (m) return Number(m[1]) * 1000;
  m = t.match(/(\d+) ms$/);
  return m ? Number(m[1]) : NaN;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Runs the steps on `page`; `api` calls the JSON API, `step` logs. */
export async function timeIsShown({ page, base, api, step }) {
  const slowMs = Number(process.env.WEFT_SLOW_TOOL_MS ?? 3000);
  step("time: a running tool shows its name and a ticking elapsed time");
  const run = await api("/v1/runs", { agent: "slow", input: "Take your time" });
  await page.goto(`${base}/ui/#/runs/${encodeURIComponent(run.run_id)}`);
  const activity = page.locator("#activity");
  const running = page.locator("#activity[data-state=tool]", { hasText: /^tool `journal\.put` is running… / });
  await running.waitFor();
  const call = page.locator("li.entry-call");
  const duration = page.locator("[data-field=duration]");
  const first = { activity: msOf(await activity.textContent()), call: msOf(await call.locator(".call-state").textContent()),
    run: Number(await duration.getAttribute("data-ms")) };
  await sleep(700);
  assert.equal(await running.count(), 1, "the tool still runs");
  const later = { activity: msOf(await activity.textContent()), call: msOf(await call.locator(".call-state").textContent()),
    run: Number(await duration.getAttribute("data-ms")) };
  for (const k of ["activity", "call", "run"]) {
    assert.ok(later[k] >= first[k] + 400, `${k} ticks: ${first[k]} then ${later[k]}`);
  }
  assert.match(await duration.textContent(), / so far$/);

  step("time: the call's duration and the planner's decision");
  await call.locator(".call-state", { hasText: /^done in / }).waitFor();
  const took = msOf(await call.locator(".call-state").textContent());
  assert.ok(took >= slowMs - 50 && took < slowMs + 5000, `the call took ${took} ms`);
  assert.match(await page.locator(".turn[data-turn='1'] .turn-took").textContent(), /^ · decided in \d/);

  step("time: a question shows how long it has waited for a person");
  const waiting = page.locator("#activity[data-state=awaiting]", { hasText: /^waiting for an answer… / });
  await waiting.waitFor();
  await sleep(1200);
  const awaited = page.locator("[data-field=awaited]");
  assert.ok(Number(await awaited.getAttribute("data-ms")) >= 1000, await awaited.textContent());
  assert.ok(msOf(await activity.textContent()) >= 1000, await activity.textContent());
  const ask = page.locator("li.entry-await");
  await ask.locator("textarea").fill("yes");
  await ask.locator("button[type=submit]").click();
  const answered = ask.locator(".await-waited", { hasText: /^answered after / });
  await answered.waitFor();
  assert.ok(msOf(await answered.textContent()) >= 1000, await answered.textContent());

  step("time: the finished run's duration stops, with its waits and relative times");
  await page.locator("[data-field=stream][data-state=ended]").waitFor();
  await page.locator("#activity[data-state=ended]").waitFor({ state: "attached" });
  assert.equal(await activity.isHidden(), true, "nothing runs any more");
  const total = Number(await duration.getAttribute("data-ms"));
  assert.ok(total >= slowMs + 1000, `the run took ${total} ms`);
  assert.doesNotMatch(await duration.textContent(), /so far/);
  const waited = Number(await awaited.getAttribute("data-ms"));
  assert.ok(waited >= 1000 && waited < total, `waited ${waited} of ${total} ms`);
  await sleep(500);
  assert.equal(Number(await duration.getAttribute("data-ms")), total, "a finished run's duration stays");
  // Each entry: its absolute time and its time since the start.
  assert.equal(await page.locator("li.entry-start .entry-rel").textContent(), "+0 ms");
  assert.ok(msOf(await ask.locator(".entry-rel").textContent()) >= slowMs, "the question came after the call");
  assert.equal(await page.locator("li.entry-finish .entry-rel").textContent(), `+${await duration.textContent()}`);
  assert.match(await page.locator("li.entry-finish .entry-meta").textContent(), /^#\d+ · .+\d.* · \+/);
}
