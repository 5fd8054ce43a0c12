// The real command line (node --import tsx src/main.ts): configuration errors exit 2 with the
// problem on stderr and nothing started; --help lists every flag with its default; a --config
// file starts the daemon with flags overriding it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, startChildDaemon } from '../support/child-daemon';
import { CONFIG_API_VERSION, CONFIG_KIND } from '../../src/config/load';
import { SETTINGS } from '../../src/config/settings';
import { createCA } from '../../src/pki/throwaway';
import { FRONTENDS } from '../support/frontends';

const dir = mkdtempSync(join(tmpdir(), 'mvproxy-cli-test-'));

function run(args: string[], timeoutMs = 20_000): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const t0 = Date.now();
  const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'main.ts'), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => (stdout += d));
  proc.stderr.on('data', (d: Buffer) => (stderr += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`mvproxy ${args.join(' ')} did not exit in ${timeoutMs} ms:\n${stderr}`));
    }, timeoutMs);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - t0 });
    });
  });
}

/** Ports handed out: bind(0) can repeat one once it is closed, and the daemon refuses two listeners on one port. */
const handedOut = new Set<number>();

async function freePort(): Promise<number> {
  for (;;) {
    const s = net.createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    const port = (s.address() as net.AddressInfo).port;
    await new Promise((r) => s.close(r));
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const c = net.connect(port, '127.0.0.1');
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });
}

