// The daemon's lifecycle, in one place: health, the listeners and the request path read it, only
// the daemon moves it (daemon/run.ts and daemon/shutdown.ts). The phases follow kube-apiserver's lifecycle
// signals (staging/src/k8s.io/apiserver/pkg/server/lifecycle_signals.go) as README "Shutdown"
// describes them:
//
//   starting     listeners opening, first discovery running (requests are served, fail open)
//   serving      steady state
//   terminating  shutdown began (ShutdownInitiated): /readyz fails, everything is still served for
//                --shutdown-delay-duration so load balancers take this node out first
//   draining     AfterShutdownDelayDuration → NotAcceptingNewRequest: listeners stop accepting,
//                requests on kept-alive connections get 429 and every response closes its
//                connection, watches end cleanly, in-flight requests finish (--shutdown-drain-timeout)
//   stopped      everything closed
//
// Phases only move forward.

export type Phase = 'starting' | 'serving' | 'terminating' | 'draining' | 'stopped';

const ORDER: readonly Phase[] = ['starting', 'serving', 'terminating', 'draining', 'stopped'];

export class Lifecycle {
  private current: Phase = 'starting';

  get phase(): Phase {
    return this.current;
  }

  /** Shutdown began: /readyz fails (terminating and later). */
  get shuttingDown(): boolean {
    return ORDER.indexOf(this.current) >= ORDER.indexOf('terminating');
  }

  /** No new requests: listeners stopped accepting, kept-alive connections are answered 429 and closed. */
  get draining(): boolean {
    return this.current === 'draining' || this.current === 'stopped';
  }

  /** Moves to `next` if it is later than the current phase; returns whether it moved. */
  to(next: Phase): boolean {
    if (ORDER.indexOf(next) <= ORDER.indexOf(this.current)) return false;
    this.current = next;
    return true;
  }
}
