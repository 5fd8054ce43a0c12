// Command-line flags the kube way (docs/operating.md §1): feature gates (component-base semantics and
// error texts), Go durations, comma lists, kube booleans, -v, and the checks on merged settings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Command, CommanderError } from 'commander';
import { FlagError, attributeName, configFromCommand, configFromFlags, daemonFlags, normalizeArgs } from '../../src/cli/flags';
import { parseFeatureGates } from '../../src/config/featuregate';
import { defaultServerID } from '../../src/config/serverid';
import { SECTIONS, SETTINGS } from '../../src/config/settings';
import { DEFAULTS, type DaemonConfig } from '../../src/config/types';
import { InvalidConfigError, validateConfig } from '../../src/config/validate';
import { formatDuration, goDurationMs } from '../../src/gocompat/time';

function program(): Command {
  return daemonFlags(new Command('mvproxy').exitOverride().configureOutput({ writeErr: () => {}, writeOut: () => {} })).action(() => {});
}

/** Parses user arguments like main.ts does and returns the merged, checked config. */
function parse(...args: string[]): DaemonConfig {
  const p = program();
  p.parse(normalizeArgs(args), { from: 'user' });
  return configFromCommand(p);
}

function fails(args: string[], message: string | RegExp, cls: new (...a: never[]) => Error = FlagError): void {
  assert.throws(() => parse(...args), (e: Error) => {
    assert.ok(e instanceof cls, `want ${cls.name}, got ${e.constructor.name}: ${e.message}`);
    if (typeof message === 'string') assert.equal(e.message, message);
    else assert.match(e.message, message);
    return true;
  });
}

test('defaults: no flags give DEFAULTS', () => {
  const c = parse();
  assert.equal(c.frontend, DEFAULTS.frontend);
  assert.equal(c.bindAddress, DEFAULTS.bindAddress);
  assert.equal(c.securePort, DEFAULTS.securePort);
  assert.equal(c.peerBindAddress, DEFAULTS.peerBindAddress);
  assert.equal(c.peerPort, DEFAULTS.peerPort);
  assert.equal(c.localAPIServer, DEFAULTS.localAPIServer);
  assert.equal(c.requestTimeoutMs, DEFAULTS.requestTimeoutMs);
  assert.equal(c.connectTimeoutMs, DEFAULTS.connectTimeoutMs);
  assert.equal(c.discoveryRefreshIntervalMs, DEFAULTS.discoveryRefreshIntervalMs);
  assert.equal(c.peerDiscoveryGraceMs, DEFAULTS.peerDiscoveryGraceMs);
  assert.equal(c.metricsBindAddress, DEFAULTS.metricsBindAddress);
  assert.equal(c.verbosity, DEFAULTS.verbosity);
  assert.equal(c.loggingFormat, DEFAULTS.loggingFormat);
  assert.equal(c.legacyDiscoveryFix, true);
  assert.equal(c.shutdownDelayMs, 0);
  assert.equal(c.shutdownDrainTimeoutMs, 20_000);
  assert.deepEqual(c.featureGates, { UnknownVersionInteroperabilityProxy: true });
  assert.deepEqual(c.staticPeers, []);
  assert.deepEqual(c.requestheaderAllowedNames, []);
  assert.equal(c.serverID, defaultServerID());
  assert.equal(c.tlsCertFile, undefined);
  assert.equal(c.localAPIServerServerName, undefined);
});

test('settings table and flags agree: every setting has its flag, every flag (but --config) a setting', () => {
  const p = program();
  const longs = p.options.map((o) => o.long!.slice(2));
  for (const s of SETTINGS) assert.ok(longs.includes(s.flag), `--${s.flag} (for ${s.key}) is not a flag`);
  const flags = new Set(SETTINGS.map((s) => s.flag));
  for (const l of longs) if (l !== 'config') assert.ok(flags.has(l), `--${l} has no entry in SETTINGS`);
  for (const o of p.options) assert.equal(o.attributeName(), attributeName(o.long!.slice(2)));
});

test('feature gates: component-base error texts', () => {
  fails(['--feature-gates=Foo=true'], 'invalid argument "Foo=true" for "--feature-gates" flag: unrecognized feature gate: Foo');
  fails(['--feature-gates=UnknownVersionInteroperabilityProxy'], 'invalid argument "UnknownVersionInteroperabilityProxy" for "--feature-gates" flag: missing bool value for UnknownVersionInteroperabilityProxy');
  fails(
    ['--feature-gates=UnknownVersionInteroperabilityProxy=yes'],
    'invalid argument "UnknownVersionInteroperabilityProxy=yes" for "--feature-gates" flag: invalid value of UnknownVersionInteroperabilityProxy=yes, err: strconv.ParseBool: parsing "yes": invalid syntax',
  );
});

