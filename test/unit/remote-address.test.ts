// The client's address as mvproxy writes it upstream (X-Forwarded-For) and logs it: Go's
// net.IP.String, from the bytes uWS gives and from node's spelling. The table is Go's
// (src/net/ip_test.go ipStringTests) with the v4-mapped and loopback cases a socket gives.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ipText, nodeRemoteAddress, RemoteAddressText } from '../../src/listener/remote-address';

const v6 = (...groups: number[]) => new Uint8Array(groups.flatMap((g) => [g >> 8, g & 0xff]));

const GO_STRINGS: [Uint8Array, string][] = [
  [new Uint8Array([127, 0, 0, 1]), '127.0.0.1'],
  [new Uint8Array([255, 255, 255, 255]), '255.255.255.255'],
  [v6(0x2001, 0xdb8, 0, 0, 0, 0x123, 0x12, 1), '2001:db8::123:12:1'],
  [v6(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1), '2001:db8::1'],
  [v6(0x2001, 0xdb8, 0, 1, 0, 1, 0, 1), '2001:db8:0:1:0:1:0:1'],
  [v6(0x2001, 0xdb8, 1, 0, 1, 0, 1, 0), '2001:db8:1:0:1:0:1:0'],
  [v6(0x2001, 0, 0, 0, 1, 0, 0, 1), '2001::1:0:0:1'],
  [v6(0x2001, 0, 0, 1, 0, 0, 0, 1), '2001:0:0:1::1'], // the longer run, not the first
  [v6(0x2001, 0xdb8, 0, 0, 1, 0, 0, 0), '2001:db8:0:0:1::'],
  [v6(0x2001, 0xdb8, 0, 0, 1, 0, 0, 1), '2001:db8::1:0:0:1'],
  [v6(0x2001, 0xdb8, 0, 0, 0xa, 0xb, 0xc, 0xd), '2001:db8::a:b:c:d'],
  [v6(0, 0, 0, 0, 0, 0, 0, 0), '::'],
  [v6(0, 0, 0, 0, 0, 0, 0, 1), '::1'],
  [v6(0xfe80, 0, 0, 0, 0x1, 0x2, 0x3, 0x4), 'fe80::1:2:3:4'],
  [v6(0, 0, 0, 0, 0, 0xffff, 0x7f00, 1), '127.0.0.1'], // a v4 client of a dual-stack listener
  [v6(0, 0, 0, 0, 0, 0, 0x102, 0x304), '::102:304'], // v4-compatible: Go does not print it dotted
];

test("the client's address is written as Go's net.IP.String writes it", () => {
  for (const [bytes, want] of GO_STRINGS) assert.equal(ipText(bytes), want, [...bytes].join(','));
});

test('a remembered address gives the text of the bytes read now, not of the last ones', () => {
  const t = new RemoteAddressText();
  assert.equal(t.of(new Uint8Array([10, 0, 0, 1]).buffer), '10.0.0.1');
  assert.equal(t.of(new Uint8Array([10, 0, 0, 1]).buffer), '10.0.0.1');
  assert.equal(t.of(new Uint8Array([10, 0, 0, 2]).buffer), '10.0.0.2');
  assert.equal(t.of(v6(0, 0, 0, 0, 0, 0, 0, 1).buffer), '::1');
  assert.equal(t.of(v6(0, 0, 0, 0, 0, 0xffff, 0x0a00, 2).buffer), '10.0.0.2');
  assert.equal(t.of(new Uint8Array([10, 0, 0, 2]).buffer), '10.0.0.2');
});

test("node's spelling of a v4 client of a dual-stack listener becomes Go's", () => {
  assert.equal(nodeRemoteAddress('::ffff:127.0.0.1'), '127.0.0.1');
  assert.equal(nodeRemoteAddress('::1'), '::1');
  assert.equal(nodeRemoteAddress('::ffff:7f00:1'), '::ffff:7f00:1'); // not node's v4-mapped spelling: as given
  assert.equal(nodeRemoteAddress('10.1.2.3'), '10.1.2.3');
  assert.equal(nodeRemoteAddress(undefined), '');
  assert.equal(nodeRemoteAddress('fe80::1%eth0,10.0.0.1'), 'fe80::1'); // a zone (an interface name may hold a comma): dropped
});
