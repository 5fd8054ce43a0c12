// Patch application: JSON merge patch (RFC 7386; strategic-merge and apply patches are treated
// as merge patches) and JSON patch (RFC 6902).

export class PatchError extends Error {}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** RFC 7386. Strategic-merge directives (`$patch`, `$retainKeys`, `$setElementOrder/…`) are dropped. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith('$')) continue;
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function unescapePointer(seg: string): string {
  return seg.replace(/~1/g, '/').replace(/~0/g, '~');
}

function parsePointer(p: unknown): string[] {
  if (typeof p !== 'string') throw new PatchError('json patch: path must be a string');
  if (p === '') return [];
  if (!p.startsWith('/')) throw new PatchError(`json patch: invalid path ${JSON.stringify(p)}`);
  return p.slice(1).split('/').map(unescapePointer);
}

function getAt(doc: Json, path: string[]): Json {
  let cur: Json = doc;
  for (const seg of path) {
    if (Array.isArray(cur)) {
      const i = Number(seg);
      if (!Number.isInteger(i) || i < 0 || i >= cur.length) throw new PatchError(`json patch: path not found: /${path.join('/')}`);
      cur = cur[i]!;
    } else if (cur !== null && typeof cur === 'object' && seg in cur) {
      cur = (cur as Record<string, Json>)[seg]!;
    } else {
      throw new PatchError(`json patch: path not found: /${path.join('/')}`);
    }
  }
  return cur;
}

function parentOf(doc: Json, path: string[]): [Json, string] {
  if (!path.length) throw new PatchError('json patch: cannot operate on the root');
  return [getAt(doc, path.slice(0, -1)), path[path.length - 1]!];
}

function add(doc: Json, path: string[], value: Json): Json {
  if (!path.length) return value;
  const [parent, key] = parentOf(doc, path);
  if (Array.isArray(parent)) {
    const i = key === '-' ? parent.length : Number(key);
    if (!Number.isInteger(i) || i < 0 || i > parent.length) throw new PatchError(`json patch: invalid index ${key}`);
    parent.splice(i, 0, value);
  } else if (parent !== null && typeof parent === 'object') {
    parent[key] = value;
  } else {
    throw new PatchError(`json patch: parent of /${path.join('/')} is not a container`);
  }
  return doc;
}

function remove(doc: Json, path: string[]): Json {
  const [parent, key] = parentOf(doc, path);
  if (Array.isArray(parent)) {
    const i = Number(key);
    if (!Number.isInteger(i) || i < 0 || i >= parent.length) throw new PatchError(`json patch: invalid index ${key}`);
    parent.splice(i, 1);
  } else if (parent !== null && typeof parent === 'object' && key in parent) {
    delete parent[key];
  } else {
    throw new PatchError(`json patch: path not found: /${path.join('/')}`);
  }
  return doc;
}

/** RFC 6902 on a deep copy of `target`. */
export function jsonPatch(target: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops)) throw new PatchError('json patch: body must be an array of operations');
  let doc = JSON.parse(JSON.stringify(target)) as Json;
  for (const op of ops) {
    if (!isObject(op)) throw new PatchError('json patch: operation must be an object');
    const path = parsePointer(op['path']);
    const value = op['value'] as Json;
    switch (op['op']) {
      case 'add': doc = add(doc, path, clone(value)); break;
      case 'remove': doc = remove(doc, path); break;
      case 'replace': getAt(doc, path); doc = path.length ? add(remove(doc, path), path, clone(value)) : clone(value); break;
      case 'move': {
        const from = parsePointer(op['from']);
        const v = getAt(doc, from);
        doc = add(remove(doc, from), path, v);
        break;
      }
      case 'copy': doc = add(doc, path, clone(getAt(doc, parsePointer(op['from'])))); break;
      case 'test':
        if (JSON.stringify(getAt(doc, path)) !== JSON.stringify(value)) throw new PatchError(`json patch: test failed at /${path.join('/')}`);
        break;
      default:
        throw new PatchError(`json patch: unknown operation ${JSON.stringify(op['op'])}`);
    }
  }
  return doc;
}

function clone(v: Json): Json {
  return v === undefined ? null : (JSON.parse(JSON.stringify(v)) as Json);
}
