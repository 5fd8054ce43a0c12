// The membership settings (issue 5) as flags and --config fields: defaults, values, and the checks
// on merged settings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { FlagError, configFromCommand, daemonFlags, normalizeArgs } from '../../src/cli/flags';
import { CONFIG_API_VERSION, CONFIG_KIND, loadConfigFile } from '../../src/config/load';
import { InvalidConfigError } from '../../src/config/validate';
import type { DaemonConfig } from '../../src/config/types';

function parse(...args: string[]): DaemonConfig {
  const p = daemonFlags(new Command('mvproxy').exitOverride().configureOutput({ writeErr: () => {}, writeOut: () => {} })).action(() => {});
  p.parse(normalizeArgs(args), { from: 'user' });
  return configFromCommand(p);
}

function fails(args: string[], cls: new (...a: never[]) => Error, message: RegExp): void {
  assert.throws(() => parse(...args), (e: Error) => e instanceof cls && message.test(e.message));
}

test('defaults: static discovery, kube-system, 30 s leases renewed every third, probes every 5 s', () => {
  const c = parse();
  assert.equal(c.peerDiscovery, 'static');
  assert.equal(c.peersFile, undefined);
  assert.equal(c.leaseNamespace, 'kube-system');
  assert.equal(c.identityLeaseDurationSeconds, 30);
  assert.equal(c.identityLeaseRenewIntervalSeconds, undefined);
  assert.equal(c.peerProbeIntervalMs, 5000);
  assert.equal(c.advertiseAddress, undefined);
  assert.equal(c.peerAdvertiseIP, undefined);
  assert.equal(c.peerAdvertisePort, undefined);
  assert.equal(c.localAPIServerTokenFile, undefined);
});

test('flags', () => {
  const c = parse(
    '--peer-discovery=lease',
    '--lease-namespace=mvproxy-system',
    '--identity-lease-duration-seconds=15',
    '--identity-lease-renew-interval-seconds=5',
    '--peer-probe-interval=2s',
    '--advertise-address=10.0.0.1',
    '--peer-advertise-ip=fd00::1',
    '--peer-advertise-port=7445',
    '--local-apiserver-token-file=/var/run/secrets/token',
  );
  assert.equal(c.peerDiscovery, 'lease');
  assert.equal(c.leaseNamespace, 'mvproxy-system');
  assert.equal(c.identityLeaseDurationSeconds, 15);
  assert.equal(c.identityLeaseRenewIntervalSeconds, 5);
  assert.equal(c.peerProbeIntervalMs, 2000);
  assert.equal(c.advertiseAddress, '10.0.0.1');
  assert.equal(c.peerAdvertiseIP, 'fd00::1');
  assert.equal(c.peerAdvertisePort, 7445);
  assert.equal(c.localAPIServerTokenFile, '/var/run/secrets/token');
  assert.equal(parse('--peers-file=/etc/mvproxy/peers.yaml').peersFile, '/etc/mvproxy/peers.yaml');
});

test('bad values are flag errors in kube\'s words', () => {
  fails(['--peer-discovery=gossip'], Error, /gossip/);
  fails(['--lease-namespace=Kube_System'], FlagError, /invalid argument "Kube_System" for "--lease-namespace" flag: must be a namespace name/);
  fails(['--identity-lease-duration-seconds=0'], FlagError, /--identity-lease-duration-seconds.*from 1 to 86400/);
  fails(['--peer-advertise-port=70000'], FlagError, /--peer-advertise-port.*from 1 to 65535/);
  fails(['--advertise-address=0.0.0.0'], FlagError, /must not be an unspecified \(wildcard\) address/);
  fails(['--peer-advertise-ip=node-1'], FlagError, /must be an IP address/);
  fails(['--peer-probe-interval=10ms'], FlagError, /must be at least 100ms/);
});

test('settings that do not fit together', () => {
  fails(['--peer-discovery=lease', '--static-peers=b=h:1'], InvalidConfigError, /static peers apply only with --peer-discovery=static/);
  fails(['--peer-discovery=lease', '--peers-file=/p.yaml'], InvalidConfigError, /a peers file applies only with --peer-discovery=static/);
  fails(['--identity-lease-duration-seconds=10', '--identity-lease-renew-interval-seconds=10'], InvalidConfigError, /must be less than --identity-lease-duration-seconds/);
});

test('--config fields', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mvproxy-lease-config-'));
  const f = join(dir, 'c.yaml');
  writeFileSync(
    f,
    `apiVersion: ${CONFIG_API_VERSION}
kind: ${CONFIG_KIND}
advertiseAddress: 10.0.0.1
peerServing:
  advertiseIP: 10.0.0.2
  advertisePort: 7445
localAPIServer:
  tokenFile: token
peers:
  discovery: lease
  probeInterval: 3s
  lease:
    namespace: mvproxy
    durationSeconds: 20
    renewIntervalSeconds: 4
`,
  );
  assert.deepEqual(loadConfigFile(f).config, {
    advertiseAddress: '10.0.0.1',
    peerAdvertiseIP: '10.0.0.2',
    peerAdvertisePort: 7445,
    localAPIServerTokenFile: join(dir, 'token'),
    peerDiscovery: 'lease',
    peerProbeIntervalMs: 3000,
    leaseNamespace: 'mvproxy',
    identityLeaseDurationSeconds: 20,
    identityLeaseRenewIntervalSeconds: 4,
  });
  const c = parse(`--config=${f}`, '--identity-lease-duration-seconds=25');
  assert.equal(c.identityLeaseDurationSeconds, 25, 'the command line wins');
  assert.equal(c.leaseNamespace, 'mvproxy');
  writeFileSync(f.replace('c.yaml', 'p.yaml'), `apiVersion: ${CONFIG_API_VERSION}\nkind: ${CONFIG_KIND}\npeers:\n  file: peers.yaml\n`);
  assert.equal(loadConfigFile(f.replace('c.yaml', 'p.yaml')).config.peersFile, join(dir, 'peers.yaml'));
});