test('feature gates: values, repeats (later wins), spaces, AllBeta', () => {
  assert.equal(parse('--feature-gates=UnknownVersionInteroperabilityProxy=false').featureGates.UnknownVersionInteroperabilityProxy, false);
  assert.equal(parse('--feature-gates', ' UnknownVersionInteroperabilityProxy = F ').featureGates.UnknownVersionInteroperabilityProxy, false);
  assert.equal(parse('--feature-gates=UnknownVersionInteroperabilityProxy=false', '--feature-gates=UnknownVersionInteroperabilityProxy=1').featureGates.UnknownVersionInteroperabilityProxy, true);
  assert.equal(parse('--feature-gates=AllBeta=false').featureGates.UnknownVersionInteroperabilityProxy, false);
  // A gate named explicitly beats AllBeta, whatever the order.
  assert.equal(parse('--feature-gates=UnknownVersionInteroperabilityProxy=true,AllBeta=false').featureGates.UnknownVersionInteroperabilityProxy, true);
  assert.equal(parse('--feature-gates=AllAlpha=true').featureGates.UnknownVersionInteroperabilityProxy, true);
  assert.deepEqual(parseFeatureGates([], { UnknownVersionInteroperabilityProxy: false }), { UnknownVersionInteroperabilityProxy: false });
  assert.deepEqual(parseFeatureGates(['UnknownVersionInteroperabilityProxy=true'], { UnknownVersionInteroperabilityProxy: false }), { UnknownVersionInteroperabilityProxy: true });
});

test('durations: Go time.ParseDuration forms, minimums, Go-style defaults in help', () => {
  assert.equal(parse('--request-timeout=1m30s').requestTimeoutMs, 90_000);
  assert.equal(parse('--request-timeout=500ms').requestTimeoutMs, 500);
  assert.equal(parse('--request-timeout=1.5h').requestTimeoutMs, 5_400_000);
  assert.equal(parse('--shutdown-delay-duration=0').shutdownDelayMs, 0);
  assert.equal(parse('--shutdown-delay-duration=5s').shutdownDelayMs, 5000);
  assert.equal(parse('--shutdown-drain-timeout', '45s').shutdownDrainTimeoutMs, 45_000);
  assert.equal(parse('--peer-discovery-grace-period=0s').peerDiscoveryGraceMs, 0);
  fails(['--request-timeout=5x'], 'invalid argument "5x" for "--request-timeout" flag: time: invalid duration "5x"');
  fails(['--request-timeout=60'], 'invalid argument "60" for "--request-timeout" flag: time: invalid duration "60"');
  fails(['--shutdown-delay-duration=-5s'], 'invalid argument "-5s" for "--shutdown-delay-duration" flag: time: invalid duration "-5s"');
  fails(['--request-timeout=0s'], 'invalid argument "0s" for "--request-timeout" flag: must be at least 1ms');
  fails(['--discovery-refresh-interval=500ms'], 'invalid argument "500ms" for "--discovery-refresh-interval" flag: must be at least 1s');
  assert.equal(goDurationMs('1h2m3.5s'), 3_723_500);
  assert.equal(goDurationMs('.5s'), 500);
  assert.equal(goDurationMs(''), undefined);
  assert.equal(goDurationMs('s'), undefined);
  assert.deepEqual([0, 500, 5000, 20_000, 60_000, 90_000, 3_600_000].map(formatDuration), ['0s', '500ms', '5s', '20s', '1m0s', '1m30s', '1h0m0s']);
});

