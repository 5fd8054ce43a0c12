// sort.Sort: a line-for-line port of Go's pattern-defeating quicksort
// (go/src/sort/zsortinterface.go of Go 1.26: insertionSort, siftDown, heapSort, pdqsort, partition,
// partitionEqual, partialInsertionSort, breakPatterns, choosePivot, median (medianAdjacent is
// written out as median(i-1, i, i+1)), reverseRange; go/src/sort/sort.go: Sort, xorshift,
// nextPowerOfTwo). Go has sorted this way since 1.19.
//
// Why a port and not Array.prototype.sort: sort.Sort is not stable, and a `less` that is not a
// strict weak order (goautoneg's Accept ordering, src/request/accept.ts) gives an order that
// depends on the algorithm. Only a copy of Go's steps reproduces Go's answer for every input.
//
// What differs: the data is an array and `less` takes two elements (Go's Interface takes indices
// and swaps through data.Swap); breakPatterns computes Go's uint64 xorshift with BigInt. Up to 12
// elements it is insertion sort, so the usual inputs never reach the BigInt or tuple-returning
// steps.

export type Less<T> = (a: T, b: T) => boolean;

/** sort.Sort(data) with data.Less = less. Sorts in place; not stable. */
export function sort<T>(data: T[], less: Less<T>): void {
  const n = data.length;
  if (n <= 1) return;
  pdqsort(data, less, 0, n, bitsLen(n));
}

/** bits.Len for 0 <= x < 2^31. */
function bitsLen(x: number): number {
  return 32 - Math.clz32(x);
}

function swap<T>(d: T[], i: number, j: number): void {
  const t = d[i];
  d[i] = d[j];
  d[j] = t;
}

function insertionSort<T>(d: T[], less: Less<T>, a: number, b: number): void {
  for (let i = a + 1; i < b; i++) {
    for (let j = i; j > a && less(d[j], d[j - 1]); j--) swap(d, j, j - 1);
  }
}

function siftDown<T>(d: T[], less: Less<T>, lo: number, hi: number, first: number): void {
  let root = lo;
  for (;;) {
    let child = 2 * root + 1;
    if (child >= hi) return;
    if (child + 1 < hi && less(d[first + child], d[first + child + 1])) child++;
    if (!less(d[first + root], d[first + child])) return;
    swap(d, first + root, first + child);
    root = child;
  }
}

function heapSort<T>(d: T[], less: Less<T>, a: number, b: number): void {
  const first = a;
  const hi = b - a;
  for (let i = Math.trunc((hi - 1) / 2); i >= 0; i--) siftDown(d, less, i, hi, first);
  for (let i = hi - 1; i >= 0; i--) {
    swap(d, first, first + i);
    siftDown(d, less, 0, i, first);
  }
}

const UNKNOWN_HINT = 0;
const INCREASING_HINT = 1;
const DECREASING_HINT = 2;

function pdqsort<T>(d: T[], less: Less<T>, a: number, b: number, limit: number): void {
  const maxInsertion = 12;
  let wasBalanced = true;
  let wasPartitioned = true;
  for (;;) {
    const length = b - a;
    if (length <= maxInsertion) {
      insertionSort(d, less, a, b);
      return;
    }
    if (limit === 0) {
      heapSort(d, less, a, b);
      return;
    }
    if (!wasBalanced) {
      breakPatterns(d, a, b);
      limit--;
    }
    let [pivot, hint] = choosePivot(d, less, a, b);
    if (hint === DECREASING_HINT) {
      reverseRange(d, a, b);
      pivot = b - 1 - (pivot - a);
      hint = INCREASING_HINT;
    }
    if (wasBalanced && wasPartitioned && hint === INCREASING_HINT) {
      if (partialInsertionSort(d, less, a, b)) return;
    }
    if (a > 0 && !less(d[a - 1], d[pivot])) {
      a = partitionEqual(d, less, a, b, pivot);
      continue;
    }
    const [mid, alreadyPartitioned] = partition(d, less, a, b, pivot);
    wasPartitioned = alreadyPartitioned;
    const leftLen = mid - a;
    const rightLen = b - mid;
    const balanceThreshold = Math.trunc(length / 8);
    if (leftLen < rightLen) {
      wasBalanced = leftLen >= balanceThreshold;
      pdqsort(d, less, a, mid, limit);
      a = mid + 1;
    } else {
      wasBalanced = rightLen >= balanceThreshold;
      pdqsort(d, less, mid + 1, b, limit);
      b = mid;
    }
  }
}

