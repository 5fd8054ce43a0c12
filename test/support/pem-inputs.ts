// Random PEM-like files for the pem.Decode differential (test/security/go-pem.test.ts): BEGIN/END lines
// of every dash count and type, headers, base64 with padding and trailing-bit variants, whitespace of
// every kind (\r, \f, \v, NUL, bytes >= 0x80, a byte-order mark), long lines, splices, truncations.
// From attack round 27 (helper 27's generator), seeded: the same inputs every run.

let s = 0;
function rnd(): number { // mulberry32
  s = (s + 0x6d2b79f5) | 0;
  let t = s;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const ri = (n: number) => Math.floor(rnd() * n);
const pick = <T>(a: readonly T[]): T => a[ri(a.length)];

const WS = [' ', '\t', '\r', '\n', '\f', '\v', '\0', '\x80', '\xa0', '\xff', '\xef\xbb\xbf', '\r\n', '\r\r\n', '\x1f', '\x85'];
const TYPES = ['CERTIFICATE', 'CERTIFICATE', 'CERTIFICATE', 'X', '', 'A:B', ':', 'CERT IFICATE', 'CERTIFICATE ', ' CERTIFICATE', 'CERTIFICATE-', '-', '--', '\xff', 'TRUSTED CERTIFICATE', 'CERTIFICATE\t', 'CERTIFICATE\r', 'CERTIFICATE\0', 'BEGIN ', 'END ', '-----', 'CERTIFICATE-----'];
const EOLS = ['\n', '\n', '\n', '\r\n', '\r', '', '\r\r\n', ' \n', '\t\n', '\f\n', '\n\n', ' \r\n', '\r \n'];
const HEADERS = ['k: v', 'k:v', ':', 'Proc-Type: 4,ENCRYPTED', 'a:b:c', ' : ', 'k:', ':v', 'k: v ', 'k :v\t', 'DEK-Info: AES', 'k\0:v', 'QUFB:', 'k: v\r'];
const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const rare = <T>(common: T, others: readonly T[], p = 0.1): T => (rnd() < p ? pick(others) : common);
const dashes = () => '-'.repeat(rare(5, [4, 6, 0, 1, 10], 0.08));
const eol = () => rare('\n', EOLS, 0.15);

function b64body(): string {
  const n = pick([0, 1, 2, 3, 4, 5, 16, 48, 100, ri(400)]);
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = ri(256);
  let t = b.toString('base64');
  // padding / trailing bits variants
  switch (ri(14)) {
    case 0: t = t.replace(/=+$/, ''); break;
    case 1: t += '='; break;
    case 2: if (t.length > 0) { const last = t.search(/=|$/) - 1; if (last >= 0) t = t.slice(0, last) + pick([...B64]) + t.slice(last + 1); } break; // non-zero trailing bits
    case 3: t += pick(['A', 'AA', 'AAA', '====', 'A=', 'AA==AA==', '=A']); break;
    case 4: t = t.slice(0, ri(t.length + 1)); break;
  }
  // line wrapping
  const width = pick([64, 64, 76, 4, 1, 3, 1000, 1 + ri(80)]);
  const lines: string[] = [];
  for (let i = 0; i < t.length; i += width) lines.push(t.slice(i, i + width));
  if (lines.length === 0 && ri(2)) lines.push('');
  let out = '';
  for (const l of lines) {
    let line = l;
    if (ri(25) === 0) { const p = ri(line.length + 1); line = line.slice(0, p) + pick(WS) + line.slice(p); }
    if (ri(30) === 0) line += pick(WS);
    if (ri(40) === 0) line = pick(WS) + line;
    if (ri(80) === 0) line += pick(['-', ':', '=', '.', '*', '-----END X-----', '-----BEGIN X-----']);
    out += line + eol();
  }
  return out;
}

function beginLine(type: string): string {
  return rare('', [' ', 'x', '\r', '\xef\xbb\xbf', '\f', '\n', '\r\n']) + dashes() + rare('BEGIN ', ['BEGIN', 'BEGIN  ', 'begin '], 0.05) + type + dashes() + rare('', [' ', '\t', '\f', '\v', '\0', '\x80', ' x', '\t \t'], 0.15) + eol();
}
function endLine(type: string): string {
  return rare('', [' ', 'x', '\n', '\r', '\r\n', '\n\n']) + dashes() + rare('END ', ['END', 'END  '], 0.05) + type + dashes() + rare('', [' ', '\t', '\f', '\v', '\0', '\x80', ' x', '-----BEGIN CERTIFICATE-----', ' \t '], 0.15) + rare('\n', [...EOLS, ''], 0.2);
}
function block(): string {
  const type = rare('CERTIFICATE', TYPES, 0.3);
  let out = '';
  out += ri(5) === 0 ? beginLine(pick(TYPES)) + (ri(2) ? b64body() : '') : '';
  out += beginLine(type);
  const nh = rare(0, [1, 1, 2, 3], 0.2);
  for (let i = 0; i < nh; i++) out += pick(HEADERS) + eol();
  if (nh && ri(2)) out += pick(['', '\n', '\r\n', ' \n']);
  out += b64body();
  out += endLine(ri(12) === 0 ? pick(TYPES) : type);
  return out;
}
function junk(): string {
  let out = '';
  const n = ri(4);
  for (let i = 0; i < n; i++) out += pick([...WS, 'junk', 'subject=/CN=x\n', '-----END X-----\n', '-----BEGIN X-----\n', '\n-----END ', '\n-----BEGIN ', ' -----BEGIN CERTIFICATE-----\n', 'k: v\n', 'QUFB\n']);
  return out;
}
function mutate(x: string, pool: string[]): string {
  const n = ri(4);
  for (let k = 0; k < n; k++) {
    const p = ri(x.length + 1);
    switch (ri(7)) {
      case 0: x = x.slice(0, p) + x.slice(p + 1 + ri(4)); break; // delete
      case 1: x = x.slice(0, p) + pick(WS) + x.slice(p); break; // insert ws
      case 2: { const q = ri(x.length + 1); const [a, b] = p < q ? [p, q] : [q, p]; x = x.slice(0, b) + x.slice(a, b) + x.slice(b); break; } // dup
      case 3: if (pool.length) { const o = pick(pool); const a = ri(o.length + 1); x = x.slice(0, p) + o.slice(a, a + ri(60)) + x.slice(p); } break; // splice
      case 4: x = x.slice(0, p) + String.fromCharCode(ri(256)) + x.slice(p + 1); break; // replace
      case 5: x = x.slice(0, p) + pick(['-', '\n', ':', '=', '-----', '\n-----END ', '-----BEGIN ', 'CERTIFICATE']) + x.slice(p); break;
      case 6: x = x.slice(0, p); break; // truncate
    }
  }
  return x;
}
function randomInput(pool: string[]): string {
  let out = pick(['', '', '', '\xef\xbb\xbf', ' ', '\n', '\r\n']) + junk();
  const nb = pick([1, 1, 1, 2, 2, 3, 0, 5]);
  for (let i = 0; i < nb; i++) out += block() + junk();
  if (ri(20) === 0) out += '\n'.repeat(ri(3)) + ' '.repeat(pick([1000, 20000])) + pick(['x', '', '\n']);
  if (ri(20) === 0) out = out.replace(/\n[A-Za-z0-9+/]{4,}/, (m) => m + 'QUFB'.repeat(pick([500, 5000])));
  if (ri(4) === 0) out = mutate(out, pool);
  return out;
}


/** `count` inputs from `seed`, as latin1 strings. */
export function pemInputs(seed: number, count: number): string[] {
  s = seed;
  const pool: string[] = [];
  const inputs: string[] = [];
  for (let i = 0; i < count; i++) {
    const x = randomInput(pool);
    inputs.push(x);
    if (pool.length < 200) pool.push(x);
    else pool[ri(200)] = x;
  }
  return inputs;
}
