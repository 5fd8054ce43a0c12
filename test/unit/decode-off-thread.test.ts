// A peer's discovery body is decoded in the merge worker (merger.decode, merge.worker.ts
// decodeTask): a hostile body that takes the decoder a long time must not stall the event loop,
// which serves every request. Judged by what the main thread manages to do meanwhile (timers
// fire), not by a clock: decoded inline, not one timer could fire before it ends.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { DiscoveryMerger } from '../../src/aggregation/merger';
import { DiscoveryFetchError } from '../../src/aggregation/errors';
import { routingView } from '../../src/aggregation/decode';
import { aggregatedFixture } from '../support/fixtures';

const worker = new DiscoveryMerger({ threads: 1 });
const inline = new DiscoveryMerger({ inline: true });
after(async () => {
  await worker.close();
  await inline.close();
});

/** ~8 MiB of well-formed JSON whose items are arrays (a type error only found after the whole parse). */
const hostile = Buffer.from(`{"apiVersion":"apidiscovery.k8s.io/v2","kind":"APIGroupDiscoveryList","items":[${'[[],[]],'.repeat(1_000_000)}[]]}`);

async function ticksDuring(p: Promise<unknown>): Promise<{ ticks: number; result: unknown }> {
  let ticks = 0;
  let done = false;
  const tick = () => {
    if (done) return;
    ticks++;
    setTimeout(tick, 0);
  };
  setTimeout(tick, 0);
  const result = await p.then((v) => v, (e: unknown) => e);
  done = true;
  return { ticks, result };
}

test('a hostile body is refused by the worker while the main thread keeps running; inline, nothing else runs until it is done', async () => {
  const off = await ticksDuring(worker.decode(hostile, 'GET /apis'));
  assert.ok(off.result instanceof DiscoveryFetchError && off.result.code === 'MVP_ERR_DISCOVERY_DECODE', String(off.result));
  assert.ok(off.ticks > 0, 'timers fired on the main thread during the decode');
  // The same decode inline is one synchronous call: the promise is settled before any timer can fire.
  const on = await ticksDuring(Promise.resolve().then(() => inline.decode(hostile, 'GET /apis')));
  assert.ok(on.result instanceof DiscoveryFetchError);
  assert.equal(on.ticks, 0);
});

test('a real document decodes in the worker to the same routing view, JSON and digest as inline', async () => {
  const body = Buffer.from(JSON.stringify(aggregatedFixture('v1.37')));
  const a = await worker.decode(body, 'GET /apis');
  const b = await inline.decode(body, 'GET /apis');
  assert.deepEqual(a.routes, b.routes);
  assert.ok(a.raw.equals(b.raw));
  assert.equal(a.digest, b.digest);
  assert.deepEqual(a.routes, routingView(aggregatedFixture('v1.37')));
});
