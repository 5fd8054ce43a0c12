// src/gocompat/sort.ts against Go's sort.Sort. Go's own tests (go/src/sort/sort_test.go of
// Go 1.26: TestSortIntSlice and TestSortStringSlice data, TestBreakPatterns, TestReverseRange's
// check through a descending input) only check that the result is sorted; an unstable sort with ties,
// or a `less` that is not a strict weak order, must also leave the elements in Go's exact order. The
// GOLDEN rows were printed by Go 1.26.8's sort.Sort on the same inputs (a program that builds them with
// the generators below, sorts {key, id} items by key and prints the ids and the number of Less calls);
// rows of more than 60 items hold an FNV-1a hash of the ids instead of the ids.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sort } from '../../src/gocompat/sort';

test('TestSortIntSlice / TestSortStringSlice data (sort_test.go)', () => {
  const ints = [74, 59, 238, -784, 9845, 959, 905, 0, 0, 42, 7586, -5467984, 7586];
  sort(ints, (a, b) => a < b);
  assert.deepEqual(ints, [-5467984, -784, 0, 0, 42, 59, 74, 238, 905, 959, 7586, 7586, 9845]);
  const strings = ['', 'Hello', 'foo', 'bar', 'foo', 'f00', '%*&^*&^&', '***'];
  sort(strings, (a, b) => a < b);
  assert.deepEqual(strings, ['', '%*&^*&^&', '***', 'Hello', 'bar', 'f00', 'foo', 'foo']);
});

test('TestSortLarge_Random-style: 10000 numbers come out sorted', () => {
  const data = Array.from({ length: 10000 }, (_, i) => (i * 7919) % 10007);
  sort(data, (a, b) => a < b);
  for (let i = 1; i < data.length; i++) assert.ok(data[i - 1]! <= data[i]!);
});

test('empty and one-element inputs are left alone', () => {
  const none: number[] = [];
  sort(none, () => true);
  assert.deepEqual(none, []);
  const one = [1];
  sort(one, () => true);
  assert.deepEqual(one, [1]);
});

// The generators of the Go program: a 31-bit LCG (seed*1103515245 + 12345, uint32 arithmetic).
let seed = 0;
function next(): number {
  seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff;
  return seed;
}

interface Item {
  k: number;
  id: number;
  q: number;
  ts: boolean;
  ss: boolean;
}

function keyed(keys: number[]): Item[] {
  return keys.map((k, id) => ({ k, id, q: 0, ts: false, ss: false }));
}

function lcg(n: number, m: number): Item[] {
  seed = 1;
  return keyed(Array.from({ length: n }, () => (next() >>> 16) % m));
}

function mk(n: number, f: (i: number) => number): Item[] {
  return keyed(Array.from({ length: n }, (_, i) => f(i)));
}

/** Items of goautoneg's shape: q in {0, .25, .5, .75}, type and subtype '*' or not. */
function goautonegLike(n: number): Item[] {
  seed = 7;
  return Array.from({ length: n }, (_, id) => {
    const r = next() >>> 8;
    return { k: 0, id, q: (r % 4) / 4, ts: (r & 16) !== 0, ss: (r & 32) !== 0 };
  });
}

const byKey = (a: Item, b: Item) => a.k < b.k;
// goautoneg's accept_slice Less (src/request/accept.ts clauseLess): not a strict weak order.
const acceptLess = (a: Item, b: Item) => a.q > b.q || (!a.ts && b.ts) || (!a.ss && b.ss);

const BREAK_PATTERNS = (i: number) => (i === 7 ? 0 : i === 14 ? 1 : i === 21 ? 2 : 10); // TestBreakPatterns

