import type { Command } from 'commander';
import { config, quietLocalMetrics, type Variables } from '../lib/config/index.ts';
import { CrawlClusterError } from '../lib/errors.ts';
import { createKafka, createProducer, kafkaSettings } from '../lib/kafka/client.ts';
import { clusterTopics } from '../lib/kafka/topics.ts';
import { settlesWithin } from '../lib/timeout.ts';
import type { RuntimeLog } from '../localstack/runtime/log.ts';
import { clusterRunningMessage, runningMonitors } from './cluster-presence.ts';
import { failureReason } from './crawl-tally.ts';
import { bounded, cliKafka, connectAdmin, quietly } from './kafka-session.ts';
import { addLocalAwsOptions, applyLocalAwsOptions, type LocalAwsOptions } from './local-aws-options.ts';
import { integerOption } from './options.ts';
import type { Output } from './output.ts';

/**
 * `demo`: a real crawl on this machine in one command — the bundled fixture site on loopback, the local
 * cluster (monitors + crawler worker processes), one crawl fed through Kafka, pages shown as they arrive on
 * `<p>.crawled_firehose`, and a summary when the `complete` notice comes.
 */
export function registerDemo(program: Command, out: Output): void {
  const command = program
    .command('demo')
    .description(
      'crawl the bundled demo site (served on 127.0.0.1) through the whole local cluster and show the pages; ' +
        'needs `services up`',
    );
  addLocalAwsOptions(command)
    .option('--depth <n>', 'maxdepth of the crawl (0-3)', integerOption({ min: 0, max: 3 }), 2)
    .option('--pages <n>', 'pages on the demo site', integerOption({ min: 1 }), 300)
    .option('--workers <n>', 'crawler worker processes', integerOption({ min: 1 }), 2)
    .option('--timeout <s>', 'give up after this many seconds', integerOption({ min: 1 }), 120)
    .action(async (opts: LocalAwsOptions & { depth: number; pages: number; workers: number; timeout: number }) => {
      quietLocalMetrics();
      const { startSite } = await import('../localstack/site/site.ts');
      const { startLocalCluster } = await import('../localstack/runtime/cluster.ts');
      const { createMonitorDeps } = await import('../functions/shared/deps.ts');
      const { withLocalSecrets } = await import('../localstack/runtime/local-aws.ts');
      const base = await withLocalSecrets(applyLocalAwsOptions(config(), opts));
      await refuseWhenClusterRuns(base);
      const site = await startSite({ pages: opts.pages, links: 5 });
      const vars: Variables = {
        ...base,
        KAFKA_TOPIC_PREFIX: `${base.KAFKA_TOPIC_PREFIX}`,
        ALLOW_PRIVATE_NETWORKS: true,
        CRAWLER_HOST_MAP: site.hostMap,
        QUEUE_HITS: 50,
        QUEUE_WINDOW: 1,
        LOG_LEVEL: 'WARN',
      };
      const log: RuntimeLog = (level, message, fields) => {
        if (level !== 'info') process.stderr.write(`${level}: ${message} ${fields ? JSON.stringify(fields) : ''}\n`);
      };
      const silent = { info() {}, warn() {}, error() {} };
      let deps: Awaited<ReturnType<typeof createMonitorDeps>> | undefined;
      let cluster: Awaited<ReturnType<typeof startLocalCluster>>;
      try {
        deps = await createMonitorDeps('demo', silent, vars);
        cluster = await startLocalCluster({
          vars,
          context: deps.ctx,
          log,
          crawlerWorkers: opts.workers,
          workerOutput: 'log',
        });
      } catch (error) {
        // LocalStack or Kafka not answering: nothing stays open behind the error.
        await deps?.close();
        await site.close();
        throw error;
      }
      const kafka = createKafka(kafkaSettings(vars));
      const topics = clusterTopics(vars.KAFKA_TOPIC_PREFIX);
      const crawlid = `demo-${Date.now()}`;
      const consumer = kafka.consumer({ groupId: `crawl-cluster-demo-${crawlid}` });
      const producer = createProducer(kafka);
      const started = Date.now();
      let pages = 0;
      let failed = 0;
      /** Failed pages by reason: how many each. */
      const reasons = new Map<string, number>();
      let summary: Record<string, unknown> | undefined;
      try {
        await consumer.connect();
        await consumer.subscribe({ topics: [topics.crawledFirehose, topics.outboundFirehose] });
        // Feed only once the consumer owns its partitions, or a fast crawl's messages could come before it reads.
        const joined = new Promise<void>((resolve) => consumer.on(consumer.events.GROUP_JOIN, () => resolve()));
        const finished = new Promise<void>((resolve) => {
          void consumer.run({
            eachMessage: async ({ topic, message }) => {
              const m = JSON.parse(message.value?.toString('utf8') ?? '{}') as Record<string, unknown>;
              if (m.crawlid !== crawlid) return;
              if (topic === topics.crawledFirehose) {
                if (m.success) pages++;
                else {
                  failed++;
                  reasons.set(failureReason(m), (reasons.get(failureReason(m)) ?? 0) + 1);
                }
                if (!out.json) {
                  const rate = (pages + failed) / Math.max(0.001, (Date.now() - started) / 1000);
                  const why = m.success ? '' : `  failed: ${failureReason(m)}`;
                  process.stdout.write(
                    `${String(m.status_code ?? '---').padEnd(4)} depth ${m.depth} ${m.url}  [${pages} ok, ${failed} failed, ${rate.toFixed(1)} pages/s]${why}\n`,
                  );
                }
              } else if (m.action === 'complete') {
                summary = m;
                resolve();
              }
            },
          });
        });
        await joined;
        await producer.connect();
        const seed = { url: site.url(0), appid: 'demo', crawlid, maxdepth: opts.depth };
        await producer.send({ topic: topics.incoming, messages: [{ key: 'demo', value: JSON.stringify(seed) }] });
        out.progress(
          `demo site on 127.0.0.1:${site.port} (${site.hosts.join(', ')}); crawling ${seed.url} to depth ${opts.depth}`,
        );
        const timedOut = !(await settlesWithin(finished, opts.timeout * 1000));
        const seconds = (Date.now() - started) / 1000;
        const expected = site.reachable(0, opts.depth).size;
        const failures = [...reasons].map(([reason, count]) => ({ reason, count })).sort((a, b) => b.count - a.count);
        const result = { crawlid, pages, failed, expected, seconds, complete: !timedOut, notice: summary, failures };
        if (out.json) out.data(result);
        else {
          out.info(
            timedOut
              ? `timed out after ${opts.timeout} s: ${pages} pages so far (expected ${expected})`
              : `complete: ${pages} pages (${failed} failed) in ${seconds.toFixed(1)} s; the site has ${expected} pages within depth ${opts.depth}`,
          );
          for (const f of failures) out.info(`  ${f.count} × failed: ${f.reason}`);
        }
        // A demo that crawled nothing (every page failed) did not work, whatever the notice says.
        if (timedOut || (pages === 0 && failed > 0)) process.exitCode = 1;
      } finally {
        await consumer.disconnect().catch(() => undefined);
        await producer.disconnect().catch(() => undefined);
        await cluster.stop();
        await deps.close();
        await site.close();
      }
    });
}

/**
 * Fails clearly, before anything starts, when a cluster already consumes the prefix's requests (cluster-presence.ts).
 * @throws CrawlClusterError naming what runs and what to do
 */
async function refuseWhenClusterRuns(vars: Variables): Promise<void> {
  const client = cliKafka(vars);
  const admin = await connectAdmin(client);
  try {
    const members = await bounded(runningMonitors(admin, vars.KAFKA_TOPIC_PREFIX), 'asking Kafka for running clusters');
    if (members > 0) throw new CrawlClusterError(clusterRunningMessage(vars.KAFKA_TOPIC_PREFIX, members));
  } finally {
    await quietly(admin.disconnect());
  }
}
