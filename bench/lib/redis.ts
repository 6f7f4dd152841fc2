/**
 * The Redis a benchmark runs against.
 *
 * - `private` (default, `BENCH_REDIS=private`): a throwaway `redis-server` started here on a free loopback
 *   port (or `BENCH_REDIS_PORT`), no persistence (no AOF, no RDB, like a default ElastiCache node), data dir
 *   in the OS temp dir, stopped by its pid when the run ends. Nothing else uses it, so `INFO memory` deltas
 *   and `INFO commandstats` (server-side time per script call) are exact, and no test data is near it.
 * - `shared` (`BENCH_REDIS=shared`): the standalone local Redis of the configuration (`CRAWL_REDIS_PORT`,
 *   started like `services up` does when it is not running). Scenarios then must use a unique key prefix,
 *   clean up their own keys (never FLUSHDB, KEYS or SCAN), and read memory and commandstats deltas as
 *   approximate: other clients (tests) may be writing at the same time, and that server runs with AOF on.
 *
 * Both are standalone servers reached through `createRedis` without cluster mode.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { config } from '../../lib/config/index.ts';
import { createRedis, type RedisClient } from '../../lib/redis/client.ts';
import { settlesWithin } from '../../lib/timeout.ts';
import { layoutFrom } from '../../localstack/services/index.ts';
import { freePort } from '../../localstack/services/processes.ts';
import { ensureRedisBinary, redisUp } from '../../localstack/services/redis-service.ts';

type BenchRedisMode = 'private' | 'shared';

export interface BenchRedis {
  client: RedisClient;
  mode: BenchRedisMode;
  address: string;
  version: string;
  /** Pid of the server when known (CPU accounting). */
  pid?: number;
  /** Closes the client and, in private mode, stops the server we started. */
  close(): Promise<void>;
}

/** Resolves once something accepts TCP connections on the loopback port (before a client is created). */
export async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`redis-server did not listen on port ${port} within ${timeoutMs} ms`);
    await sleep(50);
  }
}

async function waitForPing(client: RedisClient, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if ((await client.ping()) === 'PONG') return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    await sleep(100);
  }
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  if (!(await settlesWithin(exited, 10_000))) {
    child.kill('SIGKILL');
    await exited;
  }
}

