// --client-ca-file is read as kube-apiserver reads it (src/api/go-pem.ts, a port of Go's pem.Decode):
// for 12,000 seeded PEM-like inputs, the blocks the port finds (count, type, bytes, whether it has
// headers) are the ones Go's own pem.Decode finds (test/pem-oracle). OpenSSL's reader loaded CAs Go
// skips (after a byte-order mark, a form feed ending a line), and mvproxy asserted their users.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { goPEMBlocks } from '../../src/api/go-pem';
import { buildGoProgram, oracleUnavailable } from '../support/go-oracle';
import { pemInputs } from '../support/pem-inputs';

test("the PEM blocks mvproxy reads in a CA file are the ones Go's pem.Decode reads", { skip: oracleUnavailable("this test compares with Go's encoding/pem (test/pem-oracle)") }, () => {
  const inputs = [1, 2, 3].flatMap((seed) => pemInputs(seed, 4000));
  const dir = mkdtempSync(join(tmpdir(), 'mvproxy-pem-'));
  try {
    const batch = join(dir, 'batch.bin');
    writeFileSync(batch, Buffer.concat(inputs.flatMap((x) => [Buffer.from(Uint32Array.of(x.length).buffer), Buffer.from(x, 'latin1')])));
    const out = execFileSync(buildGoProgram(join(__dirname, '..', 'pem-oracle'), 'pem-oracle'), [batch], { maxBuffer: 1 << 30 }).toString('latin1');
    const go: string[][] = [];
    for (const line of out.split('\n')) {
      if (line.startsWith('#')) go.push([]);
      else if (line) go[go.length - 1]!.push(line);
    }
    assert.equal(go.length, inputs.length);
    // Go counts headers in a map (a repeated key once): only whether there are any matters here.
    const norm = (l: string) => l.replace(/^(\S+) (\d+) /, (_, t: string, h: string) => `${t} ${h === '0' ? 0 : 1} `);
    const differ: string[] = [];
    let certificates = 0;
    inputs.forEach((x, i) => {
      const ours = goPEMBlocks(x).map((b) => `${Buffer.from(b.type, 'latin1').toString('hex')} ${b.headers} ${b.bytes.toString('hex')}`);
      certificates += ours.filter((l) => l.startsWith('4345525449464943415445 0 ')).length;
      if (ours.length !== go[i]!.length || ours.some((l, k) => norm(l) !== norm(go[i]![k]!))) differ.push(JSON.stringify(x).slice(0, 200));
    });
    assert.deepEqual(differ, []);
    assert.ok(certificates > 1000, `${certificates} CERTIFICATE blocks without headers among the inputs`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
