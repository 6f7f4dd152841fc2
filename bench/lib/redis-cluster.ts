/**
 * A private Redis Cluster for benchmarks that need shards (bench/scenarios/partitions.ts): `masters` redis-server
 * processes on free loopback ports, cluster-enabled, no persistence (as a default ElastiCache node), the slots split
 * into equal ranges in port order (as `redis-cli --cluster create` and ElastiCache split them), stopped when closed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRedis, type RedisClient } from '../../lib/redis/client.ts';
import { freePort } from '../../localstack/services/processes.ts';
import { ensureRedisBinary } from '../../localstack/services/redis-service.ts';
import { serverInfo, stopChild, waitForPort } from './redis.ts';

const SLOTS = 16384;

export interface BenchCluster {
  /** The cluster-mode client (what the frontier uses). */
  client: RedisClient;
  /** One standalone client per master, in slot order: INFO per shard. */
  nodes: { port: number; client: RedisClient }[];
  close(): Promise<void>;
}

/** A free port whose cluster bus port (+10000) is free too. */
async function freeNodePort(): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port + 10_000 < 65_536) return port;
  }
}

export async function openBenchCluster(masters: number, progress: (message: string) => void): Promise<BenchCluster> {
  const bin = ensureRedisBinary(progress);
  const dir = mkdtempSync(join(tmpdir(), 'crawl-bench-cluster-'));
  const children: ChildProcess[] = [];
  const nodes: { port: number; client: RedisClient }[] = [];
  const close = async () => {
    for (const n of nodes) n.client.disconnect();
    await Promise.all(children.map(stopChild));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < masters; i++) {
      const port = await freeNodePort();
      const d = join(dir, String(port));
      const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
      args.push('--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${port}.conf`));
      args.push('--cluster-announce-ip', '127.0.0.1', '--dir', dir, '--daemonize', 'no');
      args.push('--maxmemory-policy', 'noeviction', '--logfile', `${d}.log`);
      children.push(spawn(bin, args, { stdio: 'ignore' }));
      await waitForPort(port, 10_000);
      nodes.push({ port, client: createRedis({ host: '127.0.0.1', port, connectionName: 'bench' }) });
    }
    progress(`a private Redis Cluster of ${masters} masters on ports ${nodes.map((n) => n.port).join(', ')}`);
    const [first] = nodes as [(typeof nodes)[number]];
    for (const n of nodes.slice(1)) await first.client.call('CLUSTER', 'MEET', '127.0.0.1', String(n.port));
    for (const [i, n] of nodes.entries()) {
      const from = Math.floor((i * SLOTS) / masters);
      const to = Math.floor(((i + 1) * SLOTS) / masters) - 1;
      await n.client.call('CLUSTER', 'ADDSLOTSRANGE', String(from), String(to));
    }
    for (const deadline = Date.now() + 30_000; ; ) {
      const infos = await Promise.all(nodes.map((n) => n.client.call('CLUSTER', 'INFO') as Promise<string>));
      if (infos.every((t) => t.includes('cluster_state:ok') && t.includes(`cluster_known_nodes:${masters}`))) break;
      if (Date.now() > deadline) throw new Error('the benchmark cluster did not reach cluster_state:ok in 30 s');
      await sleep(100);
    }
    const client = createRedis({ host: '127.0.0.1', port: first.port, cluster: true, connectionName: 'bench' });
    return {
      client,
      nodes,
      close: async () => {
        client.disconnect();
        await close();
      },
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** A master's CPU seconds (user + sys) and used memory (bytes), from INFO. */
export async function nodeUsage(client: RedisClient): Promise<{ cpuSec: number; memory: number }> {
  const cpu = await serverInfo(client, 'cpu');
  const mem = await serverInfo(client, 'memory');
  return { cpuSec: Number(cpu.used_cpu_user) + Number(cpu.used_cpu_sys), memory: Number(mem.used_memory) };
}
