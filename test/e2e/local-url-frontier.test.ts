/**
 * `crawl-cluster local` serves the URL Frontier API: the real CLI in a child process (no crawler workers, REST
 * off, fresh prefixes), a grpc-js client on the port it printed; SIGINT stops it cleanly. Once with the frontier in
 * one partition, once in six (`FRONTIER_PARTITIONS`) over the 3-master cluster.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { afterAll, describe, expect, it } from 'vitest';
import { config } from '../../lib/config/index.ts';
import { UrlFrontierStore } from '../../lib/redis/url-frontier/store.ts';
import { urlFrontierClientConstructor } from '../../lib/url-frontier/definition.ts';
import { freePort } from '../../localstack/services/processes.ts';
import { clusterRedis, uniqueName, waitUntil } from '../helpers/services.ts';
import { unlinkKeys } from '../helpers/url-frontier.ts';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const redis = clusterRedis();
afterAll(() => redis.disconnect());

type AnyClient = grpc.Client & Record<string, (...args: unknown[]) => unknown>;

/** Two URLs of two queues (hosts), in two partitions of six. */
const URLS = ['http://a.example/1', 'http://c.example/1'];

describe.each([1, 6])('crawl-cluster local: the URL Frontier API (FRONTIER_PARTITIONS=%i)', (partitions) => {
  it('serves ListCrawls and PutURLs / GetURLs on --frontier-port, printed like the REST line, until SIGINT', async () => {
    const base = config();
    const prefix = uniqueName('k');
    const port = await freePort();
    let restPort = await freePort();
    while (restPort === port) restPort = await freePort();
    const child = spawn(
      process.execPath,
      [
        'bin/crawl-cluster.ts',
        'local',
        '--rest-port',
        String(restPort),
        '--frontier-port',
        String(port),
        '--schedule-every',
        '60',
      ],
      {
        cwd: repoRoot,
        env: {
          ...process.env,
          KAFKA_BROKERS: `127.0.0.1:${base.CRAWL_KAFKA_PORT}`,
          KAFKA_TOPIC_PREFIX: uniqueName('e2e'),
          KAFKA_TOPIC_PARTITIONS: '1',
          REDIS_HOST: '127.0.0.1',
          REDIS_PORT: String(base.CRAWL_REDIS_CLUSTER_PORT),
          REDIS_CLUSTER: 'true',
          REDIS_KEY_PREFIX: prefix,
          CRAWLER_WORKERS: '0',
          FRONTIER_PARTITIONS: String(partitions),
        },
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.stdout.resume();
    const killer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    const Client = urlFrontierClientConstructor();
    const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as AnyClient;
    const store = new UrlFrontierStore(redis, prefix, { partitions });
    try {
      await waitUntil('local to start', () => stderr.includes('press Ctrl-C to stop'), 60_000);
      expect(stderr).toContain(`URL Frontier API listening on 127.0.0.1:${port}`);
      expect(stderr).toContain(
        `REST API listening on http://127.0.0.1:${restPort}; dashboard: http://127.0.0.1:${restPort}/ui`,
      );

      const unary = <T>(method: string, req: object) =>
        new Promise<T>((resolve, reject) =>
          (client[method] as (r: object, cb: (e: grpc.ServiceError | null, res: T) => void) => void).call(
            client,
            req,
            (e, res) => (e ? reject(e) : resolve(res)),
          ),
        );
      expect((await unary<{ values: string[] }>('ListCrawls', {})).values).toEqual([]);

      const acks = await new Promise<{ ID: string; status: string }[]>((resolve, reject) => {
        const call = (client.PutURLs as () => grpc.ClientDuplexStream<object, { ID: string; status: string }>).call(
          client,
        );
        const out: { ID: string; status: string }[] = [];
        call.on('data', (d: { ID: string; status: string }) => out.push(d));
        call.on('error', reject);
        call.on('end', () => resolve(out));
        for (const url of URLS) {
          call.write({ discovered: { info: { url, key: '', crawlID: '', metadata: {} } } });
        }
        call.end();
      });
      expect(acks.map((a) => a.status).sort()).toEqual(['OK', 'OK']);

      const urls = await new Promise<{ url: string }[]>((resolve, reject) => {
        const call = (client.GetURLs as (r: object) => grpc.ClientReadableStream<{ url: string }>).call(client, {
          max_urls_per_queue: 0,
          max_queues: 0,
          delay_requestable: 0,
        });
        const out: { url: string }[] = [];
        call.on('data', (d: { url: string }) => out.push(d));
        call.on('error', reject);
        call.on('end', () => resolve(out));
      });
      expect(urls.map((u) => u.url).sort()).toEqual(URLS);
      expect((await unary<{ values: string[] }>('ListCrawls', {})).values).toEqual(['DEFAULT']);
      // Stored where the server's partitions put them: over six, the two queues in two partitions.
      const parts = new Set(URLS.map((u) => store.partitionOf(new URL(u).host).partition));
      expect(parts.size).toBe(partitions === 1 ? 1 : 2);
      expect(await store.countUrls('DEFAULT', undefined)).toBe(URLS.length);

      child.kill('SIGINT');
      expect(await exited).toBe(0);
      expect(stderr).toContain('stopped');
    } finally {
      clearTimeout(killer);
      client.close();
      if (child.exitCode === null) child.kill('SIGKILL');
      await unlinkKeys(redis, await store.knownKeys());
    }
  });
});
