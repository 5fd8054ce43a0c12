// labels.Parse, reduced to "does it parse and validate?": a port of Kubernetes'
// staging/src/k8s.io/apimachinery/pkg/labels/selector.go (Lexer, Parser, NewRequirement) with the
// checks NewRequirement makes from staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go
// (IsQualifiedName, IsValidLabelValue, IsDNS1123Subdomain). Kubernetes keeps these in packages of
// their own, apart from requestinfo.go, and so does mvproxy: RequestInfo asks only whether
// DecodeParameters would fail on a labelSelector (then a list or watch gets no name;
// src/request/requestinfo.ts).
//
// What differs: no Selector is built, only the yes/no answer; the selector is read as a range in
// place. The lexer reads UTF-16 code units where Go reads bytes: a character >= U+0080 is an
// identifier character in both, and never a valid one. A NUL ends a token the same way the end of
// input does, exactly as Lexer.read() returning 0.

import { parseInt64OK } from './strconv';

const T_ERROR = 0;
const T_EOS = 1;
const T_CLOSEPAR = 2;
const T_COMMA = 3;
const T_NOT = 4; // "!" DoesNotExistToken
const T_DEQ = 5; // "=="
const T_EQ = 6; // "="
const T_GT = 7;
const T_IDENT = 8;
const T_IN = 9;
const T_LT = 10;
const T_NEQ = 11;
const T_NOTIN = 12;
const T_OPENPAR = 13;

/** The token for a run of special characters, as labels' string2token; T_ERROR when it is none. */
function specialToken(s: string, a: number, b: number): number {
  const c0 = s.charCodeAt(a);
  if (b - a === 1) {
    switch (c0) {
      case 0x29:
        return T_CLOSEPAR;
      case 0x2c:
        return T_COMMA;
      case 0x21:
        return T_NOT;
      case 0x3d:
        return T_EQ;
      case 0x3e:
        return T_GT;
      case 0x3c:
        return T_LT;
      case 0x28:
        return T_OPENPAR;
      default:
        return T_ERROR;
    }
  }
  if (b - a === 2 && s.charCodeAt(a + 1) === 0x3d) {
    if (c0 === 0x3d) return T_DEQ;
    if (c0 === 0x21) return T_NEQ;
  }
  return T_ERROR;
}

function isWhitespace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a;
}

function isSpecial(c: number): boolean {
  return c === 0x3d || c === 0x21 || c === 0x28 || c === 0x29 || c === 0x2c || c === 0x3e || c === 0x3c;
}

function isSeg(s: string, start: number, end: number, lit: string): boolean {
  return end - start === lit.length && s.startsWith(lit, start);
}

/**
 * The tokens Lexer.Lex gives for one selector, up to and including EndOfStringToken: the kind and
 * [start, end) of each, as arrays grown to the longest selector seen. lex() fills them; the parser
 * reads them. One instance serves every call (validLabelSelector is synchronous).
 */
class Tokens {
  count = 0;
  kind: Int32Array = new Int32Array(32);
  start: Int32Array = new Int32Array(32);
  end: Int32Array = new Int32Array(32);

  /** Lexer.Lex over s[from, len) until EndOfStringToken; returns this. */
  lex(s: string, from: number, len: number): this {
    let pos = from;
    this.count = 0;
    for (;;) {
      // skipWhiteSpaces(read()); read() gives 0 at the end, and for a NUL byte (after moving on)
      let ch = 0;
      while (pos < len) {
        ch = s.charCodeAt(pos++);
        if (!isWhitespace(ch)) break;
        ch = 0;
      }
      if (ch === 0) {
        this.push(T_EOS, pos, pos);
        return this;
      }
      pos--;
      const start = pos;
      if (isSpecial(ch)) {
        // scanSpecialSymbol: the longest run of special characters that is still a token
        let tok = T_ERROR;
        let tokEndAt = start;
        while (pos < len) {
          const c = s.charCodeAt(pos);
          if (c === 0) {
            pos++;
            break;
          }
          if (!isSpecial(c)) break;
          pos++;
          const t = specialToken(s, start, pos);
          if (t !== T_ERROR) {
            tok = t;
            tokEndAt = pos;
          } else if (tok !== T_ERROR) {
            pos--;
            break;
          }
        }
        this.push(tok, start, tokEndAt);
      } else {
        // scanIDOrKeyword: up to a special character, whitespace, NUL or the end
        let end = len;
        while (pos < len) {
          const c = s.charCodeAt(pos);
          if (c === 0) {
            end = pos++;
            break;
          }
          if (isSpecial(c) || isWhitespace(c)) {
            end = pos;
            break;
          }
          pos++;
        }
        this.push(isSeg(s, start, end, 'in') ? T_IN : isSeg(s, start, end, 'notin') ? T_NOTIN : T_IDENT, start, end);
      }
    }
  }

  /** Parser.lookahead: the kind of token i (the last, EndOfStringToken, past the end); in the Values
   *  context "in" and "notin" are identifiers. */
  kindAt(i: number, values: boolean): number {
    const t = this.kind[i < this.count ? i : this.count - 1];
    return values && (t === T_IN || t === T_NOTIN) ? T_IDENT : t;
  }

  private push(kind: number, a: number, b: number): void {
    const n = this.count;
    if (n === this.kind.length) {
      this.kind = grow(this.kind);
      this.start = grow(this.start);
      this.end = grow(this.end);
    }
    this.kind[n] = kind;
    this.start[n] = a;
    this.end[n] = b;
    this.count = n + 1;
  }
}

