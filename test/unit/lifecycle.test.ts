// The daemon's lifecycle phases (src/lifecycle/state.ts) and what the listeners read of them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Lifecycle } from '../../src/lifecycle/state';
import { ListenerState } from '../../src/listener/exchange';

test('phases only move forward; shuttingDown from terminating on, draining from draining on', () => {
  const l = new Lifecycle();
  assert.equal(l.phase, 'starting');
  assert.equal(l.to('serving'), true);
  assert.equal(l.to('starting'), false, 'never back');
  assert.equal(l.phase, 'serving');
  assert.deepEqual([l.shuttingDown, l.draining], [false, false]);
  assert.equal(l.to('terminating'), true);
  assert.deepEqual([l.shuttingDown, l.draining], [true, false], '/readyz fails, requests are still served');
  assert.equal(l.to('terminating'), false, 'a second shutdown does nothing');
  assert.equal(l.to('draining'), true);
  assert.deepEqual([l.shuttingDown, l.draining], [true, true]);
  assert.equal(l.to('stopped'), true);
  assert.deepEqual([l.shuttingDown, l.draining], [true, true]);
});

test("a listener drains when the daemon's lifecycle does, or when it stops accepting on its own", () => {
  const l = new Lifecycle();
  l.to('serving');
  const daemons = new ListenerState(l);
  assert.equal(daemons.draining, false);
  l.to('draining');
  assert.equal(daemons.draining, true);
  const alone = new ListenerState();
  assert.equal(alone.draining, false);
  alone.stopAccepting();
  assert.equal(alone.draining, true);
});
