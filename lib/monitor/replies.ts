/**
 * Sending replies: every reply goes to `<p>.outbound_firehose`, to `<p>.outbound_<appid>` when per-app topics
 * are on, and (when it answers a request with a uuid) is stored under that uuid for REST polling.
 */

import type { OutMessage } from '../kafka/sink.ts';
import { clusterTopics, outboundAppTopic } from '../kafka/topics.ts';
import type { MonitorContext } from './context.ts';

export type Reply = Record<string, unknown> & { appid?: string; uuid?: string };

/** The topic batches for a list of replies (keyed by appid). */
export function replyBatches(ctx: MonitorContext, replies: Reply[]): { topic: string; messages: OutMessage[] }[] {
  const firehose = clusterTopics(ctx.topicPrefix).outboundFirehose;
  const byTopic = new Map<string, OutMessage[]>();
  const add = (topic: string, m: OutMessage) => {
    const list = byTopic.get(topic) ?? [];
    list.push(m);
    byTopic.set(topic, list);
  };
  for (const r of replies) {
    const m: OutMessage = { key: typeof r.appid === 'string' ? r.appid : null, value: JSON.stringify(r) };
    add(firehose, m);
    if (ctx.appidTopics && typeof r.appid === 'string') add(outboundAppTopic(ctx.topicPrefix, r.appid), m);
  }
  return [...byTopic].map(([topic, messages]) => ({ topic, messages }));
}

/** Stores replies that carry a uuid, for `POST /poll`, with a TTL . */
export async function storeReplies(ctx: MonitorContext, replies: Reply[]): Promise<void> {
  const withUuid = replies.filter((r) => typeof r.uuid === 'string' && r.uuid.length > 0);
  await Promise.all(withUuid.map((r) => ctx.replies.put(r.uuid as string, JSON.stringify(r), ctx.replyTtlSec)));
}