function partition<T>(d: T[], less: Less<T>, a: number, b: number, pivot: number): [number, boolean] {
  swap(d, a, pivot);
  let i = a + 1;
  let j = b - 1;
  while (i <= j && less(d[i], d[a])) i++;
  while (i <= j && !less(d[j], d[a])) j--;
  if (i > j) {
    swap(d, j, a);
    return [j, true];
  }
  swap(d, i, j);
  i++;
  j--;
  for (;;) {
    while (i <= j && less(d[i], d[a])) i++;
    while (i <= j && !less(d[j], d[a])) j--;
    if (i > j) break;
    swap(d, i, j);
    i++;
    j--;
  }
  swap(d, j, a);
  return [j, false];
}

function partitionEqual<T>(d: T[], less: Less<T>, a: number, b: number, pivot: number): number {
  swap(d, a, pivot);
  let i = a + 1;
  let j = b - 1;
  for (;;) {
    while (i <= j && !less(d[a], d[i])) i++;
    while (i <= j && less(d[a], d[j])) j--;
    if (i > j) break;
    swap(d, i, j);
    i++;
    j--;
  }
  return i;
}

function partialInsertionSort<T>(d: T[], less: Less<T>, a: number, b: number): boolean {
  const maxSteps = 5;
  const shortestShifting = 50;
  let i = a + 1;
  for (let step = 0; step < maxSteps; step++) {
    while (i < b && !less(d[i], d[i - 1])) i++;
    if (i === b) return true;
    if (b - a < shortestShifting) return false;
    swap(d, i, i - 1);
    if (i - a >= 2) {
      for (let j = i - 1; j >= 1; j--) {
        if (!less(d[j], d[j - 1])) break;
        swap(d, j, j - 1);
      }
    }
    if (b - i >= 2) {
      for (let j = i + 1; j < b; j++) {
        if (!less(d[j], d[j - 1])) break;
        swap(d, j, j - 1);
      }
    }
  }
  return false;
}

const MASK64 = (1n << 64n) - 1n;

function breakPatterns<T>(d: T[], a: number, b: number): void {
  const length = b - a;
  if (length < 8) return;
  // sort.go xorshift (<<13, >>7, <<17) seeded with the length; nextPowerOfTwo = 1 << bits.Len(length)
  let r = BigInt(length);
  const modulus = BigInt(2 ** bitsLen(length));
  const start = a + Math.trunc(length / 4) * 2 - 1;
  for (let idx = start; idx <= start + 2; idx++) {
    r ^= (r << 13n) & MASK64;
    r ^= r >> 7n;
    r ^= (r << 17n) & MASK64;
    let other = Number(r & (modulus - 1n));
    if (other >= length) other -= length;
    swap(d, idx, a + other);
  }
}

function choosePivot<T>(d: T[], less: Less<T>, a: number, b: number): [number, number] {
  const shortestNinther = 50;
  const maxSwaps = 4 * 3;
  const l = b - a;
  const swaps = { n: 0 };
  const q = Math.trunc(l / 4);
  let i = a + q;
  let j = a + q * 2;
  let k = a + q * 3;
  if (l >= 8) {
    if (l >= shortestNinther) {
      i = median(d, less, i - 1, i, i + 1, swaps);
      j = median(d, less, j - 1, j, j + 1, swaps);
      k = median(d, less, k - 1, k, k + 1, swaps);
    }
    j = median(d, less, i, j, k, swaps);
  }
  if (swaps.n === 0) return [j, INCREASING_HINT];
  if (swaps.n === maxSwaps) return [j, DECREASING_HINT];
  return [j, UNKNOWN_HINT];
}

function median<T>(d: T[], less: Less<T>, a: number, b: number, c: number, swaps: { n: number }): number {
  // order2 three times, as sort.go median
  if (less(d[b], d[a])) {
    swaps.n++;
    [a, b] = [b, a];
  }
  if (less(d[c], d[b])) {
    swaps.n++;
    [b, c] = [c, b];
  }
  if (less(d[b], d[a])) {
    swaps.n++;
    [a, b] = [b, a];
  }
  return b;
}

function reverseRange<T>(d: T[], a: number, b: number): void {
  for (let i = a, j = b - 1; i < j; i++, j--) swap(d, i, j);
}
