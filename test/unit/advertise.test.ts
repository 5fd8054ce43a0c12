// The advertised peer address chain (docs/kubernetes-mvp.md §4.2, kube-apiserver peer.go
// getPeerAddress), one step at a time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { NetworkInterfaceInfo } from 'node:os';
import { defaultInterfaceAddress, isWildcard, joinHostPort, peerAdvertiseAddress } from '../../src/peers/advertise';

const nic = (address: string, family: 'IPv4' | 'IPv6', internal = false): NetworkInterfaceInfo =>
  ({ address, family, internal, netmask: '', mac: '00:00:00:00:00:00', cidr: null, ...(family === 'IPv6' ? { scopeid: 0 } : {}) }) as NetworkInterfaceInfo;
const HOST = () => ({ lo: [nic('127.0.0.1', 'IPv4', true), nic('::1', 'IPv6', true)], eth0: [nic('fe80::1', 'IPv6'), nic('10.0.0.7', 'IPv4')] });
const base = { peerBindAddress: '0.0.0.0', peerPort: 6445 };

test('1. --peer-advertise-ip and --peer-advertise-port, both set, win over everything', () => {
  assert.deepEqual(peerAdvertiseAddress({ ...base, peerAdvertiseIP: '192.0.2.1', peerAdvertisePort: 7000, advertiseAddress: '192.0.2.9', peerBindAddress: '10.1.1.1' }, HOST), {
    address: '192.0.2.1:7000',
    source: 'peer-advertise-ip',
  });
  assert.equal(peerAdvertiseAddress({ ...base, peerAdvertiseIP: 'fd00::5', peerAdvertisePort: 7000 }, HOST).address, '[fd00::5]:7000');
});

test('1a. only one of the two is ignored (as kube-apiserver), with a warning', () => {
  const ipOnly = peerAdvertiseAddress({ ...base, peerAdvertiseIP: '192.0.2.1', advertiseAddress: '192.0.2.9' }, HOST);
  assert.equal(ipOnly.address, '192.0.2.9:6445');
  assert.equal(ipOnly.source, 'advertise-address');
  assert.match(ipOnly.warning!, /only one of --peer-advertise-ip and --peer-advertise-port/);
  const portOnly = peerAdvertiseAddress({ ...base, peerAdvertisePort: 7000 }, HOST);
  assert.equal(portOnly.address, '10.0.0.7:6445', 'the port of the peer listener, not --peer-advertise-port');
  assert.ok(portOnly.warning);
});

test('2. else --advertise-address with the peer listener\'s actual port', () => {
  assert.deepEqual(peerAdvertiseAddress({ ...base, advertiseAddress: '192.0.2.9', peerBindAddress: '10.1.1.1', peerPort: 40123 }, HOST), { address: '192.0.2.9:40123', source: 'advertise-address' });
  assert.equal(peerAdvertiseAddress({ ...base, advertiseAddress: '2001:db8::9' }, HOST).address, '[2001:db8::9]:6445');
});

test('3. else --peer-bind-address when it is not a wildcard', () => {
  assert.deepEqual(peerAdvertiseAddress({ peerBindAddress: '10.1.1.1', peerPort: 6445 }, HOST), { address: '10.1.1.1:6445', source: 'peer-bind-address' });
  assert.equal(peerAdvertiseAddress({ peerBindAddress: '127.0.0.1', peerPort: 1 }, HOST).address, '127.0.0.1:1');
  assert.equal(peerAdvertiseAddress({ peerBindAddress: 'localhost', peerPort: 1 }, HOST).address, '127.0.0.1:1');
  assert.equal(peerAdvertiseAddress({ peerBindAddress: 'fd00::1', peerPort: 1 }, HOST).address, '[fd00::1]:1');
});

test('4. else the host\'s default interface: first non-internal IPv4, else a global IPv6', () => {
  for (const wildcard of ['0.0.0.0', '::', '0:0:0:0:0:0:0:0']) {
    assert.equal(isWildcard(wildcard), true, wildcard);
    assert.deepEqual(peerAdvertiseAddress({ peerBindAddress: wildcard, peerPort: 6445 }, HOST), { address: '10.0.0.7:6445', source: 'default-interface' });
  }
  assert.equal(defaultInterfaceAddress({ lo: [nic('127.0.0.1', 'IPv4', true)], eth0: [nic('fe80::1', 'IPv6'), nic('2001:db8::7', 'IPv6')] }), '2001:db8::7', 'link-local is skipped');
  assert.equal(peerAdvertiseAddress({ peerBindAddress: '::', peerPort: 6445 }, () => ({ eth0: [nic('2001:db8::7', 'IPv6')] })).address, '[2001:db8::7]:6445');
});

test('4a. nothing usable: no address (the Lease goes without the annotation; the daemon logs it)', () => {
  assert.deepEqual(peerAdvertiseAddress({ peerBindAddress: '0.0.0.0', peerPort: 6445 }, () => ({ lo: [nic('127.0.0.1', 'IPv4', true)] })), { address: '', source: 'none' });
});

test('joinHostPort brackets IPv6 only', () => {
  assert.equal(joinHostPort('10.0.0.1', 1), '10.0.0.1:1');
  assert.equal(joinHostPort('::1', 1), '[::1]:1');
});
