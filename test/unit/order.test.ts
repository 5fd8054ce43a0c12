// MergePreservingRelativeOrder: the cases of kubernetes/apimachinery pkg/util/sort/sort_test.go
// `TestSortDiscoveryGroupsTopo` (kubernetes/kubernetes staging/src/k8s.io/apimachinery/pkg/util/sort/
// sort_test.go at 6732d913; the test keeps its old name but calls MergePreservingRelativeOrder),
// rewritten by hand, plus the doc-comment examples of sort.go and the byte-order rules of
// docs/kubernetes-mvp.md §5.4.1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { compareByteOrder } from '../../src/gocompat/strings';
import { mergePreservingRelativeOrder, sortedByteOrder } from '../../src/aggregation/order';

const goCases: { name: string; input: string[][]; want: string[] }[] = [
  {
    name: 'consensus ordering',
    input: [
      ['A', 'B', 'C', 'D'],
      ['A', 'B', 'C', 'D'],
      ['A', 'X', 'Z', 'D'],
      ['Z', 'Y'],
      ['Q'],
    ],
    want: ['A', 'B', 'C', 'Q', 'X', 'Z', 'D', 'Y'],
  },
  { name: 'empty input', input: [], want: [] },
  { name: 'single peer', input: [['foo', 'bar', 'baz']], want: ['foo', 'bar', 'baz'] },
  { name: 'conflicting orderings', input: [['A', 'B'], ['B', 'A']], want: ['A', 'B'] },
  { name: 'empty list merged with non-empty list', input: [[], ['A', 'B', 'C']], want: ['A', 'B', 'C'] },
  { name: 'multiple empty lists merged', input: [[], [], []], want: [] },
  {
    name: 'lexical tiebreak at beginning',
    input: [['C', 'D', 'E'], ['B', 'D', 'E'], ['A', 'D', 'E']],
    want: ['A', 'B', 'C', 'D', 'E'],
  },
  {
    name: 'lexical tiebreak in middle',
    input: [['A', 'D', 'E'], ['A', 'C', 'E'], ['A', 'B', 'E']],
    want: ['A', 'B', 'C', 'D', 'E'],
  },
  {
    name: 'conflicting orderings of 3 lists',
    input: [['A', 'B', 'C'], ['B', 'C', 'A'], ['C', 'A', 'B']],
    want: ['A', 'B', 'C'],
  },
  {
    name: 'conflicting ordering with different list lengths',
    input: [['A', 'B', 'C', 'D'], ['B', 'A'], ['C', 'D']],
    want: ['A', 'B', 'C', 'D'],
  },
  {
    name: 'conflicting partial lists',
    input: [['A', 'B'], ['C', 'D'], ['B', 'A']],
    want: ['A', 'B', 'C', 'D'],
  },
  { name: 'cycle', input: [['A', 'B'], ['B', 'C'], ['C', 'A']], want: ['A', 'B', 'C'] },
];

for (const tc of goCases) {
  test(`TestSortDiscoveryGroupsTopo: ${tc.name}`, () => {
    assert.deepEqual(mergePreservingRelativeOrder(tc.input), tc.want);
  });
}

test('sort.go doc examples', () => {
  assert.deepEqual(mergePreservingRelativeOrder([['a', 'b', 'c'], ['b', 'c']]), ['a', 'b', 'c']);
  assert.deepEqual(mergePreservingRelativeOrder([['a', 'c'], ['b', 'c']]), ['a', 'b', 'c']);
  // Go's doc says "returns error (cycle detected)"; the function itself falls back to the
  // sorted list, and here the shortcut applies first anyway (both lists are complete).
  assert.deepEqual(mergePreservingRelativeOrder([['b', 'a'], ['a', 'b']]), ['b', 'a']);
});

test('shortcut: the first complete list wins even against a contradicting list (docs/kubernetes-mvp.md §5.4.1)', () => {
  assert.deepEqual(mergePreservingRelativeOrder([['z', 'y'], ['y', 'x', 'z']]), ['y', 'x', 'z']);
  // A complete list with a duplicate is not "complete": Kahn runs instead.
  assert.deepEqual(mergePreservingRelativeOrder([['b', 'a', 'b'], ['a']]), ['a', 'b']);
});

test('shortcut returns a copy, not the input array', () => {
  const list = ['x', 'y'];
  const out = mergePreservingRelativeOrder([list]);
  assert.deepEqual(out, list);
  assert.notEqual(out, list);
});

test('ties are broken in byte order (v10 before v2, uppercase before lowercase)', () => {
  assert.deepEqual(mergePreservingRelativeOrder([['v2'], ['v10'], ['a'], ['B']]), ['B', 'a', 'v10', 'v2']);
  // kube-aware version order plays no part: v1alpha1 < v1beta1 < v2 when unconstrained.
  assert.deepEqual(mergePreservingRelativeOrder([['v2'], ['v1beta1'], ['v1alpha1']]), ['v1alpha1', 'v1beta1', 'v2']);
});

test('compareByteOrder matches UTF-8 byte order where UTF-16 order differs', () => {
  const astral = '\u{1F600}'; // surrogate pair D83D DE00, UTF-8 F0 9F 98 80
  const bmpHigh = '\uFF21'; // UTF-8 EF BC A1
  assert.ok(astral < bmpHigh, 'UTF-16 code-unit order puts the astral char first');
  assert.ok(compareByteOrder(astral, bmpHigh) > 0);
  assert.ok(Buffer.compare(Buffer.from(astral), Buffer.from(bmpHigh)) > 0);
  assert.deepEqual(sortedByteOrder([astral, bmpHigh, 'a']), ['a', bmpHigh, astral]);
});

test('property: compareByteOrder agrees with Buffer.compare on UTF-8', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (a, b) => {
      return Math.sign(compareByteOrder(a, b)) === Math.sign(Buffer.compare(Buffer.from(a), Buffer.from(b)));
    }),
    { numRuns: 500 },
  );
});

test('property: output holds every item once and respects every list when they agree', () => {
  // Lists drawn as subsequences of one hidden total order never conflict.
  const arb = fc
    .uniqueArray(fc.string({ minLength: 1, maxLength: 4 }), { minLength: 0, maxLength: 12 })
    .chain((order) =>
      fc.tuple(
        fc.constant(order),
        fc.array(fc.subarray(order), { minLength: 1, maxLength: 5 }),
      ),
    );
  fc.assert(
    fc.property(arb, ([, lists]) => {
      const out = mergePreservingRelativeOrder(lists);
      const all = new Set(lists.flat());
      assert.equal(out.length, all.size);
      assert.deepEqual(new Set(out), all);
      const pos = new Map(out.map((x, i) => [x, i]));
      for (const l of lists) {
        for (let i = 1; i < l.length; i++) assert.ok(pos.get(l[i - 1]!)! < pos.get(l[i]!)!);
      }
    }),
    { numRuns: 300 },
  );
});
