/**
 * Local Redis servers from Debian's `redis-server`: a standalone one (append-only file on) and a cluster-mode one of
 * {@link CLUSTER_MASTERS} masters on consecutive ports (`cluster-enabled yes`, the slots split evenly), so that a
 * script touching keys of two slots, and a pipeline whose keys live on two shards, fail the integration and e2e tiers
 * exactly as they would on a multi-shard ElastiCache cluster (docs/design.md §3). One node owning every slot hid the
 * second kind of mistake. With CRAWL_REDIS_CLUSTER_REPLICAS, each master has that many replicas on the ports after
 * the masters', so a master killed fails over to its replica as on a Multi-AZ ElastiCache shard.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { ServiceStartError } from '../../lib/errors.ts';
import type { Progress, ServiceStatus, ServicesLayout } from './layout.ts';
import { bringUp, ownedPid, type ServiceSpec, serviceStatus, startService, stopProcess, waitFor } from './processes.ts';

export type RedisKind = 'redis' | 'redis-cluster';

/** Masters of the local cluster-mode Redis, on `CRAWL_REDIS_CLUSTER_PORT` and the ports after it. */
const CLUSTER_MASTERS = 3;

/** Most replicas per master (CRAWL_REDIS_CLUSTER_REPLICAS's maximum): `down` looks for that many. */
const MAX_REPLICAS = 2;

/**
 * The nodes of a kind: one for the standalone Redis; for the cluster {@link CLUSTER_MASTERS} masters (nodes 0 to 2),
 * then their replicas (node n replicates master n mod {@link CLUSTER_MASTERS}).
 */
function nodesOf(layout: ServicesLayout, kind: RedisKind, replicas = layout.redisClusterReplicas): number[] {
  return kind === 'redis' ? [0] : Array.from({ length: CLUSTER_MASTERS * (1 + replicas) }, (_, i) => i);
}

/** Node 0 of the cluster keeps the directory of the one-node cluster it replaces (`redis-cluster`). */
function paths(layout: ServicesLayout, kind: RedisKind, node = 0) {
  const dir = join(layout.dir, node === 0 ? kind : `${kind}-${node + 1}`);
  return {
    dir,
    conf: join(dir, 'redis.conf'),
    pid: join(dir, 'redis.pid'),
    log: join(dir, 'redis.log'),
    port: (kind === 'redis' ? layout.redisPort : layout.redisClusterPort) + node,
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

/** What bringUp / serviceStatus need of one Redis (processes.ts). */
function spec(layout: ServicesLayout, kind: RedisKind, progress: Progress, node = 0): ServiceSpec {
  const p = paths(layout, kind, node);
  const name = node === 0 ? kind : `${kind}-${node + 1}`;
  return {
    name,
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
          `cluster-node-timeout ${layout.redisClusterNodeTimeoutMs}`,
        );
        // A master otherwise waits 5 s for more replicas before it sends the first one its data.
        if (layout.redisClusterReplicas > 0) lines.push('repl-diskless-sync-delay 0');
      }
      writeFileSync(p.conf, `${lines.join('\n')}\n`);
      progress(`${name}: starting on 127.0.0.1:${p.port} (log ${p.log})`);
      // Errors before the log file is open (a bad config line) go to stderr, so stderr goes to the log too.
      return startService(name, bin, [p.conf], { out: p.log, pidFile: p.pid });
    },
    // A cluster node answers before the cluster is formed; redisUp forms it once every node answers.
    ready: async () => (await ping(p.port)) === 'PONG',
  };
}

/**
 * Starts one Redis, or every node of the cluster (idempotent), and waits for PING; in cluster mode it then forms the
 * cluster (clusterForm) and waits for `cluster_state:ok` on every node. The cluster's status is its first node's,
 * with the address range of all of them.
 */
