// The differential test's cases and its judge (test/security/differential.test.ts). A case is what a
// client sends: HTTP/1.1 bytes (pipelined requests, any framing) or HTTP/2 streams, on the local or
// the peer route, as nobody, a bearer token or a certificate user. The same bytes go to Go's own
// server (the oracle's direct listeners) and through mvproxy to Go (its upstreams), and the judge
// holds three invariants against what Go parsed on both sides:
//   1. every request Go parsed from what mvproxy forwarded is one Go parsed from the client's own
//      bytes, none twice, never one more (mvproxy may answer or refuse some itself), and
//      Go refused none of mvproxy's bytes;
//   2. the front-proxy identity headers Go saw are exactly mvproxy's assertion for the connection
//      (none for nobody and bearer tokens; the certificate's user and groups);
//   3. the method, the target (the client's bytes), the body and every end-to-end header are the
//      client's; hop-by-hop headers, Host, X-Forwarded-For and the framing are the proxy's own.
// Cases are generated from a seed (test/support/fuzz-seed.ts: MVPROXY_FUZZ_SEED replays a run),
// beside named ones: the exploits of issue 38 and the shapes that broke before.

import { createHash, X509Certificate } from 'node:crypto';
import type { H2Request } from './raw-wire';
import { prng } from './fuzz-seed';
import type { OracleError, OracleRequest } from './go-oracle';

export type Route = 'local' | 'peer';
export type Who = 'anonymous' | 'bearer' | 'certificate' | 'certificate-utf8';

export interface WireCase {
  name: string;
  route: Route;
  who: Who;
  /** HTTP/1.1 bytes, pipelined requests and all; or HTTP/2 streams (node front end, TLS). */
  h1?: Buffer;
  h2?: H2Request[];
}

/** The certificate user of `who: certificate` cases: what mvproxy must assert, and nothing else. */
export const CERT_USER = { user: 'mvproxy-diff-user', groups: ['mvproxy-diff-group'] };
/**
 * `who: certificate-utf8`: names that end in a non-ASCII character, whose last bytes a parser that
 * trims bytes >= 0x80 (uWS) would drop: "system:mastersé" must never arrive as "system:masters".
 */
export const CERT_USER_UTF8 = { user: 'mvproxy-diff-us\u00e9r\u00e9', groups: ['system:masters\u00e9'] };

/** A resource only the local member's apiserver serves, and one only the peer's (v1.37: scheduling.k8s.io/v1beta1 workloads). */
export const LOCAL_PATH = '/api/v1/namespaces/default/configmaps';
export const PEER_PATH = '/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads';

const L = (s: string) => Buffer.from(s, 'latin1');
const U = (s: string) => Buffer.from(s, 'utf8');

/** Each byte <= 0x20 of `s` as the character U+0100 + byte, in UTF-8: what the uWS front end wrote upstream as CR, LF and SP (issue 38). */
export function highSmuggle(s: string): Buffer {
  let out = '';
  for (const ch of s) out += ch.charCodeAt(0) <= 0x20 ? String.fromCharCode(0x100 + ch.charCodeAt(0)) : ch;
  return U(out);
}

/** A logical request, serialised by h1Bytes or h2Request. */
export interface Req {
  method: Buffer;
  target: Buffer;
  fields: [Buffer, Buffer][];
  body?: Buffer;
  /** How an HTTP/1.1 body is framed: by Content-Length (default), chunked, or raw extra fields the case adds itself. */
  framing?: 'length' | 'chunked' | 'none';
}

export function h1Bytes(reqs: Req[], o: { closeLast?: boolean } = {}): Buffer {
  const parts: Buffer[] = [];
  reqs.forEach((r, i) => {
    parts.push(r.method, L(' '), r.target, L(' HTTP/1.1\r\nHost: 127.0.0.1\r\n'));
    for (const [n, v] of r.fields) parts.push(n, L(': '), v, L('\r\n'));
    const framing = r.framing ?? 'length';
    if (r.body !== undefined && framing === 'length') parts.push(L(`Content-Length: ${r.body.length}\r\n`));
    if (r.body !== undefined && framing === 'chunked') parts.push(L('Transfer-Encoding: chunked\r\n'));
    if (o.closeLast !== false && i === reqs.length - 1) parts.push(L('Connection: close\r\n'));
    parts.push(L('\r\n'));
    if (r.body !== undefined) parts.push(framing === 'chunked' ? Buffer.concat([L(r.body.length.toString(16) + '\r\n'), r.body, L('\r\n0\r\n\r\n')]) : r.body);
  });
  return Buffer.concat(parts);
}