const GOLDEN: [string, () => Item[], (a: Item, b: Item) => boolean, number, number[] | number][] = [
  ['lcg n=13 m=3', () => lcg(13, 3), byKey, 48, [9, 2, 6, 7, 8, 12, 1, 3, 4, 10, 5, 0, 11]],
  ['lcg n=20 m=4', () => lcg(20, 4), byKey, 57, [8, 12, 13, 2, 14, 18, 10, 16, 6, 9, 0, 19, 1, 5, 11, 15, 7, 17, 4, 3]],
  ['lcg n=50 m=5', () => lcg(50, 5), byKey, 205, [27, 46, 22, 3, 14, 42, 6, 13, 31, 38, 29, 9, 34, 39, 4, 20, 26, 23, 45, 19, 24, 35, 18, 48, 44, 5, 8, 33, 28, 11, 40, 43, 17, 15, 47, 21, 1, 37, 2, 0, 41, 25, 30, 16, 12, 7, 36, 10, 32, 49]],
  ['lcg n=51 m=51', () => lcg(51, 51), byKey, 262, [36, 12, 9, 42, 0, 6, 23, 40, 48, 43, 34, 19, 39, 2, 25, 11, 5, 17, 33, 3, 7, 13, 37, 30, 44, 21, 29, 38, 32, 27, 20, 50, 41, 47, 45, 46, 28, 4, 35, 14, 22, 18, 24, 8, 10, 1, 31, 26, 16, 49, 15]],
  ['lcg n=100 m=7', () => lcg(100, 7), byKey, 493, 0x8f7fde95],
  ['lcg n=300 m=10', () => lcg(300, 10), byKey, 1585, 0x6c4d2fdb],
  ['lcg n=1000 m=1000', () => lcg(1000, 1000), byKey, 10497, 0xf7b36e4d],
  ['lcg n=1000 m=3', () => lcg(1000, 3), byKey, 2715, 0x43c18c75],
  ['ascending ties n=100', () => mk(100, (i) => Math.trunc(i / 3)), byKey, 111, 0xde239011],
  ['descending n=100', () => mk(100, (i) => 100 - i), byKey, 111, 0x146cf8b9],
  ['descending ties n=100', () => mk(100, (i) => Math.trunc((100 - i) / 4)), byKey, 525, 0x5778ef6b],
  ['all equal n=60', () => mk(60, () => 7), byKey, 71, Array.from({ length: 60 }, (_, i) => i)],
  ['sawtooth n=200', () => mk(200, (i) => i % 17), byKey, 1296, 0xab19465b],
  ['organ pipe n=100', () => mk(100, (i) => (i < 50 ? i : 100 - i)), byKey, 630, 0x0dc6bc3f],
  ['TestBreakPatterns n=30', () => mk(30, BREAK_PATTERNS), byKey, 101, [7, 14, 21, 20, 27, 5, 6, 1, 8, 9, 10, 11, 12, 13, 15, 4, 2, 0, 18, 19, 16, 3, 22, 23, 24, 25, 26, 17, 28, 29]],
  ['goautoneg-like n=13', () => goautonegLike(13), acceptLess, 50, [1, 9, 12, 5, 11, 8, 3, 0, 2, 4, 6, 10, 7]],
  ['goautoneg-like n=30', () => goautonegLike(30), acceptLess, 128, [1, 23, 24, 12, 26, 16, 9, 17, 5, 20, 19, 13, 25, 10, 7, 6, 18, 11, 8, 28, 0, 3, 29, 21, 14, 22, 4, 2, 15, 27]],
  ['goautoneg-like n=60', () => goautonegLike(60), acceptLess, 312, [1, 23, 42, 59, 36, 12, 24, 46, 44, 57, 38, 9, 17, 31, 28, 11, 18, 54, 8, 39, 29, 0, 3, 53, 33, 45, 52, 5, 22, 4, 2, 14, 30, 58, 37, 26, 40, 16, 56, 48, 49, 47, 19, 13, 20, 25, 35, 6, 34, 7, 10, 51, 43, 50, 55, 41, 21, 32, 15, 27]],
  ['goautoneg-like n=200', () => goautonegLike(200), acceptLess, 1275, 0x3e1270f9],
];

