// The client front ends this test process can exercise. uWebSockets.js loads only where its binary
// for this Node ABI finds its glibc (Node 24: glibc >= 2.38); elsewhere its suites cannot run here
// and the glibc 2.41 lane of `npm test` covers them (scripts/test.sh). Never a silent pass: the
// lane prints which front ends it ran (test/integration/frontend-choice.test.ts).
import { loadUWS } from '../../src/listener/uws';
import type { Frontend } from '../../src/config/types';

const loaded = loadUWS();

/** Why uWS cannot load in this process, or undefined when it can. */
export const UWS_UNAVAILABLE: string | undefined = 'error' in loaded ? loaded.error.message.split('\n').filter((l) => /GLIBC|cannot open|not found/i.test(l))[0] ?? loaded.error.message.split('\n')[0] : undefined;

/** Front ends to run each front-end suite on. */
export const FRONTENDS: readonly Frontend[] = UWS_UNAVAILABLE === undefined ? ['uws', 'node'] : ['node'];

/** The front end a test that is not about front ends runs on: the default choice of this runtime. */
export const DEFAULT_FRONTEND: Frontend = FRONTENDS[0];
