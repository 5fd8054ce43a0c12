// Streaming responses: watch (chunked application/json lines of {"type","object"}) and pods/log
// (text lines, with ?follow=true a line every 200 ms until the client goes away).
import { gzipSync } from 'node:zlib';
import type { ResourceInfo, ResourceRequest } from './catalog';
import { header, startStream, type Ctx } from './context';
import type { ResourceChoice } from './negotiate';
import { renderObject, type IncludeObject } from './render';
import type { Matcher } from './selectors';
import { errors, statusBody } from './status';
import type { StoreEvent, StoredObject } from './store';

export interface WatchOptions {
  info: ResourceInfo;
  /** undefined = all namespaces (or cluster-scoped). */
  namespace?: string;
  name?: string;
  matcher: Matcher;
  resourceVersion?: string;
  timeoutSeconds?: number;
  allowBookmarks: boolean;
  sendInitialEvents: boolean;
  choice: ResourceChoice;
  include: IncludeObject;
}

/** A watch that outgrows this much unsent output is ended (slow consumer). */
const MAX_BUFFERED = 32 * 1024 * 1024;
/** Watches without timeoutSeconds end after this long, like the server's --min-request-timeout. */
const DEFAULT_WATCH_TIMEOUT_S = 1800;
/** Watch bodies kept when the sim records streams (SimApiserverOptions.recordStreams). */
const RECORDED_STREAMS_MAX = 64;

/**
 * Whether a request's Accept-Encoding asks for gzip, as kube-apiserver reads it
 * (responsewriters.ContentEncodingSupported): the first header value only (Header.Get), split at
 * commas, a token equal to "gzip" once trimmed ("gzip;q=1" is not one).
 */
function acceptsGzip(v: string | undefined): boolean {
  return v !== undefined && v.split(',').some((t) => t.trim() === 'gzip');
}

/**
 * One flush of a gzip watch as kube-apiserver 1.37 writes it (handlers/watch.go perFlushGzipWriter):
 * what was written since the last flush becomes one complete gzip member (the writer is closed at
 * every flush and a new one started on the next write), level 1 (gzipContentEncodingLevel). So the
 * body is a series of members, which Go's gzip.Reader reads as one stream. Go writes OS 255
 * ("unknown") in the header where zlib writes 3 (Unix): set as Go has it.
 */
function gzipMember(data: string): Buffer {
  const b = gzipSync(data, { level: 1 });
  b[9] = 0xff;
  return b;
}

export function serveWatch(ctx: Ctx, o: WatchOptions): void {
  const { store } = ctx.sim;
  const info = o.info;
  const res = ctx.res;
  const matches = (so: StoredObject): boolean =>
    (o.namespace === undefined || so.namespace === o.namespace) && (o.name === undefined || so.name === o.name) && o.matcher(so.object);

  // Snapshot and subscription happen in the same tick, so no event falls between them.
  let initial: StoredObject[] = [];
  let replay: StoreEvent[] | undefined = [];
  const rvParam = o.resourceVersion;
  if (o.sendInitialEvents || rvParam === undefined || rvParam === '' || rvParam === '0') {
    initial = store.list(info.group, info.resource, o.namespace).filter(matches);
  } else {
    const n = Number(rvParam);
    if (!/^\d+$/.test(rvParam) || !Number.isSafeInteger(n)) {
      throw errors.badRequest(`resourceVersion: Invalid value: "${rvParam}": strconv.ParseUint: parsing "${rvParam}": invalid syntax`);
    }
    replay = store.eventsSince(n, info.group, info.resource);
  }

  // kube-apiserver 1.37 gzips only a watch-list (WatchListCompression; get.go isListWatchRequest):
  // Content-Encoding and Vary are set, and the head is flushed alone, before any gzip byte.
  const gzip = ctx.sim.watchListCompression && o.sendInitialEvents && o.allowBookmarks && acceptsGzip(header(ctx, 'accept-encoding'));
  startStream(ctx, o.choice.contentType, gzip ? ['Content-Encoding', 'gzip', 'Vary', 'Accept-Encoding'] : []);
  const recorded = recordStream(ctx);
  const line = (type: string, so: StoredObject): string => `{"type":"${type}","object":${renderObject(info, so, o.choice, o.include)}}\n`;
  const bookmark = (initialEnd: boolean): string => {
    const meta = initialEnd
      ? `{"resourceVersion":"${store.resourceVersion}","creationTimestamp":null,"annotations":{"k8s.io/initial-events-end":"true"}}`
      : `{"resourceVersion":"${store.resourceVersion}","creationTimestamp":null}`;
    return `{"type":"BOOKMARK","object":{"kind":${JSON.stringify(info.kind)},"apiVersion":${JSON.stringify(info.apiVersion)},"metadata":${meta}}}\n`;
  };

  if (replay === undefined) {
    const oldest = store.oldestEventResourceVersion ?? store.resourceVersion;
    res.end(`{"type":"ERROR","object":${statusBody(410, 'Expired', `too old resource version: ${rvParam!} (${oldest - 1})`)}}\n`);
    return;
  }

  let done = false;
  let timer: NodeJS.Timeout | undefined;
  // Each write is one flush of the real server (it flushes when its event channel is empty).
  const write = (chunk: string): void => {
    if (done) return;
    const bytes = gzip ? gzipMember(chunk) : Buffer.from(chunk);
    recorded?.push(bytes);
    res.write(bytes);
    if (res.writableLength > MAX_BUFFERED) stop();
  };
  const onEvent = (e: StoreEvent): void => {
    if (e.type === 'ADDED') {
      if (matches(e.object)) write(line('ADDED', e.object));
    } else if (e.type === 'DELETED') {
      if (matches(e.object)) write(line('DELETED', e.object));
    } else {
      const now = matches(e.object);
      const before = e.prev ? matches(e.prev) : false;
      if (now && before) write(line('MODIFIED', e.object));
      else if (now) write(line('ADDED', e.object));
      else if (before) write(line('DELETED', e.object));
    }
  };
  const unsubscribe = store.subscribe(info.group, info.resource, onEvent);

  function stop(): void {
    if (done) return;
    done = true;
    unsubscribe();
    if (timer) clearTimeout(timer);
    ctx.sim.streams.delete(stop);
    if (!res.writableEnded && !res.destroyed) {
      if (ctx.sim.closing) res.end(() => res.socket?.end());
      else res.end();
    }
  }
  ctx.sim.streams.add(stop);
  res.on('close', stop);

  let out = '';
  for (const so of initial) out += line('ADDED', so);
  if (o.sendInitialEvents && o.allowBookmarks) out += bookmark(true);
  if (out) write(out);
  for (const e of replay) onEvent(e);

  const seconds = o.timeoutSeconds ?? DEFAULT_WATCH_TIMEOUT_S;
  timer = setTimeout(() => {
    if (o.allowBookmarks) write(bookmark(false));
    stop();
  }, seconds * 1000);
  timer.unref();
}

