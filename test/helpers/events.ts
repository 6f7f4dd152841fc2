/**
 * Sample events for the handler tests: the real-shaped files under `events/` (events/README.md), builders
 * for MSK events of chosen records, and a minimal Lambda context for invoking the middy handlers. Events are
 * typed with `@types/aws-lambda` (`MSKEvent`, `ScheduledEvent`), as the handlers take them; the encoding and
 * decoding are the functions' own (functions/shared/msk.ts).
 */
import { readFileSync } from 'node:fs';
import type { MSKEvent } from 'aws-lambda';
import { decodeMskEvent, encodeMskEvent } from '../../functions/shared/msk.ts';
import type { DecodedRecord } from '../../lib/kafka/record.ts';

const EVENTS_DIR = new URL('../../events/', import.meta.url);

/**
 * Reads `events/<name>.json` from the repository root, fresh on every call (tests may modify it), as `T`:
 * `MSKEvent` for `kafka-monitor` and `redis-monitor`, `ScheduledEvent` for `scheduled` (nothing checks the file
 * against the type).
 */
export function loadEvent<T = unknown>(name: string): T {
  return JSON.parse(readFileSync(new URL(`${name}.json`, EVENTS_DIR), 'utf8')) as T;
}

/** Record timestamps of built events (epoch ms): fixed so built events are reproducible. */
const RECORD_TIME = Date.UTC(2026, 10, 22, 14, 59, 0);

/** Where the records of {@link mskEventOf} go. */
export interface MskEventOptions {
  /** @default 0 */
  partition?: number;
  /** Offset of the first value; the others follow one by one. @default 0 */
  firstOffset?: number;
  /** Key of every record. @default none */
  key?: string;
}

function valueBytes(value: string | Buffer | object): Buffer {
  if (Buffer.isBuffer(value)) return value;
  return Buffer.from(typeof value === 'string' ? value : JSON.stringify(value), 'utf8');
}

/**
 * The MSK event Lambda would deliver for these values on one partition of `topic`: a string is sent as is,
 * a Buffer as its bytes, anything else as its JSON.
 */
function mskEventOf(topic: string, values: (string | Buffer | object)[], options: MskEventOptions = {}): MSKEvent {
  const { partition = 0, firstOffset = 0, key } = options;
  return encodeMskEvent(
    values.map((value, i) => ({
      topic,
      partition,
      offset: firstOffset + i,
      timestamp: RECORD_TIME + i,
      key: key === undefined ? null : Buffer.from(key),
      value: valueBytes(value),
    })),
  );
}

/** The decoded records of {@link mskEventOf}, as the monitors receive them. */
export function recordsOf(
  topic: string,
  values: (string | Buffer | object)[],
  options: MskEventOptions = {},
): DecodedRecord[] {
  return decodeMskEvent(mskEventOf(topic, values, options));
}

/** The Lambda context the local runtime passes to handlers (one implementation, in localstack/runtime). */
export { lambdaContext } from '../../localstack/runtime/lambda-context.ts';