function fnv1a(ids: number[]): number {
  let h = 0x811c9dc5;
  for (const x of ids) {
    h ^= x & 0xffff;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

test("Go 1.26's order and number of Less calls, ties and a non-strict-weak order included", () => {
  for (const [name, make, less, wantCalls, want] of GOLDEN) {
    const items = make();
    let calls = 0;
    sort(items, (a, b) => {
      calls++;
      return less(a, b);
    });
    const ids = items.map((x) => x.id);
    if (typeof want === 'number') assert.equal(fnv1a(ids), want, name);
    else assert.deepEqual(ids, want, name);
    assert.equal(calls, wantCalls, `${name}: Less calls`);
  }
});

test('sorted by key in every golden row (TestBreakPatterns, TestReverseRange through a descending input)', () => {
  for (const [name, make, less] of GOLDEN) {
    if (less !== byKey) continue;
    const items = make();
    sort(items, less);
    for (let i = 1; i < items.length; i++) assert.ok(items[i - 1]!.k <= items[i]!.k, name);
  }
});

test("TestAdversary's McIlroy adversary (per element, not per index): Go 1.26's order and Less calls", () => {
  // sort_test.go's adversaryTestingData freezes "gas" items as they are compared so that quicksort
  // goes quadratic; pdqsort's pivot choice and breakPatterns keep it at n log n. Go's version names the
  // candidate by index, this one by element (less gets elements); Go printed the same rows both ways.
  for (const [n, wantCalls, wantHash] of [
    [100, 941, 0x019dba83],
    [1000, 7202, 0xf1abbc7f],
    [10000, 70293, 0x6171cd95],
  ] as const) {
    const gas = n - 1;
    let nsolid = 0;
    let candidate: { v: number; id: number } | undefined;
    let calls = 0;
    const cells = Array.from({ length: n }, (_, id) => ({ v: gas, id }));
    sort(cells, (x, y) => {
      calls++;
      if (x.v === gas && y.v === gas) {
        if (x === candidate) x.v = nsolid++;
        else y.v = nsolid++;
      }
      if (x.v === gas) candidate = x;
      else if (y.v === gas) candidate = y;
      return x.v < y.v;
    });
    assert.deepEqual(
      cells.map((c) => c.v),
      Array.from({ length: n }, (_, i) => i),
    );
    assert.equal(fnv1a(cells.map((c) => c.id)), wantHash, `n=${n}`);
    assert.equal(calls, wantCalls, `n=${n}: Less calls`);
  }
});

test('TestNonDeterministicComparison-style: a coin-flip less, from the LCG, gives Go 1.26’s order and Less calls', () => {
  // sort_test.go checks only that an inconsistent less does not panic; with the LCG as the coin, every
  // step of the algorithm shows in the result (Go printed these rows from the same LCG, seed 3).
  for (const [n, wantCalls, wantHash] of [
    [50, 210, 0xb9553720],
    [500, 2292, 0x1b3cbbf7],
  ] as const) {
    seed = 3;
    let calls = 0;
    const ids = Array.from({ length: n }, (_, i) => i);
    sort(ids, () => {
      calls++;
      return ((next() >>> 16) & 1) === 1;
    });
    assert.equal(fnv1a(ids), wantHash, `n=${n}`);
    assert.equal(calls, wantCalls, `n=${n}: Less calls`);
  }
});

test('a less that is always true drives pdqsort to heapSort: Go 1.26’s order and Less calls', () => {
  // Every partition puts all but the pivot on one side, so each round spends one of the bits.Len(n)
  // bad pivots allowed and the rest of the range goes to heapSort (Go printed these rows).
  for (const [n, wantCalls, want] of [
    [13, 81, [11, 10, 9, 8, 7, 0, 5, 4, 3, 2, 1, 12, 6]],
    [100, 2207, 0x65382b9d],
    [1000, 31815, 0xee8f767b],
  ] as const) {
    let calls = 0;
    const ids = Array.from({ length: n }, (_, i) => i);
    sort(ids, () => {
      calls++;
      return true;
    });
    if (typeof want === 'number') assert.equal(fnv1a(ids), want, `n=${n}`);
    else assert.deepEqual(ids, want, `n=${n}`);
    assert.equal(calls, wantCalls, `n=${n}: Less calls`);
  }
});
