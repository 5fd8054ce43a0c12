// Client certificates OpenSSL or BoringSSL verify and kube-apiserver (Go) refuses (attack round 22:
// signature algorithms, keys, extensions, intermediates), judged by the real kube-apiserver: for each
// case, the SelfSubjectReview answer through mvproxy (both front ends, the local and the peer route)
// names a user only where kube-apiserver, reached directly with the same certificate and chain, names
// the same one. mvproxy may refuse more (a leaf issued by an intermediate the client sends); it never
// asserts a user kube-apiserver would not. The same cases judged offline by Go itself, with every
// verdict: test/security/client-certificate-go.test.ts.
//
// The client is node:https (OpenSSL) rather than kubectl: Go's client cannot load most of these keys
// and certificates, and the point is what the servers make of them. It offers every signature scheme
// (SECLEVEL 0) so that a certificate a server would take is sent.
import assert from 'node:assert/strict';
import https from 'node:https';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { startControlPlane, type KubeControlPlane } from './support/control-plane';
import { forEachFrontend } from './support/suite';
import { pem, rootIssuer } from '../support/cert-cases/builder';
import { CASES, type Built } from '../support/cert-cases/cases';

const REVIEW = JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
/** The apiserver that serves SelfSubjectReview (v1.37.2), and its member; the other member routes it as a peer. */
const SERVES_SSR = 1;

/**
 * Where mvproxy, seeing the leaf only, cannot know what kube-apiserver makes of all the client sent
 * (test/security/client-certificate-go.test.ts OUTSIDE_THE_LEAF says why): a certificate Go cannot
 * parse sent after a valid leaf. kube-apiserver asserts the leaf's user when it is sent alone.
 */
const OUTSIDE_THE_LEAF = new Set(['chain-extra-unparseable']);

/** What a server made of a certificate: "USER name", or the refusal. */
function post(url: string, ca: string, b: Built, version: 'TLSv1.2' | 'TLSv1.3'): Promise<string> {
  return new Promise((resolve) => {
    let req: ReturnType<typeof https.request>;
    try {
      req = https.request(url + '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
        method: 'POST',
        ca,
        agent: false,
        timeout: 10_000,
        cert: [pem(b.leaf), ...b.chain.map(pem)].join(''),
        key: b.key.export({ type: 'pkcs8', format: 'pem' }),
        ciphers: 'DEFAULT:@SECLEVEL=0',
        minVersion: version,
        maxVersion: version,
        headers: { 'content-type': 'application/json', accept: 'application/json' },
      }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString();
          if (res.statusCode === 201) resolve(`USER ${(JSON.parse(body) as { status: { userInfo: { username?: string } } }).status.userInfo.username}`);
          else resolve(`${res.statusCode} ${body.slice(0, 200)}`);
        });
        res.on('error', (e) => resolve(`failed: ${e.message}`));
      });
    } catch (e) {
      return resolve(`the client cannot use it: ${(e as Error).message}`);
    }
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve(`handshake: ${e.message}`));
    req.end(REVIEW);
  });
}

describe('client certificates Go refuses: mvproxy asserts no user kube-apiserver would not', () => {
  let plane: KubeControlPlane;
  let ca = '';
  const built = new Map<string, Built>();
  const direct = new Map<string, string>();

  before(async () => {
    plane = await startControlPlane();
    ca = readFileSync(plane.pki.caFile, 'utf8');
    const root = rootIssuer(plane.pki.cluster.clusterCA);
    for (const c of CASES) {
      const b = c.build(root, plane.pki.dir);
      if (b !== null) built.set(c.id, b);
    }
    for (const c of CASES) {
      const b = built.get(c.id);
      for (const v of b ? (c.versions ?? ['TLSv1.3']) : []) direct.set(`${c.id} ${v}`, await post(plane.apiservers[SERVES_SSR]!.url, ca, b!, v));
    }
  });
  after(async () => plane?.stop());

  test('the controls authenticate directly', () => {
    for (const id of ['ctl-root', 'ctl-ecint', 'key-ed25519', 'eku-none']) assert.equal(direct.get(`${id} TLSv1.3`), `USER a3-${id}`, id);
  });

  forEachFrontend(() => plane, (frontend, members) => {
    test(`every user asserted through mvproxy (${frontend}) is the one kube-apiserver asserts directly`, async () => {
      const holes: string[] = [];
      const asserted: string[] = [];
      for (const c of CASES) {
        const b = built.get(c.id);
        if (!b || OUTSIDE_THE_LEAF.has(c.id)) continue;
        for (const v of c.versions ?? ['TLSv1.3']) {
          const want = direct.get(`${c.id} ${v}`)!;
          for (const [i, route] of [[SERVES_SSR, 'local'], [1 - SERVES_SSR, 'peer']] as const) {
            const got = await post(members()[i]!.url, ca, b, v);
            if (got.startsWith('USER ')) asserted.push(`${c.id} ${route}`);
            if (got.startsWith('USER ') && got !== want) holes.push(`${c.id} (${v}, ${route} route): mvproxy ${got}; kube-apiserver directly: ${want.slice(0, 160)}`);
          }
        }
      }
      assert.deepEqual(holes, []);
      // Not vacuous: a certificate the client CA signed directly, which Go accepts, still authenticates.
      assert.ok(asserted.includes('ctl-root local') && asserted.includes('ctl-root peer'), `asserted: ${asserted.join(', ')}`);
    });
  });
});
