// Comments that point at names the code no longer has (issue 32, item 6): a refactor renames or
// removes a function, a file or a class member, and the comments that explained the code by that
// name keep pointing at it. This check reads every comment in src/ and fails on:
//   - a file path (`upstream/forward.ts`, `src/proxy/proxied.ts`) that does not exist under the
//     repository or src/;
//   - `Name.member` where Name is a class, interface or namespace declared in src/ and member is
//     declared nowhere in src/;
//   - `name()` written as a call, when nothing named so is declared or used in src/ code.
// Names of other projects (Go, Kubernetes, Node) are not src/ declarations, so they pass.
//
//   node --import tsx scripts/check-comments.ts        (npm run check:comments; .ci/run)

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

const ROOT = join(__dirname, '..');
const SRC = join(ROOT, 'src');

function files(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir)) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) out.push(...files(p));
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** A file's text split into code (comments blanked) and its comments with their line numbers; strings are kept in code. */
function split(text: string): { code: string; comments: { line: number; text: string }[] } {
  const comments: { line: number; text: string }[] = [];
  let code = '';
  let i = 0;
  let line = 1;
  while (i < text.length) {
    const c = text[i]!;
    const n = text[i + 1];
    if (c === '/' && n === '/') {
      const end = text.indexOf('\n', i);
      const e = end < 0 ? text.length : end;
      comments.push({ line, text: text.slice(i + 2, e) });
      i = e;
      continue;
    }
    if (c === '/' && n === '*') {
      const end = text.indexOf('*/', i + 2);
      const e = end < 0 ? text.length : end + 2;
      const body = text.slice(i + 2, e - 2);
      body.split('\n').forEach((l, k) => comments.push({ line: line + k, text: l }));
      line += body.split('\n').length - 1;
      i = e;
      continue;
    }
    if (c === "'" || c === '"' || c === '`') {
      // Strings (and templates, roughly): copied to code as they are, never read as comments.
      let j = i + 1;
      while (j < text.length && text[j] !== c) {
        if (text[j] === '\\') j++;
        if (text[j] === '\n') line++;
        j++;
      }
      code += text.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    if (c === '\n') line++;
    code += c;
    i++;
  }
  return { code, comments };
}

const all = files(SRC);
const codeIdentifiers = new Set<string>();
const declaredTypes = new Set<string>();
const sources = new Map<string, ReturnType<typeof split>>();
for (const f of all) {
  const parts = split(readFileSync(f, 'utf8'));
  sources.set(f, parts);
  for (const m of parts.code.matchAll(/[A-Za-z_$][\w$]*/g)) codeIdentifiers.add(m[0]);
  for (const m of parts.code.matchAll(/\b(?:class|interface|namespace|enum|type)\s+([A-Z][\w$]*)/g)) declaredTypes.add(m[1]!);
}

/** A path as comments write it: from the repository, from src/, or from the commenting file's folder or one above it. */
function resolves(file: string, p: string): boolean {
  for (let dir = dirname(file); dir.startsWith(SRC); dir = dirname(dir)) if (existsSync(join(dir, p))) return true;
  return existsSync(join(ROOT, p)) || existsSync(join(SRC, p));
}

const problems: string[] = [];
const PATH = /\b((?:src\/)?(?:[a-z0-9-]+\/)+[a-z0-9.-]+\.ts)\b/g;
const MEMBER = /\b([A-Z][\w$]*)\.([a-z_$][\w$]*)\b/g;
const CALL = /\b([a-z_$][\w$]*)\(\)/g;
for (const [f, { comments }] of sources) {
  const where = relative(ROOT, f);
  for (const c of comments) {
    for (const m of c.text.matchAll(PATH)) {
      const p = m[1]!;
      // Paths of other repositories (Kubernetes, Go, undici) name their own trees.
      if (/^(pkg|staging|cmd|lib|net|crypto|internal|vendor|k8s\.io)\//.test(p)) continue;
      if (!resolves(f, p)) problems.push(`${where}:${c.line}: names ${p}, which does not exist`);
    }
    for (const m of c.text.matchAll(MEMBER)) {
      if (!declaredTypes.has(m[1]!)) continue;
      if (!codeIdentifiers.has(m[2]!)) problems.push(`${where}:${c.line}: names ${m[1]}.${m[2]}, which src/ does not declare`);
    }
    for (const m of c.text.matchAll(CALL)) {
      if (!codeIdentifiers.has(m[1]!)) problems.push(`${where}:${c.line}: names ${m[1]}(), which src/ does not have`);
    }
  }
}

if (problems.length > 0) {
  for (const p of problems) console.error(p);
  console.error(`check:comments: ${problems.length} comment(s) name what the code no longer has`);
  process.exit(1);
}
console.log(`check:comments: ${sources.size} files of src/: every path, Type.member and call() a comment names exists`);