export async function redisUp(layout: ServicesLayout, kind: RedisKind, progress: Progress): Promise<ServiceStatus> {
  const statuses: ServiceStatus[] = [];
  for (const node of nodesOf(layout, kind)) statuses.push(await bringUp(spec(layout, kind, progress, node), progress));
  const first = statuses[0] as ServiceStatus;
  if (kind === 'redis') return first;
  const ports = nodesOf(layout, kind).map((node) => paths(layout, kind, node).port);
  // Forming would make a stranger's Redis meet ours (and take slots or a master): a cluster is all ours or all theirs.
  const external = statuses.filter((s) => s.state === 'external');
  if (external.length > 0 && external.length < statuses.length) {
    throw new ServiceStartError(
      `redis-cluster: ${external.map((s) => s.address).join(', ')} ${external.length === 1 ? 'is' : 'are'} not ours ` +
        `but the other nodes on ${clusterAddress(ports)} are; set CRAWL_REDIS_CLUSTER_PORT to free ports`,
    );
  }
  await clusterForm(ports, layout.timeoutSec * 1000, progress);
  return { ...first, address: clusterAddress(ports) };
}

/**
 * Stops the Redis (every node of the cluster) we started, if any: in the cluster as many replicas as there may be,
 * so that nodes of a run with more replicas than CRAWL_REDIS_CLUSTER_REPLICAS says now are stopped too.
 */
export async function redisDown(layout: ServicesLayout, kind: RedisKind, progress: Progress): Promise<void> {
  for (const node of nodesOf(layout, kind, MAX_REPLICAS).reverse()) {
    const p = paths(layout, kind, node);
    const pid = ownedPid(p.pid, p.conf);
    if (pid === undefined) continue;
    progress(`${spec(layout, kind, progress, node).name}: stopping pid ${pid}`);
    await stopProcess(pid, p.pid);
  }
}

/** `running` only when every node is ours and running; otherwise the first node's state that is not. */
export async function redisStatus(layout: ServicesLayout, kind: RedisKind): Promise<ServiceStatus> {
  const statuses: ServiceStatus[] = [];
  for (const node of nodesOf(layout, kind)) statuses.push(await serviceStatus(spec(layout, kind, () => {}, node)));
  const first = statuses[0] as ServiceStatus;
  if (kind === 'redis') return first;
  const ports = nodesOf(layout, kind).map((node) => paths(layout, kind, node).port);
  const off = statuses.find((s) => s.state !== 'running');
  return off === undefined
    ? { ...first, address: clusterAddress(ports) }
    : { name: kind, state: off.state, address: clusterAddress(ports) };
}

function clusterAddress(ports: number[]): string {
  return `127.0.0.1:${ports[0]}-${ports[ports.length - 1]}`;
}

/** Lines `field:value` as fields (`CLUSTER INFO`, `INFO replication`). */
function fields(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .split(/\r?\n/)
      .filter((line) => line.includes(':'))
      .map((line) => line.split(':', 2) as [string, string]),
  );
}

/** `CLUSTER INFO` of a node as fields. */
async function clusterInfo(port: number): Promise<Record<string, string>> {
  return fields(await probe(port, (client) => client.cluster('INFO') as Promise<string>));
}

/** `INFO replication` of a node as fields (`role`, and on a replica `master_port`, `master_link_status`). */
async function replication(port: number): Promise<Record<string, string>> {
  return fields(await probe(port, (client) => client.info('replication')));
}

/** The `myself` line of the node on `port` in its CLUSTER NODES, split into its fields. */
async function myself(port: number): Promise<string[]> {
  const text = await probe(port, (client) => client.cluster('NODES') as Promise<string>);
  return (
    text
      .split('\n')
      .find((line) => line.split(' ')[2]?.includes('myself'))
      ?.split(' ') ?? []
  );
}

/** Whether the node on `port` itself owns a slot (CLUSTER NODES, its `myself` line; others' slots gossip in). */
async function ownsSlots(port: number): Promise<boolean> {
  return (await myself(port)).length > 8;
}

/** The slot range of master `i` of `n`: 16384 slots split as redis-cli --cluster create splits them. */
function slotRange(i: number, n: number): [number, number] {
  const per = 16384 / n;
  return [Math.round(i * per), Math.round((i + 1) * per) - 1];
}

