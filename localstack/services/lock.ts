/**
 * The lock `services up` and `services down` hold on a services directory, so two of them never start (or stop)
 * the same Redis and Kafka on the same data directories at once: `<dir>/services.lock`, a JSON line with the
 * holder's pid, its command and since when it holds the lock. The file is written aside and hard-linked into place
 * (link(2) fails when the name exists, as an O_EXCL create does), so a reader never sees it half written.
 *
 * A second command waits for the holder, with one progress line naming it, and fails after {@link LOCK_WAIT_MS}
 * with an error that names the holder and the file. A lock whose pid is no longer alive (the holder was killed), or
 * that cannot be read, is stale: it is set aside and taken over. Pids are of this machine: the directory is local.
 */
import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ServiceStartError } from '../../lib/errors.ts';
import type { Progress } from './layout.ts';
import { isAlive } from './processes.ts';

/** The lock's name in the services directory. */
export const LOCK_FILE = 'services.lock';
/** How long a second `services up|down` waits for the first (a first `up` may build LocalStack's virtualenv). */
const LOCK_WAIT_MS = 600_000;
/** How often a waiting command looks at the lock again. */
const POLL_MS = 200;

/** What the lock file says. */
export interface LockHolder {
  pid: number;
  /** `services up` or `services down`. */
  command: string;
  /** Since when it holds the lock (epoch ms). */
  since: number;
}

export interface LockOptions {
  /** `services up` or `services down`: named to whoever waits. */
  command: string;
  progress: Progress;
  /** How long to wait for another holder (ms; {@link LOCK_WAIT_MS} when absent). */
  waitMs?: number;
  pollMs?: number;
}

/** A held lock. */
export interface ServicesLock {
  path: string;
  /** Removes the lock file, if it is still this holder's. */
  release(): Promise<void>;
}

/** The holder a lock file's text names; undefined when it names none (not ours, or garbage). */
export function parseHolder(text: string): LockHolder | undefined {
  try {
    const v = JSON.parse(text) as Partial<LockHolder> | null;
    if (v && Number.isInteger(v.pid) && (v.pid as number) > 0 && typeof v.command === 'string') {
      return { pid: v.pid as number, command: v.command, since: Number(v.since) || 0 };
    }
  } catch {
    // not JSON: stale
  }
  return undefined;
}

const unique = () => `${process.pid}.${randomBytes(6).toString('hex')}`;
const code = (error: unknown) => (error as NodeJS.ErrnoException).code;

/** Puts `text` at `path` unless something is there: true when it did. */
async function tryCreate(path: string, text: string): Promise<boolean> {
  const aside = `${path}.${unique()}.new`;
  await writeFile(aside, text, { flag: 'wx' });
  try {
    await link(aside, path);
    return true;
  } catch (error) {
    if (code(error) === 'EEXIST') return false;
    throw error;
  } finally {
    await unlink(aside).catch(() => {});
  }
}

/** The lock file's text; undefined when there is none. */
async function readLock(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if (code(error) === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Removes the stale lock whose text was `seen`. It is renamed aside first and read again: when another command
 * replaced it in between (it took the stale lock over first), that fresh lock is linked back into place.
 */
async function removeStale(path: string, seen: string): Promise<void> {
  const aside = `${path}.${unique()}.stale`;
  try {
    await rename(path, aside);
  } catch (error) {
    if (code(error) === 'ENOENT') return;
    throw error;
  }
  try {
    if ((await readLock(aside)) !== seen) await link(aside, path).catch(() => {});
  } finally {
    await unlink(aside).catch(() => {});
  }
}

/**
 * Takes the services lock of `dir` (created if missing), waiting for another holder as the module note says.
 * Throws a {@link ServiceStartError} when the wait times out.
 */
export async function lockServices(dir: string, options: LockOptions): Promise<ServicesLock> {
  const path = join(dir, LOCK_FILE);
  const waitMs = options.waitMs ?? LOCK_WAIT_MS;
  const pollMs = options.pollMs ?? POLL_MS;
  await mkdir(dir, { recursive: true });
  const mine = `${JSON.stringify({ pid: process.pid, command: options.command, since: Date.now() })}\n`;
  const deadline = Date.now() + waitMs;
  let told = false;
  for (;;) {
    if (await tryCreate(path, mine)) {
      return {
        path,
        release: async () => {
          if ((await readLock(path)) === mine) await unlink(path).catch(() => {});
        },
      };
    }
    const seen = await readLock(path);
    if (seen === undefined) continue; // released in between
    const holder = parseHolder(seen);
    if (!holder || !isAlive(holder.pid)) {
      const why = holder ? `its ${holder.command} (pid ${holder.pid}) is gone` : 'it cannot be read';
      options.progress(`${options.command}: taking over the stale lock ${path} (${why})`);
      await removeStale(path, seen);
    } else if (Date.now() >= deadline) {
      const held = holder.since > 0 ? ` for ${Math.round((Date.now() - holder.since) / 1000)} s` : '';
      throw new ServiceStartError(
        `${options.command}: ${holder.command} (pid ${holder.pid}) has held ${path}${held}; gave up after ` +
          `waiting ${Math.round(waitMs / 1000)} s. Try again when it is done, or remove the file if pid ` +
          `${holder.pid} is not a crawl-cluster services command.`,
      );
    } else {
      if (!told) {
        options.progress(
          `${options.command}: waiting for ${holder.command} (pid ${holder.pid}) to finish ` +
            `(lock ${path}; at most ${Math.round(waitMs / 1000)} s)`,
        );
        told = true;
      }
      await sleep(Math.min(pollMs, Math.max(1, deadline - Date.now())));
    }
  }
}

/** Runs `fn` holding the services lock of `dir` (lockServices), released however `fn` ends. */
export async function withServicesLock<T>(dir: string, options: LockOptions, fn: () => Promise<T>): Promise<T> {
  const lock = await lockServices(dir, options);
  try {
    return await fn();
  } finally {
    await lock.release();
  }
}
