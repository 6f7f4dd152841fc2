/**
 * Pid-file bookkeeping for the services we start, so `down` stops only our own processes: a pid is
 * ours only while its command line still names our services directory.
 */
import { Buffer } from 'node:buffer';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { ServiceStartError } from '../../lib/errors.ts';
import type { ServiceStatus } from './layout.ts';

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
function commandLine(pid: number): string {
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

function writePid(pidFile: string, pid: number): void {
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

/** A loopback port that was free a moment ago (the OS's pick). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
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
 * thrown message so a failed start says why. `until` (a started process's {@link StartedProcess.exited})
 * ends the wait at once when it rejects, even in the middle of a check.
 */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  intervalMs = 250,
  until?: Promise<never>,
): Promise<void> {
  const raced = <T>(work: Promise<T>): Promise<T> => {
    if (until === undefined) return work;
    // A check abandoned because the process died finishes on its own, without an unhandled rejection.
    work.catch(() => {});
    return Promise.race([work, until]);
  };
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      if (await raced(check())) return;
    } catch (error) {
      // A start that has failed for good (the process died) is not worth waiting out.
      if (error instanceof ServiceStartError) throw error;
      last = (error as Error).message;
    }
    await raced(sleep(intervalMs));
  }
  throw new Error(
    `${what} was not ready after ${Math.round(timeoutMs / 1000)} s${last ? ` (last error: ${last})` : ''}`,
  );
}

/** A log file and its size before a start, so that only what the start wrote is quoted. */
export interface LogMark {
  file: string;
  offset: number;
}

/** Remembers where each log file ends now (0 for one that does not exist yet). */
function markLogs(files: string[]): LogMark[] {
  return files.map((file) => {
    try {
      return { file, offset: statSync(file).size };
    } catch {
      return { file, offset: 0 };
    }
  });
}

/** The most of a log that is read for its last lines. */
const TAIL_BYTES = 64 * 1024;

/**
 * The last `lines` lines written to a log since its mark, without Java stack frames (`at ...`, `... 17
 * more`), which would otherwise fill the tail and hide the message that says why. '' when nothing was written.
 */
function logTail(mark: LogMark, lines = 10): string {
  let fd: number;
  try {
    fd = openSync(mark.file, 'r');
  } catch {
    return '';
  }
  try {
    const size = statSync(mark.file).size;
    // A log that shrank was rotated or truncated: all of it is new.
    const from = Math.max(size < mark.offset ? 0 : mark.offset, size - TAIL_BYTES);
    const buffer = Buffer.alloc(size - from);
    const read = readSync(fd, buffer, 0, buffer.length, from);
    const text = buffer.subarray(0, read).toString('utf8');
    return text
      .split('\n')
      .map((l) => l.trimEnd())
      .filter((l) => l !== '' && !/^\s+at |^\s*\.\.\. \d+ more$/.test(l))
      .slice(-lines)
      .join('\n');
  } finally {
    closeSync(fd);
  }
}

/** The last lines written to each log since its mark, under the log's name and indented; says so when there are none. */
export function describeLogs(marks: LogMark[], lines = 10): string {
  const parts: string[] = [];
  for (const mark of marks) {
    const tail = logTail(mark, lines);
    if (tail !== '') parts.push(`last lines of ${mark.file}:\n${tail.replace(/^/gm, '  ')}`);
  }
  return parts.length > 0 ? parts.join('\n') : `nothing in ${marks.map((m) => m.file).join(' or ')}`;
}

/** A service process started by `services up`, watched while it starts. */
export interface StartedProcess {
  pid: number;
  /**
   * Rejects with a {@link ServiceStartError} as soon as the process exits before {@link ready} is called:
   * it names the service, the exit code or signal, and the last lines of its logs.
   */
  exited: Promise<never>;
  /** The start succeeded: stops watching, so a later exit is no longer the start's failure. */
  ready(): void;
}

/**
 * Starts a service in a session of its own (it outlives this command) with stdout and stderr appended
 * to `out`, records its pid in `pidFile` and watches it until {@link StartedProcess.ready}.
 * @param logs the files the service writes its log to, quoted when it dies (`out` is always included)
 * @param env the service's environment @default this process's
 */
export async function startService(
  service: string,
  command: string,
  args: string[],
  files: { out: string; pidFile: string; logs?: string[]; env?: NodeJS.ProcessEnv },
): Promise<StartedProcess> {
  const marks = markLogs([...new Set([files.out, ...(files.logs ?? [])])]);
  const out = openSync(files.out, 'a');
  let child: ChildProcess;
  try {
    child = spawn(command, args, { detached: true, stdio: ['ignore', out, out], env: files.env ?? process.env });
  } finally {
    // The child has its own copy of the descriptor.
    closeSync(out);
  }
  const { pid } = child;
  if (pid === undefined) {
    const [error] = (await once(child, 'error')) as [Error];
    throw new ServiceStartError(`${service}: cannot run ${command}: ${error.message}`);
  }
  writePid(files.pidFile, pid);
  let watching = true;
  const exited = new Promise<never>((_, reject) => {
    child.once('exit', (code, signal) => {
      if (!watching) return;
      rmSync(files.pidFile, { force: true });
      const how = signal === null ? `with code ${code}` : `on signal ${signal}`;
      reject(new ServiceStartError(`${service} (pid ${pid}) exited ${how} during start; ${describeLogs(marks)}`));
    });
  });
  // Marked handled: nobody may be awaiting it at the moment the process dies.
  exited.catch(() => {});
  // This command need not wait for the service to end; the 'exit' listener works while the command runs.
  child.unref();
  return {
    pid,
    exited,
    ready: () => {
      watching = false;
      child.removeAllListeners('exit');
    },
  };
}

