// --config FILE (docs/operating.md §1): the versioned YAML, the kubelet merge rule (flags given on the
// command line override the file; relative paths resolve against the file's directory), and
// errors that name the field path and the file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { parseAllDocuments, parseDocument } from 'yaml';
import { configFromCommand, daemonFlags, normalizeArgs } from '../../src/cli/flags';
import { ConfigFileError, loadConfigFile, parseConfigFile, CONFIG_API_VERSION, CONFIG_KIND } from '../../src/config/load';
import { InvalidConfigError, checkFilesReadable } from '../../src/config/validate';
import type { DaemonConfig } from '../../src/config/types';

const ROOT = join(__dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'mvproxy-config-test-'));
const HEAD = `apiVersion: ${CONFIG_API_VERSION}\nkind: ${CONFIG_KIND}\n`;
let n = 0;

/** Writes a config file (HEAD prepended unless `raw`) and returns its path. */
function file(body: string, raw = false, sub = ''): string {
  const d = join(dir, sub);
  mkdirSync(d, { recursive: true });
  const f = join(d, `c${++n}.yaml`);
  writeFileSync(f, raw ? body : HEAD + body);
  return f;
}

function parse(...args: string[]): DaemonConfig {
  const p = daemonFlags(new Command('mvproxy').exitOverride().configureOutput({ writeErr: () => {}, writeOut: () => {} })).action(() => {});
  p.parse(normalizeArgs(args), { from: 'user' });
  return configFromCommand(p);
}

/** The error of loading `body`, checked to start with the file's prefix; returns the rest. */
function loadError(body: string, raw = false): string {
  const f = file(body, raw);
  try {
    loadConfigFile(f);
  } catch (e) {
    assert.ok(e instanceof ConfigFileError, String(e));
    const prefix = `error loading config file "${f}": `;
    assert.ok(e.message.startsWith(prefix), e.message);
    return e.message.slice(prefix.length);
  }
  assert.fail('no error');
}

const FULL = `
serverID: cp-1
featureGates:
  UnknownVersionInteroperabilityProxy: false
frontend: node
serving:
  bindAddress: 0.0.0.0
  securePort: 7443
  certFile: /pki/apiserver.crt
  keyFile: /pki/apiserver.key
peerServing:
  bindAddress: 10.0.0.1
  port: 7445
  certFile: peer.crt
  keyFile: ./sub/peer.key
localAPIServer:
  url: https://127.0.0.1:6443
  caFile: ../ca.crt
  serverName: kubernetes.default.svc
peers:
  caFile: /pki/ca.crt
  proxyClientCertFile: /pki/front-proxy-client.crt
  proxyClientKeyFile: /pki/front-proxy-client.key
  requestheaderClientCAFile: /pki/front-proxy-ca.crt
  requestheaderAllowedNames: [front-proxy-client, other]
  static:
    - id: cp-2
      address: 10.0.0.2:7445
    - {id: cp-3, address: "[fd00::3]:7445"}
requestTimeout: 90s
upstreamConnectTimeout: 2s
discovery:
  refreshInterval: 1m0s
  peerGracePeriod: 2m
  legacyDiscoveryFix: false
shutdown:
  delayDuration: 5s
  drainTimeout: 15s
metrics:
  bindAddress: 127.0.0.1:11290
logging:
  format: text
  verbosity: 3
`;

