/**
 * One crawler worker process (functions/crawler/main.ts, the Fargate task's entry point) started by a
 * test with configuration of its own, given exactly as the local runtime gives it (localstack/runtime/crawler-workers.ts
 * `envOf`). Unlike the runtime's workers, it is not restarted when it exits: the test decides.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { CRAWLER_NODE_FLAGS } from '../../functions/crawler/node-flags.ts';
import type { Variables } from '../../lib/config/index.ts';
import { REPO_ROOT } from '../../localstack/repo-root.ts';
import { crawlerNode } from '../../localstack/runtime/crawler-node.ts';
import { envOf } from '../../localstack/runtime/crawler-workers.ts';

export interface CrawlerProcess {
  pid: number;
  child: ChildProcess;
  /** Resolves when the process has exited, with when (epoch ms). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; atMs: number }>;
  /** What it printed so far (stdout and stderr), for failure messages. */
  output(): string;
  /** Sends `signal` (default SIGTERM) unless it already exited, and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null; atMs: number }>;
}

/**
 * Starts a crawler worker with the cluster's `vars` changed by `overrides`. `wrap` turns its command line into the
 * one to run (a memory cgroup's, test/helpers/memory-cgroup.ts), which must end by executing it in the same process.
 */
export function startCrawlerProcess(
  vars: Variables,
  overrides: Partial<Variables> = {},
  wrap: (argv: string[]) => string[] = (argv) => argv,
): CrawlerProcess {
  const env = envOf({ ...vars, ...overrides }, process.env);
  const [command, ...args] = wrap([
    crawlerNode(vars.CRAWLER_NODE),
    ...CRAWLER_NODE_FLAGS,
    join(REPO_ROOT, 'functions', 'crawler', 'main.ts'),
  ]);
  const child = spawn(command as string, args, {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (chunk: Buffer) => {
    out = (out + chunk.toString('utf8')).slice(-64 * 1024);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; atMs: number }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, atMs: Date.now() })),
  );
  return {
    pid: child.pid as number,
    child,
    exited,
    output: () => out,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