export function h2Request(r: Req): H2Request {
  const fields: [Buffer, Buffer][] = [
    [L(':method'), r.method],
    [L(':scheme'), L('https')],
    [L(':authority'), L('127.0.0.1')],
    [L(':path'), r.target],
    ...r.fields,
  ];
  if (r.body !== undefined) fields.push([L('content-length'), L(String(r.body.length))]);
  return { fields, body: r.body };
}

/**
 * The streams as node:http2 hands them to mvproxy: nghttp2 silently drops some fields Go's HTTP/2
 * server resets a stream for (a name that is not a token, a value with a control byte, or with
 * whitespace at either end: nghttp2_http_on_header answers NGHTTP2_ERR_IGN_HTTP_HEADER, and node
 * offers no switch), so mvproxy never sees them and cannot refuse the request for them; it forwards
 * the request without them (README "Limitations"). `delivered` is what a plain node:http2 server
 * received of each stream (test/security/differential.test.ts asks one): the client's own fields
 * are kept where node delivered them, in order, so the judge compares against what Go parses of the
 * request node let through, and a dropped field never reaches the apiserver.
 */
export function nodeView(streams: H2Request[], delivered: (string[] | undefined)[]): H2Request[] {
  return streams.map((r, i) => {
    const got = delivered[i];
    if (got === undefined) return r; // node reset it: mvproxy never sees it
    let at = 0;
    const fields = r.fields.filter(([n, v]) => {
      const name = n.toString('latin1');
      if (name.startsWith(':')) return true;
      for (let k = at; k < got.length; k += 2) {
        if (got[k] === name.toLowerCase() && got[k + 1] === v.toString('latin1')) {
          at = k + 2;
          return true;
        }
      }
      return false;
    });
    return { fields, body: r.body };
  });
}

// ---- the named cases

/** The exploit of issue 38: a query that ends the request line and adds identity lines, each byte <= 0x20 as U+0100 + byte. */
export function exploitTarget(path: string): Buffer {
  return Buffer.concat([L(path + '?x='), highSmuggle('" HTTP/1.1\r\nX-Remote-User: system:admin\r\nX-Remote-Group: system:masters\r\nX: "')]);
}

/** A second request smuggled behind the first in one target (the ClusterRoleBinding of issue 38). */
export function smuggledRequestTarget(path: string): Buffer {
  return Buffer.concat([L(path + '?x='), highSmuggle(' HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\nPOST /apis/rbac.authorization.k8s.io/v1/clusterrolebindings HTTP/1.1\r\nX-Remote-User: system:admin\r\nX-Remote-Group: system:masters\r\nX:')]);
}