test('a full file: every setting, relative paths against the file directory', () => {
  const f = file(FULL, false, 'etc/mvproxy');
  const fc = loadConfigFile(f);
  const d = join(dir, 'etc/mvproxy');
  assert.equal(fc.file, f);
  assert.deepEqual(fc.config, {
    serverID: 'cp-1',
    featureGates: { UnknownVersionInteroperabilityProxy: false },
    frontend: 'node',
    bindAddress: '0.0.0.0',
    securePort: 7443,
    tlsCertFile: '/pki/apiserver.crt',
    tlsPrivateKeyFile: '/pki/apiserver.key',
    peerBindAddress: '10.0.0.1',
    peerPort: 7445,
    peerTLSCertFile: join(d, 'peer.crt'),
    peerTLSPrivateKeyFile: join(d, 'sub/peer.key'),
    localAPIServer: 'https://127.0.0.1:6443',
    localAPIServerCAFile: join(dir, 'etc/ca.crt'),
    localAPIServerServerName: 'kubernetes.default.svc',
    peerCAFile: '/pki/ca.crt',
    proxyClientCertFile: '/pki/front-proxy-client.crt',
    proxyClientKeyFile: '/pki/front-proxy-client.key',
    requestheaderClientCAFile: '/pki/front-proxy-ca.crt',
    requestheaderAllowedNames: ['front-proxy-client', 'other'],
    staticPeers: [
      { id: 'cp-2', address: '10.0.0.2:7445' },
      { id: 'cp-3', address: '[fd00::3]:7445' },
    ],
    requestTimeoutMs: 90_000,
    connectTimeoutMs: 2000,
    discoveryRefreshIntervalMs: 60_000,
    peerDiscoveryGraceMs: 120_000,
    legacyDiscoveryFix: false,
    shutdownDelayMs: 5000,
    shutdownDrainTimeoutMs: 15_000,
    metricsBindAddress: '127.0.0.1:11290',
    loggingFormat: 'text',
    verbosity: 3,
  });
  // Through the command line: the file's values stand where no flag is given.
  const c = parse(`--config=${f}`);
  assert.equal(c.securePort, 7443);
  assert.equal(c.frontend, 'node');
  assert.equal(c.featureGates.UnknownVersionInteroperabilityProxy, false);
  assert.equal(c.verbosity, 3);
  assert.equal(c.peerTLSCertFile, join(d, 'peer.crt'));
});

test('a relative --config path resolves against the working directory; the error names the absolute path', () => {
  const f = file('serving: {securePort: 7001}\n');
  const rel = require('node:path').relative(process.cwd(), f) as string;
  assert.equal(parse(`--config=${rel}`).securePort, 7001);
  assert.throws(() => parse('--config=does/not/exist.yaml'), (e: Error) => {
    assert.ok(e instanceof ConfigFileError);
    assert.equal(e.message, `error loading config file "${join(process.cwd(), 'does/not/exist.yaml')}": no such file or directory`);
    return true;
  });
});

test('kubelet rule: flags given on the command line override the file; defaults do not', () => {
  const f = file('serving: {securePort: 7000, bindAddress: 127.0.0.2}\nlogging: {verbosity: 5, format: text}\ndiscovery: {legacyDiscoveryFix: false}\npeers: {static: [{id: b, address: "h:1"}]}\n');
  let c = parse(`--config=${f}`);
  assert.equal(c.securePort, 7000);
  assert.equal(c.bindAddress, '127.0.0.2');
  assert.equal(c.verbosity, 5);
  assert.equal(c.legacyDiscoveryFix, false);
  c = parse(`--config=${f}`, '--secure-port=8000', '-v=1', '--legacy-discovery-fix', '--static-peers=c=h:2');
  assert.equal(c.securePort, 8000);
  assert.equal(c.verbosity, 1);
  assert.equal(c.legacyDiscoveryFix, true);
  assert.deepEqual(c.staticPeers, [{ id: 'c', address: 'h:2' }]);
  assert.equal(c.bindAddress, '127.0.0.2');
  assert.equal(c.loggingFormat, 'text');
  // A flag given with its default value still counts as given.
  assert.equal(parse(`--config=${f}`, '--secure-port=6444').securePort, 6444);
  // Flag order does not matter.
  assert.equal(parse('--secure-port=8001', `--config=${f}`).securePort, 8001);
});

test('kubelet rule for feature gates: per gate, flags over the file', () => {
  const off = file('featureGates: {UnknownVersionInteroperabilityProxy: false}\n');
  assert.equal(parse(`--config=${off}`).featureGates.UnknownVersionInteroperabilityProxy, false);
  assert.equal(parse(`--config=${off}`, '--feature-gates=UnknownVersionInteroperabilityProxy=true').featureGates.UnknownVersionInteroperabilityProxy, true);
  const allBetaOff = file('featureGates: {AllBeta: false}\n');
  assert.equal(parse(`--config=${allBetaOff}`).featureGates.UnknownVersionInteroperabilityProxy, false);
  assert.equal(parse(`--config=${allBetaOff}`, '--feature-gates=UnknownVersionInteroperabilityProxy=true').featureGates.UnknownVersionInteroperabilityProxy, true);
  const none = file('serving: {securePort: 7002}\n');
  assert.equal(parse(`--config=${none}`, '--feature-gates=UnknownVersionInteroperabilityProxy=false').featureGates.UnknownVersionInteroperabilityProxy, false);
});

