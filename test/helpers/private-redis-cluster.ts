/**
 * A Redis Cluster of a test's own, for tests that kill a node: the shared cluster-mode Redis on
 * CRAWL_REDIS_CLUSTER_PORT serves every other test at the same time and must never lose a master. It is the cluster
 * `services up` runs (localstack/services/redis-service.ts) in a directory and on ports of its own, with replicas when
 * asked for; {@link PrivateRedisCluster.stop} stops it and deletes its directory.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { config } from '../../lib/config/index.ts';
import { type ServicesLayout, servicesLayout } from '../../localstack/services/layout.ts';
import { isAlive } from '../../localstack/services/processes.ts';
import { redisDown, redisStatus, redisUp } from '../../localstack/services/redis-service.ts';

/** Masters of the cluster-mode Redis (redis-service.ts), on its port and the ports after it; replicas follow them. */
const CLUSTER_MASTERS = 3;

/** Listens on 127.0.0.1:`port` (0: any free port); resolves with the server and its port, or undefined when taken. */
export function listen(port: number): Promise<{ server: Server; port: number } | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      resolve({ server, port: typeof address === 'object' && address !== null ? address.port : port });
    });
  });
}

export function close(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** The lowest first port {@link freeClusterPort} picks: its bus port (+ 10000) is past the usual services' ports. */
const LOWEST_PORT = 11_000;

/**
 * A first port for a cluster of `nodes` nodes on consecutive ports, whose ports and their cluster bus ports (each
 * port + 10000) are all free right now. Below Linux's ephemeral range (32768 up), so a connection elsewhere on the
 * machine cannot take a bus port between this check and the start; a random start in the whole range keeps parallel
 * runs apart.
 */
export async function freeClusterPort(nodes = CLUSTER_MASTERS): Promise<number> {
  const highest = 32_768 - 10_000 - nodes;
  const first = LOWEST_PORT + Math.floor(Math.random() * (highest - LOWEST_PORT));
  for (let tries = 0, port = first; tries < 1000; tries++, port += nodes) {
    if (port > highest) port = LOWEST_PORT;
    const wanted = Array.from({ length: nodes }, (_, i) => [port + i, port + i + 10_000]).flat();
    const held: Server[] = [];
    for (const p of wanted) {
      const h = await listen(p);
      if (h === undefined) break;
      held.push(h.server);
    }
    await Promise.all(held.map(close));
    if (held.length === wanted.length) return port;
  }
  throw new Error('no free cluster port range below 32768');
}

/** Runs `ask` on a one-shot connection to the node on `port`, failing at once when it does not answer. */
export async function onNode<T>(port: number, ask: (node: Redis) => Promise<T>): Promise<T> {
  const node = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  node.on('error', () => {});
  try {
    await node.connect();
    return await ask(node);
  } finally {
    node.disconnect();
  }
}

/** One line of CLUSTER NODES. */
export interface ClusterNode {
  id: string;
  port: number;
  /** `master` or `slave` (`fail` and `myself` dropped). */
  role: 'master' | 'slave';
  /** Whether the cluster holds it failed. */
  failed: boolean;
  /** The id of its master, for a replica. */
  masterId?: string;
  /** How many slots it serves. */
  slots: number;
}

/** CLUSTER NODES as the node on `port` sees the cluster. */
export async function clusterNodes(port: number): Promise<ClusterNode[]> {
  const text = await onNode(port, (node) => node.cluster('NODES') as Promise<string>);
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [id, address, flags, master, , , , , ...ranges] = line.split(' ');
      const slots = ranges
        .filter((r) => !r.startsWith('['))
        .reduce((sum, r) => {
          const [from, to = from] = r.split('-').map(Number) as [number, number?];
          return sum + (to as number) - from + 1;
        }, 0);
      return {
        id: id as string,
        port: Number((address as string).split('@')[0]?.split(':')[1]),
        role: (flags as string).includes('master') ? 'master' : 'slave',
        failed: /\bfail\b/.test(flags as string),
        masterId: master === '-' ? undefined : master,
        slots,
      };
    });
}

export interface PrivateRedisCluster {
  /** The first master's port (REDIS_PORT of the cluster's clients). */
  port: number;
  /** Every node's port: the masters, then their replicas (port i + k x 3 replicates master i). */
  ports: number[];
  layout: ServicesLayout;
  /** Kills the node on `port` with SIGKILL (no shutdown, no final write) and waits until it is gone. */
  kill(port: number): Promise<void>;
  /** Stops every node still running and deletes the directory. */
  stop(): Promise<void>;
}

/**
 * Starts a cluster of {@link CLUSTER_MASTERS} masters with `replicas` replicas each on free ports, formed and with
 * every replica's link up. `nodeTimeoutMs` is its `cluster-node-timeout`: how long a master may be silent before its
 * replica takes over.
 */
export async function startPrivateRedisCluster(
  options: { replicas?: number; nodeTimeoutMs?: number } = {},
): Promise<PrivateRedisCluster> {
  const replicas = options.replicas ?? 0;
  const nodes = CLUSTER_MASTERS * (1 + replicas);
  const progress = (m: string) => process.stderr.write(`[private redis cluster] ${m}\n`);
  // Another test may start a node on one of the ports between the check and the start; `up` would take it as
  // an external Redis. Then this cluster is stopped and started again on other ports.
  for (let attempt = 1; ; attempt++) {
    const dir = mkdtempSync(join(tmpdir(), 'cc-private-redis-cluster-'));
    const port = await freeClusterPort(nodes);
    const layout: ServicesLayout = {
      ...servicesLayout({
        ...config(),
        CRAWL_SERVICES_DIR: dir,
        CRAWL_REDIS_CLUSTER_PORT: port,
        CRAWL_REDIS_CLUSTER_REPLICAS: replicas,
        CRAWL_SERVICES_TIMEOUT: 60,
      }),
      redisClusterNodeTimeoutMs: options.nodeTimeoutMs ?? 5000,
    };
    const stop = async () => {
      await redisDown(layout, 'redis-cluster', progress);
      rmSync(dir, { recursive: true, force: true });
    };
    const started = await redisUp(layout, 'redis-cluster', progress).then(
      async () => (await redisStatus(layout, 'redis-cluster')).state === 'running',
      (error: unknown) => error,
    );
    if (started === true) return privateCluster(port, nodes, layout, stop);
    await stop();
    if (attempt === 3) throw started instanceof Error ? started : new Error('a port of the cluster was taken');
  }
}

function privateCluster(
  port: number,
  nodes: number,
  layout: ServicesLayout,
  stop: () => Promise<void>,
): PrivateRedisCluster {
  return {
    port,
    ports: Array.from({ length: nodes }, (_, i) => port + i),
    layout,
    async kill(node) {
      const pid = Number((await onNode(node, (n) => n.info('server'))).match(/^process_id:(\d+)/m)?.[1]);
      process.kill(pid, 'SIGKILL');
      while (isAlive(pid)) await new Promise((r) => setTimeout(r, 20));
    },
    stop,
  };
}