export function namedCases(o: { h2: boolean }): WireCase[] {
  const out: WireCase[] = [];
  const whos: Who[] = ['anonymous', 'certificate', 'certificate-utf8'];
  for (const route of ['local', 'peer'] as Route[]) {
    const path = route === 'local' ? LOCAL_PATH : PEER_PATH;
    for (const who of whos) {
      const get = (target: Buffer, fields: [Buffer, Buffer][] = []): Req => ({ method: L('GET'), target, fields });
      const named = (name: string, reqs: Req[]) => {
        out.push({ name: `${name} (h1, ${route}, ${who})`, route, who, h1: h1Bytes(reqs) });
        if (o.h2 && reqs.length === 1) out.push({ name: `${name} (h2, ${route}, ${who})`, route, who, h2: reqs.map(h2Request) });
      };
      named('issue 38: identity lines in the query as U+0100+byte', [get(exploitTarget(path))]);
      named('issue 38: a whole request smuggled in the query as U+0100+byte', [get(smuggledRequestTarget(path))]);
      named('issue 38: identity lines in the path as U+0100+byte', [get(Buffer.concat([L(path + '/x'), highSmuggle(' HTTP/1.1\r\nX-Remote-User: system:admin\r\nX:')]))]);
      named('issue 38: a watch (HTTP/2 on the peer hop) with identity lines in the query', [get(Buffer.concat([L(path + '?watch=true&x='), highSmuggle('\r\nX-Remote-User: system:admin\r\nX:')]))]);
      named('a header value as U+0100+byte', [get(L(path), [[L('X-Note'), highSmuggle('a\r\nX-Remote-User: system:admin')]])]);
      named('raw CR in the target', [get(L(path + '?a=\rX-Remote-User: system:admin'))]);
      named('DEL in the target', [get(L(path + '?a=\x7f'))]);
      named('NUL in the target', [get(L(path + '?a=\x00'))]);
      named('a raw high byte in the target (Go takes it)', [get(L(path + '/na\xefme'))]);
      named('valid UTF-8 in the target (Go takes it)', [get(Buffer.concat([L(path + '/'), U('n\u00e4me\u4e2d')]))]);
      named('invalid UTF-8 in the target', [get(L(path + '/n\xc0\xafme\xff'))]);
      named('the encoding of U+FFFD in the target', [get(Buffer.concat([L(path + '/n'), U('\ufffd')]))]);
      named('an empty query (?)', [get(L(path + '?'))]);
      named('a fragment in the target', [get(L(path + '#frag?x=1'))]);
      named('DEL in a header value', [get(L(path), [[L('X-Note'), L('a\x7fb')]])]);
      named('a method that is not a token', [{ method: L('G@T'), target: L(path), fields: [] }]);
      named('a lowercase method', [{ method: L('get'), target: L(path), fields: [] }]);
      named('client identity headers, every spelling', [get(L(path), [[L('X-Remote-User'), L('system:admin')], [L('x-remote-group'), L('system:masters')], [L('X-REMOTE-EXTRA-scopes'), L('x')], [L('X-Remote-Uid'), L('0')]])]);
      named('an identity header named in Connection', [get(L(path), [[L('Connection'), L('X-Remote-User')], [L('X-Remote-User'), L('system:admin')]])]);
      named('a peer-proxied marker from the client', [get(L(path), [[L('X-Kubernetes-Peer-Proxied'), L('true')]])]);
      named('UTF-8 at both ends of a header value', [get(L(path), [[L('Impersonate-User'), U('\u00e9admin\u00e9')]])]);
      named('pipelined: a request with client identity headers behind a GET', [get(L(path)), get(L(path + '/two'), [[L('X-Remote-User'), L('system:admin')]])]);
      named('pipelined behind an unsupported Transfer-Encoding', [{ method: L('POST'), target: L(path), fields: [[L('Transfer-Encoding'), L('gzip')]], body: L('{}'), framing: 'none' }, get(L(path + '/two'))]);
      named('pipelined behind Expect: 100-nope', [{ method: L('POST'), target: L(path), fields: [[L('Expect'), L('100-nope')]], body: L('{}') }, get(L(path + '/two'))]);
      named('pipelined behind a bad target', [get(L(path + '?a=\x7f')), get(L(path + '/two'))]);
      named('pipelined behind a create', [{ method: L('POST'), target: L(path), fields: [[L('Content-Type'), L('application/json')]], body: L('{"kind":"ConfigMap"}') }, get(L(path + '/two'))]);
    }
  }
  return out;
}

// ---- generated cases


/** Pieces a generated target, name or value is spliced from. */
const PIECES: Buffer[] = [
  ...Array.from({ length: 0x21 }, (_, b) => Buffer.from([b])), // controls and SP
  Buffer.from([0x7f]),
  Buffer.from([0x80]),
  Buffer.from([0xa0]),
  Buffer.from([0xc4]),
  Buffer.from([0xff]),
  highSmuggle('\r'),
  highSmuggle('\n'),
  highSmuggle(' '),
  highSmuggle('\0'),
  highSmuggle('\t'),
  U('\u00e9'),
  U('\u4e2d'),
  U('\u{1f600}'),
  U('\ufffd'),
  Buffer.from([0xc0, 0xaf]),
  Buffer.from([0xed, 0xa0, 0x80]),
  L('%'),
  L('%0d%0a'),
  L('%00'),
  L('%2F'),
  L('?'),
  L('#'),
  L('/'),
  L('..'),
  L('\\'),
  L('"'),
  L(':'),
  L(','),
  L(';'),
  L('='),
  L('&'),
  L('@'),
  L('X-Remote-User: system:admin'),
  L('\r\nX-Remote-User: system:admin'),
  highSmuggle('\r\nX-Remote-User: system:admin'),
];

