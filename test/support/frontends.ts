// The client front ends this test process can exercise. uWebSockets.js loads only where its binary
// for this Node ABI finds its glibc (Node 24: glibc >= 2.38); elsewhere its suites cannot run here
// and the glibc 2.41 lane of `npm test` covers them (scripts/test.sh). Never a silent pass: the
// lane prints which front ends it ran (test/integration/frontend-choice.test.ts).
import { loadUWS } from '../../src/listener/uws';
import type { Frontend } from '../../src/config/types';

const loaded = loadUWS();

/** Why uWS cannot load in this process, or undefined when it can. */
export const UWS_UNAVAILABLE: string | undefined = 'error' in loaded ? loaded.error.message.split('\n').filter((l) => /GLIBC|cannot open|not found/i.test(l))[0] ?? loaded.error.message.split('\n')[0] : undefined;

/**
 * Front ends to run each front-end suite on: both where uWS loads, unless MVPROXY_TEST_FRONTENDS
 * names them. npm test's glibc 2.41 lane sets it to `uws` (scripts/test.sh): every file of that lane
 * ran on the node front end in lane 1 already, and running it again took ~1/3 of the lane (CI under
 * 45 minutes cold). A front end named there that cannot load fails the run, never skips.
 */
export const FRONTENDS: readonly Frontend[] = chosen(UWS_UNAVAILABLE === undefined ? ['uws', 'node'] : ['node']);

function chosen(available: Frontend[]): Frontend[] {
  const named = process.env.MVPROXY_TEST_FRONTENDS;
  if (named === undefined || named === '') return available;
  const want = named.split(',').map((s) => s.trim()) as Frontend[];
  const missing = want.filter((f) => !available.includes(f));
  if (missing.length > 0) throw new Error(`MVPROXY_TEST_FRONTENDS=${named}: ${missing.join(', ')} cannot run in this process${UWS_UNAVAILABLE ? ` (uWS: ${UWS_UNAVAILABLE})` : ''}`);
  return want;
}

/** The front end a test that is not about front ends runs on: the default choice of this runtime. */
export const DEFAULT_FRONTEND: Frontend = FRONTENDS[0];
