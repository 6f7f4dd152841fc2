/**
 * The MSK event adapter of the MSK-triggered functions (kafka-monitor, redis-monitor): Lambda's event, typed with
 * `@types/aws-lambda`, decoded into the core's {@link DecodedRecord}s, and the core's failed records turned into
 * Lambda's partial batch response. The event shape lives here, with the handlers, and not in `lib/`: the core
 * speaks only its own record type (docs/style.md §3). The encoder builds the same event from plain records for the
 * local runtime (localstack/runtime/msk-source.ts), the tests and the benchmarks.
 *
 * What Lambda sends (the MSK event source documentation; events/kafka-monitor.json is a real-shaped sample): records grouped under `<topic>-<partition>`, each group in
 * offset order; key and value base64, header values byte arrays. `@types/aws-lambda` declares `key` and `value`
 * as always present, but Lambda leaves `key` out for a record without one and `value` out for a tombstone: the
 * decoder checks both.
 */
import type { MSKEvent, MSKRecord } from 'aws-lambda';
import type { DecodedRecord } from '../../lib/kafka/record.ts';

/**
 * The partial batch response of an MSK-triggered handler: Lambda retries each named partition from the offset
 * given. Empty list: the whole batch succeeded.
 *
 * Declared here because `@types/aws-lambda` has none for Kafka: its `MSKHandler` returns `void`, and its batch
 * item failure types (SQS, Kinesis, DynamoDB) identify an item by a string, where MSK takes
 * `{partition: "<topic>-<partition>", offset}`.
 */
export interface MskBatchResponse {
  batchItemFailures: { itemIdentifier: { partition: string; offset: number } }[];
}

/** Placeholder `eventSourceArn` of the events built by {@link encodeMskEvent} (no handler reads it). */
const LOCAL_MSK_CLUSTER_ARN = 'arn:aws:kafka:local:000000000000:cluster/crawl-cluster-local/local';

/** The `<topic>-<partition>` group key Lambda uses, in the event and in batch item failures. */
export function recordGroupKey(topic: string, partition: number): string {
  return `${topic}-${partition}`;
}

/**
 * Decodes every record of an event, in group order then offset order. A record without a value (a tombstone)
 * decodes to an empty buffer, which the monitors reject as invalid JSON.
 */
export function decodeMskEvent(event: MSKEvent): DecodedRecord[] {
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
      // Either can be absent on the wire, whatever the declared type says (module comment).
      const key: string | undefined | null = r.key;
      const value: string | undefined | null = r.value;
      out.push({
        topic: r.topic,
        partition: r.partition,
        offset: Number(r.offset),
        timestamp: Number(r.timestamp),
        key: key === undefined || key === null ? undefined : Buffer.from(key, 'base64'),
        value: value === undefined || value === null ? Buffer.alloc(0) : Buffer.from(value, 'base64'),
        headers,
      });
    }
  }
  return out;
}

/** The partial batch response naming these failed records (one entry per record; Lambda retries from the lowest). */
function toBatchResponse(failures: DecodedRecord[]): MskBatchResponse {
  return {
    batchItemFailures: failures.map((r) => ({
      itemIdentifier: { partition: recordGroupKey(r.topic, r.partition), offset: r.offset },
    })),
  };
}

/** Thrown by {@link batchResult} in on-demand mode: Lambda retries the whole batch. */
export class BatchFailedError extends Error {
  constructor(failures: DecodedRecord[]) {
    const first = failures[0];
    super(
      `${failures.length} record(s) failed (first ${first ? `${recordGroupKey(first.topic, first.partition)}@${first.offset}` : '-'}); the batch is retried`,
    );
    this.name = 'BatchFailedError';
  }
}

/**
 * What an MSK-triggered handler answers for its failed records. With provisioned pollers the event source reports
 * batch item failures, so Lambda retries from the first failed record of each partition ({@link toBatchResponse}).
 * On-demand event sources ignore that answer and would commit the batch, records that failed on a Redis or Kafka
 * outage included: there a failure throws instead, and Lambda retries the whole batch. That is safe because the
 * handlers are idempotent (a retried request is a duplicate, a retried reply the same reply) and never fail a record
 * for its content (poison is answered with a rejection).
 * @param mode the event sources' mode: the handler's `MSK_EVENT_SOURCE_MODE` (lib/config/variables.ts, set by the
 * stack from context `eventSourceMode`); unset means provisioned, the stack's default
 * @throws BatchFailedError in on-demand mode when any record failed
 */
export function batchResult(failures: DecodedRecord[], mode: string | undefined): MskBatchResponse {
  if (mode === 'on-demand' && failures.length > 0) throw new BatchFailedError(failures);
  return toBatchResponse(failures);
}

/** One record for {@link encodeMskEvent}. */
export interface MskRecordInput {
  topic: string;
  partition: number;
  offset: number;
  /** Epoch ms. @default now */
  timestamp?: number;
  key?: Buffer | null;
  value?: Buffer | null;
  headers?: Record<string, Buffer | string | undefined>;
}

/**
 * Builds the MSK event Lambda would deliver for these records (the local runtime, tests and benchmarks use it):
 * grouped and sorted as Lambda does, `key` / `value` left out when null as Lambda does. `bootstrapServers`
 * defaults to empty and `eventSourceArn` is {@link LOCAL_MSK_CLUSTER_ARN}: the handlers read neither.
 */
export function encodeMskEvent(records: MskRecordInput[], bootstrapServers = ''): MSKEvent {
  const groups: Record<string, MSKRecord[]> = {};
  for (const r of records) {
    const k = recordGroupKey(r.topic, r.partition);
    const group = groups[k] ?? [];
    const rec: Omit<MSKRecord, 'key' | 'value'> & Partial<Pick<MSKRecord, 'key' | 'value'>> = {
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
    // What Lambda sends, which @types/aws-lambda types too strictly (module comment).
    group.push(rec as MSKRecord);
    groups[k] = group;
  }
  for (const g of Object.values(groups)) g.sort((a, b) => a.offset - b.offset);
  return { eventSource: 'aws:kafka', eventSourceArn: LOCAL_MSK_CLUSTER_ARN, bootstrapServers, records: groups };
}
