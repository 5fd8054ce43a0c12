// The checks of single setting values, shared by the flags (cli/flags.ts), the config file
// (config/load.ts) and the peers file (peers/static.ts). Each returns the value or throws a
// ValueError whose message is the reason only; the caller names the flag or the field.

import { isIP } from 'node:net';
import { isHostPort } from '../gocompat/net';
import { goDurationMs } from '../gocompat/time';
import { checkTLSVersion } from './tls-policy';

/** A value that is of the right type but not acceptable; the message is the reason only. */
export class ValueError extends Error {
  /** `value`: the text the reason is about when it is not the whole flag value (one --feature-gates item...). */
  constructor(
    message: string,
    readonly value?: string,
  ) {
    super(message);
  }
}

export function checkPort(n: number): number {
  return checkInt(n, 0, 65535);
}

export function checkInt(n: number, min: number, max: number): number {
  if (!Number.isInteger(n) || n < min || n > max) throw new ValueError(`must be an integer from ${min} to ${max}`);
  return n;
}

export function checkIP(v: string): string {
  if (v !== 'localhost' && isIP(v) === 0) throw new ValueError('must be an IP address (or localhost)');
  return v;
}

export function checkTLSMinVersion(v: string): string {
  const why = checkTLSVersion(v);
  if (why) throw new ValueError(why);
  return v;
}

export function checkHostPort(v: string): string {
  if (!isHostPort(v)) throw new ValueError('want <host>:<port> (IPv6 in brackets: [::1]:10290)');
  return v;
}

export function checkURL(v: string): string {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new ValueError('not a URL: want https://<host>:<port>');
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new ValueError('want an https:// (or http://) URL');
  return v;
}

/** Go time.ParseDuration, at least `minMs`. */
export function checkDuration(v: string, minMs = 0): number {
  const n = goDurationMs(v);
  if (n === undefined) throw new ValueError(`time: invalid duration "${v}"`);
  if (n < minMs) throw new ValueError(minMs === 0 ? 'must not be negative' : `must be at least ${minMs >= 1000 ? minMs / 1000 + 's' : minMs + 'ms'}`);
  return n;
}

export function checkChoice<T extends string>(v: string, choices: readonly T[]): T {
  if (!(choices as readonly string[]).includes(v)) throw new ValueError(`must be one of ${choices.join(', ')}`);
  return v as T;
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Server IDs are kube-apiserver identity lease names: RFC 1123 subdomains. */
export function checkServerID(v: string): string {
  if (v.length === 0 || v.length > 253 || !DNS1123_SUBDOMAIN.test(v)) {
    throw new ValueError("must be a lowercase RFC 1123 subdomain (a-z, 0-9, '-', '.'; at most 253 characters), like an identity lease name");
  }
  return v;
}

/** A DNS name for TLS server name checks (SNI): RFC 1123 subdomain, case-insensitive. */
export function checkDNSName(v: string): string {
  if (v.length === 0 || v.length > 253 || !DNS1123_SUBDOMAIN.test(v.toLowerCase())) throw new ValueError('must be a DNS name, e.g. kubernetes.default.svc');
  return v;
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Namespaces are RFC 1123 labels. */
export function checkNamespace(v: string): string {
  if (v.length === 0 || v.length > 63 || !DNS1123_LABEL.test(v)) throw new ValueError("must be a namespace name: a lowercase RFC 1123 label (a-z, 0-9, '-'; at most 63 characters)");
  return v;
}

/** An address other hosts can dial: an IP, not a wildcard. */
export function checkAdvertiseIP(v: string): string {
  if (isIP(v) === 0) throw new ValueError('must be an IP address');
  if (v === '0.0.0.0' || v === '::' || /^[0:]+$/.test(v)) throw new ValueError('must not be an unspecified (wildcard) address: peers dial it');
  return v;
}

/** A peer as --static-peers, peers.static and the peers file list it: its server ID and the host:port of its peer listener. */
export interface StaticPeer {
  id: string;
  address: string;
}

/** What is wrong with a peer: the field, its value, the reason alone, and the reason naming the peer. */
export interface PeerProblem {
  field: 'id' | 'address';
  value: string;
  reason: string;
  message: string;
}

/**
 * The one check of a peer {id, address}: the ID an identity lease name, the address Go's
 * host:port. The config file names the field (`reason`); --static-peers and the peers file name
 * the peer (`message`).
 */
export function peerProblem(p: StaticPeer): PeerProblem | undefined {
  try {
    checkServerID(p.id);
  } catch (e) {
    const reason = (e as Error).message;
    return { field: 'id', value: p.id, reason, message: `peer ID "${p.id}" ${reason}` };
  }
  try {
    checkHostPort(p.address);
  } catch (e) {
    return { field: 'address', value: p.address, reason: (e as Error).message, message: `peer "${p.id}": address "${p.address}" is not <host>:<port>` };
  }
  return undefined;
}

/** peerProblem as a ValueError naming the peer. */
export function checkStaticPeer(p: StaticPeer): StaticPeer {
  const problem = peerProblem(p);
  if (problem) throw new ValueError(problem.message);
  return p;
}

/** Plain HTTP is served only on these (config/validate.ts, daemon/validate.ts). */
export function isLoopback(address: string): boolean {
  return address === 'localhost' || address === '::1' || address.startsWith('127.');
}
