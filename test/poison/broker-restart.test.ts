/**
 * Poison tier, infrastructure (issue 30 defect 4, "a Kafka broker restart silently stops intake"): `crawl-cluster
 * local` runs against a broker of the test's own (the shared one serves other tests), the broker is stopped and
 * started again, and then:
 * - `local` reads `incoming` again: a crawl fed after the restart gets its pages and its `complete` notice;
 * - `GET /` said so meanwhile: not GREEN, `kafka_connected: false` during the outage, GREEN once it is over;
 * - SIGTERM soon after a restart ends `local` within a bound (it hung after "stopped" until SIGKILL);
 * - a running `dump` (a CLI follower on the same kind of consumer) reads again or exits 1 saying why;
 * - after a hard kill, the restarted runtime's crawler workers (Redis only) do not wait for the consumers' joins;
 * - a consumer that stays down past its restart bound is given up, and the runtime's owner is told.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createMonitorDeps } from '../../functions/shared/deps.ts';
import { config } from '../../lib/config/index.ts';
import { createProducer } from '../../lib/kafka/client.ts';
import { clusterTopics } from '../../lib/kafka/topics.ts';
import { silentLog } from '../../lib/ports.ts';
import { REPO_ROOT } from '../../localstack/repo-root.ts';
import { startLocalCluster } from '../../localstack/runtime/cluster.ts';
import type { ConsumerDownError } from '../../localstack/runtime/consumer-supervisor.ts';
import { freePort } from '../../localstack/services/processes.ts';
import { type FixtureSite, startSite } from '../../localstack/site/site.ts';
import { type PrivateKafka, startPrivateKafka } from '../helpers/private-kafka.ts';
import { uniqueName, waitUntil } from '../helpers/services.ts';

const APPID = 'brokerrestart';
/** The workers' drain on SIGTERM; short, as nothing is in flight when the test stops `local`. */
const SHUTDOWN_DEADLINE_MS = 5000;
/** Bound of `local`'s exit after SIGTERM: the drain, the consumers leaving their groups, a loaded machine. */
const EXIT_WITHIN_MS = 30_000;
/** Longest wait for a request fed once health is GREEN to be answered: both monitors read by then. */
const READ_WITHIN_MS = 10_000;
/** Longest wait for `local` to read again once the broker is back: a crash, then at most a 10 s restart backoff. */
const RECOVER_WITHIN_MS = 90_000;

interface Health {
  node_health: string;
  kafka_connected: boolean;
  redis_connected: boolean;
}

/** `node bin/crawl-cluster.ts local` on the private broker, with its log lines (JSON) collected. */
interface LocalProcess {
  child: ChildProcess;
  restUrl: string;
  prefix: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; atMs: number }>;
  stderr(): string;
  health(): Promise<Health | undefined>;
}

async function runLocal(
  broker: PrivateKafka,
  site: FixtureSite,
  prefixes = { topics: uniqueName('br'), keys: uniqueName('k') },
): Promise<LocalProcess> {
  const base = config();
  const restPort = await freePort();
  const prefix = prefixes.topics;
  const child = spawn(
    process.execPath,
    [
      'bin/crawl-cluster.ts',
      'local',
      '--json-logs',
      '--no-localstack',
      '--rest-port',
      String(restPort),
      '--frontier-port',
      '0',
      '--schedule-every',
      '2',
      '--batching-window',
      '100',
    ],
    {
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        KAFKA_BROKERS: broker.brokers,
        KAFKA_TOPIC_PREFIX: prefix,
        KAFKA_TOPIC_PARTITIONS: '2',
        REDIS_HOST: '127.0.0.1',
        REDIS_PORT: String(base.CRAWL_REDIS_CLUSTER_PORT),
        REDIS_CLUSTER: 'true',
        REDIS_KEY_PREFIX: prefixes.keys,
        CRAWLER_WORKERS: '1',
        CRAWLER_HOST_MAP: site.hostMap,
        ALLOW_PRIVATE_NETWORKS: 'true',
        QUEUE_HITS: '1000',
        QUEUE_WINDOW: '1',
        QUEUE_MODERATED: 'false',
        SHUTDOWN_DEADLINE_MS: String(SHUTDOWN_DEADLINE_MS),
        LOG_LEVEL: 'WARN',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    stderr = (stderr + d).slice(-512 * 1024);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; atMs: number }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, atMs: Date.now() })),
  );
  const restUrl = `http://127.0.0.1:${restPort}`;
  const local: LocalProcess = {
    child,
    restUrl,
    prefix,
    exited,
    stderr: () => stderr,
    async health() {
      try {
        const response = await fetch(`${restUrl}/`, { signal: AbortSignal.timeout(5000) });
        return (await response.json()) as Health;
      } catch {
        return undefined;
      }
    },
  };
  await waitUntil(
    '`local` to start',
    () => {
      if (child.exitCode !== null) throw new Error(`local exited ${child.exitCode}: ${stderr.slice(-4000)}`);
      return stderr.includes('press Ctrl-C to stop');
    },
    120_000,
  );
  return local;
}