/** Where a watch's body bytes are kept, by the request's Audit-Id, when the sim records streams. */
function recordStream(ctx: Ctx): Buffer[] | null {
  const all = ctx.sim.streamBodies;
  if (all === null) return null;
  const h = ctx.baseHeaders;
  let id = '';
  for (let i = 0; i < h.length; i += 2) if (h[i] === 'Audit-Id') id = h[i + 1]!;
  const bodies: Buffer[] = [];
  all.delete(id);
  all.set(id, bodies);
  if (all.size > RECORDED_STREAMS_MAX) all.delete(all.keys().next().value!);
  return bodies;
}

// ---------------------------------------------------------------------------------------------
// pods/log

const LOG_INTERVAL_MS = 200;
/** A followed log stream ends after this many lines (10 minutes) so it stays bounded. */
const MAX_FOLLOW_LINES = 3000;

export function serveLogs(ctx: Ctx, rr: ResourceRequest, pod: StoredObject): void {
  const q = ctx.query;
  const spec = (pod.object['spec'] ?? {}) as { containers?: { name?: string }[] };
  const containers = (spec.containers ?? []).map((c) => String(c.name ?? '')).filter((n) => n);
  let container = q.get('container') ?? '';
  if (container && containers.length && !containers.includes(container)) {
    throw errors.badRequest(`container ${container} is not valid for pod ${pod.name}`);
  }
  if (!container) {
    if (containers.length > 1) {
      throw errors.badRequest(`a container name must be specified for pod ${pod.name}, choose one of: [${containers.join(' ')}]`);
    }
    container = containers[0] ?? 'main';
  }
  const timestamps = q.get('timestamps') === 'true';
  const follow = q.get('follow') === 'true';
  const tailParam = q.get('tailLines');
  const tail = tailParam === null || tailParam === '' ? NaN : Number(tailParam);
  const sim = ctx.sim.name;
  const text = (i: number): string => {
    const ts = timestamps ? new Date().toISOString().replace('Z', '000000Z') + ' ' : '';
    return `${ts}log line ${i} from ${pod.namespace}/${pod.name} container ${container} (simulated apiserver ${sim})\n`;
  };

  const first = 3;
  let from = 1;
  if (Number.isInteger(tail) && tail >= 0) from = Math.max(1, first - tail + 1);
  let initial = '';
  for (let i = from; i <= first; i++) initial += text(i);

  const res = ctx.res;
  startStream(ctx, 'text/plain');
  if (!follow) {
    res.end(initial);
    return;
  }
  if (initial) res.write(initial);
  let n = first;
  let done = false;
  const interval = setInterval(() => {
    n++;
    res.write(text(n));
    if (n >= MAX_FOLLOW_LINES) stop();
  }, LOG_INTERVAL_MS);
  interval.unref();
  const unsubscribe = ctx.sim.store.subscribe(rr.info.group, rr.info.resource, (e) => {
    if (e.type === 'DELETED' && e.object.namespace === pod.namespace && e.object.name === pod.name) stop();
  });
  function stop(): void {
    if (done) return;
    done = true;
    clearInterval(interval);
    unsubscribe();
    ctx.sim.streams.delete(stop);
    if (!res.writableEnded && !res.destroyed) {
      if (ctx.sim.closing) res.end(() => res.socket?.end());
      else res.end();
    }
  }
  ctx.sim.streams.add(stop);
  res.on('close', stop);
}