/** Opens the benchmark Redis chosen by `BENCH_REDIS` (see the module doc). */
export async function openBenchRedis(progress: (message: string) => void): Promise<BenchRedis> {
  const mode = (process.env.BENCH_REDIS ?? 'private') as BenchRedisMode;
  if (mode !== 'private' && mode !== 'shared') throw new Error(`BENCH_REDIS must be private or shared (got ${mode})`);
  const vars = config();
  if (mode === 'shared') {
    const status = await redisUp(layoutFrom(vars), 'redis', progress);
    const client = createRedis({ host: '127.0.0.1', port: vars.CRAWL_REDIS_PORT, connectionName: 'bench' });
    await waitForPing(client, 10_000);
    return {
      client,
      mode,
      address: `127.0.0.1:${vars.CRAWL_REDIS_PORT}`,
      version: await redisVersion(client),
      pid: status.pid,
      close: async () => {
        client.disconnect();
      },
    };
  }
  const bin = ensureRedisBinary(progress);
  const port = Number(process.env.BENCH_REDIS_PORT ?? 0) || (await freePort());
  const dir = mkdtempSync(join(tmpdir(), 'crawl-bench-redis-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
  args.push('--daemonize', 'no', '--maxmemory-policy', 'noeviction', '--logfile', join(dir, 'redis.log'));
  progress(`starting a private redis-server on 127.0.0.1:${port} (no persistence, data dir ${dir})`);
  const child = spawn(bin, args, { stdio: 'ignore' });
  const spawned = new Promise<void>((resolve, reject) => {
    child.once('spawn', () => resolve());
    child.once('error', reject);
  });
  await spawned;
  const stopServer = async () => {
    await stopChild(child);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForPort(port, 10_000);
  } catch (error) {
    await stopServer();
    throw error;
  }
  const client = createRedis({ host: '127.0.0.1', port, connectionName: 'bench' });
  const close = async () => {
    client.disconnect();
    await stopServer();
  };
  try {
    await waitForPing(client, 10_000);
    const version = await redisVersion(client);
    return { client, mode, address: `127.0.0.1:${port}`, version, pid: child.pid, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** One section of INFO as a map. */
export async function serverInfo(client: RedisClient, section: string): Promise<Record<string, string>> {
  const text = String(await client.info(section));
  const out: Record<string, string> = {};
  for (const line of text.split('\r\n')) {
    const i = line.indexOf(':');
    if (i > 0 && !line.startsWith('#')) out[line.slice(0, i)] = line.slice(i + 1);
  }
  return out;
}

async function redisVersion(client: RedisClient): Promise<string> {
  const info = await serverInfo(client, 'server');
  return info.valkey_version ? `valkey ${info.valkey_version}` : `redis ${info.redis_version ?? 'unknown'}`;
}

/** `used_memory` in bytes. */
export async function usedMemory(client: RedisClient): Promise<number> {
  return Number((await serverInfo(client, 'memory')).used_memory);
}

export interface ScriptStats {
  calls: number;
  usec: number;
}

/** Server-side calls and microseconds of EVAL + EVALSHA so far (INFO commandstats). */
export async function scriptStats(client: RedisClient): Promise<ScriptStats> {
  const info = await serverInfo(client, 'commandstats');
  let calls = 0;
  let usec = 0;
  for (const name of ['cmdstat_evalsha', 'cmdstat_eval']) {
    const m = /calls=(\d+),usec=(\d+)/.exec(info[name] ?? '');
    if (m) {
      calls += Number(m[1]);
      usec += Number(m[2]);
    }
  }
  return { calls, usec };
}

/** Every command's `[calls, usec]` so far (INFO commandstats; commands run inside scripts count too). */
export async function commandStats(client: RedisClient): Promise<Map<string, [number, number]>> {
  const out = new Map<string, [number, number]>();
  for (const [name, value] of Object.entries(await serverInfo(client, 'commandstats'))) {
    const m = /calls=(\d+),usec=(\d+)/.exec(value);
    if (m) out.set(name.replace(/^cmdstat_/, ''), [Number(m[1]), Number(m[2])]);
  }
  return out;
}

/**
 * Where server time went between two {@link commandStats} readings, biggest first, e.g.
 * `evalsha 1×84.6ms; hget 36759×24.4ms; zrangebylex 1×14.2ms` (script time includes its commands).
 */
export function commandBreakdown(
  before: Map<string, [number, number]>,
  after: Map<string, [number, number]>,
  top = 8,
): string {
  const rows: [string, number, number][] = [];
  for (const [name, [calls, usec]] of after) {
    if (name === 'info') continue;
    const [c0, u0] = before.get(name) ?? [0, 0];
    if (calls > c0) rows.push([name, calls - c0, usec - u0]);
  }
  return rows
    .sort((a, b) => b[2] - a[2])
    .slice(0, top)
    .map(([name, calls, usec]) => `${name} ${calls}×${(usec / 1000).toFixed(1)}ms`)
    .join('; ');
}

/** Server-side microseconds per script call between two {@link scriptStats} readings. */
export function usecPerCall(before: ScriptStats, after: ScriptStats): number {
  const calls = after.calls - before.calls;
  return calls > 0 ? (after.usec - before.usec) / calls : Number.NaN;
}

/** `MEMORY USAGE key SAMPLES 0` (every nested value counted; O(n) in the key's size, bench use only). */
export async function memoryUsage(client: RedisClient, key: string): Promise<number> {
  const n = await client.call('MEMORY', 'USAGE', key, 'SAMPLES', '0');
  return Number(n ?? 0);
}
