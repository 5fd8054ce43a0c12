// Client certificates with unusual names, judged by the real kube-apiserver (issue 27 item 2): for
// each certificate, the SelfSubjectReview answer through mvproxy — both front ends, the local route
// (the member whose apiserver serves SelfSubjectReview) and the peer route (the other member) —
// equals the answer of kube-apiserver reached directly with the same certificate, or, where a
// header cannot carry the name unchanged, is mvproxy's own 401 Status saying so. Never another user.
//
// The client is node:https rather than kubectl for the table: Go's tls.X509KeyPair (kubectl,
// client-go) refuses to load some of these certificates itself (a negative serial), and the point
// is what the servers make of them. kubectl auth whoami at its defaults checks the names a Go
// client can load at the end.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { kubectlAs, startControlPlane, type KubeControlPlane } from './support/control-plane';
import { KubeClient, type UserInfo } from './support/client';
import { forEachFrontend } from './support/suite';
import type { UserCert } from './support/pki';
import { CN, derClientCert, nameDER, O, TAG, UID, type DerCertOptions } from '../support/der-cert';

/** What a server made of a certificate: a user, a refusal (401, or a failed handshake), or another answer (403 to system:anonymous). */
type Outcome = { user: UserInfo } | { refused: string } | { other: string };

/** Same: mvproxy answers exactly as kube-apiserver. Refused: mvproxy refuses with its 401 Status (a header cannot carry the name), whatever kube-apiserver says. */
type Expect = 'same' | 'refused';

/**
 * respellIssuer: the issuer is the CA's CN upper-cased (OpenSSL compares names case-folded, Go byte
 * for byte). token: the request also carries a ServiceAccount token.
 */
const CASES: { name: string; cert: DerCertOptions; expect: Expect; kubectl?: boolean; respellIssuer?: true; token?: true }[] = [
  { name: 'two CNs (the last is the user)', cert: { subject: [CN('first'), CN('system:admin')] }, expect: 'same', kubectl: true },
  { name: 'two CNs in one multi-valued RDN', cert: { subject: [[CN('first'), CN('second')], O('devs')] }, expect: 'same' },
  { name: 'a CN in Latin-1 range (UTF8String)', cert: { subject: [CN('café'), O('ünïcode')] }, expect: 'same', kubectl: true },
  { name: 'a CN as T61String (Latin-1 bytes)', cert: { subject: [CN('caf\xe9', TAG.T61), O('gr\xfcn', TAG.T61)] }, expect: 'same' },
  { name: 'a CN as BMPString', cert: { subject: [CN('Ωmega', TAG.BMP)] }, expect: 'same' },
  { name: 'a CN with CJK and emoji', cert: { subject: [CN('用户🚀'), O('グループ')] }, expect: 'same', kubectl: true },
  { name: 'commas, quotes and backslashes in CN and O', cert: { subject: [CN('a,b "c" \\d=e+f'), O('x,y'), O('"q"'), O('back\\slash')] }, expect: 'same' },
  { name: 'a tab inside the CN', cert: { subject: [CN('tab\there')] }, expect: 'same' },
  { name: 'PrintableString with * and & (Go allows them)', cert: { subject: [CN('star*&amp', TAG.PRINTABLE)] }, expect: 'same' },
  { name: 'no O', cert: { subject: [CN('solo')] }, expect: 'same' },
  { name: 'one O', cert: { subject: [CN('one'), O('team')] }, expect: 'same' },
  { name: '200 Os, in order', cert: { subject: [CN('many'), ...Array.from({ length: 200 }, (_, i) => O(`group-${String(i).padStart(3, '0')}`))] }, expect: 'same' },
  { name: 'an empty CN (no user: anonymous)', cert: { subject: [CN(''), O('devs')] }, expect: 'same' },
  { name: 'no CN at all', cert: { subject: [O('devs')] }, expect: 'same' },
  { name: 'an empty last CN after a real one', cert: { subject: [CN('alice'), CN('')] }, expect: 'same' },
  { name: 'no CN, and a bearer token (the token decides)', cert: { subject: [O('devs')] }, token: true, expect: 'same' },
  { name: 'a CN, and a bearer token (the certificate decides)', cert: { subject: [CN('cert-wins')] }, token: true, expect: 'same' },
  { name: 'a zero serial', cert: { subject: [CN('zero-serial')], serial: Buffer.from([0]) }, expect: 'same' },
  { name: 'a 20-byte serial', cert: { subject: [CN('long-serial')], serial: Buffer.from([0x7f, ...Array<number>(19).fill(0xab)]) }, expect: 'same' },
  { name: 'a negative serial (Go refuses the certificate)', cert: { subject: [CN('negative-serial')], serial: Buffer.from([0x80, 0x01]) }, expect: 'same' },
  { name: 'an invalid PrintableString (Go refuses the certificate)', cert: { subject: [CN('at@sign', TAG.PRINTABLE)] }, expect: 'same' },
  { name: 'a UniversalString CN (OpenSSL reads it, Go refuses the certificate)', cert: { subject: [CN(Buffer.from([0, 0, 0, 0x75]), 0x1c)] }, expect: 'same' },
  { name: 'an issuer spelled in other case than its CA (OpenSSL verifies it, Go does not)', cert: { subject: [CN('respelled-issuer')] }, respellIssuer: true, expect: 'same' },
  { name: 'a respelled issuer, and a bearer token (the token decides)', cert: { subject: [CN('respelled-issuer')] }, respellIssuer: true, token: true, expect: 'same' },
  { name: 'a UID', cert: { subject: [CN('with-uid'), UID('uid-123'), O('devs')] }, expect: 'same' },
  { name: 'two UIDs (kube-apiserver refuses)', cert: { subject: [CN('two-uids'), UID('a'), UID('b')] }, expect: 'same' },
  { name: 'an empty UID (kube-apiserver refuses)', cert: { subject: [CN('empty-uid'), UID('')] }, expect: 'same' },
  { name: 'a newline in the CN', cert: { subject: [CN('alice\nsystem:admin')] }, expect: 'refused' },
  { name: 'a trailing space in the CN', cert: { subject: [CN('alice ')] }, expect: 'refused' },
  { name: 'a newline in an O', cert: { subject: [CN('alice'), O('devs\nsystem:masters')] }, expect: 'refused' },
  { name: 'an empty O', cert: { subject: [CN('alice'), O('')] }, expect: 'refused' },
];

