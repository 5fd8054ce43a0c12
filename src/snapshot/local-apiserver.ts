// Whether this node's kube-apiserver serves right now (issue 30): while it restarts (≈ 22 s per node
// in a rolling upgrade) every client of this node — its controller-manager, scheduler and kubelet
// talk to their own node's address — would lose the control plane, though every peer serves the
// same core APIs over the mutual-TLS route mvproxy already has. The state is published in the
// snapshot (`local`), and the request path sends what a peer can answer to a peer while it is not
// `serving` (proxy/handler.ts, --local-failover).
//
//   serving   /readyz answers 200
//   draining  /readyz fails (kube-apiserver fails it first when a graceful shutdown starts, then
//             keeps serving for --shutdown-delay-duration), or it answered a request with its
//             "shutting down" 429
//   down      it refuses connections, or connecting (TCP or TLS) timed out
//
// Request-path signals (a refused connection, a shutting-down answer) change the state at once;
// /readyz, asked every PROBE_INTERVAL_MS, confirms it and sees the apiserver come back (then the
// publisher refreshes discovery at once: a restarted apiserver may be a new release).
//
// A probe that could not open a connection because mvproxy is out of file descriptors (EMFILE,
// ENFILE) says nothing about the apiserver: the state stays, and the shortage is logged
// (api/fd-limit.ts); the request path does not report such a failure as refused either.

import type { SnapshotHolder, LocalState } from './holder';
import type { Logger } from '../telemetry/log';
import { isOutOfFileDescriptors, reportFdShortage } from '../api/fd-limit';

/** /readyz is asked this often: a restart is seen within about a second either way. */
export const PROBE_INTERVAL_MS = 1_000;

export interface LocalAPIServerOptions {
  /** GET /readyz on the local apiserver: its status, or a thrown error (no connection, timeout). */
  probe: () => Promise<number>;
  snapshots: SnapshotHolder;
  log: Logger;
  /** The apiserver serves again (after draining or down). */
  onServing?: () => void;
  /** Each change of state (metrics). */
  onChange?: (state: LocalState, reason: string) => void;
  intervalMs?: number;
}

export class LocalAPIServer {
  private timer: NodeJS.Timeout | null = null;
  private probing = false;
  /** Why the state is what it is (logs, /readyz?verbose, /debug/routes). */
  reason = 'not probed yet';
  since = Date.now();

  constructor(private readonly o: LocalAPIServerOptions) {}

  get state(): LocalState {
    return this.o.snapshots.current.local;
  }

  start(): void {
    const every = this.o.intervalMs ?? PROBE_INTERVAL_MS;
    this.timer = setInterval(() => void this.tick(), every);
    this.timer.unref();
    void this.tick();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /** The request path could not connect (refused, connect timeout, TLS): down at once. */
  refused(why: string): void {
    this.set('down', why);
  }

  /** The apiserver answered a request "shutting down" (429): draining at once. */
  shuttingDown(): void {
    this.set('draining', 'it answered a request: shutting down');
  }

  private async tick(): Promise<void> {
    if (this.probing) return;
    this.probing = true;
    try {
      const status = await this.o.probe();
      if (status === 200) this.set('serving', '/readyz ok');
      else this.set('draining', `/readyz answered ${status}`);
    } catch (e) {
      const why = `/readyz: ${(e as Error & { code?: string }).code ?? (e as Error).message}`;
      if (isOutOfFileDescriptors(e)) {
        if (reportFdShortage('local-probe')) this.o.log.info(0, 'local apiserver probe not made: mvproxy is out of file descriptors; its state stays (logged once per 10 s)', { state: this.state, err: why });
        return;
      }
      this.set('down', why);
    } finally {
      this.probing = false;
    }
  }

  private set(state: LocalState, reason: string): void {
    const prev = this.state;
    this.reason = reason;
    if (state === prev) return;
    this.since = Date.now();
    this.o.snapshots.publish({ local: state });
    this.o.log.info(state === 'serving' ? 1 : 0, `the local apiserver is ${state}`, { previous: prev, reason });
    this.o.onChange?.(state, reason);
    if (state === 'serving') this.o.onServing?.();
  }
}
