// The address peers dial to reach this node's peer listener, written into its identity Lease as
// `kubernetes.io/peer-advertise-address` (docs/kubernetes-mvp.md §4.2, kube-apiserver peer.go getPeerAddress):
//
//   1. --peer-advertise-ip AND --peer-advertise-port, when both are set (one alone is ignored, as
//      in kube-apiserver; the daemon logs that);
//   2. else --advertise-address, with the peer listener's port;
//   3. else --peer-bind-address (our analogue of kube's --bind-address: the peer listener is what
//      peers dial) when it is not a wildcard (0.0.0.0, ::);
//   4. else the host's default interface address: the first non-internal IPv4 address of
//      os.networkInterfaces(), else the first global IPv6 one.
//   The port of 2–4 is the peer listener's ACTUAL port (it may have been 0 = any free port).

import { isIP } from 'node:net';
import { networkInterfaces, type NetworkInterfaceInfo } from 'node:os';

export type AdvertiseSource = 'peer-advertise-ip' | 'advertise-address' | 'peer-bind-address' | 'default-interface';

export interface AdvertiseInput {
  peerAdvertiseIP?: string;
  peerAdvertisePort?: number;
  advertiseAddress?: string;
  peerBindAddress: string;
  /** The peer listener's actual port. */
  peerPort: number;
}

export interface AdvertisedAddress {
  /** host:port, IPv6 in brackets; '' when no address could be found. */
  address: string;
  source: AdvertiseSource | 'none';
  /** Set when exactly one of --peer-advertise-ip/--peer-advertise-port was given (ignored, as upstream). */
  warning?: string;
}

/** net.JoinHostPort. */
export function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

export function isWildcard(ip: string): boolean {
  return ip === '' || ip === '0.0.0.0' || (isIP(ip) === 6 && /^[0:]+$/.test(ip));
}

export function peerAdvertiseAddress(i: AdvertiseInput, interfaces: () => NodeJS.Dict<NetworkInterfaceInfo[]> = networkInterfaces): AdvertisedAddress {
  const one = (i.peerAdvertiseIP === undefined) !== (i.peerAdvertisePort === undefined);
  const warning = one ? `only one of --peer-advertise-ip and --peer-advertise-port is set: both are needed, so it is ignored (as kube-apiserver does)` : undefined;
  const out = (address: string, source: AdvertisedAddress['source']): AdvertisedAddress => (warning ? { address, source, warning } : { address, source });
  if (i.peerAdvertiseIP !== undefined && i.peerAdvertisePort !== undefined) return out(joinHostPort(i.peerAdvertiseIP, i.peerAdvertisePort), 'peer-advertise-ip');
  if (i.advertiseAddress) return out(joinHostPort(i.advertiseAddress, i.peerPort), 'advertise-address');
  const bind = i.peerBindAddress === 'localhost' ? '127.0.0.1' : i.peerBindAddress;
  if (!isWildcard(bind)) return out(joinHostPort(bind, i.peerPort), 'peer-bind-address');
  const ip = defaultInterfaceAddress(interfaces());
  return ip ? out(joinHostPort(ip, i.peerPort), 'default-interface') : out('', 'none');
}

/** The first non-internal IPv4 address, else the first non-internal, non-link-local IPv6 address. */
export function defaultInterfaceAddress(ifaces: NodeJS.Dict<NetworkInterfaceInfo[]>): string | undefined {
  const all = Object.values(ifaces).flatMap((l) => l ?? []);
  const v4 = all.find((a) => a.family === 'IPv4' && !a.internal);
  if (v4) return v4.address;
  const v6 = all.find((a) => a.family === 'IPv6' && !a.internal && !/^fe80:/i.test(a.address));
  return v6?.address;
}
