import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, test } from 'vitest';
import { config } from '../../lib/config/index.ts';
import { REPO_ROOT } from '../../localstack/repo-root.ts';
import { layoutFrom } from '../../localstack/services/index.ts';
import { localstackHealth } from '../../localstack/services/localstack-service.ts';
import { redisStatus, redisUp } from '../../localstack/services/redis-service.ts';
import { sharedVenvDir } from '../../localstack/services/venv-cache.ts';
import {
  close,
  clusterNodes,
  freeClusterPort,
  listen,
  startPrivateRedisCluster,
} from '../helpers/private-redis-cluster.ts';
import { clusterRedis, createTestTopics, testKafka, uniqueName, waitUntil } from '../helpers/services.ts';

describe('local services', () => {
  const redis = clusterRedis();
  afterAll(() => redis.disconnect());

  test('a message produced to a new topic is consumed back with its key and headers', async () => {
    const kafka = testKafka();
    const admin = kafka.admin();
    await admin.connect();
    const [topic] = await createTestTopics(admin, [uniqueName('it.roundtrip.')]);
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    const consumer = kafka.consumer({ groupId: uniqueName('g') });
    try {
      await producer.connect();
      await producer.send({ topic: topic as string, messages: [{ key: 'k1', value: '{"n":1}', headers: { h: 'v' } }] });
      await consumer.connect();
      await consumer.subscribe({ topic: topic as string, fromBeginning: true });
      const seen: { key?: string; value?: string; header?: string }[] = [];
      await consumer.run({
        eachMessage: async ({ message }) => {
          seen.push({
            key: message.key?.toString(),
            value: message.value?.toString(),
            header: message.headers?.h?.toString(),
          });
        },
      });
      await waitUntil('the message to come back', () => seen.length > 0);
      expect(seen).toEqual([{ key: 'k1', value: '{"n":1}', header: 'v' }]);
    } finally {
      await consumer.disconnect();
      await producer.disconnect();
      await admin.deleteTopics({ topics: [topic as string] });
      await admin.disconnect();
    }
  });

  test('producing to a topic that does not exist fails, because auto-create is off as on MSK', async () => {
    const kafka = testKafka();
    const producer = kafka.producer({ allowAutoTopicCreation: false, retry: { retries: 1 } });
    await producer.connect();
    try {
      await expect(
        producer.send({ topic: uniqueName('it.missing.'), messages: [{ value: 'x' }], timeout: 2000 }),
      ).rejects.toThrow();
    } finally {
      await producer.disconnect();
    }
  });

  test('a Lua script on keys sharing a hash tag runs on the cluster-mode Redis', async () => {
    const tag = uniqueName();
    const result = await redis.eval(
      "redis.call('SET', KEYS[1], ARGV[1]); redis.call('INCRBY', KEYS[2], ARGV[2]); return {redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2])}",
      2,
      `{${tag}}:a`,
      `{${tag}}:b`,
      'hello',
      '41',
    );
    expect(result).toEqual(['hello', '41']);
    await redis.del(`{${tag}}:a`, `{${tag}}:b`);
  });

  test('a Lua script on keys of two slots is refused (CROSSSLOT), as ElastiCache cluster mode refuses it', async () => {
    const tag = uniqueName();
    const script = "return redis.call('MGET', KEYS[1], KEYS[2])";
    // ioredis's cluster client refuses it before sending; the server itself refuses it too.
    await expect(redis.eval(script, 2, `${tag}:a`, `${tag}:zz`)).rejects.toThrow(/CROSSSLOT|same slot/);
    const node = new Redis({ host: '127.0.0.1', port: config().CRAWL_REDIS_CLUSTER_PORT, lazyConnect: true });
    try {
      await expect(node.eval(script, 2, `${tag}:a`, `${tag}:zz`)).rejects.toThrow(/CROSSSLOT/);
    } finally {
      node.disconnect();
    }
  });
});

/** A port free right now: any (0), or the first from `from` upwards. */
async function freePort(from = 0): Promise<number> {
  for (let port = from; port <= 65535; port += 1) {
    const held = await listen(port);
    if (held !== undefined) {
      await close(held.server);
      return held.port;
    }
    if (from === 0) break;
  }
  throw new Error(`no free port from ${from}`);
}