test('null fields and empty paths count as not set; anchors and aliases work', () => {
  const f = file('serving:\n  securePort: ~\n  certFile: ""\nmetrics:\npeers:\n  requestheaderAllowedNames: &names [a, b]\n');
  const fc = loadConfigFile(f);
  assert.deepEqual(fc.config, { requestheaderAllowedNames: ['a', 'b'] });
  const g = file('serving: &s {securePort: 7003}\npeerServing: {port: 7004}\n');
  assert.equal(loadConfigFile(g).config.securePort, 7003);
});

test('errors name the field path and the file: unknown fields', () => {
  assert.equal(loadError('serving:\n  bindAdress: 0.0.0.0\n'), 'unknown field "serving.bindAdress"');
  assert.equal(loadError('servng: {}\n'), 'unknown field "servng"');
  assert.equal(loadError('peers:\n  static:\n    - id: b\n      adress: h:1\n'), 'unknown field "peers.static[0].adress"; missing field "peers.static[0].address"');
  assert.equal(loadError('featureGates: {Foo: true}\n'), 'unknown field "featureGates.Foo": unrecognized feature gate: Foo');
  // Several problems are reported together.
  assert.equal(loadError('a: 1\nserving: {b: 2}\n'), 'unknown field "a"; unknown field "serving.b"');
});

test('errors: duplicate keys', () => {
  assert.equal(loadError('serving:\n  securePort: 1\n  securePort: 2\n'), 'duplicate field "serving.securePort"');
  assert.equal(loadError('serving: {securePort: 1}\nserving: {securePort: 2}\n'), 'duplicate field "serving"');
  assert.equal(loadError('featureGates:\n  UnknownVersionInteroperabilityProxy: true\n  UnknownVersionInteroperabilityProxy: false\n'), 'duplicate field "featureGates.UnknownVersionInteroperabilityProxy"');
  // The yaml library itself reports DUPLICATE_KEY for such input (the loader finds the path instead).
  assert.equal(parseDocument('a: 1\na: 2\n').errors[0]?.code, 'DUPLICATE_KEY');
});

test('errors: wrong types', () => {
  assert.equal(loadError('serving:\n  securePort: "6444"\n'), 'wrong type for field "serving.securePort": want integer, got string');
  assert.equal(loadError('serving:\n  securePort: 6444.5\n'), 'wrong type for field "serving.securePort": want integer, got number');
  assert.equal(loadError('serving: 5\n'), 'wrong type for field "serving": want object, got integer');
  assert.equal(loadError('discovery: {legacyDiscoveryFix: "yes"}\n'), 'wrong type for field "discovery.legacyDiscoveryFix": want boolean, got string');
  assert.equal(loadError('discovery: {legacyDiscoveryFix: yes}\n'), 'wrong type for field "discovery.legacyDiscoveryFix": want boolean, got string');
  assert.equal(loadError('requestTimeout: 60\n'), 'wrong type for field "requestTimeout": want a duration string such as "30s", got integer');
  assert.equal(loadError('peers: {requestheaderAllowedNames: front-proxy-client}\n'), 'wrong type for field "peers.requestheaderAllowedNames": want list, got string');
  assert.equal(loadError('peers: {requestheaderAllowedNames: [a, 1]}\n'), 'wrong type for field "peers.requestheaderAllowedNames[1]": want string, got integer');
  assert.equal(loadError('peers: {static: [b=h:1]}\n'), 'wrong type for field "peers.static[0]": want object {id, address}, got string');
  assert.equal(loadError('serverID: 12\n'), 'wrong type for field "serverID": want string, got integer');
  assert.equal(loadError('featureGates: {UnknownVersionInteroperabilityProxy: "true"}\n'), 'wrong type for field "featureGates.UnknownVersionInteroperabilityProxy": want boolean, got string');
  assert.equal(loadError('featureGates: [UnknownVersionInteroperabilityProxy=true]\n'), 'wrong type for field "featureGates": want a map of gate names to true|false, got list');
});