/** Stops the broker, waits until `local` says a consumer crashed and health says Kafka is gone, starts it again. */
/** Sends SIGTERM to `local` and expects a clean exit (code 0) within {@link EXIT_WITHIN_MS}. */
async function expectSigtermExit(local: LocalProcess): Promise<void> {
  const signalledAt = Date.now();
  local.child.kill('SIGTERM');
  const exit = await Promise.race([
    local.exited,
    new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), EXIT_WITHIN_MS * 2)),
  ]);
  expect(exit, local.stderr().slice(-4000)).toMatchObject({ code: 0, signal: null });
  process.stderr.write(`[broker-restart] local exited ${(exit?.atMs ?? 0) - signalledAt} ms after SIGTERM\n`);
  expect((exit?.atMs ?? Number.POSITIVE_INFINITY) - signalledAt).toBeLessThan(EXIT_WITHIN_MS);
}

async function restartBroker(broker: PrivateKafka, local: LocalProcess, healthSeen: Health[]): Promise<void> {
  const crashesBefore = local.stderr().split('consumer crashed').length;
  await broker.stop();
  await waitUntil(
    'health to report the outage',
    async () => {
      const h = await local.health();
      if (h) healthSeen.push(h);
      return h !== undefined && !h.kafka_connected;
    },
    30_000,
  );
  // The drill waited 15 s; here the crash itself is waited for, so the consumer restart path is what is tested.
  await waitUntil(
    'a monitor consumer to crash',
    () => local.stderr().split('consumer crashed').length > crashesBefore,
    90_000,
  );
  const h = await local.health();
  if (h) healthSeen.push(h);
  await broker.start();
}