function config(body: string): string {
  const f = join(dir, `c${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(f, `apiVersion: ${CONFIG_API_VERSION}\nkind: ${CONFIG_KIND}\n${body}`);
  return f;
}

/** Runs mvproxy with `args` on fixed free ports and checks: exit 2, one error line matching `want`, nothing started. */
async function exits2(args: string[], want: string | RegExp): Promise<void> {
  const client = await freePort();
  const metrics = await freePort();
  const r = await run([`--secure-port=${client}`, `--metrics-bind-address=127.0.0.1:${metrics}`, '--local-apiserver=http://127.0.0.1:1', ...args]);
  assert.equal(r.code, 2, `exit code of ${args.join(' ')}; stderr:\n${r.stderr}`);
  const lines = r.stderr.trimEnd().split('\n');
  assert.ok(lines.length <= 2, `only the problem on stderr (and maybe commander's hint), got:\n${r.stderr}`);
  if (typeof want === 'string') assert.ok(r.stderr.includes(want), `stderr ${JSON.stringify(r.stderr)} lacks ${JSON.stringify(want)}`);
  else assert.match(r.stderr, want);
  assert.ok(!r.stderr.includes('mvproxy started'));
  assert.equal(r.stdout, '');
  assert.equal(await listening(client), false);
  assert.equal(await listening(metrics), false);
}

test('bad flags exit 2 with the problem on stderr, nothing started', async () => {
  await exits2(['--feature-gates=Foo=true'], 'Error: invalid argument "Foo=true" for "--feature-gates" flag: unrecognized feature gate: Foo\n');
  await exits2(['--feature-gates=UnknownVersionInteroperabilityProxy'], 'missing bool value for UnknownVersionInteroperabilityProxy');
  await exits2(['--no-such-flag'], "error: unknown option '--no-such-flag'");
  await exits2(['--request-timeout=5x'], 'invalid argument "5x" for "--request-timeout" flag: time: invalid duration "5x"');
  await exits2(['--peer-port=99999'], 'invalid argument "99999" for "--peer-port" flag: must be an integer from 0 to 65535');
  await exits2(['--legacy-discovery-fix', 'false'], 'a boolean flag takes its value with "=": --legacy-discovery-fix=false');
  await exits2(['--legacy-discovery-fix=nah'], 'strconv.ParseBool: parsing "nah": invalid syntax');
  await exits2(['-v=99'], 'invalid argument "99" for "--v" flag');
  await exits2(['--frontend=nginx'], /error: option '--frontend <name>' argument 'nginx' is invalid/);
  await exits2(['stray-argument'], 'error: too many arguments');
  await exits2(['--bind-address=0.0.0.0'], 'not a loopback address');
  await exits2(['--tls-cert-file=/nonexistent/tls.crt', '--tls-private-key-file=/nonexistent/tls.key'], '--tls-cert-file (serving.certFile): open /nonexistent/tls.crt: no such file or directory');
});

test('bad config files exit 2 naming the file and the field, nothing started', async () => {
  const typo = config('serving:\n  bindAdress: 0.0.0.0\n');
  await exits2([`--config=${typo}`], `Error: error loading config file "${typo}": unknown field "serving.bindAdress"\n`);
  const dup = config('serving:\n  securePort: 1\n  securePort: 2\n');
  await exits2([`--config=${dup}`], `error loading config file "${dup}": duplicate field "serving.securePort"`);
  const type = config('discovery: {legacyDiscoveryFix: "no"}\n');
  await exits2([`--config=${type}`], `error loading config file "${type}": wrong type for field "discovery.legacyDiscoveryFix": want boolean, got string`);
  const gate = config('featureGates: {Foo: true}\n');
  await exits2([`--config=${gate}`], `error loading config file "${gate}": unknown field "featureGates.Foo": unrecognized feature gate: Foo`);
  const version = config('');
  writeFileSync(version, 'apiVersion: v1\nkind: ConfigMap\n');
  await exits2([`--config=${version}`], `error loading config file "${version}": unsupported apiVersion "v1"`);
  await exits2([`--config=${join(dir, 'missing.yaml')}`], `error loading config file "${join(dir, 'missing.yaml')}": no such file or directory`);
});

test('deploy/config.yaml off a kubeadm node: exit 2 naming the missing pki files', { skip: existsSync('/etc/kubernetes/pki/apiserver.crt') && 'this machine has kubeadm pki' }, async () => {
  await exits2([`--config=${join(ROOT, 'deploy', 'config.yaml')}`], /--tls-cert-file \(serving.certFile\): open \/etc\/kubernetes\/pki\/apiserver.crt: no such file or directory/);
});

test('--help exits 0 and lists every flag with its default', async () => {
  const r = await run(['--help']);
  assert.equal(r.code, 0, r.stderr);
  const help = r.stdout;
  for (const s of SETTINGS) assert.ok(help.includes(`--${s.flag} `), `--${s.flag} missing from --help`);
  assert.ok(help.includes('--config <file>'));
  const line = (flag: string) => help.split('\n').find((l) => l.trimStart().startsWith(flag) || l.includes(`, ${flag}`)) ?? '';
  const defaults: [string, string][] = [
    ['--secure-port', '(default: "6444")'],
    ['--peer-port', '(default: "6445")'],
    ['--bind-address', '(default: "127.0.0.1")'],
    ['--local-apiserver ', '(default: "https://127.0.0.1:6443")'],
    ['--request-timeout', '(default: "1m0s")'],
    ['--upstream-connect-timeout', '(default: "5s")'],
    ['--discovery-refresh-interval', '(default: "30s")'],
    ['--peer-discovery-grace-period', '(default: "1m0s")'],
    ['--shutdown-delay-duration', '(default: "0s")'],
    ['--shutdown-drain-timeout', '(default: "20s")'],
    ['--legacy-discovery-fix', '(default: true)'],
    ['--requestheader-allowed-names', '(default: [])'],
    ['--static-peers', '(default: [])'],
    ['--metrics-bind-address', '(default: "127.0.0.1:10290")'],
    ['--v ', '(default: "2")'],
    ['--frontend', 'default: "auto"'],
    ['--logging-format', 'default: "json"'],
    ['--server-id', '(default: derived from the host name'],
  ];
  for (const [flag, d] of defaults) assert.ok(line(flag).includes(d), `${flag}: ${JSON.stringify(line(flag))} lacks ${d}`);
  assert.match(help, /UnknownVersionInteroperabilityProxy=true\|false \(BETA - default=true\)/);
  assert.match(help, /AllBeta=true\|false \(BETA - default=false\)/);
});

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      })
      .on('error', reject);
  });
}