test('errors: bad values', () => {
  assert.equal(loadError('serving: {securePort: 70000}\n'), 'invalid value 70000 for field "serving.securePort": must be an integer from 0 to 65535');
  assert.equal(loadError('serving: {bindAddress: everywhere}\n'), 'invalid value "everywhere" for field "serving.bindAddress": must be an IP address (or localhost)');
  assert.equal(loadError('requestTimeout: 5x\n'), 'invalid value "5x" for field "requestTimeout": time: invalid duration "5x"');
  assert.equal(loadError('discovery: {refreshInterval: 10ms}\n'), 'invalid value "10ms" for field "discovery.refreshInterval": must be at least 1s');
  assert.match(loadError('metrics: {bindAddress: "10290"}\n'), /^invalid value "10290" for field "metrics.bindAddress": want <host>:<port>/);
  assert.equal(loadError('logging: {format: xml}\n'), 'invalid value "xml" for field "logging.format": must be one of json, text');
  assert.equal(loadError('logging: {verbosity: 11}\n'), 'invalid value 11 for field "logging.verbosity": must be an integer from 0 to 10');
  assert.equal(loadError('frontend: nginx\n'), 'invalid value "nginx" for field "frontend": must be one of auto, uws, node');
  assert.equal(loadError('localAPIServer: {url: "127.0.0.1:6443"}\n'), 'invalid value "127.0.0.1:6443" for field "localAPIServer.url": not a URL: want https://<host>:<port>');
  assert.match(loadError('peers:\n  static:\n    - {id: b, address: "h:1"}\n    - {id: c, address: nowhere}\n'), /^invalid value "nowhere" for field "peers.static\[1\].address": want <host>:<port>/);
  assert.match(loadError('serverID: CP_1\n'), /^invalid value "CP_1" for field "serverID": must be a lowercase RFC 1123 subdomain/);
});

test('errors: apiVersion, kind, shape of the file, YAML syntax', () => {
  assert.equal(loadError('kind: MvproxyConfiguration\n', true), `missing field "apiVersion": want apiVersion: ${CONFIG_API_VERSION}`);
  assert.equal(loadError('apiVersion: mvproxy.config.k8s.io/v1beta9\nkind: MvproxyConfiguration\nserving: {}\n', true), `unsupported apiVersion "mvproxy.config.k8s.io/v1beta9": want "${CONFIG_API_VERSION}"`);
  assert.equal(loadError(`apiVersion: ${CONFIG_API_VERSION}\nkind: KubeletConfiguration\n`, true), `unsupported kind "KubeletConfiguration": want "${CONFIG_KIND}"`);
  assert.equal(loadError('', true), `the file is empty: want apiVersion: ${CONFIG_API_VERSION}, kind: ${CONFIG_KIND}`);
  assert.equal(loadError('# only a comment\n', true), `the file is empty: want apiVersion: ${CONFIG_API_VERSION}, kind: ${CONFIG_KIND}`);
  assert.equal(loadError('- a\n- b\n', true), `want a ${CONFIG_KIND} object, got list`);
  assert.equal(loadError(`${HEAD}---\n${HEAD}`, true), 'want one YAML document, found 2');
  assert.match(loadError('serving: {securePort: 1\n'), /^yaml: .*line 4/);
  assert.match(loadError('serving:\n  securePort: 1\n bad: indent\n'), /^yaml: /);
});

test('a file that names only apiVersion and kind is valid and changes nothing', () => {
  const f = file('');
  assert.deepEqual(loadConfigFile(f).config, {});
  assert.equal(parse(`--config=${f}`).securePort, 6444);
});

test('settings that do not fit together are errors after the merge, naming flag and field', () => {
  const f = file('serving: {bindAddress: 0.0.0.0}\n');
  assert.throws(() => parse(`--config=${f}`), (e: Error) => e instanceof InvalidConfigError && /^--bind-address \(serving.bindAddress\) is 0.0.0.0, not a loopback address/.test(e.message));
  // The flag fixes it.
  assert.equal(parse(`--config=${f}`, '--bind-address=127.0.0.1').bindAddress, '127.0.0.1');
  const g = file('serving: {certFile: a.crt}\n');
  assert.throws(() => parse(`--config=${g}`), (e: Error) => e instanceof InvalidConfigError && e.message.includes('--tls-cert-file (serving.certFile) is set but --tls-private-key-file (serving.keyFile) is not'));
});