test('lists: comma-separated, trimmed, repeatable (first use replaces the default, later ones append)', () => {
  assert.deepEqual(parse('--requestheader-allowed-names=a, b,,c').requestheaderAllowedNames, ['a', 'b', 'c']);
  assert.deepEqual(parse('--requestheader-allowed-names=a', '--requestheader-allowed-names', 'b,c').requestheaderAllowedNames, ['a', 'b', 'c']);
  assert.deepEqual(parse('--requestheader-allowed-names=').requestheaderAllowedNames, []);
  // Parsing twice never leaks values through a shared default.
  assert.deepEqual(parse().requestheaderAllowedNames, []);
  const c = parse('--static-peers=node-b=10.0.0.2:6445,node-c=[fd00::3]:6445', '--static-peers=node-d=peer-d.example:6445');
  assert.deepEqual(c.staticPeers, [
    { id: 'node-b', address: '10.0.0.2:6445' },
    { id: 'node-c', address: '[fd00::3]:6445' },
    { id: 'node-d', address: 'peer-d.example:6445' },
  ]);
  assert.deepEqual(parse().staticPeers, []);
  fails(['--static-peers=10.0.0.2:6445'], 'invalid argument "10.0.0.2:6445" for "--static-peers" flag: want <server-id>=<host:port>');
  fails(['--static-peers=node-b=10.0.0.2'], /for "--static-peers" flag: peer "node-b": address "10.0.0.2" is not <host>:<port>/);
  fails(['--static-peers=Node_B=10.0.0.2:6445'], /for "--static-peers" flag: peer ID "Node_B" must be a lowercase RFC 1123 subdomain/);
});

test('kube booleans: --flag, --flag=true, --flag=false, Go ParseBool words', () => {
  assert.equal(parse('--legacy-discovery-fix').legacyDiscoveryFix, true);
  assert.equal(parse('--legacy-discovery-fix=true').legacyDiscoveryFix, true);
  assert.equal(parse('--legacy-discovery-fix=false').legacyDiscoveryFix, false);
  assert.equal(parse('--legacy-discovery-fix=0').legacyDiscoveryFix, false);
  assert.equal(parse('--legacy-discovery-fix=F').legacyDiscoveryFix, false);
  assert.equal(parse('--legacy-discovery-fix=TRUE').legacyDiscoveryFix, true);
  // Bare, then another flag: the next argument is never taken as the value.
  const c = parse('--legacy-discovery-fix', '--v=3');
  assert.equal(c.legacyDiscoveryFix, true);
  assert.equal(c.verbosity, 3);
  fails(['--legacy-discovery-fix=maybe'], 'invalid argument "maybe" for "--legacy-discovery-fix" flag: strconv.ParseBool: parsing "maybe": invalid syntax');
  fails(['--legacy-discovery-fix', 'false'], 'invalid argument "false" after "--legacy-discovery-fix": a boolean flag takes its value with "=": --legacy-discovery-fix=false');
  // A bare boolean before a positional: pflag's reading (flag = true, then an argument mvproxy does not take).
  assert.throws(() => parse('--legacy-discovery-fix', 'demo-typo'), (e: Error) => e instanceof CommanderError && e.code === 'commander.excessArguments');
});

test('-v: -v=N, -vN, -v N, --v=N, --v N; 0..10', () => {
  for (const args of [['-v=4'], ['-v4'], ['-v', '4'], ['--v=4'], ['--v', '4']]) assert.equal(parse(...args).verbosity, 4, args.join(' '));
  assert.equal(parse('-v=0').verbosity, 0);
  fails(['-v=11'], 'invalid argument "11" for "--v" flag: must be an integer from 0 to 10');
  fails(['--v=two'], 'invalid argument "two" for "--v" flag: must be an integer from 0 to 10');
  assert.deepEqual(normalizeArgs(['-v=4', '--', '-v=5']), ['--v=4', '--', '-v=5']);
});

