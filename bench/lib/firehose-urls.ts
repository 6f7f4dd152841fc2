/** Page messages per URL on a bench cluster's `<p>.crawled_firehose`: what a client saw, duplicates included. */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { settlesWithin } from '../../lib/timeout.ts';
import type { BenchCluster } from './cluster.ts';

/**
 * Reads the firehose from the beginning, counting page messages per URL into `perUrl`, until `expected` distinct URLs
 * were seen (or `timeoutS`), then a second more for late duplicates of the last pages.
 */
export async function readUrls(
  c: Pick<BenchCluster, 'kafka' | 'topics'>,
  expected: number,
  perUrl: Map<string, number>,
  timeoutS: number,
): Promise<void> {
  const consumer = c.kafka.consumer({ groupId: `drill-${randomBytes(4).toString('hex')}`, maxWaitTimeInMs: 200 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: c.topics.crawledFirehose, fromBeginning: true });
    let seen!: () => void;
    const all = new Promise<void>((resolve) => {
      seen = resolve;
    });
    await consumer.run({
      eachMessage: async ({ message }) => {
        const url = (JSON.parse(String(message.value)) as { url: string }).url;
        perUrl.set(url, (perUrl.get(url) ?? 0) + 1);
        if (perUrl.size >= expected) seen();
      },
    });
    await settlesWithin(all, timeoutS * 1000);
    await sleep(1000);
  } finally {
    await consumer.disconnect();
  }
}