const NAMES: Buffer[] = [
  L('X-Note'),
  L('Accept'),
  L('User-Agent'),
  L('Impersonate-User'),
  L('Impersonate-Group'),
  L('Authorization'),
  L('X-Remote-User'),
  L('x-remote-group'),
  L('X-Remote-Extra-Foo'),
  L('X-Remote-Uid'),
  L('X_Remote_User'),
  L('X-Remote-User '),
  L('X-Kubernetes-Peer-Proxied'),
  L('X-Forwarded-For'),
  L('Connection'),
  L('Keep-Alive'),
  L('TE'),
  L('Upgrade'),
  L('Proxy-Authorization'),
  L('Content-Type'),
  // Names an object lists before all others (index-like keys): the HTTP/2 writer once sent them ahead of :method.
  L('0'),
  L('123'),
];

export interface Generator {
  next(): WireCase;
}

/** Cases from a seed: a request or a pipeline of up to three, each part of it spliced with hostile pieces. */
/** `h2`: the front end is the node one (HTTP/2 streams too, and llhttp's leniencies left out of the HTTP/1.1 cases). */
export function generator(seed: number, o: { h2: boolean; routes: readonly Route[]; watches?: number }): Generator {
  const rnd = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const chance = (p: number) => rnd() < p;
  const splice = (base: Buffer, n: number): Buffer => {
    let b = base;
    for (let i = 0; i < n; i++) {
      const at = Math.floor(rnd() * (b.length + 1));
      b = Buffer.concat([b.subarray(0, at), pick(PIECES), b.subarray(at)]);
    }
    return b;
  };
  let n = 0;
  const one = (route: Route): Req => {
    const path = route === 'local' ? LOCAL_PATH : PEER_PATH;
    // `watches`: the share of requests that are watches (long-running: mvproxy's HTTP/2 client carries them to a TLS upstream).
    const watch = o.watches !== undefined && chance(o.watches);
    let method = watch ? L('GET') : chance(0.1) ? splice(L(pick(['GET', 'POST'])), 1) : L(pick(['GET', 'GET', 'GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD']));
    // A CR or LF spliced in front of the method is an empty line before the request line: RFC 9112
    // §2.2 lets a server skip it, llhttp (the node front end) does, Go's server refuses the request.
    // The request after it is unambiguous, so this one leniency is allowed (README, "Where the front
    // ends differ from Go") and not generated (seed 824054857 #220 found it).
    while (method.length > 0 && (method[0] === 0x0d || method[0] === 0x0a)) method = method.subarray(1);
    // Likewise llhttp takes runs of spaces between the request line's parts (RFC 9112 §3 lets a
    // recipient parse on word boundaries) and the node front end forwards the one canonical line;
    // Go's server answers 400, uWS 505 (README, same section; seed 805750871 #151, in CI). Not generated
    // for the node front end: spaces at the method's end or the target's ends are dropped.
    const trimSpaces = (b: Buffer, start: boolean): Buffer => {
      let a = 0;
      let e = b.length;
      if (start) while (a < e && b[a] === 0x20) a++;
      while (e > a && b[e - 1] === 0x20) e--;
      return b.subarray(a, e);
    };
    if (o.h2) method = trimSpaces(method, false);
    const base = L(path + (watch ? pick(['?watch=true', '?watch=1&labelSelector=a%3Db', '?resourceVersion=0&watch=true&allowWatchBookmarks=true']) : pick(['', '/obj', '?watch=true', '?labelSelector=a%3Db', '/obj?x=', '?limit=1&continue='])));
    let target = chance(watch ? 0.3 : 0.7) ? splice(base, 1 + Math.floor(rnd() * 3)) : base;
    if (o.h2) target = trimSpaces(target, true);
    const fields: [Buffer, Buffer][] = [];
    const nf = Math.floor(rnd() * 4);
    for (let i = 0; i < nf; i++) {
      const name = chance(0.15) ? splice(pick(NAMES), 1) : pick(NAMES);
      const value = chance(0.5) ? splice(L(pick(['v', 'system:admin', 'true', 'application/json', 'close', 'X-Remote-User', '1.2.3.4'])), 1 + Math.floor(rnd() * 2)) : L(pick(['v', 'system:admin', 'true', 'close', 'X-Remote-User, Impersonate-User']));
      fields.push([name, value]);
    }
    const withBody = ['POST', 'PUT', 'PATCH'].includes(method.toString('latin1')) && chance(0.8);
    const r: Req = { method, target, fields };
    if (withBody) {
      r.body = chance(0.3) ? splice(L('{"a":1}'), 1) : L('{"kind":"ConfigMap","metadata":{"name":"x"}}');
      r.framing = chance(0.3) ? 'chunked' : 'length';
      if (chance(0.1)) {
        // A framing field of the client's own on top: two lengths, a length with chunked, a coding.
        fields.push(pick<[Buffer, Buffer]>([
          [L('Content-Length'), L(String(r.body.length))],
          [L('Content-Length'), L('0')],
          [L('Transfer-Encoding'), L('chunked')],
          [L('Transfer-Encoding'), L('gzip, chunked')],
          [L('Transfer-Encoding'), L(' chunked')],
          [L('Expect'), L('100-continue')],
        ]));
      }
    }
    return r;
  };
  return {
    next() {
      n++;
      const route = pick(o.routes);
      const who = pick<Who>(['anonymous', 'bearer', 'certificate', 'certificate-utf8']);
      const reqs = Array.from({ length: chance(0.25) ? 2 + Math.floor(rnd() * 2) : 1 }, () => one(route));
      if (who === 'bearer') for (const r of reqs) r.fields.unshift([L('Authorization'), L('Bearer diff-token')]);
      if (o.h2 && chance(0.3)) return { name: `generated #${n} (h2, ${route}, ${who})`, route, who, h2: reqs.slice(0, 2).map(h2Request) };
      return { name: `generated #${n} (h1, ${route}, ${who})`, route, who, h1: h1Bytes(reqs, { closeLast: chance(0.9) }) };
    },
  };
}