/** The pids of live processes whose command line mentions `text`. */
function processesMentioning(text: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** `services <command>` in a child process with the given services environment. */
function runServices(
  command: string,
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['bin/crawl-cluster.ts', 'services', command], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Services variables for a directory of its own and free ports, with `overrides`. */
async function servicesEnv(dir: string, overrides: Record<string, string>): Promise<Record<string, string>> {
  return {
    CRAWL_SERVICES_DIR: dir,
    CRAWL_REDIS_PORT: String(await freePort()),
    CRAWL_REDIS_CLUSTER_PORT: String(await freeClusterPort()),
    CRAWL_KAFKA_PORT: String(await freePort()),
    CRAWL_KAFKA_CONTROLLER_PORT: String(await freePort()),
    CRAWL_LOCALSTACK_PORT: String(await freePort()),
    CRAWL_SERVICES_TIMEOUT: '90',
    ...overrides,
  };
}

/**
 * `services up` in a directory and on ports of its own (the running services are never touched), when a
 * service it starts dies at once. The 90 s readiness timeout stays in force: the test timeouts, well below
 * it, fail the test if `up` waits it out instead of noticing the exit.
 */
describe('services up when a service cannot start', () => {
  test('cluster-mode Redis on a port above 55535 (no room for its bus port): fails at once with its exit code and log, and leaves nothing running', {
    timeout: 30_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'services-dies-'));
    const env = await servicesEnv(dir, { CRAWL_REDIS_CLUSTER_PORT: String(await freePort(60_000)) });
    try {
      const run = await runServices('up', env);

      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/error: redis-cluster \(pid \d+\) exited with code 1 during start/);
      expect(run.stderr).toContain(`last lines of ${join(dir, 'redis-cluster', 'redis.log')}`);
      expect(run.stderr).toContain('Your Redis port number must be 55535 or less');
      // The standalone Redis this `up` started before is stopped again.
      expect(run.stderr).toContain('services up failed; stopping what it started');
      expect(processesMentioning(dir)).toEqual([]);
    } finally {
      await runServices('down', env);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('Kafka whose controller port is taken: fails at once with its exit code and log, and leaves nothing running', {
    timeout: 60_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'services-dies-'));
    // The jars fetched for the running services, so that this start needs no download.
    const libs = join(layoutFrom(config()).dir, 'kafka', 'libs');
    if (existsSync(libs)) {
      mkdirSync(join(dir, 'kafka'));
      symlinkSync(libs, join(dir, 'kafka', 'libs'));
    }
    const blocker = await listen(0);
    if (blocker === undefined) throw new Error('cannot listen on a free port');
    const env = await servicesEnv(dir, { CRAWL_KAFKA_CONTROLLER_PORT: String(blocker.port) });
    try {
      const run = await runServices('up', env);

      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/error: kafka \(pid \d+\) exited with code 1 during start/);
      expect(run.stderr).toContain(`last lines of ${join(dir, 'kafka', 'logs', 'server.log')}`);
      expect(run.stderr).toContain(`failed to bind to 127.0.0.1:${blocker.port}: Address already in use`);
      // Only the message lines are quoted, not the Java stack frames.
      expect(run.stderr).not.toMatch(/^\s+at /m);
      expect(processesMentioning(dir)).toEqual([]);
    } finally {
      await close(blocker.server);
      await runServices('down', env);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a Kafka port taken by something that is not Kafka: fails within seconds naming the port, and leaves nothing running', {
    timeout: 30_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'services-dies-'));
    // Accepts connections and never answers, the worst case for a Kafka client.
    const stranger = await listen(0);
    if (stranger === undefined) throw new Error('cannot listen on a free port');
    // Reads what it is sent (so it sees the client close), and says nothing.
    stranger.server.on('connection', (socket) => socket.resume());
    const env = await servicesEnv(dir, { CRAWL_KAFKA_PORT: String(stranger.port) });
    try {
      const run = await runServices('up', env);

      expect(run.code).toBe(1);
      expect(run.stderr).toContain(
        `error: kafka: port ${stranger.port} is taken by something that is not Kafka (no Kafka answer within 3 s); stop it or set CRAWL_KAFKA_PORT`,
      );
      expect(processesMentioning(dir)).toEqual([]);
    } finally {
      await close(stranger.server);
      await runServices('down', env);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test.skipIf(!config().CRAWL_LOCALSTACK)(
    'a LocalStack port taken by something that is not LocalStack: fails within seconds naming the port, and stops Redis and Kafka again',
    {
      timeout: 90_000,
    },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'services-dies-'));
      // The jars fetched for the running services, so that Kafka starts without a download.
      const libs = join(layoutFrom(config()).dir, 'kafka', 'libs');
      if (existsSync(libs)) {
        mkdirSync(join(dir, 'kafka'));
        symlinkSync(libs, join(dir, 'kafka', 'libs'));
      }
      // Accepts connections and never answers an HTTP request.
      const stranger = await listen(0);
      if (stranger === undefined) throw new Error('cannot listen on a free port');
      stranger.server.on('connection', (socket) => socket.resume());
      const env = await servicesEnv(dir, { CRAWL_LOCALSTACK_PORT: String(stranger.port) });
      try {
        const run = await runServices('up', env);

        expect(run.code).toBe(1);
        expect(run.stderr).toContain(
          `error: localstack: port ${stranger.port} is taken by something that is not LocalStack (no HTTP answer within 3 s); stop it or set CRAWL_LOCALSTACK_PORT`,
        );
        // Redis, cluster-mode Redis and Kafka, which this `up` started, are stopped again; no virtualenv was built.
        expect(run.stderr).toContain('services up failed; stopping what it started');
        expect(processesMentioning(dir)).toEqual([]);
        expect(existsSync(join(dir, 'localstack', 'venv'))).toBe(false);
      } finally {
        await close(stranger.server);
        await runServices('down', env);
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});

/** `services up`/`down` in a directory and on ports of its own, with LocalStack. */
describe.skipIf(!config().CRAWL_LOCALSTACK)('services up and down with LocalStack', () => {
  test('LocalStack from the shared virtualenv in the cache: up links it (nothing built), starts it, status lists it, down stops it', {
    timeout: 120_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'services-localstack-'));
    const cache = mkdtempSync(join(tmpdir(), 'services-cache-'));
    const running = layoutFrom(config()).dir;
    // The jars of the running services, so that nothing is downloaded; their virtualenv stands as the cache's
    // entry for the same build (the marker in it is the sha256 of the requirements and the Python).
    const runningVenv = join(running, 'localstack', 'venv');
    const build = readFileSync(join(runningVenv, '.crawl-cluster-requirements'), 'utf8').trim();
    const shared = sharedVenvDir(cache, build);
    symlinkSync(runningVenv, shared);
    if (existsSync(join(running, 'kafka', 'libs'))) {
      mkdirSync(join(dir, 'kafka'), { recursive: true });
      symlinkSync(join(running, 'kafka', 'libs'), join(dir, 'kafka', 'libs'));
    }
    const env = await servicesEnv(dir, { CRAWL_CACHE_DIR: cache });
    try {
      const up = await runServices('up', env);
      expect(up.code, up.stderr).toBe(0);
      expect(up.stderr).toContain(`localstack: ready on 127.0.0.1:${env.CRAWL_LOCALSTACK_PORT}`);
      // Reused: the cache held a virtualenv built from the same requirements and Python.
      expect(up.stderr).not.toContain('building its virtualenv');
      expect(up.stderr).toContain(`localstack: using the virtualenv ${shared}`);
      expect(readlinkSync(join(dir, 'localstack', 'venv'))).toBe(shared);
      const health = await localstackHealth(Number(env.CRAWL_LOCALSTACK_PORT));
      expect(health.services.s3).toBe('running');
      const status = await runServices('status', env);
      expect(status.stdout).toMatch(
        new RegExp(`localstack\\s+running\\s+127\\.0\\.0\\.1:${env.CRAWL_LOCALSTACK_PORT}`),
      );

      const down = await runServices('down', env);
      expect(down.code, down.stderr).toBe(0);
      expect(down.stderr).toMatch(/localstack: stopping pid \d+/);
      expect(processesMentioning(dir)).toEqual([]);
    } finally {
      await runServices('down', env);
      rmSync(dir, { recursive: true, force: true });
      rmSync(cache, { recursive: true, force: true });
    }
  });
});

