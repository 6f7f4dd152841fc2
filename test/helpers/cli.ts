/**
 * Running the real CLI as a user does, for the e2e tests: `node bin/crawl-cluster.ts ...` in a child process, with
 * the environment that points it at a test cluster; and the cluster crawling the fixture site that `crawl` runs
 * against.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
import type { Variables } from '../../lib/config/index.ts';
import { type FixtureSite, startSite } from '../../localstack/site/site.ts';
import { startE2eCluster, type TestCluster } from './cluster.ts';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

export interface CliRun {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; ms: number }>;
}

/** The environment that points the CLI at a test cluster's topics (and Redis, as a user's shell would). */
export function clusterEnv(vars: Variables): Record<string, string> {
  return {
    KAFKA_BROKERS: vars.KAFKA_BROKERS,
    KAFKA_TOPIC_PREFIX: vars.KAFKA_TOPIC_PREFIX,
    REDIS_HOST: vars.REDIS_HOST,
    REDIS_PORT: String(vars.REDIS_PORT),
    REDIS_CLUSTER: String(vars.REDIS_CLUSTER),
    REDIS_KEY_PREFIX: vars.REDIS_KEY_PREFIX,
  };
}

/** Starts `node bin/crawl-cluster.ts ...args` (stdin a closed pipe); killed after `killAfterMs` so a hang fails the test. */
export function startCli(args: string[], env: Record<string, string>, killAfterMs = 90_000): CliRun {
  const started = Date.now();
  const child = spawn(process.execPath, ['bin/crawl-cluster.ts', ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
  });
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  child.stdin?.end();
  const killer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
  const exited = new Promise<{ code: number | null; ms: number }>((resolve) => {
    child.on('close', (code) => {
      clearTimeout(killer);
      resolve({ code, ms: Date.now() - started });
    });
  });
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

export async function runCli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; ms: number; stdout: string; stderr: string }> {
  const run = startCli(args, env);
  const { code, ms } = await run.exited;
  return { code, ms, stdout: run.stdout(), stderr: run.stderr() };
}

/** What the tests of {@link cliCluster} run the CLI against; set once the `beforeAll` has run. */
export interface CliCluster {
  /** The fixture site: 60 pages of 4 links each. */
  site: FixtureSite;
  /** A cluster with one crawler worker, crawling the site. */
  cluster: TestCluster;
  /** The CLI's environment for the cluster ({@link clusterEnv}). */
  env: Record<string, string>;
  /** A scratch folder for the files the CLI writes. */
  dir: string;
}

/**
 * A {@link CliCluster} for the tests of the calling `describe`, with its hooks registered: started before them, and
 * stopped, with the site closed and the scratch folder (`<dirPrefix>…` in the temp folder) removed, after them.
 */
export function cliCluster(dirPrefix: string): CliCluster {
  const c = {} as CliCluster;
  beforeAll(async () => {
    c.site = await startSite({ pages: 60, links: 4 });
    c.cluster = await startE2eCluster({}, { site: c.site });
    c.env = clusterEnv(c.cluster.vars);
    c.dir = await mkdtemp(join(tmpdir(), dirPrefix));
  });
  afterAll(async () => {
    await c.cluster?.stop();
    await c.site?.close();
    if (c.dir) await rm(c.dir, { recursive: true, force: true });
  });
  return c;
}
