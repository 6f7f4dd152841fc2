/**
 * Pid-file bookkeeping for the services we start, so `down` stops only our own processes: a pid is
 * ours only while its command line still names our services directory.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { ServiceStartError } from '../../errors.ts';

/** True when a process with this pid exists. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The command line of a live process, or '' when it is gone or unreadable. */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

/** The pid recorded in `pidFile` if that process is alive and its command line contains `marker`. */
export function ownedPid(pidFile: string, marker: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(pidFile, 'utf8').trim();
  } catch {
    return undefined;
  }
  const pid = Number.parseInt(text, 10);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return undefined;
  return commandLine(pid).includes(marker) ? pid : undefined;
}

export function writePid(pidFile: string, pid: number): void {
  writeFileSync(pidFile, `${pid}\n`);
}

/** SIGTERM, then SIGKILL after `graceMs`; removes the pid file. Resolves when the process is gone. */
export async function stopProcess(pid: number, pidFile: string, graceMs = 15_000): Promise<void> {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    // already gone
  }
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < deadline) await sleep(100);
  if (isAlive(pid)) {
    process.kill(pid, 'SIGKILL');
    while (isAlive(pid)) await sleep(50);
  }
  rmSync(pidFile, { force: true });
}

/** True when something accepts TCP connections on 127.0.0.1:port. */
export function portOpen(port: number, host = '127.0.0.1', timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host });
    const done = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * Polls `check` until it returns true or `timeoutMs` passes; the last error (if any) goes into the
 * thrown message so a failed start says why.
 */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  intervalMs = 250,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch (error) {
      // A start that has failed for good (the process died) is not worth waiting out.
      if (error instanceof ServiceStartError) throw error;
      last = (error as Error).message;
    }
    await sleep(intervalMs);
  }
  throw new Error(
    `${what} was not ready after ${Math.round(timeoutMs / 1000)} s${last ? ` (last error: ${last})` : ''}`,
  );
}