/** What {@link bringUp} and {@link serviceStatus} need to know of one service. */
export interface ServiceSpec {
  /** Its name in messages and in `services status`. */
  name: string;
  /** What it is, for "taken by something that is not …" (e.g. `Kafka`). */
  what: string;
  port: number;
  /** Its pid file, and the text its command line holds while the process is ours ({@link ownedPid}). */
  pidFile: string;
  marker: string;
  /** The file its stdout and stderr go to, and any other log it writes (quoted when it dies during start). */
  out: string;
  logs?: string[];
  /** The variable that moves its port, for the error when a stranger holds the port. */
  portVariable: string;
  timeoutMs: number;
  intervalMs?: number;
  /**
   * Something answers on the port and no pid of ours: undefined when it is this service (then it is used as it
   * is), else why it is not.
   */
  foreign(): Promise<string | undefined>;
  /** Prepares what the process needs and starts it ({@link startService}). */
  start(): Promise<StartedProcess>;
  /** One readiness probe: true when ready; false or a throw while not yet. */
  ready(): Promise<boolean>;
  /** What `ready` checked, for the progress line (e.g. `produce/consume checked`). */
  readyNote?: string;
}

/**
 * The loud line `services up` prints when it uses a service it did not start: a developer's own Redis or Kafka on the
 * default port is easy to miss, and its data, settings and lifetime are not ours (`services down` leaves it running).
 */
function foreignServiceWarning(spec: Pick<ServiceSpec, 'name' | 'what' | 'port' | 'portVariable'>): string {
  return (
    `WARN ${spec.name}: port ${spec.port} already has a ${spec.what} that is not ours (not started by \`services up\`): ` +
    `using it as it is, with its own data and settings; \`services down\` will not stop it. ` +
    `To run ours instead, stop it or set ${spec.portVariable} to a free port`
  );
}

/**
 * `services up` of one service: ours already running (maybe still starting), a compatible stranger on the port
 * (used as it is: `external`), or a fresh start; then waits until it is ready. A process that dies while
 * starting (ours from now or from an earlier `up`) fails at once, with the last lines of its logs.
 */
export async function bringUp(spec: ServiceSpec, progress: (message: string) => void): Promise<ServiceStatus> {
  const address = `127.0.0.1:${spec.port}`;
  let pid = ownedPid(spec.pidFile, spec.marker);
  let started: StartedProcess | undefined;
  let external = false;
  if (pid === undefined && (await portOpen(spec.port))) {
    const why = await spec.foreign();
    if (why !== undefined) {
      throw new ServiceStartError(
        `${spec.name}: port ${spec.port} is taken by something that is not ${spec.what} (${why}); stop it or set ${spec.portVariable}`,
      );
    }
    progress(foreignServiceWarning(spec));
    external = true;
  } else if (pid === undefined) {
    started = await spec.start();
    pid = started.pid;
  }
  // One an earlier `up` started, still starting: its exit is noticed by its pid, without an exit code.
  const earlier = started === undefined && !external ? pid : undefined;
  const earlierLogs = [spec.out, ...(spec.logs ?? [])].map((file) => ({ file, offset: 0 }));
  await waitFor(
    `${spec.name} on ${address} (see ${spec.out})`,
    async () => {
      if (earlier !== undefined && ownedPid(spec.pidFile, spec.marker) === undefined) {
        throw new ServiceStartError(`${spec.name} (pid ${earlier}) exited during start; ${describeLogs(earlierLogs)}`);
      }
      return (await portOpen(spec.port)) && (await spec.ready());
    },
    spec.timeoutMs,
    spec.intervalMs ?? 500,
    started?.exited,
  );
  started?.ready();
  progress(`${spec.name}: ready on ${address}${spec.readyNote ? ` (${spec.readyNote})` : ''}`);
  return external
    ? { name: spec.name, state: 'external', address }
    : { name: spec.name, state: 'running', pid, address, log: spec.out };
}

/** `services status` of one service: ours running, something else on its port (`external`), or stopped. */
export async function serviceStatus(
  spec: Pick<ServiceSpec, 'name' | 'port' | 'pidFile' | 'marker' | 'out'>,
): Promise<ServiceStatus> {
  const address = `127.0.0.1:${spec.port}`;
  const pid = ownedPid(spec.pidFile, spec.marker);
  if (pid !== undefined) return { name: spec.name, state: 'running', pid, address, log: spec.out };
  return { name: spec.name, state: (await portOpen(spec.port)) ? 'external' : 'stopped', address };
}
