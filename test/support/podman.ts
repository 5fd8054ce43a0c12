// podman for the image tests (npm run test:image: scripts/image.sh builds the image first and names
// it in MVPROXY_IMAGE). podman runs with scripts/podman/containers.conf unless CONTAINERS_CONF is
// set (runc, and ulimits this host allows: the file says why).
import { execFile, execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './child-daemon';

/** The image under test, or undefined when npm run test:image did not build one. */
export const IMAGE = process.env.MVPROXY_IMAGE || undefined;

/** The skip reason of an image test here, or undefined when it runs (MVPROXY_REQUIRE_IMAGE=1, as CI sets, makes a missing image an error). */
export function imageSkip(): string | undefined {
  if (IMAGE) return undefined;
  if (process.env.MVPROXY_REQUIRE_IMAGE === '1') throw new Error('MVPROXY_REQUIRE_IMAGE=1 but MVPROXY_IMAGE is not set (npm run test:image builds the image and sets it)');
  return 'no image: MVPROXY_IMAGE is not set (npm run test:image builds it with scripts/image.sh)';
}

export const PODMAN_ENV: NodeJS.ProcessEnv = { ...process.env, CONTAINERS_CONF: process.env.CONTAINERS_CONF ?? join(ROOT, 'scripts', 'podman', 'containers.conf') };

/** Runs podman; rejects with its stderr on a non-zero exit. */
export function podman(args: string[], opts: { timeoutMs?: number; input?: string } = {}): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = execFile('podman', args, { env: PODMAN_ENV, timeout: opts.timeoutMs ?? 120_000, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      if (err) reject(Object.assign(new Error(`podman ${args.join(' ')}: ${err.message}\n${stderr}`), { stdout, stderr, exitCode: typeof err.code === 'number' ? err.code : null }));
      else resolve({ stdout, stderr });
    });
    if (opts.input !== undefined) child.stdin!.end(opts.input);
  });
}

/** podman, synchronously (for exit handlers); never throws. */
export function podmanSync(args: string[]): void {
  try {
    execFileSync('podman', args, { env: PODMAN_ENV, stdio: 'ignore', timeout: 60_000 });
  } catch {
    // best effort: the caller is cleaning up
  }
}

/** `podman inspect` of one container or image, parsed. */
export async function inspect<T = Record<string, any>>(kind: 'container' | 'image', name: string): Promise<T> {
  const { stdout } = await podman([kind, 'inspect', name]);
  return (JSON.parse(stdout) as T[])[0]!;
}
