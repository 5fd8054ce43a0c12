// Real kubectl binaries (1.27 … 1.33 where the machine has them), run against a server with no
// kubeconfig, a fresh HOME and discovery cache, so every run does discovery from scratch.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const KUBECTL_DIR = '/usr/lib/google-cloud-sdk/bin';

export function kubectlPath(minor: number): string {
  return join(KUBECTL_DIR, `kubectl.1.${minor}`);
}

/** The path of kubectl 1.<minor>, or a skip reason. */
export function findKubectl(minor: number): { bin: string } | { skip: string } {
  const bin = kubectlPath(minor);
  return existsSync(bin) ? { bin } : { skip: `kubectl.1.${minor} not found at ${bin}` };
}

export function kubectl(bin: string, server: string, args: string[], input?: string): Promise<{ stdout: string; stderr: string }> {
  const home = mkdtempSync(join(tmpdir(), 'mvproxy-kubectl-'));
  return new Promise((resolve, reject) => {
    const child = execFile(bin, ['--server', server, `--cache-dir=${join(home, 'cache')}`, ...args], { timeout: 30_000, env: { ...process.env, HOME: home, KUBECONFIG: '/dev/null' } }, (err, stdout, stderr) => {
      rmSync(home, { recursive: true, force: true });
      if (err) reject(new Error(`${bin} ${args.join(' ')}: ${err.message}\n${stderr}`));
      else resolve({ stdout, stderr });
    });
    if (input !== undefined) child.stdin!.end(input);
  });
}

/** Rows of kubectl's table output, header dropped, cells split on runs of spaces. */
export function rowsOf(out: string): string[][] {
  return out.trim().split('\n').slice(1).map((l) => l.trim().split(/\s+/));
}
