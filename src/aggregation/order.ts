// Consensus ordering of names reported by several API servers.
//
// Port of kubernetes/apimachinery pkg/util/sort/sort.go `MergePreservingRelativeOrder`
// (kubernetes/kubernetes staging/src/k8s.io/apimachinery/pkg/util/sort/sort.go, read at
// b214dae15d58; docs/kubernetes-mvp.md §5.4 "MergePreservingRelativeOrder"). The earlier
// `SortDiscoveryGroupsTopo` (pairwise path search inside sort.Slice) in the same file never
// shipped in a release and is not ported.
//
// Go compares strings byte by byte (UTF-8). JavaScript's `<` compares UTF-16 code units, which
// disagrees for characters above U+FFFF against U+E000–U+FFFF, so every comparison here goes
// through `compareByteOrder` (docs/kubernetes-mvp.md §5.4.1: "Sorting compares bytes").

import { compareByteOrder } from '../gocompat/strings';

/** `sort.Strings` in byte order, returning a new array. */
export function sortedByteOrder(items: Iterable<string>): string[] {
  return Array.from(items).sort(compareByteOrder);
}

/** A node of the precedence graph (Go `graphNode`). */
interface GraphNode {
  /** Items that must come after this one (an edge is counted once however often it is seen). */
  readonly outEdges: Set<string>;
  /** Number of distinct items that must come before this one. */
  inDegree: number;
}

/**
 * Merges several lists into one that keeps every list's relative order where the lists agree.
 *
 * 1. Graph: an edge from each item to the next one in every list (duplicate edges once).
 * 2. Shortcut: the first input list that holds every distinct item exactly once is returned
 *    as it is (copied). This runs before any cycle check, so a complete list wins even when
 *    the other lists contradict it.
 * 3. Otherwise Kahn's topological sort, always taking the byte-order smallest ready item.
 * 4. A cycle (lists disagree on some pair and none is complete): all items sorted in byte order.
 *
 * Go returns nil for no input; this returns an empty array.
 */
export function mergePreservingRelativeOrder(inputLists: readonly (readonly string[])[]): string[] {
  if (inputLists.length === 0) return [];

  // 1. Build the precedence graph. Map iteration order is insertion order, but nothing below
  //    depends on it: the heap decides every tie.
  const graph = new Map<string, GraphNode>();
  for (const list of inputLists) {
    for (let i = 0; i < list.length; i++) {
      const node = getOrCreateNode(graph, list[i]!);
      if (i < list.length - 1) {
        const nextItem = list[i + 1]!;
        const nextNode = getOrCreateNode(graph, nextItem);
        if (!node.outEdges.has(nextItem)) {
          node.outEdges.add(nextItem);
          nextNode.inDegree++;
        }
      }
    }
  }

  // 2. Shortcut: one list already holds every item, each once.
  for (const list of inputLists) {
    if (list.length === graph.size && isUnique(list)) return list.slice();
  }

  // 3. Kahn's algorithm with a byte-order min-heap.
  const result = topologicalSort(graph);
  if (result !== undefined) return result;

  // 4. Cycle: "should not happen with valid input" (sort.go); fall back to a plain sort.
  return sortedByteOrder(graph.keys());
}

function getOrCreateNode(graph: Map<string, GraphNode>, name: string): GraphNode {
  let node = graph.get(name);
  if (node === undefined) {
    node = { outEdges: new Set(), inDegree: 0 };
    graph.set(name, node);
  }
  return node;
}

function isUnique(list: readonly string[]): boolean {
  return new Set(list).size === list.length;
}

/** Kahn's algorithm; undefined when the graph has a cycle (Go returns an error). */
function topologicalSort(graph: Map<string, GraphNode>): string[] | undefined {
  const heap = new StringMinHeap();
  for (const [name, node] of graph) {
    if (node.inDegree === 0) heap.push(name);
  }
  const result: string[] = [];
  while (heap.size > 0) {
    const current = heap.pop();
    result.push(current);
    for (const neighbor of graph.get(current)!.outEdges) {
      const neighborNode = graph.get(neighbor)!;
      neighborNode.inDegree--;
      if (neighborNode.inDegree === 0) heap.push(neighbor);
    }
  }
  return result.length === graph.size ? result : undefined;
}

/** Binary min-heap of strings in byte order (Go `stringMinHeap` with container/heap). */
class StringMinHeap {
  private readonly items: string[] = [];

  get size(): number {
    return this.items.length;
  }

  push(x: string): void {
    const h = this.items;
    h.push(x);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (compareByteOrder(h[i]!, h[parent]!) >= 0) break;
      [h[i], h[parent]] = [h[parent]!, h[i]!];
      i = parent;
    }
  }

  /** Removes and returns the smallest item; the heap must not be empty. */
  pop(): string {
    const h = this.items;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let smallest = i;
        if (l < h.length && compareByteOrder(h[l]!, h[smallest]!) < 0) smallest = l;
        if (r < h.length && compareByteOrder(h[r]!, h[smallest]!) < 0) smallest = r;
        if (smallest === i) break;
        [h[i], h[smallest]] = [h[smallest]!, h[i]!];
        i = smallest;
      }
    }
    return top;
  }
}
