/**
 * How many partitions and how much broker storage the stack gives Kafka (cdk/stack.ts), and what the cost model checks
 * a volume against (cdk/cost-volume.ts): one set of figures for both, so the deployed stack and `npm run cost` agree.
 * Pure functions, no CDK.
 */

/** The page size partitions and storage are sized for (KB): an article page of the crawl bench. */
export const REFERENCE_PAGE_KB = 28;

/** MSK Serverless's ingress limit per partition (MSK Developer Guide, MSK Serverless quota), bytes per second. */
const MSK_SERVERLESS_PARTITION_INGRESS = 5 * 1024 * 1024;

/** MSK Serverless's partitions per cluster (MSK Developer Guide, MSK Serverless quota). */
export const MSK_SERVERLESS_MAX_PARTITIONS = 120;

/** MSK Serverless's largest partition (MSK Developer Guide, MSK Serverless quota), bytes. */
export const MSK_SERVERLESS_MAX_PARTITION_BYTES = 250e9;

/**
 * Pages a second one crawler task (1 vCPU) publishes at most on the simulated internet: the top of the steady rates
 * the realweb bench measures for one worker (bench/results/realweb.json `ours_1w_steady_pages_per_s_rounds`,
 * bench/PROFILE.md "Crawl worker on the simulated internet"), where the worker is CPU-bound. An upper bound for
 * partition sizing, not a throughput promise.
 */
const PEAK_PAGES_PER_TASK_SECOND = 400;

/**
 * Share of a broker's volume the retained pages may fill when the stack sizes it: the disk alarm fires at
 * {@link BROKER_DISK_ALARM_PERCENT}, so a burst above the month's average rate pages someone before the disk is full.
 */
export const BROKER_STORAGE_FILL = 0.7;

/** KafkaDataLogsDiskUsed (%) of any broker that pages someone. */
export const BROKER_DISK_ALARM_PERCENT = 80;

/** Bytes of one page message on the wire: `pageKb` KB shrunk `ratio` times by KAFKA_COMPRESSION. */
export function messageBytes(pageKb: number, ratio: number): number {
  return (pageKb * 1024) / ratio;
}

/**
 * Partitions the crawled firehose needs so that `maxTasks` crawler tasks at their peak are not capped by MSK
 * Serverless's per-partition ingress, for pages of `pageKb` KB shrunk `ratio` times by KAFKA_COMPRESSION.
 */
export function firehosePartitionsNeeded(maxTasks: number, pageKb: number, ratio: number): number {
  const bytesPerSecond = maxTasks * PEAK_PAGES_PER_TASK_SECOND * messageBytes(pageKb, ratio);
  return Math.max(1, Math.ceil(bytesPerSecond / MSK_SERVERLESS_PARTITION_INGRESS));
}

/** Replicas of each partition on provisioned MSK: its default replication factor (3, or 2 with two brokers). */
export function replicationFactor(brokers: number): number {
  return Math.min(3, brokers);
}

export interface RetainedVolume {
  /** Pages crawled in a month, spread evenly over its 730 hours. */
  pagesPerMonth: number;
  /** Hours the topics keep a message. */
  retentionHours: number;
  /** Bytes of a page message on the wire. */
  messageBytes: number;
}

/** Bytes the firehose holds at any time over its retention (one copy, before replication). */
export function retainedBytes(v: RetainedVolume): number {
  return (v.pagesPerMonth / 730) * v.retentionHours * v.messageBytes;
}

/**
 * GiB each provisioned broker needs to keep the firehose's retention at that volume, replicas included, filling at
 * most {@link BROKER_STORAGE_FILL} of the volume; at least 1 (MSK's smallest volume).
 */
export function brokerVolumeGiBNeeded(v: RetainedVolume, brokers: number): number {
  const perBroker = (retainedBytes(v) * replicationFactor(brokers)) / brokers;
  return Math.max(1, Math.ceil(perBroker / BROKER_STORAGE_FILL / 2 ** 30));
}

/** Pages a month that `volumeGiB` per broker holds over the retention at {@link BROKER_STORAGE_FILL}. */
export function pagesPerMonthHeld(volumeGiB: number, brokers: number, retentionHours: number, bytes: number): number {
  const perPage = (retentionHours / 730) * bytes * (replicationFactor(brokers) / brokers);
  return (volumeGiB * 2 ** 30 * BROKER_STORAGE_FILL) / perPage;
}
