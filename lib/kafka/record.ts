/**
 * One Kafka record as the core consumes it: bytes, not base64; headers as strings. The core speaks only this
 * shape. Whatever delivered the record (Lambda's MSK event, decoded in functions/shared/msk.ts; a kafkajs
 * consumer) translates to it, so `lib/` never names a Lambda event type (docs/style.md §3).
 */
export interface DecodedRecord {
  topic: string;
  partition: number;
  offset: number;
  /** Epoch ms. */
  timestamp: number;
  key?: Buffer;
  /** Empty for a record without a value (a tombstone). */
  value: Buffer;
  headers: Record<string, string>;
}
