// Accept-header negotiation the way kube-apiserver does it (munnerz/goautoneg ParseAccept +
// apiserver NegotiateMediaTypeOptions; docs/kubernetes-mvp.md §5.1). The simulator only encodes JSON, so clauses
// that would pick YAML or protobuf are skipped (the next acceptable clause wins) instead of being
// answered in those encodings.

export interface AcceptClause {
  type: string;
  subtype: string;
  q: number;
  params: Record<string, string>;
}

/** goautoneg.ParseAccept: split on ',', params on ';', q as float, stable sort by q then specificity. */
export function parseAccept(header: string): AcceptClause[] {
  const out: AcceptClause[] = [];
  for (const part of header.split(',')) {
    const pieces = part.split(';');
    const mrange = pieces[0]!.trim();
    let type: string;
    let subtype: string;
    const slash = mrange.indexOf('/');
    if (slash < 0) {
      if (mrange !== '*') continue;
      type = '*';
      subtype = '*';
    } else {
      type = mrange.slice(0, slash).trim();
      subtype = mrange.slice(slash + 1).trim();
    }
    const clause: AcceptClause = { type, subtype, q: 1, params: {} };
    for (let i = 1; i < pieces.length; i++) {
      const sp = pieces[i]!.split('=');
      if (sp.length !== 2) continue;
      const key = sp[0]!.trim();
      if (key === 'q') {
        const q = Number.parseFloat(sp[1]!);
        clause.q = Number.isFinite(q) ? q : 0;
      } else {
        clause.params[key] = sp[1]!.trim();
      }
    }
    out.push(clause);
  }
  // Array.prototype.sort is stable.
  return out.sort((a, b) => {
    if (a.q !== b.q) return b.q - a.q;
    if (a.type !== '*' && b.type === '*') return -1;
    if (a.type === '*' && b.type !== '*') return 1;
    if (a.subtype !== '*' && b.subtype === '*') return -1;
    if (a.subtype === '*' && b.subtype !== '*') return 1;
    return 0;
  });
}

type Serializer = 'json' | 'yaml' | 'protobuf';
const SERIALIZERS: readonly [Serializer, string, string][] = [
  ['json', 'application', 'json'],
  ['yaml', 'application', 'yaml'],
  ['protobuf', 'application', 'vnd.kubernetes.protobuf'],
];

function matchSerializer(c: AcceptClause): Serializer | undefined {
  for (const [name, t, s] of SERIALIZERS) {
    if ((c.type === '*' || c.type === t) && (c.subtype === '*' || c.subtype === s)) return name;
  }
  return undefined;
}

interface ClauseOptions {
  convert?: { group: string; version: string; kind: string };
  stream?: string;
  profile?: string;
  pretty: boolean;
}

/** acceptMediaTypeOptions: returns undefined when the clause is rejected. */
function clauseOptions(c: AcceptClause, streamOk: boolean): ClauseOptions | undefined {
  const o: ClauseOptions = { pretty: false };
  for (const [k, v] of Object.entries(c.params)) {
    switch (k) {
      case 'as': (o.convert ??= { group: '', version: '', kind: '' }).kind = v; break;
      case 'g': (o.convert ??= { group: '', version: '', kind: '' }).group = v; break;
      case 'v': (o.convert ??= { group: '', version: '', kind: '' }).version = v; break;
      case 'sv': return undefined; // no endpoint here allows a server version
      case 'stream':
        if (!streamOk || v !== 'watch') return undefined;
        o.stream = v;
        break;
      case 'pretty': o.pretty = v === '1'; break;
      case 'profile': o.profile = v; break;
      default: break; // unrecognized parameters are ignored
    }
  }
  return o;
}

// ---------------------------------------------------------------------------------------------
// Discovery (/api, /apis)

export type DiscoveryChoice = 'v2' | 'v2beta1' | 'legacy' | 'none';

/**
 * Decides what /api or /apis serves for an Accept header. `v2beta1` is only answered when
 * `serveV2beta1` (the AggregatedDiscoveryRemoveBetaType gate off); otherwise such clauses are
 * rejected and negotiation moves on, typically to the legacy `application/json`.
 * 'none' means no acceptable JSON clause (the server answers 406).
 */