describe('a Kafka broker restart under `crawl-cluster local`', () => {
  let broker: PrivateKafka;
  let site: FixtureSite;
  const locals: LocalProcess[] = [];

  beforeAll(async () => {
    [broker, site] = await Promise.all([
      startPrivateKafka(),
      startSite({ pages: 30, links: 3, hosts: ['restart-a.test', 'restart-b.test'] }),
    ]);
  }, 180_000);
  afterAll(async () => {
    for (const l of locals) if (l.child.exitCode === null && l.child.signalCode === null) l.child.kill('SIGKILL');
    await site?.close();
    await broker?.remove();
  }, 60_000);

  test('intake resumes after the restart: a crawl fed then gets its pages and complete notice; health reported the outage, then GREEN; SIGTERM exits in time', async () => {
    const local = await runLocal(broker, site);
    locals.push(local);
    const healthSeen: Health[] = [];
    expect(await local.health()).toMatchObject({ node_health: 'GREEN', kafka_connected: true });

    await restartBroker(broker, local, healthSeen);
    const backAt = Date.now();
    await waitUntil(
      'health to be GREEN again',
      async () => {
        const h = await local.health();
        if (h) healthSeen.push(h);
        return h?.node_health === 'GREEN';
      },
      RECOVER_WITHIN_MS,
    );
    const recoveredMs = Date.now() - backAt;
    process.stderr.write(`[broker-restart] GREEN again ${recoveredMs} ms after the broker was back\n`);
    expect(healthSeen.some((h) => h.node_health !== 'GREEN' && !h.kafka_connected)).toBe(true);

    // Feed and read on the restarted broker: the request goes through the kafka-monitor's (new) consumer.
    const kafka = broker.kafka();
    const topics = clusterTopics(local.prefix);
    const seen: Record<string, unknown>[] = [];
    const consumer = kafka.consumer({ groupId: uniqueName('collect'), maxWaitTimeInMs: 200 });
    const producer = createProducer(kafka);
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: [topics.crawledFirehose, topics.outboundFirehose], fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          seen.push(JSON.parse(message.value?.toString('utf8') ?? 'null') as Record<string, unknown>);
        },
      });
      await producer.connect();
      const fedAt = Date.now();
      await producer.send({
        topic: topics.incoming,
        acks: -1,
        messages: [
          { value: JSON.stringify({ action: 'info', appid: APPID, spiderid: 'link', uuid: 'after-restart' }) },
          { value: JSON.stringify({ url: site.url(0), appid: APPID, crawlid: 'after', maxdepth: 1 }) },
        ],
      });
      // GREEN means both monitors read now (it used to come back with the broker, while they were still away): the
      // info request goes through both of them (incoming, then actions) and is answered within seconds.
      await waitUntil(
        'the reply to an info request fed once health was GREEN',
        () => seen.some((m) => m.uuid === 'after-restart'),
        READ_WITHIN_MS,
      ).catch((error: Error) => {
        throw new Error(`${error.message}\n${local.stderr().slice(-6000)}`);
      });
      process.stderr.write(`[broker-restart] info reply ${Date.now() - fedAt} ms after feeding\n`);
      const expected = [...site.reachable(0, 1)].map((n) => site.url(n)).sort();
      await waitUntil(
        'the crawl fed after the restart to complete',
        () => seen.some((m) => m.action === 'complete' && m.crawlid === 'after'),
        RECOVER_WITHIN_MS,
      ).catch((error: Error) => {
        throw new Error(`${error.message}\n${local.stderr().slice(-6000)}`);
      });
      await waitUntil(
        'its pages',
        () => seen.filter((m) => m.crawlid === 'after' && 'url' in m && !('action' in m)).length >= expected.length,
      );
      process.stderr.write(`[broker-restart] crawl after the restart complete in ${Date.now() - fedAt} ms\n`);
      const pages = seen.filter((m) => m.crawlid === 'after' && !('action' in m));
      expect(pages.map((m) => m.url as string).sort()).toEqual(expected);
      expect(pages.every((m) => m.success === true)).toBe(true);
      expect(local.stderr()).toContain('consumer is consuming again');
    } finally {
      await consumer.disconnect();
      await producer.disconnect();
    }

    await expectSigtermExit(local);
  }, 420_000);

  test('SIGTERM 10 s after the broker is back (consumers rejoining) ends `local` within the bound, exit code 0', async () => {
    const local = await runLocal(broker, site);
    locals.push(local);
    await restartBroker(broker, local, []);
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    await expectSigtermExit(local);
    expect(local.stderr()).toContain('"message":"stopped"');
  }, 420_000);

  test('after a hard kill, the restarted runtime starts its crawler workers before its consumers have rejoined', async () => {
    const prefixes = { topics: uniqueName('br'), keys: uniqueName('k') };
    const first = await runLocal(broker, site, prefixes);
    locals.push(first);
    const workerPids = [...first.stderr().matchAll(/"message":"crawler worker \d+ started","pid":(\d+)/g)].map((m) =>
      Number(m[1]),
    );
    first.child.kill('SIGKILL');
    await first.exited;
    // SIGKILL ends `local` alone; its workers are orphans to be killed as a crash of the host would have.
    for (const pid of workerPids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }

    // The dead members stay in their groups until their sessions expire: the new consumers' joins wait for that.
    const again = await runLocal(broker, site, prefixes);
    locals.push(again);
    const at = (message: string) => {
      const line = again
        .stderr()
        .split('\n')
        .find((l) => l.includes(`"message":"${message}`));
      return line ? Date.parse((JSON.parse(line) as { time: string }).time) : Number.NaN;
    };
    const workerAt = at('crawler worker 0 started');
    const runningAt = at('local cluster running');
    process.stderr.write(`[broker-restart] worker started ${runningAt - workerAt} ms before the consumers joined\n`);
    expect(workerAt).toBeLessThan(runningAt);
    again.child.kill('SIGTERM');
    expect(await again.exited).toMatchObject({ code: 0 });
  }, 300_000);

  test('a running `dump` is never silent about a broker restart: it reads again, or exits 1 saying why', async () => {
    const topics = clusterTopics(uniqueName('br'));
    const admin = broker.kafka().admin();
    await admin.connect();
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic: topics.incoming, numPartitions: 1 }] });
    await admin.disconnect();
    const child = spawn(process.execPath, ['bin/crawl-cluster.ts', 'dump', topics.incoming], {
      cwd: REPO_ROOT,
      env: { ...process.env, KAFKA_BROKERS: broker.brokers },
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
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await waitUntil('dump to read', () => stderr.includes('(Ctrl-C to stop)'), 60_000);
      await broker.stop();
      await waitUntil(
        'dump to say Kafka went away',
        () => stderr.includes('lost the connection to Kafka') || child.exitCode !== null,
        90_000,
      );
      await broker.start();
      const producer = createProducer(broker.kafka());
      await producer.connect();
      await producer.send({ topic: topics.incoming, acks: -1, messages: [{ value: '{"after":"restart"}' }] });
      await producer.disconnect();
      const outcome = await waitUntil(
        'dump to print the message produced after the restart, or to exit',
        () => (stdout.includes('"after":"restart"') ? 'read' : child.exitCode !== null ? 'exited' : undefined),
        120_000,
      );
      process.stderr.write(`[broker-restart] dump after the restart: ${outcome}\n`);
      if (outcome === 'exited') {
        expect(await exited).toBe(1);
        expect(stderr).toMatch(/reading .+ (failed|stopped): /);
      } else {
        expect(stderr).toContain(`reading ${topics.incoming} again after`);
      }
    } finally {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    }
  }, 360_000);

  test('a consumer down past its restart bound is given up: the owner hears of it, health says failed, stop() ends in time', async () => {
    const vars = {
      ...config(),
      KAFKA_BROKERS: broker.brokers,
      KAFKA_TOPIC_PREFIX: uniqueName('br'),
      KAFKA_TOPIC_PARTITIONS: 1,
      REDIS_HOST: '127.0.0.1',
      REDIS_PORT: config().CRAWL_REDIS_CLUSTER_PORT,
      REDIS_CLUSTER: true,
      REDIS_KEY_PREFIX: uniqueName('k'),
    };
    const deps = await createMonitorDeps('poison', silentLog, vars);
    const fatal: ConsumerDownError[] = [];
    const cluster = await startLocalCluster({
      vars,
      context: deps.ctx,
      log: () => {},
      crawlerWorkers: 0,
      maxBatchingWindowMs: 100,
      restartPolicy: { initialBackoffMs: 200, maxBackoffMs: 1000, giveUpAfterMs: 5000 },
      onFatal: (error) => fatal.push(error),
    });
    try {
      expect(cluster.consumers().map((c) => c.state)).toEqual(['consuming', 'consuming']);
      await broker.stop();
      await waitUntil('a consumer to be given up', () => fatal.length > 0, 120_000);
      expect(fatal[0]?.message).toMatch(/^consumer .+ has been down for \d+ s \(last error: .+\); giving up$/);
      expect(cluster.consumers().some((c) => c.state === 'failed')).toBe(true);
    } finally {
      const stopping = Date.now();
      await cluster.stop();
      await deps.close();
      expect(Date.now() - stopping).toBeLessThan(EXIT_WITHIN_MS * 2);
    }
  }, 300_000);
});