/**
 * The services lock (localstack/services/lock.ts) through the CLI, in a directory of its own: `down` there has
 * nothing to stop, so the running services are never touched.
 */
describe('services up|down hold a lock on their directory', () => {
  test('a second command waits for the holder, says for whom, and goes on once the holder is gone', {
    timeout: 30_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'services-lock-'));
    // The holder: a live process named in the lock file, as a `services up` still running would be.
    const holder = spawn('sleep', ['60'], { stdio: 'ignore' });
    const lockFile = join(dir, 'services.lock');
    writeFileSync(lockFile, `${JSON.stringify({ pid: holder.pid, command: 'services up', since: Date.now() })}\n`);
    const env = await servicesEnv(dir, {});
    const down = spawn(process.execPath, ['bin/crawl-cluster.ts', 'services', 'down'], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    down.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const exited = new Promise<number | null>((resolve) => down.on('close', resolve));
    let code: number | null | undefined;
    void exited.then((c) => {
      code = c;
    });
    try {
      await waitUntil('down to wait for the lock', () => stderr.includes('waiting for'));
      expect(stderr).toContain(
        `services down: waiting for services up (pid ${holder.pid}) to finish (lock ${lockFile}; at most 600 s)`,
      );
      await new Promise((r) => setTimeout(r, 500));
      expect(code).toBeUndefined();

      holder.kill('SIGKILL');
      expect(await exited).toBe(0);
      expect(stderr).toContain(
        `services down: taking over the stale lock ${lockFile} (its services up (pid ${holder.pid}) is gone)`,
      );
      expect(existsSync(lockFile)).toBe(false);
    } finally {
      holder.kill('SIGKILL');
      down.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * The cluster-mode Redis with CRAWL_REDIS_CLUSTER_REPLICAS=1, as `services up` starts it (redis-service.ts), in a
 * directory and on free ports of its own.
 */
describe('cluster-mode Redis with a replica per master', () => {
  test('three masters on the first three ports split the slots, each followed by one replica on the next three; up again changes nothing; down stops all six', {
    timeout: 60_000,
  }, async () => {
    const cluster = await startPrivateRedisCluster({ replicas: 1 });
    try {
      const { port } = cluster;
      expect(cluster.ports).toEqual([0, 1, 2, 3, 4, 5].map((i) => port + i));
      const nodes = await clusterNodes(port);
      expect(nodes.map((n) => n.port).sort()).toEqual(cluster.ports);
      expect(nodes.every((n) => !n.failed)).toBe(true);
      const masters = nodes.filter((n) => n.role === 'master').sort((a, b) => a.port - b.port);
      expect(masters.map((n) => [n.port, n.slots])).toEqual([
        [port, 5461],
        [port + 1, 5462],
        [port + 2, 5461],
      ]);
      // Replica i follows master i mod 3.
      const replicas = nodes.filter((n) => n.role === 'slave').sort((a, b) => a.port - b.port);
      expect(replicas.map((n) => [n.port, masters.find((m) => m.id === n.masterId)?.port])).toEqual([
        [port + 3, port],
        [port + 4, port + 1],
        [port + 5, port + 2],
      ]);
      const status = await redisStatus(cluster.layout, 'redis-cluster');
      expect(status).toMatchObject({ state: 'running', address: `127.0.0.1:${port}-${port + 5}` });

      const progress: string[] = [];
      await redisUp(cluster.layout, 'redis-cluster', (m) => progress.push(m));
      expect(progress.filter((m) => /starting|forming/.test(m))).toEqual([]);
    } finally {
      await cluster.stop();
    }
    expect(processesMentioning(cluster.layout.dir)).toEqual([]);
  });
});
