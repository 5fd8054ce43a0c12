// The one table of mvproxy's codes (src/api/errors.ts ERRORS, issue 32 item 4): every code is in it
// with a status, a reason and its meaning, and no code is written as a string anywhere else in src/
// (code elsewhere names one as ErrorCode.X, so a misspelt code is a type error). Parses each file
// with TypeScript's parser only (no type check): string and template literals are read, comments
// are not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { ERRORS, ErrorCode, codedError, errorCode, errorResponse, hasCode } from '../../src/api/errors';

const ROOT = join(__dirname, '..', '..');
const SRC = join(ROOT, 'src');
const TABLE = join(SRC, 'api', 'errors.ts');
const CODE = /^MVP_ERR_[A-Z0-9]+(?:_[A-Z0-9]+)*$/;

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sources(p));
    else if (e.name.endsWith('.ts')) out.push(p);
  }
  return out;
}

const parse = (file: string) => ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);

test('no MVP_ERR_ code is written as a string in src/ outside the table', () => {
  const found: string[] = [];
  for (const file of sources(SRC)) {
    if (file === TABLE) continue;
    const sf = parse(file);
    const visit = (n: ts.Node): void => {
      if ((ts.isStringLiteralLike(n) || ts.isTemplateLiteralToken(n)) && n.text.includes('MVP_ERR_')) {
        found.push(`${relative(ROOT, file)}:${sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1}: ${n.getText(sf)}`);
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  assert.deepEqual(found, [], 'write ErrorCode.MVP_ERR_… (src/api/errors.ts) instead');
});

test('every entry has a scope, a status, a reason and its meaning', () => {
  for (const [code, spec] of Object.entries(ERRORS)) {
    assert.match(code, CODE);
    assert.ok(spec.scope === 'answered' || spec.scope === 'internal', code);
    assert.ok(Number.isInteger(spec.status) && spec.status >= 400 && spec.status <= 599, `${code}: status ${spec.status}`);
    assert.ok(typeof spec.reason === 'string' && spec.reason.length > 0, `${code}: reason`);
    if (spec.scope === 'answered') assert.ok(spec.message.length > 0, `${code}: message`);
    assert.equal(ErrorCode[code as ErrorCode], code);
  }
  // The meaning is each entry's doc comment.
  const sf = parse(TABLE);
  let entries = 0;
  const visit = (n: ts.Node): void => {
    if (ts.isVariableDeclaration(n) && n.name.getText(sf) === 'ERRORS') {
      let init = n.initializer!;
      while (ts.isSatisfiesExpression(init) || ts.isAsExpression(init)) init = init.expression;
      assert.ok(ts.isObjectLiteralExpression(init));
      for (const p of init.properties) {
        entries++;
        const doc = ts.getJSDocCommentsAndTags(p).map((d) => (typeof d.comment === 'string' ? d.comment : '')).join('');
        assert.ok(doc.trim().length > 0, `${p.name!.getText(sf)}: no doc comment saying what it means`);
      }
      return;
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  assert.equal(entries, Object.keys(ERRORS).length);
});

test('every code src/ names, in code or comments, is in the table', () => {
  const codes = new Set(Object.keys(ERRORS));
  const unknown: string[] = [];
  for (const file of sources(SRC)) {
    for (const m of readFileSync(file, 'utf8').matchAll(/MVP_ERR_[A-Z0-9_]+/g)) {
      // A prefix ending in '_' names a family (MVP_ERR_DISCOVERY_*).
      if (!m[0].endsWith('_') && !codes.has(m[0])) unknown.push(`${relative(ROOT, file)}: ${m[0]}`);
    }
  }
  assert.deepEqual(unknown, []);
});

test('codedError, hasCode, errorCode', () => {
  const e = codedError(ErrorCode.MVP_ERR_CONNECT_TIMEOUT, 'connecting took too long');
  assert.ok(e instanceof Error);
  assert.equal(e.message, 'connecting took too long');
  assert.equal(e.code, 'MVP_ERR_CONNECT_TIMEOUT');
  assert.ok(hasCode(e, ErrorCode.MVP_ERR_CONNECT_TIMEOUT));
  assert.ok(!hasCode(e, ErrorCode.MVP_ERR_PEER_DOWN));
  assert.ok(hasCode({ code: 'MVP_ERR_DISCOVERY_DECODE' }, ErrorCode.MVP_ERR_DISCOVERY_DECODE), 'a plain object from a worker');
  for (const v of [undefined, null, 'MVP_ERR_CONNECT_TIMEOUT', 42]) assert.ok(!hasCode(v, ErrorCode.MVP_ERR_CONNECT_TIMEOUT));
  assert.equal(errorCode(e), 'MVP_ERR_CONNECT_TIMEOUT');
  // Node's and undici's codes are not mvproxy's.
  for (const code of ['ECONNRESET', 'UND_ERR_SOCKET', 'MVP_ERR_NO_SUCH_CODE', 'toString', '__proto__']) assert.equal(errorCode(Object.assign(new Error('x'), { code })), undefined, code);
  assert.equal(errorCode(undefined), undefined);
});

test('an answered code keeps its Status (status, reason, message and code)', () => {
  const r = errorResponse(ErrorCode.MVP_ERR_SHUTTING_DOWN);
  assert.equal(r.status, 429);
  assert.equal(r.body.toString(), '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the proxy is shutting down, please try again (MVP_ERR_SHUTTING_DOWN)","reason":"TooManyRequests","details":{"retryAfterSeconds":1},"code":429}');
  assert.deepEqual(r.headers.slice(-2), ['retry-after', '1']);
});
