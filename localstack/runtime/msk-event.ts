/**
 * What the local MSK event source (msk-source.ts) does with one batch of records: the MSK event Lambda would get
 * (functions/shared/msk.ts's encoder, repeated header names as Lambda sends them), and the handler's answer read
 * per partition (`batchItemFailures`: where redelivery starts).
 */
import type { MSKEvent } from 'aws-lambda';
import { encodeMskEvent, type MskBatchResponse, recordGroupKey } from '../../functions/shared/msk.ts';
import type { IHeaders, KafkaMessage } from '../../lib/kafka/types.ts';

export interface Buffered {
  partition: number;
  message: KafkaMessage;
}

/** Per partition of one event: its offset range and, when it failed, where redelivery starts. */
export interface PartitionOutcome {
  first: number;
  last: number;
  failedFrom?: number;
}

/** Builds the event; header names that occur more than once become one `{name: bytes}` entry each, as on Lambda. */
export function toMskEvent(topic: string, records: Buffered[], bootstrapServers: string | undefined): MSKEvent {
  const event = encodeMskEvent(
    records.map(({ partition, message }) => ({
      topic,
      partition,
      offset: Number(message.offset),
      timestamp: Number(message.timestamp),
      key: message.key,
      value: message.value,
      headers: singleHeaders(message.headers),
    })),
    bootstrapServers,
  );
  for (const { partition, message } of records) {
    const headers = message.headers ?? {};
    if (!Object.values(headers).some(Array.isArray)) continue;
    const offset = Number(message.offset);
    const record = event.records[recordGroupKey(topic, partition)]?.find((r) => r.offset === offset);
    if (!record) continue;
    record.headers = Object.entries(headers).flatMap(([name, v]) =>
      (Array.isArray(v) ? v : v === undefined ? [] : [v]).map((one) => ({ [name]: [...Buffer.from(one)] })),
    );
  }
  return event;
}

function singleHeaders(headers: IHeaders | undefined): Record<string, Buffer | string | undefined> {
  const out: Record<string, Buffer | string | undefined> = {};
  for (const [name, v] of Object.entries(headers ?? {})) out[name] = Array.isArray(v) ? v[0] : v;
  return out;
}

export function partitionsOf(records: Buffered[]): Map<number, PartitionOutcome> {
  const outcomes = new Map<number, PartitionOutcome>();
  for (const { partition, message } of records) {
    const offset = Number(message.offset);
    const o = outcomes.get(partition);
    if (!o) outcomes.set(partition, { first: offset, last: offset });
    else {
      o.first = Math.min(o.first, offset);
      o.last = Math.max(o.last, offset);
    }
  }
  return outcomes;
}

/**
 * Marks the failed partitions of `outcomes` from the handler's answer (lowest failed offset per partition).
 * @returns a description of what is wrong with the answer, or undefined when it is usable
 */
export function applyItemFailures(
  topic: string,
  outcomes: Map<number, PartitionOutcome>,
  response: unknown,
): string | undefined {
  if (response === undefined || response === null) return undefined;
  const failures = (response as Partial<MskBatchResponse>).batchItemFailures;
  if (failures === undefined || failures === null) return undefined;
  if (!Array.isArray(failures)) return 'batchItemFailures is not an array';
  const byKey = new Map<string, number>();
  for (const partition of outcomes.keys()) byKey.set(recordGroupKey(topic, partition), partition);
  for (const failure of failures) {
    const id = failure?.itemIdentifier;
    const partition = typeof id?.partition === 'string' ? byKey.get(id.partition) : undefined;
    const offset = Number(id?.offset);
    const o = partition === undefined ? undefined : outcomes.get(partition);
    if (!o || !Number.isInteger(offset) || offset < o.first || offset > o.last) {
      return `batch item failure ${JSON.stringify(id ?? null)} names no record of the event`;
    }
    o.failedFrom = Math.min(o.failedFrom ?? offset, offset);
  }
  return undefined;
}
