// Static membership (--peer-discovery=static, the default): --static-peers plus --peers-file.
//
// The peers file is YAML (JSON is YAML too): a list of {id, address}, or {peers: [...]}:
//
//   - id: mvproxy-cp-2
//     address: 10.0.0.2:6445
//   - id: mvproxy-cp-3
//     address: "[fd00::3]:6445"
//
// The same file can be handed to every node: the entry with this node's own server ID is skipped.
// It is re-read when it changes (lifecycle/filewatch.ts: directory watch + a resync every
// `resyncMs`); a file that cannot be read or parsed, or lists a peer twice, keeps the last good
// list and is logged. At start a bad file is a configuration error (there is no last good list).
// A peer in both lists takes the file's address.

import type { Node } from 'yaml';
import { yaml } from '../config/yaml';
import { ErrorCode } from '../api/errors';
import { checkStaticPeer } from '../config/values';
import { WatchedFiles } from '../lifecycle/filewatch';
import type { Logger } from '../telemetry/log';
import type { Membership, PeerEndpoint } from './membership';

export class PeersFileError extends Error {
  readonly code = ErrorCode.MVP_ERR_CONFIG;
}

/** Parses a peers file. Throws PeersFileError naming the file and the entry. */
export function parsePeersFile(text: string, file: string): PeerEndpoint[] {
  const fail = (why: string): never => {
    throw new PeersFileError(`peers file "${file}": ${why}`);
  };
  const doc = yaml().parseDocument(text, { uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length > 0) fail(`yaml: ${doc.errors[0].message.split('\n')[0]}`);
  let root = doc.contents as Node | null;
  if (root === null || (yaml().isScalar(root) && root.value === null)) return []; // an empty file: no peers
  if (yaml().isMap(root)) {
    const keys = root.items.map((p) => (yaml().isScalar(p.key) ? String(p.key.value) : '?'));
    const unknown = keys.find((k) => k !== 'peers');
    if (unknown !== undefined) fail(`unknown field "${unknown}": want a list of {id, address} or {peers: [...]}`);
    root = (root.get('peers', true) as Node | undefined) ?? null;
    if (root === null || (yaml().isScalar(root) && root.value === null)) return [];
  }
  if (!yaml().isSeq(root)) fail('want a list of {id, address} (or {peers: [...]})');
  const out: PeerEndpoint[] = [];
  const ids = new Set<string>();
  (root as { items: unknown[] }).items.forEach((item, i) => {
    const v = (item as { toJSON?: () => unknown })?.toJSON?.() ?? item;
    if (v === null || typeof v !== 'object' || Array.isArray(v)) fail(`entry ${i}: want {id, address}`);
    const rec = v as Record<string, unknown>;
    for (const k of Object.keys(rec)) if (k !== 'id' && k !== 'address') fail(`entry ${i}: unknown field "${k}"`);
    if (typeof rec.id !== 'string' || typeof rec.address !== 'string') fail(`entry ${i}: want string fields id and address`);
    let p: PeerEndpoint;
    try {
      p = checkStaticPeer({ id: rec.id as string, address: rec.address as string });
    } catch (e) {
      fail(`entry ${i}: ${(e as Error).message}`);
    }
    if (ids.has(p!.id)) fail(`entry ${i}: peer "${p!.id}" is listed twice`);
    ids.add(p!.id);
    out.push({ id: p!.id, address: p!.address });
  });
  return out;
}

export interface StaticMembershipOptions {
  serverID: string;
  /** --static-peers. */
  flagPeers: readonly PeerEndpoint[];
  peersFile?: string;
  /** Peers file re-read period besides fs.watch (default 30 s). */
  resyncMs?: number;
  log: Logger;
}

export class StaticMembership implements Membership {
  readonly mode = 'static';
  private flagPeers: readonly PeerEndpoint[];
  private filePeers: readonly PeerEndpoint[] = [];
  private merged: readonly PeerEndpoint[] = [];
  private readonly listeners: (() => void)[] = [];
  private readonly watched: WatchedFiles | undefined;
  private loaded = false;

  constructor(private readonly o: StaticMembershipOptions) {
    this.flagPeers = o.flagPeers;
    this.watched = o.peersFile
      ? new WatchedFiles([o.peersFile], { resyncMs: o.resyncMs ?? 30_000, log: o.log, onChange: (c) => this.fileChanged(c.get(o.peersFile!)!) })
      : undefined;
    this.merge();
  }

  /** Reads the peers file (throws PeersFileError when it is bad: there is no last good list yet) and watches it. */
  start(): void {
    this.watched?.start();
  }

  peers(): readonly PeerEndpoint[] {
    return this.merged;
  }

  live(): boolean {
    return true;
  }

  onChange(fn: () => void): void {
    this.listeners.push(fn);
  }

  /** Replaces the --static-peers part (Daemon.setStaticPeers). */
  setFlagPeers(peers: readonly PeerEndpoint[]): void {
    this.flagPeers = peers;
    this.merge();
  }

  async release(): Promise<void> {}

  stop(): void {
    this.watched?.stop();
  }

  private fileChanged(content: Buffer | Error): void {
    const file = this.o.peersFile!;
    try {
      if (content instanceof Error) throw new PeersFileError(`peers file "${file}": ${content.message}`);
      const peers = parsePeersFile(content.toString('utf8'), file);
      const before = this.filePeers;
      this.filePeers = peers;
      if (this.loaded) this.o.log.info(2, 'peers file re-read', { file, peers: peers.length, before: before.length });
      this.loaded = true;
      this.merge();
    } catch (e) {
      if (!this.loaded) throw e; // at start: a configuration error
      this.o.log.error('the peers file is not usable; keeping the last good peer list', e, { file, peers: this.filePeers.length });
    }
  }

  private merge(): void {
    const byID = new Map<string, PeerEndpoint>();
    for (const p of this.flagPeers) byID.set(p.id, p);
    for (const p of this.filePeers) byID.set(p.id, p);
    byID.delete(this.o.serverID);
    const next = [...byID.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const key = (l: readonly PeerEndpoint[]) => l.map((p) => `${p.id}=${p.address}`).join(',');
    if (key(next) === key(this.merged)) return;
    this.merged = next;
    for (const fn of this.listeners) fn();
  }
}
