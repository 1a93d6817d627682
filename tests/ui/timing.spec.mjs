// The run viewer's time (crates/weft-server/ui/timing.js), in Node.js:
// what a run is doing and since when, each model call's, decision's, tool
// call's and await's duration, the run's duration and its time waiting for
// a person, folded from events. Run by crates/weft/tests/ui_browser.rs;
// needs no browser and no npm package.

import assert from "node:assert/strict";
import { Timing, relative } from "../../crates/weft-server/ui/timing.js";
import { duration } from "../../crates/weft-server/ui/dom.js";

const T = 1_000_000;

/** Folds `events` (`at` relative to T) into a Timing; each one's timing. */
function fold(events) {
  const timing = new Timing();
  const timed = events.map((e, i) => timing.apply({ seq: i + 1, ...e, at: T + e.at }));
  return { timing, timed };
}

// A model planner: thinking, a model call, a tool, a second model call, the end.
{
  const { timing, timed } = fold([
    { type: "run_started", at: 0 },
  ]);
  assert.deepEqual(timing.activity(T + 1500), { state: "model", since: T, text: "model is thinking… 1.50 s" });
  assert.equal(timing.runMs(T + 1500), 1500);
  assert.deepEqual(timed, [{}]);
  const more = [
    { type: "model_output", at: 2000, model: "m" },
    { type: "tool_started", at: 2010, tool_call_id: "c1", tool: "calc.add" },
  ].map((e) => timing.apply({ ...e, at: T + e.at }));
  assert.deepEqual(more, [{ model: 2000 }, { decided: 2010 }]);
  assert.deepEqual(timing.activity(T + 3010), { state: "tool", since: T + 2010, text: "tool `calc.add` is running… 1.00 s" });
  timing.apply({ type: "tool_started", at: T + 2020, tool_call_id: "c2", tool: "calc.mul" });
  assert.match(timing.activity(T + 3010).text, /^tools `calc.add`, `calc.mul` are running… 1.00 s$/);
  assert.deepEqual(timing.apply({ type: "tool_finished", at: T + 2500, output: { tool_call_id: "c2" } }), { tool: 480 });
  assert.equal(timing.activity(T + 3010).state, "tool", "one call still runs");
  timing.apply({ type: "tool_finished", at: T + 3000, output: { tool_call_id: "c1" } });
  // Back to the planner: a model call from the last result on.
  assert.deepEqual(timing.activity(T + 3500), { state: "model", since: T + 3000, text: "model is thinking… 500 ms" });
  assert.deepEqual(timing.apply({ type: "model_output", at: T + 5800, model: "m" }), { model: 2800 });
  assert.deepEqual(timing.apply({ type: "run_finished", at: T + 5810, outcome: { kind: "response" } }), { decided: 2810 });
  assert.equal(timing.activity().state, "ended");
  assert.equal(timing.runMs(T + 99_999), 5810, "a finished run's duration stops");
  assert.equal(timing.awaitedMsAt(T + 99_999), 0);
}

// A scripted planner that asks a person: the wait is counted, and the
// planner gets the run back when the answer comes.
{
  const { timing, timed } = fold([
    { type: "run_started", at: 0 },
    { type: "await_requested", at: 5, items: [{ id: "a1", kind: "clarification" }, { id: "a2", kind: "confirmation" }] },
    { type: "run_paused", at: 6, reason: "awaiting" },
  ]);
  assert.deepEqual(timed[1], { decided: 5 });
  assert.deepEqual(timing.activity(T + 2005), { state: "awaiting", since: T + 5, text: "waiting for an answer… 2.00 s" });
  assert.equal(timing.awaitedMsAt(T + 2005), 2000, "ticking while it waits");
  assert.deepEqual(timing.apply({ type: "await_satisfied", at: T + 1005, item_id: "a1" }), { waited: 1000 });
  assert.equal(timing.activity(T + 2005).state, "awaiting", "one item is still open");
  assert.deepEqual(timing.apply({ type: "await_withdrawn", at: T + 3005, item_id: "a2" }), { waited: 3000 });
  assert.equal(timing.activity(T + 3500).state, "paused");
  timing.apply({ type: "run_continued", at: T + 3010 });
  assert.deepEqual(timing.activity(T + 3510), { state: "model", since: T + 3010, text: "model is thinking… 500 ms" });
  timing.apply({ type: "run_finished", at: T + 3020, outcome: { kind: "response" } });
  assert.equal(timing.awaitedMsAt(T + 99_999), 3000);
  assert.equal(timing.runMs(), 3020);
}

// A run paused by a person is paused, not thinking; a run cancelled while
// it waits stops waiting at its end.
{
  const { timing } = fold([
    { type: "run_started", at: 0 },
    { type: "run_paused", at: 100, reason: "paused by a person" },
  ]);
  assert.deepEqual(timing.activity(T + 1100), { state: "paused", since: T + 100, text: "paused… 1.00 s" });
  const asked = fold([
    { type: "run_started", at: 0 },
    { type: "await_requested", at: 10, items: [{ id: "a", kind: "clarification" }] },
    { type: "run_finished", at: 4010, outcome: { kind: "cancelled" } },
  ]).timing;
  assert.equal(asked.awaitedMsAt(T + 99_999), 4000);
  assert.equal(asked.activity().state, "ended");
}

// A browser clock behind the server's never shows a negative time.
{
  const timing = new Timing();
  const ahead = Date.now() + 60_000;
  timing.apply({ type: "run_started", at: ahead });
  assert.ok(timing.now() >= ahead);
  assert.ok(timing.runMs() >= 0);
}

// Times for people.
assert.equal(relative(T + 1234, T), "+1.23 s");
assert.equal(relative(T + 12, T), "+12 ms");
assert.equal(relative(T, null), "");
assert.equal(duration(125_000), "2 min 05 s");
assert.equal(duration(3_725_000), "1 h 02 min");

console.log("timing: ok");
