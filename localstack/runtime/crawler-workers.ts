/**
 * The crawler fleet on one machine: CRAWLER_WORKERS child processes running functions/crawler/main.ts,
 * the same entry point as the Fargate task. A worker that dies is started again (as ECS would, after a backoff that
 * grows while it keeps dying at once), unless it exited
 * because its configuration is invalid (exit code 2: a broken spider plugin); stop sends
 * SIGTERM and waits for the graceful drain (SIGKILL if it has not ended well past SHUTDOWN_DEADLINE_MS). A worker
 * whose parent dies without stopping it (SIGKILL) drains and exits on its own: its IPC channel to the parent closes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { CRAWLER_NODE_FLAGS } from '../../functions/crawler/node-flags.ts';
import { VARIABLES, type Variables } from '../../lib/config/index.ts';
import { REPO_ROOT } from '../repo-root.ts';
import { restartBackoffMs } from './consumer-supervisor.ts';
import { crawlerNode } from './crawler-node.ts';
import { bodyStoreEnv } from './local-aws.ts';
import type { RuntimeLog } from './log.ts';
import { logWorkerOutput, type WorkerOutput } from './worker-log.ts';

/** The exit code of a worker whose configuration is invalid (functions/crawler/main.ts): it is not restarted. */
const CONFIG_EXIT_CODE = 2;

/** A worker that ran this long before it exited is restarted after the first backoff again, not a longer one. */
const HEALTHY_RUN_MS = 60_000;

/** How long past SHUTDOWN_DEADLINE_MS a worker may take to flush and exit before {@link CrawlerWorkers.stop} kills it. */
const KILL_GRACE_MS = 15_000;

export interface CrawlerWorkers {
  /** Live worker pids. */
  pids(): number[];
  stop(): Promise<void>;
}

/**
 * The environment that gives a child process exactly these configuration values. Locally, bodies over the
 * message limit go to a bucket in LocalStack, or with LOCAL_BODY_STORE=dir (or without LocalStack) to
 * BODY_STORE_DIR or `<services dir>/bodies` (local-aws.ts `bodyStoreEnv`).
 */
export function envOf(vars: Variables, base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  for (const name of Object.keys(VARIABLES) as (keyof Variables)[]) env[name] = String(vars[name]);
  return { ...env, ...bodyStoreEnv(vars) };
}

export function startCrawlerWorkers(
  vars: Variables,
  count: number,
  log: RuntimeLog,
  baseEnv: NodeJS.ProcessEnv,
  /** How the log names a worker. @default 'crawler worker' */
  what = 'crawler worker',
  /** Where the workers' own log lines go: `local`'s stdout and stderr as they are, or through `log`. @default 'inherit' */
  output: WorkerOutput = 'inherit',
): CrawlerWorkers {
  const children = new Map<number, ChildProcess>();
  /** Workers whose process has exited and whose output has all been read. */
  const closed = new WeakSet<ChildProcess>();
  let stopping = false;
  const entry = join(REPO_ROOT, 'functions', 'crawler', 'main.ts');
  const env = envOf(vars, baseEnv);
  const node = crawlerNode(vars.CRAWLER_NODE);

  // Per slot: quick exits in a row. A worker that cannot start (Kafka away: it exits 1 at once) is restarted after
  // 1 s, then 2, 4, 8, 10 s (consumer-supervisor.ts restartBackoffMs), not every second for as long as it lasts.
  const quickExits = new Map<number, number>();
  const startOne = (slot: number) => {
    const startedAt = Date.now();
    // The IPC channel is how a worker learns that this process died, even by SIGKILL (functions/crawler/main.ts):
    // it closes, and the worker drains and exits instead of living on as an orphan. Nothing is sent on it.
    const child = spawn(node, [...CRAWLER_NODE_FLAGS, entry], {
      env,
      stdio: ['ignore', output === 'log' ? 'pipe' : 'inherit', output === 'log' ? 'pipe' : 'inherit', 'ipc'],
    });
    children.set(slot, child);
    log('info', `${what} ${slot} started`, { pid: child.pid });
    if (output === 'log') void logWorkerOutput(`${what} ${slot}`, child, log);
    // 'close', not 'exit': by then the worker's last lines (the error it exited on) are logged, before these.
    child.once('close', (code, signal) => {
      closed.add(child);
      if (stopping) return;
      if (code === CONFIG_EXIT_CODE) {
        // Misconfigured (a broken plugin, an unknown CRAWLER_SPIDERS type): starting it again would fail again.
        log('error', `${what} ${slot} exited: its configuration is invalid (see its error above); not restarted`, {
          code,
        });
        children.delete(slot);
        return;
      }
      const streak = Date.now() - startedAt >= HEALTHY_RUN_MS ? 0 : (quickExits.get(slot) ?? 0);
      quickExits.set(slot, streak + 1);
      const inMs = restartBackoffMs(streak);
      log('warn', `${what} ${slot} exited; starting it again`, { code, signal, inMs });
      setTimeout(() => {
        if (!stopping) startOne(slot);
      }, inMs).unref();
    });
  };
  for (let i = 0; i < count; i++) startOne(i);

  return {
    pids: () => [...children.values()].map((c) => c.pid).filter((p): p is number => p !== undefined),
    async stop() {
      stopping = true;
      await Promise.all(
        [...children.values()].map(
          (c) =>
            new Promise<void>((resolve) => {
              if (closed.has(c)) return resolve();
              // As ECS does after the stop timeout: a worker that has not drained well past its deadline is killed
              // (its leases are reclaimed), so stop always ends.
              const kill = setTimeout(() => c.kill('SIGKILL'), vars.SHUTDOWN_DEADLINE_MS + KILL_GRACE_MS);
              c.once('close', () => {
                clearTimeout(kill);
                resolve();
              });
              c.kill('SIGTERM');
            }),
        ),
      );
    },
  };
}