test('two listeners on one port are refused: with SO_REUSEPORT the kernel would split connections between them', () => {
  const shared = (e: Error, a: string, b: string) => e instanceof InvalidConfigError && e.message.includes(`${a} and ${b} are both port 7000`);
  assert.throws(() => parse('--secure-port=7000', '--metrics-bind-address=127.0.0.1:7000'), (e: Error) => shared(e, '--secure-port (serving.securePort)', '--metrics-bind-address (metrics.bindAddress)'));
  // The peer listener counts only when it starts (the proxy on: --peer-ca-file set).
  const peer = ['--peer-ca-file=ca.crt', '--tls-cert-file=a.crt', '--tls-private-key-file=a.key', '--requestheader-client-ca-file=rh.crt'];
  assert.throws(() => parse(...peer, '--peer-port=7000', '--metrics-bind-address=0.0.0.0:7000'), (e: Error) => shared(e, '--metrics-bind-address (metrics.bindAddress)', '--peer-port (peerServing.port)'));
  assert.equal(parse('--secure-port=7000', '--peer-port=7000').peerPort, 7000);
  // One address spelled two ways (helper 8): localhost is 127.0.0.1 and ::1, IPv6 in any form, IPv4-mapped IPv6.
  for (const [bind, metrics] of [['localhost', '127.0.0.1'], ['127.0.0.1', 'localhost'], ['127.0.0.1', 'LOCALHOST'], ['::1', '[0:0:0:0:0:0:0:1]'], ['127.0.0.1', '[::ffff:127.0.0.1]'], ['::', '127.0.0.1'], ['0:0:0:0:0:0:0:0', '[::1]'], ['127.0.0.1', '[::0]']]) {
    assert.throws(() => parse(`--bind-address=${bind}`, '--secure-port=7000', `--metrics-bind-address=${metrics}:7000`), (e: Error) => shared(e, '--secure-port (serving.securePort)', '--metrics-bind-address (metrics.bindAddress)'), `${bind} and ${metrics}`);
  }
  // Different addresses do not overlap; port 0 is a fresh port each time.
  assert.equal(parse('--secure-port=7000', '--metrics-bind-address=127.0.0.2:7000').securePort, 7000);
  assert.equal(parse('--bind-address=::1', '--secure-port=7000', '--metrics-bind-address=127.0.0.1:7000').securePort, 7000);
  // IPv6 zones (helper 9: the check threw a TypeError on them): one zone on both is one bind, two zones are two.
  const tls = ['--tls-cert-file=a.crt', '--tls-private-key-file=a.key'];
  assert.throws(() => parse(...tls, '--bind-address=::1%lo', '--secure-port=7000', '--metrics-bind-address=[0::1%lo]:7000'), (e: Error) => shared(e, '--secure-port (serving.securePort)', '--metrics-bind-address (metrics.bindAddress)'));
  assert.equal(parse(...tls, '--bind-address=::1%lo', '--secure-port=7000', '--metrics-bind-address=[::1%eth0]:7000').securePort, 7000);
  assert.equal(parse('--secure-port=0', '--metrics-bind-address=127.0.0.1:0').securePort, 0);
});

test('checkFilesReadable names the setting and the path', () => {
  const f = file('serving: {certFile: missing.crt, keyFile: missing.key}\n');
  const c = parse(`--config=${f}`);
  assert.throws(() => checkFilesReadable(c), (e: Error) => {
    assert.ok(e instanceof InvalidConfigError);
    assert.equal(e.message, `--tls-cert-file (serving.certFile): open ${join(dir, 'missing.crt')}: no such file or directory; --tls-private-key-file (serving.keyFile): open ${join(dir, 'missing.key')}: no such file or directory`);
    return true;
  });
  writeFileSync(join(dir, 'missing.crt'), 'x');
  writeFileSync(join(dir, 'missing.key'), 'x');
  assert.doesNotThrow(() => checkFilesReadable(c));
});

test('parseConfigFile works on text (for callers that have it in memory)', () => {
  assert.equal(parseConfigFile(HEAD + 'serving: {securePort: 1}\n', '/etc/mvproxy/config.yaml').config.securePort, 1);
  assert.equal(parseConfigFile(HEAD + 'serving: {certFile: x.crt}\n', '/etc/mvproxy/config.yaml').config.tlsCertFile, '/etc/mvproxy/x.crt');
});

