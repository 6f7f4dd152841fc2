/**
 * The shapes Lambda hands to MSK-triggered functions and expects back (shared/notes/aws-facts.md), and
 * the EventBridge scheduled event. Defined here, not imported from @types/aws-lambda, so `lib/` stays free
 * of Lambda types (STYLE.md §3) and the local runtime can build the same events from kafkajs batches.
 */

/** One Kafka record as Lambda delivers it: key and value base64, header values as byte arrays. */
export interface MskRecord {
  topic: string;
  partition: number;
  offset: number;
  /** Epoch ms. */
  timestamp: number;
  timestampType: 'CREATE_TIME' | 'LOG_APPEND_TIME';
  key?: string;
  value?: string;
  headers: Record<string, number[]>[];
}

/** An MSK (or self-managed Kafka) event: records grouped under `<topic>-<partition>`, each group in offset order. */
export interface MskEvent {
  eventSource: 'aws:kafka' | 'SelfManagedKafka';
  eventSourceArn?: string;
  bootstrapServers?: string;
  records: Record<string, MskRecord[]>;
}

/** Which record failed: Lambda retries from it (per partition). */
export interface BatchItemFailure {
  itemIdentifier: { partition: string; offset: number };
}

/** The partial-failure answer of an MSK-triggered handler. Empty list: the whole batch succeeded. */
export interface BatchResponse {
  batchItemFailures: BatchItemFailure[];
}

/** The EventBridge (Scheduler or rule) event that triggers the periodic functions. */
export interface ScheduledEvent {
  version: '0';
  id: string;
  'detail-type': 'Scheduled Event';
  source: 'aws.events' | 'aws.scheduler';
  account: string;
  time: string;
  region: string;
  resources: string[];
  detail: Record<string, unknown>;
}

/** A decoded record: bytes, not base64; headers as strings. */
export interface DecodedRecord {
  topic: string;
  partition: number;
  offset: number;
  timestamp: number;
  key?: Buffer;
  value: Buffer;
  headers: Record<string, string>;
}

/** The `<topic>-<partition>` group key Lambda uses. */
export function recordGroupKey(topic: string, partition: number): string {
  return `${topic}-${partition}`;
}

/**
 * Decodes every record of an event, in group order then offset order. A record without a value (a
 * tombstone) decodes to an empty buffer, which the monitors reject as invalid JSON.
 */
export function decodeMskEvent(event: MskEvent): DecodedRecord[] {
  const out: DecodedRecord[] = [];
  for (const group of Object.values(event.records ?? {})) {
    for (const r of group) {
      const headers: Record<string, string> = {};
      for (const h of r.headers ?? []) {
        for (const [name, bytes] of Object.entries(h)) {
          // Header bytes can arrive signed (Java bytes): normalise with & 0xff.
          headers[name] = Buffer.from(bytes.map((b) => b & 0xff)).toString('utf8');
        }
      }
      out.push({
        topic: r.topic,
        partition: r.partition,
        offset: Number(r.offset),
        timestamp: Number(r.timestamp),
        key: r.key === undefined || r.key === null ? undefined : Buffer.from(r.key, 'base64'),
        value: r.value === undefined || r.value === null ? Buffer.alloc(0) : Buffer.from(r.value, 'base64'),
        headers,
      });
    }
  }
  return out;
}

/** Builds the MSK event Lambda would deliver for these records (the local runtime and tests use it). */
export function encodeMskEvent(
  records: {
    topic: string;
    partition: number;
    offset: number;
    timestamp?: number;
    key?: Buffer | null;
    value?: Buffer | null;
    headers?: Record<string, Buffer | string | undefined>;
  }[],
  bootstrapServers?: string,
): MskEvent {
  const groups: Record<string, MskRecord[]> = {};
  for (const r of records) {
    const k = recordGroupKey(r.topic, r.partition);
    const group = groups[k] ?? [];
    const rec: MskRecord = {
      topic: r.topic,
      partition: r.partition,
      offset: r.offset,
      timestamp: r.timestamp ?? Date.now(),
      timestampType: 'CREATE_TIME',
      headers: Object.entries(r.headers ?? {})
        .filter(([, v]) => v !== undefined)
        .map(([name, v]) => ({ [name]: [...Buffer.from(v as Buffer | string)] })),
    };
    if (r.key) rec.key = r.key.toString('base64');
    if (r.value) rec.value = r.value.toString('base64');
    group.push(rec);
    groups[k] = group;
  }
  for (const g of Object.values(groups)) g.sort((a, b) => a.offset - b.offset);
  return { eventSource: 'aws:kafka', bootstrapServers, records: groups };
}

/** The scheduled event EventBridge Scheduler sends (the local runtime's timers send the same). */
export function scheduledEvent(now = new Date(), region = 'local'): ScheduledEvent {
  return {
    version: '0',
    id: `local-${now.getTime()}`,
    'detail-type': 'Scheduled Event',
    source: 'aws.scheduler',
    account: '000000000000',
    time: now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region,
    resources: [],
    detail: {},
  };
}
