// A peer whose discovery fetch failed is asked again within seconds, not at the next refresh
// (snapshot/publisher.ts nextDelay, as upstream retries a failed fetch in a rate-limited queue):
// a member that starts while its peer is still starting, or a peer back from a restart, used to
// wait the whole --discovery-refresh-interval (30 s by default) to be routed to.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_FRONTEND } from '../support/frontends';
import { twoVersionPlane, OLD, NEW } from '../support/plane';
import { eventually } from '../support/poll';
import type { Plane } from '../../src/demo/topology';

describe(`a failed peer discovery fetch is retried soon (${DEFAULT_FRONTEND} front end)`, () => {
  let plane: Plane & { tmp: string };
  before(async () => {
    plane = await twoVersionPlane(DEFAULT_FRONTEND); // --discovery-refresh-interval=60s
  });
  after(async () => plane?.close());

  test('the peer stopped during a refresh, then started: its discovery is fetched again within seconds, well before the 60 s interval', async () => {
    const fetchedAt = async () => Number((await (await fetch(plane.member(OLD).metricsUrl)).text()).match(new RegExp(`^mvproxy_peer_discovery_last_success_timestamp_seconds\\{peer="mvproxy-${NEW}"\\} (\\S+)`, 'm'))?.[1]);
    const first = await fetchedAt();
    assert.ok(first > 0, 'fetched once at start');
    await plane.stopProxy(NEW);
    await plane.member(OLD).daemon.publisher.refresh(); // fails: the peer is down
    assert.equal(await fetchedAt(), first);
    await plane.startProxy(NEW);
    await eventually(async () => (await fetchedAt()) > first, { what: 'the peer\'s discovery fetched again', timeoutMs: 8000 });
  });
});
