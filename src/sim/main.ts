// CLI: run one simulated kube-apiserver.
//   node --import tsx src/sim/main.ts --kubernetes-version=v1.33 --port=8081 --name=sim-a \
//        [--runtime-config=batch/v1=false] [--host=127.0.0.1] [--tls-cert-file=F --tls-private-key-file=F]
// Prints one line of JSON {"url","name","port","kubernetesVersion"} once listening; exits 0 on SIGTERM/SIGINT.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startSimApiserver } from './server';

const USAGE = 'usage: main.ts --kubernetes-version=v1.33|v1.37 [--port=N] [--name=NAME] [--host=127.0.0.1] [--runtime-config=g/v=false ...] [--tls-cert-file=F --tls-private-key-file=F] [--serve-v2beta1] [--strict-namespaces]';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'kubernetes-version': { type: 'string' },
      port: { type: 'string', default: '0' },
      name: { type: 'string' },
      host: { type: 'string', default: '127.0.0.1' },
      'runtime-config': { type: 'string', multiple: true },
      'tls-cert-file': { type: 'string' },
      'tls-private-key-file': { type: 'string' },
      'serve-v2beta1': { type: 'boolean', default: false },
      'strict-namespaces': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) {
    process.stdout.write(USAGE + '\n');
    return;
  }
  const version = values['kubernetes-version'];
  if (version !== 'v1.33' && version !== 'v1.37') throw new Error(`--kubernetes-version must be v1.33 or v1.37\n${USAGE}`);
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid --port ${values.port}`);
  const certFile = values['tls-cert-file'];
  const keyFile = values['tls-private-key-file'];
  if (Boolean(certFile) !== Boolean(keyFile)) throw new Error('--tls-cert-file and --tls-private-key-file go together');

  const sim = await startSimApiserver({
    name: values.name ?? `sim-${version}`,
    kubernetesVersion: version,
    ...(values['runtime-config'] ? { runtimeConfig: values['runtime-config'] } : {}),
    host: values.host,
    port,
    ...(certFile && keyFile ? { tls: { cert: readFileSync(certFile), key: readFileSync(keyFile) } } : {}),
    serveV2beta1: values['serve-v2beta1'],
    strictNamespaces: values['strict-namespaces'],
  });
  process.stdout.write(JSON.stringify({ url: sim.url, name: sim.name, port: sim.port, kubernetesVersion: version }) + '\n');

  let stopping = false;
  const shutdown = (): void => {
    if (stopping) return;
    stopping = true;
    const force = setTimeout(() => process.exit(0), 5000);
    force.unref();
    sim.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}

main().catch((e: unknown) => {
  process.stderr.write(`sim: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(2);
});
