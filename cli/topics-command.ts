import type { Command } from 'commander';
import { config } from '../lib/config/index.ts';
import { createKafka, ensureTopics, kafkaSettings } from '../lib/kafka/client.ts';
import { clusterTopicList, crawledAppTopic, isTopicSafeAppid, outboundAppTopic } from '../lib/kafka/topics.ts';
import { integerOption } from './options.ts';
import type { Output } from './output.ts';

/** `topics create|list`. */
export function registerTopics(program: Command, out: Output): void {
  const topics = program.command('topics').description("create or list the contract's Kafka topics");
  topics
    .command('create')
    .description('create the topics of the contract for KAFKA_TOPIC_PREFIX that do not exist yet (idempotent)')
    .option('--prefix <prefix>', 'topic prefix (default: KAFKA_TOPIC_PREFIX)')
    .option('--partitions <n>', 'partitions per topic (default: KAFKA_TOPIC_PARTITIONS)', integerOption({ min: 1 }))
    .option(
      '--appid <appid...>',
      'also create the per-app topics crawled_<appid> and outbound_<appid> (KAFKA_APPID_TOPICS)',
    )
    .action(async (opts: { prefix?: string; partitions?: number; appid?: string[] }) => {
      const vars = config();
      const prefix = opts.prefix ?? vars.KAFKA_TOPIC_PREFIX;
      const partitions = opts.partitions ?? vars.KAFKA_TOPIC_PARTITIONS;
      const admin = createKafka(kafkaSettings(vars)).admin();
      await admin.connect();
      try {
        const wanted = clusterTopicList(prefix);
        for (const appid of opts.appid ?? []) {
          if (!isTopicSafeAppid(appid)) throw new Error(`appid "${appid}" is not a legal Kafka topic name part`);
          wanted.push(crawledAppTopic(prefix, appid), outboundAppTopic(prefix, appid));
        }
        const created = await ensureTopics(admin, wanted, partitions);
        if (out.json) out.data({ created, existing: wanted.filter((t) => !created.includes(t)) });
        else for (const t of wanted) out.info(`${created.includes(t) ? 'created' : 'exists '}  ${t}`);
      } finally {
        await admin.disconnect();
      }
    });
  topics
    .command('list')
    .description('list the topics on the brokers')
    .action(async () => {
      const admin = createKafka(kafkaSettings(config())).admin();
      await admin.connect();
      try {
        const names = (await admin.listTopics()).filter((t) => !t.startsWith('__')).sort();
        if (out.json) out.data(names);
        else for (const t of names) out.info(t);
      } finally {
        await admin.disconnect();
      }
    });
}
