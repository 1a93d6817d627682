// The run viewer's totals (crates/weft-server/ui/timeline.js), in Node.js:
// `usage` events add up to token totals and a cost, and tokens without a
// price make the cost unknown (null), never zero. Run by
// crates/weft/tests/ui_browser.rs; needs no browser and no npm package.

import assert from "node:assert/strict";
import { Timeline } from "../../crates/weft-server/ui/timeline.js";

/** The totals after each of `usages`, as `onTotals` reports them. */
function totalsAfter(usages) {
  const seen = [];
  const timeline = new Timeline(null, { onAnswer() {}, onTotals: (t) => seen.push({ ...t }), onOutcome() {} });
  usages.forEach((usage, i) => timeline.apply({ seq: i + 1, at: i, type: "usage", usage }));
  return seen;
}

const close = (a, b) => Math.abs(a - b) < 1e-12;

// Priced usage: tokens and costs add up.
{
  const seen = totalsAfter([
    { input_tokens: 40, output_tokens: 9, cost_usd: 0.013 },
    { input_tokens: 40, output_tokens: 9, cache_read_tokens: 5, cost_usd: 0.013 },
  ]);
  const last = seen.at(-1);
  assert.equal(last.input_tokens, 80);
  assert.equal(last.output_tokens, 18);
  assert.equal(last.cache_read_tokens, 5);
  assert.ok(close(last.cost_usd, 0.026), `${last.cost_usd}`);
}

// No price: the cost is unknown, not zero.
{
  const seen = totalsAfter([{ input_tokens: 40, output_tokens: 9 }]);
  assert.equal(seen.at(-1).cost_usd, null);
  assert.equal(seen.at(-1).input_tokens, 40);
}

// Tokens without a price make the total unknown, and it stays unknown.
{
  const seen = totalsAfter([
    { input_tokens: 40, output_tokens: 9, cost_usd: 0.013 },
    { input_tokens: 10, output_tokens: 1 },
    { input_tokens: 40, output_tokens: 9, cost_usd: 0.013 },
  ]);
  assert.deepEqual(seen.map((t) => t.cost_usd), [0.013, null, null]);
}

// A usage event without tokens (nor cost) changes no cost.
{
  const seen = totalsAfter([{ input_tokens: 40, output_tokens: 9, cost_usd: 0.013 }, {}]);
  assert.equal(seen.at(-1).cost_usd, 0.013);
}


// Estimated tokens (the provider reported none) mark the totals estimated;
// an estimate of nothing does not.
{
  const seen = totalsAfter([
    { input_tokens: 40, output_tokens: 9 },
    { input_tokens: 0, output_tokens: 0, estimated: true },
  ]);
  assert.equal(seen.at(-1).estimated, false);
  const more = totalsAfter([
    { input_tokens: 40, output_tokens: 9 },
    { input_tokens: 12, output_tokens: 3, estimated: true },
  ]);
  assert.equal(more.at(-1).estimated, true);
  assert.equal(more.at(-1).input_tokens, 52);
}

console.log("totals: ok");
