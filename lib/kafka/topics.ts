/**
 * The contract's topic names (docs/contract.md "Topics"), built in one place from the prefix.
 */

/** Topics every cluster has, created up front (auto-create is off, as on MSK). */
export interface ClusterTopics {
  incoming: string;
  crawledFirehose: string;
  outboundFirehose: string;
  actions: string;
  rejected: string;
}

/** The fixed topics for a prefix. */
export function clusterTopics(prefix: string): ClusterTopics {
  return {
    incoming: `${prefix}.incoming`,
    crawledFirehose: `${prefix}.crawled_firehose`,
    outboundFirehose: `${prefix}.outbound_firehose`,
    actions: `${prefix}.actions`,
    rejected: `${prefix}.rejected`,
  };
}

/** Appids that can name per-app topics: Kafka's topic characters, short enough for its 249 with the prefix. */
const TOPIC_SAFE_APPID = /^[A-Za-z0-9._-]{1,200}$/;

/** Whether `appid` can be part of a per-app topic name; an appid that cannot has no per-app topics. */
export function isTopicSafeAppid(appid: string): boolean {
  return TOPIC_SAFE_APPID.test(appid);
}

/** Per-app copy of the pages, used when `KAFKA_APPID_TOPICS=true`. */
export function crawledAppTopic(prefix: string, appid: string): string {
  return `${prefix}.crawled_${appid}`;
}

/** Per-app copy of the replies, used when `KAFKA_APPID_TOPICS=true`. */
export function outboundAppTopic(prefix: string, appid: string): string {
  return `${prefix}.outbound_${appid}`;
}

/** The fixed topic names as a list, in a stable order. */
export function clusterTopicList(prefix: string): string[] {
  return Object.values(clusterTopics(prefix));
}
