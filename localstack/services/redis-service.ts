/**
 * Two local Redis servers from Debian's `redis-server`: a standalone one (append-only file on) and a
 * cluster-mode one (`cluster-enabled yes`, one node owning all 16384 slots) so that a script touching
 * keys of two slots fails the integration tier exactly as it would on ElastiCache (docs/design.md §3).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { ServiceStartError } from '../../lib/errors.ts';
import type { Progress, ServiceStatus, ServicesLayout } from './layout.ts';
import { bringUp, ownedPid, type ServiceSpec, serviceStatus, startService, stopProcess } from './processes.ts';

export type RedisKind = 'redis' | 'redis-cluster';

function paths(layout: ServicesLayout, kind: RedisKind) {
  const dir = join(layout.dir, kind);
  return {
    dir,
    conf: join(dir, 'redis.conf'),
    pid: join(dir, 'redis.pid'),
    log: join(dir, 'redis.log'),
    port: kind === 'redis' ? layout.redisPort : layout.redisClusterPort,
  };
}

/** Finds `redis-server`, installing Debian's package when it is missing and we are root. */
export function ensureRedisBinary(progress: Progress): string {
  const found = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).stdout.trim();
  if (found) return found;
  if (process.getuid?.() !== 0) {
    throw new ServiceStartError('redis-server is not installed: run `sudo apt-get install -y redis-server`');
  }
  progress('redis-server missing: installing Debian package redis-server (apt-get)');
  execFileSync(
    'sh',
    ['-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server'],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  return 'redis-server';
}

/** Runs `ask` on a one-shot client of the Redis on `port` that fails at once instead of retrying. */
async function probe<T>(port: number, ask: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  // Failures surface through connect() and the command; without a listener ioredis prints each one.
  client.on('error', () => {});
  try {
    await client.connect();
    return await ask(client);
  } finally {
    client.disconnect();
  }
}

function ping(port: number): Promise<string> {
  return probe(port, (client) => client.ping());
}

function clusterReady(port: number): Promise<boolean> {
  return probe(port, async (client) => {
    const info = (await client.cluster('INFO')) as string;
    if (info.includes('cluster_state:ok')) return true;
    if (info.includes('cluster_slots_assigned:0')) await client.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
    return false;
  });
}

/** What bringUp / serviceStatus need of one Redis (processes.ts). */
function spec(layout: ServicesLayout, kind: RedisKind, progress: Progress): ServiceSpec {
  const p = paths(layout, kind);
  return {
    name: kind,
    what: 'Redis',
    port: p.port,
    pidFile: p.pid,
    marker: p.conf,
    out: p.log,
    portVariable: kind === 'redis' ? 'CRAWL_REDIS_PORT' : 'CRAWL_REDIS_CLUSTER_PORT',
    timeoutMs: layout.timeoutSec * 1000,
    intervalMs: 250,
    foreign: async () => {
      const answer = await ping(p.port).catch((e: Error) => e.message);
      return answer === 'PONG' ? undefined : answer;
    },
    start: async () => {
      const bin = ensureRedisBinary(progress);
      mkdirSync(p.dir, { recursive: true });
      const lines = [
        `port ${p.port}`,
        'bind 127.0.0.1',
        'protected-mode yes',
        // Not daemonized: the process we start is the server, so a server that dies at start is noticed at
        // once, with its exit code. It still runs in a session of its own and outlives this command.
        'daemonize no',
        `pidfile ${p.pid}`,
        `logfile ${p.log}`,
        `dir ${p.dir}`,
        'appendonly yes',
        'appendfsync everysec',
        // The frontier must never be evicted silently (docs/design.md §3, as on ElastiCache).
        'maxmemory-policy noeviction',
        'save ""',
        // Keeps the config path in the process title, so `down` can tell our process from a stranger's.
        'proc-title-template "{title} {listen-addr} {server-mode} {config-file}"',
      ];
      if (kind === 'redis-cluster') {
        lines.push(
          'cluster-enabled yes',
          // A lone node does not know its own address and would announce "" in CLUSTER SLOTS.
          'cluster-announce-ip 127.0.0.1',
          `cluster-config-file ${join(p.dir, 'nodes.conf')}`,
          'cluster-node-timeout 5000',
        );
      }
      writeFileSync(p.conf, `${lines.join('\n')}\n`);
      progress(`${kind}: starting on 127.0.0.1:${p.port} (log ${p.log})`);
      // Errors before the log file is open (a bad config line) go to stderr, so stderr goes to the log too.
      return startService(kind, bin, [p.conf], { out: p.log, pidFile: p.pid });
    },
    // A cluster node is ready once it owns every slot.
    ready: async () => (await ping(p.port)) === 'PONG' && (kind !== 'redis-cluster' || (await clusterReady(p.port))),
  };
}

/** Starts one Redis (idempotent) and waits for PING (and, in cluster mode, `cluster_state:ok`). */
export function redisUp(layout: ServicesLayout, kind: RedisKind, progress: Progress): Promise<ServiceStatus> {
  return bringUp(spec(layout, kind, progress), progress);
}

/** Stops the Redis we started (if any). */
export async function redisDown(layout: ServicesLayout, kind: RedisKind, progress: Progress): Promise<void> {
  const p = paths(layout, kind);
  const pid = ownedPid(p.pid, p.conf);
  if (pid === undefined) return;
  progress(`${kind}: stopping pid ${pid}`);
  await stopProcess(pid, p.pid);
}

export function redisStatus(layout: ServicesLayout, kind: RedisKind): Promise<ServiceStatus> {
  return serviceStatus(spec(layout, kind, () => {}));
}
