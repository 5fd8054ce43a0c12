// pods/exec and pods/attach over WebSocket for the simulated apiserver: the channel protocols
// kubectl >= 1.30 speaks (`v5.channel.k8s.io`, and `v4.channel.k8s.io`; k8s.io/apimachinery
// pkg/util/remotecommand). Each binary message is one byte of channel (0 stdin, 1 stdout, 2 stderr,
// 3 error/status, 4 resize; v5 adds 255 "close stream") followed by its data. Enough of a container
// for proxies to be tested with real kubectl: a few commands, run on what stdin sends.
//   echo ARGS…     prints ARGS
//   cat            copies stdin to stdout until stdin closes
//   wc -c          counts stdin bytes until stdin closes
//   exit N         exits with status N after printing "exiting N" to stderr
//   (attach)       as cat
// Resizes (channel 4, `{"Width":w,"Height":h}`) are reported on stderr as "resize WxH".
// SPDY (kubectl <= 1.29) is not simulated: 400 Status.

import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';

const PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];
const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const ERROR = 3;
const RESIZE = 4;
const CLOSE = 255;

const EXEC_PATH = /^\/api\/v1\/namespaces\/[^/]+\/pods\/[^/]+\/(exec|attach)$/;

const wss = new WebSocketServer({
  noServer: true,
  perMessageDeflate: false,
  handleProtocols: (offered) => PROTOCOLS.find((p) => offered.has(p)) ?? false,
});

/** True when the upgrade was taken (a WebSocket exec/attach), false to let the caller refuse it. */
export function handleExecUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
  const url = new URL(req.url ?? '/', 'http://sim');
  const m = EXEC_PATH.exec(url.pathname);
  if (!m || (req.headers.upgrade ?? '').toLowerCase() !== 'websocket') return false;
  const offered = String(req.headers['sec-websocket-protocol'] ?? '').split(',').map((s) => s.trim());
  if (!PROTOCOLS.some((p) => offered.includes(p))) return false;
  // Like kube-apiserver (Go's parser), skip offered protocols it does not speak, even ones that are
  // not RFC 7230 tokens ("SPDY/3.1+portforward.k8s.io"), which the ws server would refuse with 400.
  req.headers['sec-websocket-protocol'] = offered.filter((p) => PROTOCOLS.includes(p)).join(', ');
  wss.handleUpgrade(req, socket, head, (ws) => run(ws, m[1] === 'attach' ? ['cat'] : url.searchParams.getAll('command')));
  return true;
}

function run(ws: WebSocket, command: string[]): void {
  const v5 = ws.protocol === 'v5.channel.k8s.io';
  const out = (channel: number, data: string | Buffer) => ws.send(Buffer.concat([Buffer.from([channel]), Buffer.isBuffer(data) ? data : Buffer.from(data)]));
  let stdinBytes = 0;
  let done = false;
  const finish = (code: number) => {
    if (done) return;
    done = true;
    const status = code === 0 ? { metadata: {}, status: 'Success' } : { metadata: {}, status: 'Failure', message: `command terminated with non-zero exit code: ${code}`, reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: String(code) }] } };
    out(ERROR, JSON.stringify(status));
    ws.close(1000);
  };
  const [cmd, ...args] = command;
  const stdinEnded = () => {
    if (cmd === 'wc') out(STDOUT, `${stdinBytes}\n`);
    finish(0);
  };
  ws.on('message', (data: Buffer) => {
    if (data.length === 0) return;
    const channel = data[0];
    const payload = data.subarray(1);
    if (channel === STDIN) {
      stdinBytes += payload.length;
      if (cmd === 'cat') out(STDOUT, payload);
    } else if (channel === RESIZE) {
      try {
        const r = JSON.parse(payload.toString()) as { Width: number; Height: number };
        out(STDERR, `resize ${r.Width}x${r.Height}\n`);
      } catch {
        /* not a resize */
      }
    } else if (v5 && channel === CLOSE && payload[0] === STDIN) stdinEnded();
  });
  ws.on('close', () => {
    done = true;
  });
  // A real process takes a while to start; client-go's WebSocket executor registers its streams
  // concurrently with reading, and drops output that arrives before (kubectl: "Unknown stream id 1,
  // discarding message", then exit 1: seen once in ~40 runs with an instant answer).
  setTimeout(() => {
    if (!done) start();
  }, PROCESS_START_MS);
  function start(): void {
    switch (cmd) {
      case 'echo':
        out(STDOUT, args.join(' ') + '\n');
        finish(0);
        return;
      case 'exit': {
        const code = Number(args[0] ?? 0) || 0;
        out(STDERR, `exiting ${code}\n`);
        finish(code);
        return;
      }
      case 'cat':
      case 'wc':
        if (!v5) setTimeout(stdinEnded, 2000); // v4 has no way to say stdin ended
        return;
      default:
        out(STDERR, `${cmd ?? ''}: command not found\n`);
        finish(127);
    }
  }
}

/** How long the simulated command takes to start (a fork and exec on a kubelet: milliseconds or more). */
const PROCESS_START_MS = 50;