// ---- the judge

/** Header names that are the proxy's own on each hop, never compared as the client's (lowercase). */
const HOP = new Set(['connection', 'proxy-connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'content-length', 'expect', 'x-forwarded-for', 'x-kubernetes-peer-proxied']);

function isIdentityName(lower: string): boolean {
  return lower.startsWith('x-remote-');
}

/** Header names a Connection field lists (dropped by a proxy as hop-by-hop). */
function connectionNamed(r: OracleRequest): Set<string> {
  const s = new Set<string>();
  for (const v of r.headers.get('Connection') ?? []) for (const t of v.toString('latin1').split(',')) if (t.trim()) s.add(t.trim().toLowerCase());
  return s;
}

/** The end-to-end fields of a request as Go parsed them: name (lowercase) → values as hex, comparable. */
function endToEnd(r: OracleRequest, edgeTrim: boolean): Map<string, string[]> {
  const named = connectionNamed(r);
  const out = new Map<string, string[]>();
  for (const [name, values] of r.headers) {
    const lower = name.toLowerCase();
    if (HOP.has(lower) || named.has(lower) || isIdentityName(lower)) continue;
    out.set(lower, values.map((v) => (edgeTrim ? uwsEdgeTrim(v) : v).toString('hex')));
  }
  return out;
}

/**
 * The uWS parser's trim of a header value (README "Limitations"): it skips bytes below 33 at both
 * ends as signed chars, so bytes 0x80-0xFF there go too. mvproxy cannot see them (uWS hands the
 * value over without them); the judge compares what is left.
 */
export function uwsEdgeTrim(v: Buffer): Buffer {
  let a = 0;
  let b = v.length;
  while (a < b && (v[a]! <= 0x20 || v[a]! >= 0x80)) a++;
  while (b > a && (v[b - 1]! <= 0x20 || v[b - 1]! >= 0x80)) b--;
  return v.subarray(a, b);
}

function sameFields(a: Map<string, string[]>, b: Map<string, string[]>): string | undefined {
  for (const [k, v] of a) {
    const w = b.get(k);
    if (w === undefined) return `${k} missing upstream`;
    if (v.join(',') !== w.join(',')) return `${k}: client ${JSON.stringify(v)} upstream ${JSON.stringify(w)}`;
  }
  for (const k of b.keys()) if (!a.has(k)) return `${k} added upstream`;
  return undefined;
}

export function describeRequest(r: OracleRequest): string {
  const h = [...r.headers].map(([k, vs]) => `${k}: ${vs.map((v) => JSON.stringify(v.toString('latin1'))).join(' | ')}`).join('; ');
  return `${r.role} ${JSON.stringify(r.method.toString('latin1'))} ${JSON.stringify(r.target.toString('latin1'))} {${h}} body=${JSON.stringify(r.body.toString('latin1').slice(0, 80))}`;
}

/** Why `f` (forwarded) is not `d` (the client's, as Go parsed it), or undefined when it is. */
function difference(d: OracleRequest, f: OracleRequest, edgeTrim: boolean): string | undefined {
  if (!d.method.equals(f.method)) return `method ${JSON.stringify(d.method.toString('latin1'))} became ${JSON.stringify(f.method.toString('latin1'))}`;
  if (!d.target.equals(f.target)) return `target ${JSON.stringify(d.target.toString('latin1'))} became ${JSON.stringify(f.target.toString('latin1'))}`;
  if (!d.body.equals(f.body)) return `body ${JSON.stringify(d.body.toString('latin1'))} became ${JSON.stringify(f.body.toString('latin1'))}`;
  return sameFields(endToEnd(d, edgeTrim), endToEnd(f, false));
}

/** The identity headers Go saw on a forwarded request, as "name: value" lines (sorted). */
function identityLines(r: OracleRequest): string[] {
  const out: string[] = [];
  for (const [name, values] of r.headers) if (isIdentityName(name.toLowerCase())) for (const v of values) out.push(`${name.toLowerCase()}: ${v.toString('latin1')}`);
  return out.sort();
}

/**
 * What mvproxy asserts for a certificate user, as kube-apiserver's x509 authenticator reads the
 * certificate: the user, its groups and the credential-id extra (X509SHA256=<the DER's SHA-256>).
 */
export function certificateIdentity(certPEM: string, u: { user: string; groups: string[] }): string[] {
  const der = new X509Certificate(certPEM).raw;
  const id = 'X509SHA256=' + createHash('sha256').update(der).digest('hex');
  const bytes = (v: string) => Buffer.from(v, 'utf8').toString('latin1');
  return [`x-remote-user: ${bytes(u.user)}`, ...u.groups.map((g) => `x-remote-group: ${bytes(g)}`), `x-remote-extra-authentication.kubernetes.io%2fcredential-id: ${id}`].sort();
}

/**
 * The invariants over one case: `direct` what Go parsed from the client's bytes, `forwarded` and
 * `errors` what it parsed from (or refused of) mvproxy's. [] when they hold.
 */
export function judge(c: WireCase, direct: readonly OracleRequest[], forwarded: readonly OracleRequest[], errors: readonly OracleError[], o: { edgeTrimmed: (f: OracleRequest) => boolean; identity: (who: Who) => string[] }): string[] {
  const problems: string[] = [];
  for (const e of errors) if (e.role.startsWith('upstream')) problems.push(`Go refused what mvproxy forwarded: ${JSON.stringify(e.text.split('\r\n')[0])}`);
  if (forwarded.length > direct.length) problems.push(`Go parsed ${forwarded.length} request(s) from mvproxy but only ${direct.length} from the client's bytes`);
  // Each forwarded request is one of the client's, each client's request at most once. Not in order:
  // Go's server reads a pipelined request only after answering the one before, while a proxy may
  // send them on connections of their own at once (node's front end does; answers stay in order).
  const used = new Set<number>();
  for (const f of forwarded) {
    const want = o.identity(c.who);
    const got = identityLines(f);
    if (want.join('\n') !== got.join('\n')) problems.push(`identity upstream ${JSON.stringify(got)}, mvproxy asserts ${JSON.stringify(want)}: ${describeRequest(f)}`);
    const trim = o.edgeTrimmed(f);
    const k = direct.findIndex((d, i) => !used.has(i) && difference(d, f, trim) === undefined);
    if (k < 0) {
      const first = direct.findIndex((_, i) => !used.has(i));
      const why = first < 0 ? 'Go parsed no further request from the client' : difference(direct[first]!, f, trim);
      problems.push(`forwarded a request Go did not parse from the client's bytes (${why}): ${describeRequest(f)}`);
      continue;
    }
    used.add(k);
  }
  return problems;
}