test('deploy/config.yaml loads, with kubeadm pki paths, and fits deploy/static-pod.yaml', () => {
  const f = join(ROOT, 'deploy', 'config.yaml');
  const c = parse(`--config=${f}`);
  assert.equal(c.peerCAFile, '/etc/kubernetes/pki/ca.crt');
  assert.equal(c.proxyClientCertFile, '/etc/kubernetes/pki/front-proxy-client.crt');
  assert.equal(c.proxyClientKeyFile, '/etc/kubernetes/pki/front-proxy-client.key');
  assert.equal(c.requestheaderClientCAFile, '/etc/kubernetes/pki/front-proxy-ca.crt');
  assert.equal(c.tlsCertFile, '/etc/kubernetes/pki/apiserver.crt');
  assert.equal(c.tlsPrivateKeyFile, '/etc/kubernetes/pki/apiserver.key');
  assert.deepEqual(c.requestheaderAllowedNames, ['front-proxy-client']);
  assert.equal(c.featureGates.UnknownVersionInteroperabilityProxy, true);
  assert.equal(c.localAPIServerServerName, 'kubernetes.default.svc');
  assert.ok(c.shutdownDelayMs + c.shutdownDrainTimeoutMs <= 30_000);

  const pod = parseDocument(readFileSync(join(ROOT, 'deploy', 'static-pod.yaml'), 'utf8')).toJS();
  assert.equal(pod.kind, 'Pod');
  assert.equal(pod.spec.hostNetwork, true);
  assert.equal(pod.spec.priorityClassName, 'system-node-critical');
  assert.ok(c.shutdownDelayMs + c.shutdownDrainTimeoutMs < pod.spec.terminationGracePeriodSeconds * 1000);
  const ctr = pod.spec.containers[0];
  assert.ok(ctr.args.includes('--config=/etc/mvproxy/config.yaml'));
  assert.ok(ctr.args.includes('--v=2'));
  assert.ok(ctr.args.includes('--logging-format=json'));
  const metricsPort = Number(c.metricsBindAddress.split(':').pop());
  assert.equal(c.metricsBindAddress.split(':')[0], '127.0.0.1');
  for (const [probe, path] of [['livenessProbe', '/livez'], ['readinessProbe', '/readyz'], ['startupProbe', '/livez']]) {
    assert.equal(ctr[probe].httpGet.host, '127.0.0.1', probe);
    assert.equal(ctr[probe].httpGet.path, path, probe);
    assert.equal(ctr[probe].httpGet.port, metricsPort, probe);
  }
  const mounts = Object.fromEntries(ctr.volumeMounts.map((m: { name: string }) => [m.name, m]));
  assert.equal(mounts['k8s-certs'].mountPath, '/etc/kubernetes/pki');
  assert.equal(mounts['k8s-certs'].readOnly, true);
  assert.equal(mounts['mvproxy-config'].mountPath, '/etc/mvproxy');
  assert.equal(mounts['mvproxy-config'].readOnly, true);
});

test('deploy/kubeadm puts every client behind mvproxy: kube-apiserver on 127.0.0.1 at the port mvproxy serves on the advertise address, probed on 127.0.0.1', () => {
  const c = parse(`--config=${join(ROOT, 'deploy', 'config.yaml')}`);
  const docs = parseAllDocuments(readFileSync(join(ROOT, 'deploy', 'kubeadm', 'kubeadm-config.yaml'), 'utf8')).map((d) => d.toJS());
  const cluster = docs.find((d) => d.kind === 'ClusterConfiguration');
  const extra = Object.fromEntries(cluster.apiServer.extraArgs.map((a: { name: string; value: string }) => [a.name, a.value]));
  assert.equal(extra['bind-address'], '127.0.0.1');
  // mvproxy's upstream is kube-apiserver where it now listens: its bind address, kubeadm's port (6443).
  assert.equal(c.localAPIServer, `https://${extra['bind-address']}:6443`);
  // mvproxy takes that port on the node's address: not the wildcard, which would collide with 127.0.0.1:6443.
  assert.equal(c.securePort, 6443);
  assert.notEqual(c.bindAddress, '0.0.0.0');
  assert.notEqual(c.bindAddress, extra['bind-address']);
  // Certificate users (kubelets, controller-manager, scheduler, admin.conf) are verified, not anonymous.
  assert.equal(c.clientCAFile, '/etc/kubernetes/pki/ca.crt');
  // The image names the ports this configuration serves on (the static pod, hostNetwork, lists none, as kubeadm's).
  const expose = /^EXPOSE (.*)$/m.exec(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'))![1]!.split(/\s+/).map(Number);
  assert.deepEqual(expose, [c.securePort, c.peerPort, Number(c.metricsBindAddress.split(':').pop())]);
  for (const kind of ['InitConfiguration', 'JoinConfiguration']) assert.equal(docs.find((d) => d.kind === kind)?.patches?.directory, '/etc/kubernetes/mvproxy-patches', kind);
  const patch = parseDocument(readFileSync(join(ROOT, 'deploy', 'kubeadm', 'patches', 'kube-apiserver+json.yaml'), 'utf8')).toJS() as { op: string; path: string; value: string }[];
  for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
    assert.deepEqual(patch.find((p) => p.path === `/spec/containers/0/${probe}/httpGet/host`), { op: 'replace', path: `/spec/containers/0/${probe}/httpGet/host`, value: extra['bind-address'] }, probe);
  }
});