test('--config starts the daemon; command-line flags override the file', async () => {
  const f = config(['frontend: node', 'serving: {securePort: 0}', 'metrics: {bindAddress: "127.0.0.1:1"}', 'localAPIServer: {url: "http://127.0.0.1:1"}', 'logging: {format: json, verbosity: 5}', 'serverID: cp-cli-test', ''].join('\n'));
  const d = await startChildDaemon([`--config=${f}`, '--metrics-bind-address=127.0.0.1:0', '--v=0']);
  try {
    assert.notEqual(d.metricsPort, 1); // the flag beat the file's metrics.bindAddress
    const started = JSON.parse(/\{[^\n]*"msg":"mvproxy started"[^\n]*\}/.exec(d.stderr())![0]);
    assert.equal(started.frontend, 'node'); // from the file
    assert.equal(started.serverID, 'cp-cli-test');
    assert.ok(!/"v":[1-9]/.test(d.stderr()), 'the file verbosity 5 was overridden by --v=0');
    const live = await get(d.metricsPort, '/livez');
    assert.deepEqual(live, { status: 200, body: 'ok' });
    const ready = await get(d.metricsPort, '/readyz?verbose');
    assert.match(ready.body, /^\[\+\]ping ok\n/);
  } finally {
    assert.equal(await d.stop(), 0);
  }
});

test('clean operational failures: a certificate with the wrong key or a non-PEM file exits 2, a port in use exits 1, each one line naming the flag, no stack', async () => {
  const ca = await createCA('cli-test-ca');
  const a = await ca.issue({ commonName: 'a', ipAddresses: ['127.0.0.1'], usage: 'server' });
  const b = await ca.issue({ commonName: 'b', ipAddresses: ['127.0.0.1'], usage: 'server' });
  const f = (name: string, text: string) => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };
  const base = ['--secure-port=0', '--local-apiserver=http://127.0.0.1:1', '--metrics-bind-address=127.0.0.1:0'];
  const noStack = (s: string) => assert.doesNotMatch(s, /^\s+at /m, `no stack trace:\n${s}`);

  const mismatch = await run([...base, `--tls-cert-file=${f('a.crt', a.cert)}`, `--tls-private-key-file=${f('b.key', b.key)}`]);
  assert.equal(mismatch.code, 2, mismatch.stderr);
  assert.match(mismatch.stderr, /--tls-cert-file .* and --tls-private-key-file .*: the private key does not belong to the certificate/);
  noStack(mismatch.stderr);

  const notPem = await run([...base, `--tls-cert-file=${f('a2.crt', a.cert)}`, `--tls-private-key-file=${f('junk.key', 'not a key\n')}`]);
  assert.equal(notPem.code, 2, notPem.stderr);
  assert.match(notPem.stderr, /--tls-private-key-file .*: not a PEM file/);
  noStack(notPem.stderr);

  const badCA = await run([...base, `--client-ca-file=${f('junk-ca.crt', '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n')}`, `--tls-cert-file=${f('a3.crt', a.cert)}`, `--tls-private-key-file=${f('a3.key', a.key)}`]);
  assert.equal(badCA.code, 2, badCA.stderr);
  assert.match(badCA.stderr, /--client-ca-file /);
  noStack(badCA.stderr);

  const busy = net.createServer();
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
  const port = (busy.address() as net.AddressInfo).port;
  try {
    for (const frontend of FRONTENDS) {
      const inUse = await run(['--secure-port=' + port, '--bind-address=127.0.0.1', `--frontend=${frontend}`, '--local-apiserver=http://127.0.0.1:1', '--metrics-bind-address=127.0.0.1:0']);
      assert.equal(inUse.code, 1, `${frontend}: ${inUse.stderr}`);
      assert.match(inUse.stderr, new RegExp(`127\\.0\\.0\\.1:${port} \\(--bind-address/--secure-port\\)`), frontend);
      noStack(inUse.stderr);
    }
  } finally {
    busy.close();
  }
});
