/**
 * The lock `services up|down` hold on their services directory (localstack/services/lock.ts), on temp directories
 * only: the running services and their directory are never touched.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ServiceStartError } from '../../lib/errors.ts';
import { LOCK_FILE, lockServices, parseHolder, withServicesLock } from '../../localstack/services/lock.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'services-lock-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const holderOf = () => parseHolder(readFileSync(join(dir, LOCK_FILE), 'utf8'));

/** The pid of a process that has exited (and been reaped). */
function deadPid(): number {
  const pid = spawnSync(process.execPath, ['-e', '']).pid;
  if (!pid) throw new Error('no child pid');
  return pid;
}

describe('the services lock', () => {
  it('is a file in the services directory naming its pid and command, removed on release', async () => {
    const lines: string[] = [];
    const lock = await lockServices(join(dir, 'nested'), { command: 'services up', progress: (m) => lines.push(m) });
    expect(lock.path).toBe(join(dir, 'nested', LOCK_FILE));
    expect(parseHolder(readFileSync(lock.path, 'utf8'))).toMatchObject({ pid: process.pid, command: 'services up' });
    await lock.release();
    expect(existsSync(lock.path)).toBe(false);
    expect(lines).toEqual([]);
  });

  it('makes a second command wait, saying once for whom, until the first releases it', async () => {
    const first = await lockServices(dir, { command: 'services up', progress: () => {} });
    const lines: string[] = [];
    let second: Awaited<ReturnType<typeof lockServices>> | undefined;
    const waiting = lockServices(dir, { command: 'services down', progress: (m) => lines.push(m), pollMs: 10 }).then(
      (l) => {
        second = l;
      },
    );
    await sleep(200);
    expect(second).toBeUndefined();
    expect(holderOf()?.command).toBe('services up');
    expect(lines).toEqual([
      `services down: waiting for services up (pid ${process.pid}) to finish (lock ${join(dir, LOCK_FILE)}; at most 600 s)`,
    ]);
    await first.release();
    await waiting;
    expect(holderOf()?.command).toBe('services down');
    await second?.release();
  });

  it('gives up after its wait with an error naming the holder and the lock file', async () => {
    const first = await lockServices(dir, { command: 'services up', progress: () => {} });
    try {
      const start = Date.now();
      const second = lockServices(dir, { command: 'services down', progress: () => {}, waitMs: 300, pollMs: 20 });
      await expect(second).rejects.toThrow(ServiceStartError);
      await expect(second).rejects.toThrow(
        new RegExp(
          `^services down: services up \\(pid ${process.pid}\\) has held ${join(dir, LOCK_FILE)} for \\d+ s; gave up after waiting 0 s`,
        ),
      );
      expect(Date.now() - start).toBeGreaterThanOrEqual(290);
      expect(holderOf()?.command).toBe('services up');
    } finally {
      await first.release();
    }
  });

  it('takes over a stale lock: its holder is gone', async () => {
    const pid = deadPid();
    writeFileSync(join(dir, LOCK_FILE), `${JSON.stringify({ pid, command: 'services up', since: 1 })}\n`);
    const lines: string[] = [];
    const lock = await lockServices(dir, { command: 'services down', progress: (m) => lines.push(m), waitMs: 0 });
    expect(lines).toEqual([
      `services down: taking over the stale lock ${join(dir, LOCK_FILE)} (its services up (pid ${pid}) is gone)`,
    ]);
    expect(holderOf()).toMatchObject({ pid: process.pid, command: 'services down' });
    await lock.release();
  });

  it('takes over a lock file it cannot read', async () => {
    writeFileSync(join(dir, LOCK_FILE), 'garbage');
    const lines: string[] = [];
    const lock = await lockServices(dir, { command: 'services up', progress: (m) => lines.push(m), waitMs: 0 });
    expect(lines).toEqual([`services up: taking over the stale lock ${join(dir, LOCK_FILE)} (it cannot be read)`]);
    expect(holderOf()?.pid).toBe(process.pid);
    await lock.release();
  });

  it('lets one holder in at a time among commands that race for it', async () => {
    let inside = 0;
    let most = 0;
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        withServicesLock(dir, { command: `services up ${i}`, progress: () => {}, pollMs: 5 }, async () => {
          inside += 1;
          most = Math.max(most, inside);
          await sleep(15);
          order.push(i);
          inside -= 1;
        }),
      ),
    );
    expect(most).toBe(1);
    expect(order.toSorted()).toEqual([0, 1, 2, 3, 4, 5]);
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
  });

  it('releases it when the work throws, and a release never removes a lock that is no longer its own', async () => {
    await expect(
      withServicesLock(dir, { command: 'services up', progress: () => {} }, async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);

    const lock = await lockServices(dir, { command: 'services up', progress: () => {} });
    const other = `${JSON.stringify({ pid: process.pid, command: 'services down', since: 2 })}\n`;
    writeFileSync(lock.path, other);
    await lock.release();
    expect(readFileSync(lock.path, 'utf8')).toBe(other);
  });
});