export function negotiateDiscovery(accept: string | undefined, serveV2beta1: boolean): DiscoveryChoice {
  if (!accept) return 'legacy';
  const key = (serveV2beta1 ? '1' : '0') + accept;
  const hit = discoveryCache.get(key);
  if (hit) return hit;
  let result: DiscoveryChoice = 'none';
  for (const c of parseAccept(accept)) {
    const ser = matchSerializer(c);
    if (!ser) continue;
    const o = clauseOptions(c, false);
    if (!o) continue;
    let choice: DiscoveryChoice = 'legacy';
    if (o.convert) {
      const cv = o.convert;
      const agg = cv.group === 'apidiscovery.k8s.io' && cv.kind === 'APIGroupDiscoveryList';
      if (agg && cv.version === 'v2') choice = 'v2';
      else if (agg && cv.version === 'v2beta1' && serveV2beta1) choice = 'v2beta1';
      else continue; // DiscoveryEndpointRestrictions allow no other conversion
    }
    if (ser !== 'json') continue; // the simulator only writes JSON
    result = choice;
    break;
  }
  remember(discoveryCache, key, result);
  return result;
}

// ---------------------------------------------------------------------------------------------
// JSON endpoints (legacy discovery documents, /version, resources)

export type ResourceRendering = 'object' | 'table' | 'metadata';

export interface ResourceChoice {
  rendering: ResourceRendering;
  /** meta.k8s.io version for Table / PartialObjectMetadata(List). */
  metaVersion: 'v1' | 'v1beta1';
  /** Content-Type of the response. */
  contentType: string;
}

const PLAIN_JSON: ResourceChoice = { rendering: 'object', metaVersion: 'v1', contentType: 'application/json' };

/**
 * Negotiation for resource endpoints: plain JSON, `as=Table` or `as=PartialObjectMetadata[List]`
 * (g=meta.k8s.io, v=v1|v1beta1). `undefined` = 406 Not Acceptable.
 */
export function negotiateResource(accept: string | undefined, watch: boolean): ResourceChoice | undefined {
  if (!accept) return PLAIN_JSON;
  const key = (watch ? '1' : '0') + accept;
  if (resourceCache.has(key)) return resourceCache.get(key);
  let result: ResourceChoice | undefined;
  for (const c of parseAccept(accept)) {
    const ser = matchSerializer(c);
    if (!ser) continue;
    const o = clauseOptions(c, watch);
    if (!o) continue;
    let choice: ResourceChoice = PLAIN_JSON;
    if (o.convert) {
      const cv = o.convert;
      if (cv.group !== 'meta.k8s.io' || (cv.version !== 'v1' && cv.version !== 'v1beta1')) continue;
      if (cv.kind === 'Table') {
        choice = { rendering: 'table', metaVersion: cv.version, contentType: `application/json;as=Table;v=${cv.version};g=meta.k8s.io` };
      } else if (cv.kind === 'PartialObjectMetadata' || cv.kind === 'PartialObjectMetadataList') {
        choice = { rendering: 'metadata', metaVersion: cv.version, contentType: `application/json;as=${cv.kind};v=${cv.version};g=meta.k8s.io` };
      } else {
        continue;
      }
    }
    if (ser !== 'json') continue;
    result = choice;
    break;
  }
  remember(resourceCache, key, result);
  return result;
}

/** Plain JSON endpoints that allow no conversion (legacy discovery documents, /version). */
export function acceptsPlainJson(accept: string | undefined): boolean {
  if (!accept) return true;
  const key = accept;
  const hit = plainCache.get(key);
  if (hit !== undefined) return hit;
  let ok = false;
  for (const c of parseAccept(accept)) {
    const ser = matchSerializer(c);
    if (!ser) continue;
    const o = clauseOptions(c, false);
    if (!o || o.convert) continue;
    if (ser !== 'json') continue;
    ok = true;
    break;
  }
  remember(plainCache, key, ok);
  return ok;
}

const discoveryCache = new Map<string, DiscoveryChoice>();
const resourceCache = new Map<string, ResourceChoice | undefined>();
const plainCache = new Map<string, boolean>();

function remember<V>(m: Map<string, V>, k: string, v: V): void {
  if (m.size >= 512) m.clear();
  m.set(k, v);
}
