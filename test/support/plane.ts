// Test helpers around the mixed-version plane: a temp dir, a plane on a given front end, and small
// HTTP helpers on undici.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { startPlane, type Plane, type PlaneOptions } from '../../src/demo/topology';
import type { FrontendSetting } from '../../src/config/types';

export const OLD = 'apiserver-old'; // v1.33
export const NEW = 'apiserver-new'; // v1.37

export async function twoVersionPlane(frontend: FrontendSetting, extra: Partial<PlaneOptions> = {}): Promise<Plane & { tmp: string }> {
  const tmp = mkdtempSync(join(tmpdir(), 'mvproxy-test-'));
  const plane = await startPlane({
    dir: join(tmp, 'pki'),
    frontend,
    members: [
      { name: OLD, kubernetesVersion: 'v1.33' },
      { name: NEW, kubernetesVersion: 'v1.37' },
    ],
    configure: (c) => {
      c.connectTimeoutMs = 1000;
      c.discoveryRefreshIntervalMs = 60_000;
    },
    ...extra,
  });
  const close = plane.close.bind(plane);
  return Object.assign(plane, {
    tmp,
    async close() {
      await close();
      rmSync(tmp, { recursive: true, force: true });
    },
  });
}

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json(): any;
}

export async function call(base: string, path: string, init: { method?: string; headers?: Record<string, string | string[]>; body?: string | Buffer } = {}): Promise<Reply> {
  const res = await request(base + path, {
    method: (init.method ?? 'GET') as 'GET',
    headers: init.headers,
    body: init.body,
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, json: () => JSON.parse(text) };
}

/** The identity echo the simulated apiserver sends back (X-Sim-Request-Identity). */
export function identity(r: Reply): { authorization: string | null; remoteUser: string | null; remoteGroups: string[]; peerProxied: string[]; forwardedFor: string | null } {
  return JSON.parse(String(r.headers['x-sim-request-identity']));
}

export const AUTH = { authorization: 'Bearer test-token-123' };
