/**
 * Sending replies: every reply goes to `<p>.outbound_firehose`, to `<p>.outbound_<appid>` when per-app topics
 * are on, and (when it answers a request with a uuid) is stored under that uuid for REST polling.
 */

import { perAppSenderFor } from '../kafka/per-app.ts';
import { clusterTopics, isTopicSafeAppid, outboundAppTopic } from '../kafka/topics.ts';
import type { OutMessage } from '../ports.ts';
import type { MonitorContext } from './context.ts';
import { replyValue } from './reply-fit.ts';

export type Reply = Record<string, unknown> & { appid?: string; uuid?: string };

type Batch = { topic: string; messages: OutMessage[] }[];

/**
 * Sends replies: the firehose must succeed (its failure is thrown, so the records are delivered again);
 * per-app copies are best effort, since a per-app topic may not exist (auto-create is off) or the appid may
 * not be a legal topic name. They go through the process's one {@link PerAppSender} (lib/kafka/per-app.ts), so a
 * missing topic costs microseconds once known, never kafkajs's seconds of metadata retries per reply.
 */
export async function sendReplies(ctx: MonitorContext, replies: Reply[], alsoFirehose: Batch = []): Promise<void> {
  const { firehose, perApp } = splitReplies(ctx, replies);
  await ctx.sink.send([...alsoFirehose, ...firehose]);
  if (perApp.length === 0) return;
  await perAppSenderFor(ctx.sink, { log: ctx.log }).send(perApp);
}

function splitReplies(ctx: MonitorContext, replies: Reply[]): { firehose: Batch; perApp: Batch } {
  const all = replyBatches(ctx, replies);
  const firehose = clusterTopics(ctx.topicPrefix).outboundFirehose;
  return { firehose: all.filter((b) => b.topic === firehose), perApp: all.filter((b) => b.topic !== firehose) };
}

/** The largest reply value when the context does not say (`KAFKA_MAX_MESSAGE_BYTES`'s default). */
const DEFAULT_MAX_MESSAGE_BYTES = 1_000_000;

/** A reply as sent and stored: cut to fit a Kafka message when it would not (lib/monitor/reply-fit.ts). */
function sentValue(ctx: Pick<MonitorContext, 'maxMessageBytes'>, r: Reply): string {
  return replyValue(r, ctx.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES);
}

/** The topic batches for a list of replies (keyed by appid). */
function replyBatches(ctx: MonitorContext, replies: Reply[]): Batch {
  const firehose = clusterTopics(ctx.topicPrefix).outboundFirehose;
  const byTopic = new Map<string, OutMessage[]>();
  const add = (topic: string, m: OutMessage) => {
    const list = byTopic.get(topic) ?? [];
    list.push(m);
    byTopic.set(topic, list);
  };
  for (const r of replies) {
    const m: OutMessage = { key: typeof r.appid === 'string' ? r.appid : null, value: sentValue(ctx, r) };
    add(firehose, m);
    if (ctx.appidTopics && typeof r.appid === 'string' && isTopicSafeAppid(r.appid)) {
      add(outboundAppTopic(ctx.topicPrefix, r.appid), m);
    }
  }
  return [...byTopic].map(([topic, messages]) => ({ topic, messages }));
}

/** Stores replies that carry a uuid, with their appid, for `POST /feed` and `POST /poll`, with a TTL. */
export async function storeReplies(ctx: MonitorContext, replies: Reply[]): Promise<void> {
  const withUuid = replies.filter((r) => typeof r.uuid === 'string' && r.uuid.length > 0);
  await Promise.all(
    withUuid.map((r) =>
      ctx.replies.put(r.uuid as string, sentValue(ctx, r), ctx.replyTtlSec, typeof r.appid === 'string' ? r.appid : ''),
    ),
  );
}