test('ports, addresses, URLs, choices, server IDs', () => {
  assert.equal(parse('--secure-port=0').securePort, 0);
  fails(['--secure-port=65536'], 'invalid argument "65536" for "--secure-port" flag: must be an integer from 0 to 65535');
  fails(['--peer-port=abc'], 'invalid argument "abc" for "--peer-port" flag: must be an integer from 0 to 65535');
  fails(['--secure-port=-1'], /for "--secure-port" flag: must be an integer/);
  fails(['--bind-address=not-an-ip'], 'invalid argument "not-an-ip" for "--bind-address" flag: must be an IP address (or localhost)');
  assert.equal(parse('--bind-address=::1').bindAddress, '::1');
  fails(['--metrics-bind-address=10290'], /invalid argument "10290" for "--metrics-bind-address" flag: want <host>:<port>/);
  assert.equal(parse('--metrics-bind-address=[::1]:10290').metricsBindAddress, '[::1]:10290');
  fails(['--local-apiserver=not a url'], 'invalid argument "not a url" for "--local-apiserver" flag: not a URL: want https://<host>:<port>');
  fails(['--local-apiserver=ftp://x'], 'invalid argument "ftp://x" for "--local-apiserver" flag: want an https:// (or http://) URL');
  assert.equal(parse('--local-apiserver-server-name=kubernetes.default.svc').localAPIServerServerName, 'kubernetes.default.svc');
  fails(['--local-apiserver-server-name=not a name'], /for "--local-apiserver-server-name" flag: must be a DNS name/);
  fails(['--server-id=Has_Caps'], /invalid argument "Has_Caps" for "--server-id" flag: must be a lowercase RFC 1123 subdomain/);
  assert.equal(parse('--server-id=cp-1').serverID, 'cp-1');
  assert.throws(() => parse('--frontend=nginx'), (e: Error) => e instanceof CommanderError && e.code === 'commander.invalidArgument');
  assert.throws(() => parse('--logging-format=xml'), (e: Error) => e instanceof CommanderError && e.code === 'commander.invalidArgument');
  assert.equal(parse('--logging-format=text').loggingFormat, 'text');
  assert.equal(parse('--frontend=node').frontend, 'node');
});

test('unknown flags and stray arguments are commander errors (main exits 2)', () => {
  assert.throws(() => parse('--bind-adress=1.2.3.4'), (e: Error) => e instanceof CommanderError && e.code === 'commander.unknownOption');
  assert.throws(() => parse('stray'), (e: Error) => e instanceof CommanderError && e.code === 'commander.excessArguments');
});

test('merged settings are cross-checked', () => {
  fails(['--tls-cert-file=/x.crt'], '--tls-cert-file (serving.certFile) is set but --tls-private-key-file (serving.keyFile) is not: set both or neither', InvalidConfigError);
  fails(['--proxy-client-key-file=/x.key'], '--proxy-client-key-file (peers.proxyClientKeyFile) is set but --proxy-client-cert-file (peers.proxyClientCertFile) is not: set both or neither', InvalidConfigError);
  fails(['--bind-address=0.0.0.0'], /^--bind-address \(serving.bindAddress\) is 0.0.0.0, not a loopback address: plain HTTP is only served on loopback/, InvalidConfigError);
  assert.equal(parse('--bind-address=0.0.0.0', '--tls-cert-file=/x.crt', '--tls-private-key-file=/x.key').bindAddress, '0.0.0.0');
  fails(['--peer-ca-file=/ca.crt'], /the peer listener needs a serving certificate: set --peer-tls-cert-file.*; the peer listener needs --requestheader-client-ca-file/, InvalidConfigError);
  // With the gate off the peer listener never starts: nothing more is needed.
  assert.equal(parse('--peer-ca-file=/ca.crt', '--feature-gates=UnknownVersionInteroperabilityProxy=false').peerCAFile, '/ca.crt');
  fails(['--static-peers=b=h:1,b=h:2'], '--static-peers (peers.static): peer "b" is listed twice', InvalidConfigError);
  fails(['--server-id=a', '--static-peers=a=h:1'], `--static-peers (peers.static): peer "a" has this node's server ID (--server-id (serverID))`, InvalidConfigError);
  assert.doesNotThrow(() => validateConfig(parse()));
});

test('configFromFlags: flag values only, from commander options', () => {
  const p = program();
  p.parse(['--secure-port=7000', '--static-peers=b=h:1'], { from: 'user' });
  const c = configFromFlags(p.opts());
  assert.equal(c.securePort, 7000);
  assert.deepEqual(c.staticPeers, [{ id: 'b', address: 'h:1' }]);
});

test('--help groups the flags into sections as kube-apiserver does, in SECTIONS order, each flag under its own section', () => {
  const help = daemonFlags(new Command('mvproxy')).helpInformation();
  const headings = [...help.matchAll(/^(\S[^\n]*) flags:$/gm)].map((m) => m[1]);
  assert.deepEqual(headings.slice(0, SECTIONS.length), [...SECTIONS], 'every section, in order');
  for (const s of SETTINGS) {
    const start = help.indexOf(`\n${s.section} flags:\n`);
    const next = help.indexOf(' flags:\n', start + s.section.length + 9);
    const block = help.slice(start, next === -1 ? undefined : next);
    assert.ok(block.includes(`--${s.flag} `) || block.includes(`--${s.flag}\n`), `--${s.flag} is under "${s.section} flags:"`);
  }
});