const REVIEW = { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' };
/** The apiserver that serves SelfSubjectReview (v1.37.2), and its member; the other member routes it as a peer. */
const SERVES_SSR = 1;

describe('client certificates with unusual names: mvproxy asserts what kube-apiserver reads, or refuses', () => {
  let plane: KubeControlPlane;
  const certs = new Map<string, UserCert>();
  let token = '';

  before(async () => {
    plane = await startControlPlane();
    const admin = new KubeClient(plane.apiservers[0]!.url, plane.pki.caFile, { cert: plane.admin });
    await admin.json('POST', '/api/v1/namespaces/default/serviceaccounts', { body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'certbot' } } });
    token = (await admin.json<{ status: { token: string } }>('POST', '/api/v1/namespaces/default/serviceaccounts/certbot/token', { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } } })).status.token;
    const ca = plane.pki.cluster.clusterCA;
    CASES.forEach((c, i) => {
      const caCN = /CN=([^\n,]+)/.exec(new X509Certificate(ca.cert).subject)![1]!;
      const pair = derClientCert(ca, c.respellIssuer ? { ...c.cert, issuer: nameDER([CN(caCN.toUpperCase())]) } : c.cert);
      const certFile = join(plane.pki.dir, `odd-${i}.crt`);
      const keyFile = join(plane.pki.dir, `odd-${i}.key`);
      writeFileSync(certFile, pair.cert);
      writeFileSync(keyFile, pair.key, { mode: 0o600 });
      certs.set(c.name, { ...pair, certFile, keyFile });
    });
  });
  after(async () => plane?.stop());

  const review = async (base: string, cert: UserCert, withToken?: boolean): Promise<Outcome & { status: number; body: string }> => {
    const headers = withToken ? { authorization: `Bearer ${token}` } : undefined;
    const r = await new KubeClient(base, plane.pki.caFile, { cert }).request('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', { body: REVIEW, headers });
    if (r.status === 201) return { user: (JSON.parse(r.body) as { status: { userInfo: UserInfo } }).status.userInfo, status: r.status, body: r.body };
    if (r.status === 401 || r.status === 0) return { refused: r.status === 0 ? 'handshake' : '401', status: r.status, body: r.body };
    return { other: `${r.status} ${(JSON.parse(r.body) as { message?: string }).message}`, status: r.status, body: r.body };
  };

  forEachFrontend(() => plane, (frontend, members) => {
    for (const c of CASES) {
      test(`${c.name}: ${c.expect === 'same' ? 'the same outcome as directly' : "mvproxy's 401 Status"}, local and peer route`, async () => {
        const cert = certs.get(c.name)!;
        const direct = await review(plane.apiservers[SERVES_SSR]!.url, cert, c.token);
        for (const [i, route] of [[SERVES_SSR, 'local'], [1 - SERVES_SSR, 'peer']] as const) {
          const through = await review(members()[i]!.url, cert, c.token);
          const where = `${route} route through ${members()[i]!.name} (${frontend}); directly: ${direct.body.slice(0, 300)}`;
          if (c.expect === 'same' && 'user' in direct) {
            assert.ok('user' in through, `${where}: got ${through.status} ${through.body.slice(0, 300)}`);
            assert.deepEqual(through.user, direct.user, where);
          } else if (c.expect === 'same' && 'other' in direct) {
            assert.deepEqual('other' in through ? through.other : through.body, direct.other, where);
          } else {
            // Refused by kube-apiserver (a failed handshake or 401), or not representable: mvproxy
            // refuses too — at the handshake where OpenSSL cannot parse it either, else with a
            // 401 Status. Never a user.
            assert.ok('refused' in through, `${where}: mvproxy asserted ${JSON.stringify('user' in through ? through.user : through)}`);
            if (through.status === 401) {
              const s = JSON.parse(through.body) as { kind: string; reason: string; code: number; message: string };
              assert.deepEqual([s.kind, s.reason, s.code], ['Status', 'Unauthorized', 401], where);
            }
            if (c.expect === 'refused') {
              assert.ok('user' in direct, `kube-apiserver reads a user from it (${direct.body.slice(0, 200)})`);
              assert.match(through.body, /MVP_ERR_CERTIFICATE_USER/, where);
            }
          }
        }
      });
    }

    test('kubectl auth whoami at its defaults (HTTP/2): the same user as directly, on both routes', async () => {
      for (const c of CASES.filter((x) => x.kubectl)) {
        const kc = plane.kubeconfig(`odd-${frontend}-${CASES.indexOf(c)}`, { cert: certs.get(c.name)! });
        const whoami = async (server: string) => (JSON.parse((await kubectlAs(kc, server, ['auth', 'whoami', '-o', 'json'])).stdout) as { status: { userInfo: UserInfo } }).status.userInfo;
        const direct = await whoami(plane.apiservers[SERVES_SSR]!.url);
        for (const m of members()) assert.deepEqual(await whoami(m.url), direct, `${c.name} through ${m.name}`);
      }
    });
  });
});

