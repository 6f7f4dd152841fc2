/**
 * A {@link MessageSink} that gathers the messages of many callers for a few milliseconds and stores them with one
 * send of the sink below: one produce request (and one broker write) for many pages instead of one each. Each
 * caller's promise settles when the send holding its messages does, so a crawler still acks a request only after
 * its page is stored (at-least-once is kept).
 *
 * A send that fails as poison (lib/errors.ts `failureCause`: e.g. a message the broker refuses) is retried message
 * by message, so one bad message fails only its own caller; an infrastructure failure fails every caller of that
 * send (each then acts on it, e.g. releases its request).
 */
import { failureCause } from '../errors.ts';
import type { MessageSink, OutMessage } from '../ports.ts';

export interface BatchingSinkOptions {
  /** How long the first message of a batch waits for others (ms). */
  lingerMs: number;
  /** A batch is sent at once when it holds this many messages. @default 500 */
  maxMessages?: number;
  /**
   * ... or this many bytes (values, keys, headers and per-record overhead); no batch grows past it unless one
   * message alone does. Keep it under the broker's `max.message.bytes`, which bounds a whole record batch.
   * @default 900,000
   */
  maxBytes?: number;
}

interface Pending {
  topic: string;
  message: OutMessage;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export interface BatchingSink extends MessageSink {
  /** Sends what is waiting now (stop: nothing may wait for a timer). Resolves when that send settled. */
  flush(): Promise<void>;
  /** Sends made to the sink below (for tests and stats). */
  readonly sends: number;
}

/** A record's size in a batch: its value and key, its headers, and a record's own overhead (generously). */
function messageBytes(m: OutMessage): number {
  const size = (v: string | Buffer | null | undefined) =>
    v === null || v === undefined ? 0 : typeof v === 'string' ? Buffer.byteLength(v) : v.byteLength;
  let headers = 0;
  for (const [k, v] of Object.entries(m.headers ?? {})) headers += size(k) + size(v) + 8;
  return size(m.value) + size(m.key) + headers + RECORD_OVERHEAD_BYTES;
}

/** Bytes a record adds to a batch beyond its key, value and headers (varints, attributes, deltas). */
const RECORD_OVERHEAD_BYTES = 64;

/** Groups pending messages by topic, in arrival order. */
function byTopic(pending: Pending[]): { topic: string; messages: OutMessage[] }[] {
  const topics = new Map<string, OutMessage[]>();
  for (const p of pending) {
    const list = topics.get(p.topic);
    if (list) list.push(p.message);
    else topics.set(p.topic, [p.message]);
  }
  return [...topics].map(([topic, messages]) => ({ topic, messages }));
}

export function batchingSink(inner: MessageSink, options: BatchingSinkOptions): BatchingSink {
  const maxMessages = options.maxMessages ?? 500;
  const maxBytes = options.maxBytes ?? 900_000;
  let pending: Pending[] = [];
  let bytes = 0;
  let timer: NodeJS.Timeout | undefined;
  let sends = 0;

  const sendBatch = async (batch: Pending[]): Promise<void> => {
    try {
      sends++;
      await inner.send(byTopic(batch));
      for (const p of batch) p.resolve();
    } catch (error) {
      if (batch.length > 1 && failureCause(error) === 'poison') {
        await Promise.all(
          batch.map(async (p) => {
            try {
              sends++;
              await inner.send([{ topic: p.topic, messages: [p.message] }]);
              p.resolve();
            } catch (one) {
              p.reject(one);
            }
          }),
        );
        return;
      }
      for (const p of batch) p.reject(error);
    }
  };

  const flush = (): Promise<void> => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    const batch = pending;
    pending = [];
    bytes = 0;
    return batch.length > 0 ? sendBatch(batch) : Promise.resolve();
  };

  return {
    get sends() {
      return sends;
    },
    flush,
    async send(batch) {
      const settled: Promise<void>[] = [];
      for (const { topic, messages } of batch) {
        for (const message of messages) {
          const size = messageBytes(message);
          // A batch never grows past maxBytes (unless one message alone does): the broker's max.message.bytes
          // bounds a whole record batch, so pages that each fit would be refused together.
          if (pending.length > 0 && bytes + size > maxBytes) void flush();
          settled.push(new Promise<void>((resolve, reject) => pending.push({ topic, message, resolve, reject })));
          bytes += size;
        }
      }
      if (settled.length === 0) return;
      if (pending.length >= maxMessages || bytes >= maxBytes || options.lingerMs <= 0) void flush();
      else timer ??= setTimeout(() => void flush(), options.lingerMs);
      await Promise.all(settled);
    },
  };
}