/**
 * Forms the cluster of the nodes on `ports` (idempotent): the first {@link CLUSTER_MASTERS} are masters, the rest
 * their replicas (port i + k x {@link CLUSTER_MASTERS} replicates master i). Node 0 meets the others, each master that
 * owns no slot takes its share, each replica that follows no master follows its own, and the call returns once every
 * node says `cluster_state:ok` and knows all of them, and every replica's link to its master is up. A node 0 left from
 * the one-node layout (it alone owns every slot) holds only test data: it is emptied and reset first.
 */
async function clusterForm(ports: number[], timeoutMs: number, progress: Progress): Promise<void> {
  const masters = ports.slice(0, CLUSTER_MASTERS);
  const replicas = ports.slice(CLUSTER_MASTERS);
  const formed = async () => {
    for (const port of ports) {
      const info = await clusterInfo(port);
      if (info.cluster_state !== 'ok' || Number(info.cluster_known_nodes) !== ports.length) return false;
    }
    for (const port of replicas) {
      const role = await replication(port);
      if (role.role !== 'slave' || role.master_link_status !== 'up') return false;
    }
    return true;
  };
  if (await formed()) return;
  const [first, ...others] = ports as [number, ...number[]];
  const info = await clusterInfo(first);
  if (Number(info.cluster_known_nodes) === 1 && Number(info.cluster_slots_assigned) === 16384) {
    progress(`redis-cluster: resetting the one-node cluster on ${first} (test data) to form ${masters.length} masters`);
    await probe(first, async (client) => {
      await client.flushall();
      await client.cluster('RESET', 'HARD');
    });
  }
  if (Number(info.cluster_known_nodes) > ports.length) {
    throw new ServiceStartError(
      `redis-cluster on ${clusterAddress(ports)} has ${info.cluster_known_nodes} nodes, more than the ${ports.length} ` +
        'CRAWL_REDIS_CLUSTER_REPLICAS asks for: run `services down`, then `services up`',
    );
  }
  progress(
    replicas.length === 0
      ? `redis-cluster: forming a cluster of ${ports.length} masters on ${clusterAddress(ports)}`
      : `redis-cluster: forming a cluster of ${masters.length} masters and ${replicas.length} replicas on ${clusterAddress(ports)}`,
  );
  for (const port of others) await probe(first, (client) => client.cluster('MEET', '127.0.0.1', port));
  for (const [i, port] of masters.entries()) {
    const [from, to] = slotRange(i, masters.length);
    if (!(await ownsSlots(port)))
      await probe(port, (client) => client.call('CLUSTER', 'ADDSLOTSRANGE', String(from), String(to)));
  }
  for (const [i, port] of replicas.entries()) {
    if ((await replication(port)).role === 'slave') continue;
    const master = masters[i % masters.length] as number;
    const id = (await myself(master))[0] as string;
    // CLUSTER REPLICATE needs the master known to the replica, which the gossip after MEET brings.
    await waitFor(
      `redis-cluster node ${port} to learn of master ${master}`,
      async () => (await probe(port, (client) => client.cluster('NODES') as Promise<string>)).includes(id),
      timeoutMs,
      100,
    );
    await probe(port, (client) => client.cluster('REPLICATE', id));
  }
  // A replica's new role reaches the other nodes by gossip: wait until every node sees every replica as one, so a
  // client (or a test) reading the topology from any node right after `up` sees the cluster as formed.
  if (replicas.length > 0)
    await waitFor(
      `redis-cluster on ${clusterAddress(ports)} (every node seeing ${replicas.length} replicas)`,
      async () => {
        for (const port of ports) {
          const nodes = await probe(port, (client) => client.cluster('NODES') as Promise<string>);
          const seen = nodes.split('\n').filter((line) => (line.split(' ')[2] ?? '').split(',').includes('slave'));
          if (seen.length < replicas.length) return false;
        }
        return true;
      },
      timeoutMs,
      100,
    );
  await waitFor(`redis-cluster on ${clusterAddress(ports)} (cluster_state:ok on every node)`, formed, timeoutMs, 250);
}
