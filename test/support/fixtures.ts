// Test access to the discovery fixtures in fixtures/kubernetes-discovery (real Kubernetes
// documents; where each comes from: fixtures/kubernetes-discovery/SOURCE.md).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { APIGroupDiscoveryList } from '../../src/aggregation/types';

export const FIXTURES_DIR = join(__dirname, '..', '..', 'fixtures', 'kubernetes-discovery');

export function readFixture(rel: string): Buffer {
  return readFileSync(join(FIXTURES_DIR, rel));
}

export function aggregatedFixture(version: 'v1.33' | 'v1.37'): APIGroupDiscoveryList {
  const dir = version === 'v1.33' ? 'v1.33-0b1dcaba' : 'v1.37.0-dev-6732d913';
  return JSON.parse(readFixture(join(dir, 'aggregated_v2.json')).toString('utf8'));
}