function grow(x: Int32Array): Int32Array {
  const y = new Int32Array(x.length * 2);
  y.set(x);
  return y;
}

const tokens = new Tokens();

/** labels.Parse(sel[from:to]) returns no error. */
export function validLabelSelector(sel: string, from: number, to: number): boolean {
  if (from === to) return true;
  const tk = tokens.lex(sel, from, to);
  let p = 0;
  for (;;) {
    const t = tk.kindAt(p, true);
    if (t === T_EOS) return true;
    if (t !== T_IDENT && t !== T_NOT) return false;
    // parseRequirement → parseKeyAndInferOperator
    let notExists = false;
    if (t === T_NOT) {
      notExists = true;
      p++;
    }
    if (tk.kindAt(p, true) !== T_IDENT) return false;
    if (!isQualifiedName(sel, tk.start[p], tk.end[p])) return false;
    p++;
    const after = tk.kindAt(p, true);
    if (!notExists && after !== T_EOS && after !== T_COMMA) {
      // parseOperator (KeyAndOperator context), then the values
      const op = tk.kindAt(p++, false);
      if (op === T_IN || op === T_NOTIN) {
        if (tk.kindAt(p++, true) !== T_OPENPAR) return false;
        const first = tk.kindAt(p, true);
        if (first === T_CLOSEPAR) {
          p++; // "()" is the set {""}
        } else if (first === T_IDENT || first === T_COMMA) {
          // parseIdentifiersList; "" is always a valid label value, identifiers are checked
          for (;;) {
            const vt = tk.kindAt(p++, true);
            if (vt === T_IDENT) {
              if (!isValidLabelValue(sel, tk.start[p - 1], tk.end[p - 1])) return false;
              const nx = tk.kindAt(p, true);
              if (nx === T_COMMA) continue;
              if (nx === T_CLOSEPAR) break;
              return false;
            }
            if (vt !== T_COMMA) return false;
            const nx = tk.kindAt(p, true);
            if (nx === T_CLOSEPAR) break;
            if (nx === T_COMMA) p++;
          }
          if (tk.kindAt(p++, true) !== T_CLOSEPAR) return false;
        } else {
          return false;
        }
      } else if (op === T_EQ || op === T_DEQ || op === T_NEQ || op === T_GT || op === T_LT) {
        // parseExactValue: end of string or ',' means the value ""
        const nx = tk.kindAt(p, true);
        let a = from;
        let b = from;
        if (nx !== T_EOS && nx !== T_COMMA) {
          if (tk.kindAt(p++, true) !== T_IDENT) return false;
          a = tk.start[p - 1];
          b = tk.end[p - 1];
        }
        if ((op === T_GT || op === T_LT) && !parseInt64OK(sel, a, b)) return false;
        if (!isValidLabelValue(sel, a, b)) return false;
      } else {
        return false;
      }
    }
    // back in parse(): the requirement must be followed by end of string, or ',' and another one
    const t2 = tk.kindAt(p++, true);
    if (t2 === T_EOS) return true;
    if (t2 !== T_COMMA) return false;
    const t3 = tk.kindAt(p, true);
    if (t3 !== T_IDENT && t3 !== T_NOT) return false;
  }
}

function isAlnum(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}

/** ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], the qualified-name (and label value) form. */
function isQualifiedNamePart(s: string, a: number, b: number): boolean {
  if (b <= a || !isAlnum(s.charCodeAt(a)) || !isAlnum(s.charCodeAt(b - 1))) return false;
  for (let i = a + 1; i < b - 1; i++) {
    const c = s.charCodeAt(i);
    if (!isAlnum(c) && c !== 0x2d && c !== 0x5f && c !== 0x2e) return false;
  }
  return true;
}

/** validation.IsQualifiedName(s[a:b]): an optional DNS-1123 subdomain prefix and '/', then a name. */
function isQualifiedName(s: string, a: number, b: number): boolean {
  let nameStart = a;
  const slash = s.indexOf('/', a);
  if (slash !== -1 && slash < b) {
    const again = s.indexOf('/', slash + 1);
    if (again !== -1 && again < b) return false;
    if (slash === a || slash - a > 253 || !isDNS1123Subdomain(s, a, slash)) return false;
    nameStart = slash + 1;
  }
  return b - nameStart <= 63 && isQualifiedNamePart(s, nameStart, b);
}

/** validation.IsValidLabelValue(s[a:b]): empty, or a qualified-name part of at most 63 characters. */
function isValidLabelValue(s: string, a: number, b: number): boolean {
  return a === b || (b - a <= 63 && isQualifiedNamePart(s, a, b));
}

/** [a-z0-9]([-a-z0-9]*[a-z0-9])? labels joined by '.'. */
function isDNS1123Subdomain(s: string, a: number, b: number): boolean {
  let labelStart = a;
  for (let i = a; i <= b; i++) {
    if (i < b && s.charCodeAt(i) !== 0x2e) continue;
    if (i === labelStart) return false;
    for (let j = labelStart; j < i; j++) {
      const c = s.charCodeAt(j);
      const lowerAlnum = (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7a);
      if (!lowerAlnum && (c !== 0x2d || j === labelStart || j === i - 1)) return false;
    }
    labelStart = i + 1;
  }
  return true;
}
