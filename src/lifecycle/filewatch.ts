// Watching a few small files for new content (certificates, keys, CA bundles, a token, a peers
// file), the way kube-apiserver's dynamiccertificates controllers do (docs/operating.md §3):
//
//   - fs.watch on each file's DIRECTORY, not on the file: editors, cert-manager and kubelet's
//     atomic writer replace files by rename (secret volumes swap a `..data` symlink), which a
//     watch on the file itself would lose. Any event in the directory triggers a check.
//   - A directory watch that errors (the directory was removed) is dropped and re-added by the
//     next resync; a resync also runs every `resyncMs` (kube: one minute) whatever fs.watch says,
//     for file systems where it reports nothing (some network and overlay file systems).
//   - A check reads every file and compares a SHA-256 of the content with the last one seen:
//     unchanged content (an mtime touch, an event for a neighbouring file) is ignored; only a
//     changed set reaches `onChange`, which always gets the whole current set, so a consumer can
//     validate files that belong together (a certificate and its key) as one.

import { createHash } from 'node:crypto';
import { readFileSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Logger } from '../telemetry/log';

/** Per file: its content, or why it could not be read. */
export type FileContents = ReadonlyMap<string, Buffer | Error>;

export interface WatchedFilesOptions {
  /** Periodic re-check even without fs.watch events (kube: 1 min). */
  resyncMs: number;
  /** fs.watch events within this window are checked once (a rename-based swap fires several). */
  debounceMs?: number;
  log: Logger;
  /** Called with every file's current content when any of them changed since the last call. */
  onChange(contents: FileContents): void;
}

export class WatchedFiles {
  private readonly files: readonly string[];
  private readonly hashes = new Map<string, string>();
  private readonly watchers = new Map<string, FSWatcher>();
  private resync: NodeJS.Timeout | undefined;
  private debounce: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(files: Iterable<string | undefined>, private readonly o: WatchedFilesOptions) {
    this.files = [...new Set([...files].filter((f): f is string => !!f))];
  }

  /** Reads every file once (the first `onChange` call happens here, synchronously) and starts watching. */
  start(): void {
    this.check();
    this.watchDirectories();
    this.resync = setInterval(() => {
      this.watchDirectories();
      this.check();
    }, this.o.resyncMs);
    this.resync.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.resync) clearInterval(this.resync);
    if (this.debounce) clearTimeout(this.debounce);
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
  }

  /** Reads the files now; calls onChange if any content differs from the last check. */
  check(): void {
    if (this.stopped) return;
    const contents = new Map<string, Buffer | Error>();
    let changed = false;
    for (const f of this.files) {
      let content: Buffer | Error;
      let hash: string;
      try {
        content = readFileSync(f);
        hash = createHash('sha256').update(content).digest('hex');
      } catch (e) {
        content = e as Error;
        hash = 'error:' + ((e as { code?: string }).code ?? (e as Error).message);
      }
      contents.set(f, content);
      if (this.hashes.get(f) !== hash) changed = true;
      this.hashes.set(f, hash);
    }
    if (changed) this.o.onChange(contents);
  }

  private watchDirectories(): void {
    if (this.stopped) return;
    for (const dir of new Set(this.files.map((f) => dirname(f)))) {
      if (this.watchers.has(dir)) continue;
      try {
        const w = watch(dir, { persistent: false }, () => this.soon());
        w.on('error', () => {
          // The directory went away (or the watch broke): the next resync re-adds it.
          w.close();
          if (this.watchers.get(dir) === w) this.watchers.delete(dir);
          this.soon();
        });
        this.watchers.set(dir, w);
      } catch (e) {
        this.o.log.info(2, 'cannot watch a directory; relying on the periodic re-read', { dir, files: this.files.filter((f) => dirname(f) === dir).map((f) => basename(f)), err: (e as Error).message });
      }
    }
  }

  private soon(): void {
    if (this.stopped || this.debounce) return;
    this.debounce = setTimeout(() => {
      this.debounce = undefined;
      this.check();
    }, this.o.debounceMs ?? 50);
    this.debounce.unref();
  }
}

/** The content of `file` from a check, or throws its read error. */
export function contentOf(contents: FileContents, file: string): Buffer {
  const c = contents.get(file);
  if (c === undefined) throw new Error(`${file} is not watched`);
  if (c instanceof Error) throw c;
  return c;
}
