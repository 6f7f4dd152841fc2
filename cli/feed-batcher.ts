/**
 * The producing side of `crawl-cluster feed -f`: requests are sent in bounded batches, one batch awaited at a time
 * while the next one fills, so memory holds at most two batches whatever the size of the input, and the reader
 * waits (backpressure) while Kafka is slower than the file. No I/O of its own: the send is injected.
 *
 * What "acknowledged" means: a batch's send resolved, i.e. the broker stored every message of it (the sink sends
 * with acks=all). Batches are sent in order, one at a time, so every request before the first batch that failed is
 * stored. The failed batch itself may be partly stored (it spans partitions, and each partition answers alone).
 */
import { InfrastructureError } from '../lib/errors.ts';
import { rejectAfter } from '../lib/timeout.ts';
import type { FeedItem } from './feed-validate.ts';

/** One Kafka message of the feed: the request, keyed by appid. */
export interface FeedMessage {
  key: string;
  value: string;
}

/** Sends one batch; resolves once the broker acknowledged all of it. */
export type FeedBatchSend = (messages: FeedMessage[]) => Promise<void>;

/** Bounds of {@link FeedBatcher}. */
export interface FeedBatchLimits {
  /** Requests per send. @default 1000 */
  maxMessages?: number;
  /**
   * Key and value bytes per send; a single larger request goes alone. Under the broker's default
   * `message.max.bytes` (1 MiB) for the part of a batch that lands on one partition. @default 524288
   */
  maxBytes?: number;
  /** The longest wait for one send's acknowledgement before the feed stops. @default 12000 */
  sendTimeoutMs?: number;
}

export const DEFAULT_FEED_BATCH_MESSAGES = 1000;
const DEFAULT_FEED_BATCH_BYTES = 512 * 1024;
const DEFAULT_FEED_SEND_TIMEOUT_MS = 12_000;

/**
 * A send failed or was not acknowledged in time. Every request on a line up to {@link ackedThroughLine} is stored;
 * requests from {@link failedFromLine} on may be partly stored (the failed batch) or not sent at all.
 */
export class FeedSendError extends InfrastructureError {
  /** Requests the broker acknowledged before the failure. */
  readonly ackedRequests: number;
  /** The last line up to which every request is stored (0: none); resend from the next line. */
  readonly ackedThroughLine: number;
  /** The first line of the batch that failed. */
  readonly failedFromLine: number;
  /** Requests in the batch that failed (the most that may be stored twice on a resend). */
  readonly failedRequests: number;

  constructor(
    reason: string,
    state: { ackedRequests: number; ackedThroughLine: number; failedFromLine: number; failedRequests: number },
    options?: ErrorOptions,
  ) {
    super(reason, options);
    this.ackedRequests = state.ackedRequests;
    this.ackedThroughLine = state.ackedThroughLine;
    this.failedFromLine = state.failedFromLine;
    this.failedRequests = state.failedRequests;
  }
}

interface InFlight {
  items: FeedItem[];
  done: Promise<void>;
}

export class FeedBatcher {
  readonly #send: FeedBatchSend;
  readonly #maxMessages: number;
  readonly #maxBytes: number;
  readonly #timeoutMs: number;
  #batch: FeedItem[] = [];
  #bytes = 0;
  #inFlight: InFlight | undefined;
  #acked = 0;
  #ackedThroughLine = 0;

  constructor(send: FeedBatchSend, limits: FeedBatchLimits = {}) {
    this.#send = send;
    this.#maxMessages = limits.maxMessages ?? DEFAULT_FEED_BATCH_MESSAGES;
    this.#maxBytes = limits.maxBytes ?? DEFAULT_FEED_BATCH_BYTES;
    this.#timeoutMs = limits.sendTimeoutMs ?? DEFAULT_FEED_SEND_TIMEOUT_MS;
  }

  /** Requests the broker acknowledged so far. */
  get acked(): number {
    return this.#acked;
  }

  /** Requests handed to the broker and not yet acknowledged. */
  get inFlight(): number {
    return this.#inFlight?.items.length ?? 0;
  }

  /** The last line of the last acknowledged batch (0: none yet). */
  get ackedThroughLine(): number {
    return this.#ackedThroughLine;
  }

  /**
   * Adds one request. When the batch is full it waits for the batch in flight, then starts sending the full one:
   * the caller's next read waits for Kafka.
   * @throws FeedSendError when the batch in flight failed
   */
  async add(item: FeedItem): Promise<void> {
    const bytes = Buffer.byteLength(item.value) + Buffer.byteLength(item.appid);
    if (this.#batch.length > 0 && (this.#batch.length >= this.#maxMessages || this.#bytes + bytes > this.#maxBytes)) {
      await this.#dispatch();
    }
    this.#batch.push(item);
    this.#bytes += bytes;
  }

  /**
   * Sends what is left and waits until everything is acknowledged.
   * @throws FeedSendError when a batch failed
   */
  async flush(): Promise<void> {
    if (this.#batch.length > 0) await this.#dispatch();
    await this.#settle();
  }

  async #dispatch(): Promise<void> {
    await this.#settle();
    const items = this.#batch;
    this.#batch = [];
    this.#bytes = 0;
    const messages = items.map((item) => ({ key: item.appid, value: item.value }));
    const ms = this.#timeoutMs;
    const done = rejectAfter(this.#send(messages), ms, () => new Error(`no answer within ${ms / 1000} s`));
    // Awaited in #settle; until then a failure must not surface as an unhandled rejection.
    done.catch(() => {});
    this.#inFlight = { items, done };
  }

  async #settle(): Promise<void> {
    const inFlight = this.#inFlight;
    if (inFlight === undefined) return;
    this.#inFlight = undefined;
    const { items, done } = inFlight;
    const firstLine = items[0]?.line ?? 0;
    try {
      await done;
    } catch (error) {
      throw new FeedSendError(
        (error as Error).message,
        {
          ackedRequests: this.#acked,
          // Lines between the last stored request and this batch held no request (blank or invalid).
          ackedThroughLine: Math.max(this.#ackedThroughLine, firstLine - 1),
          failedFromLine: firstLine,
          failedRequests: items.length,
        },
        { cause: error },
      );
    }
    this.#acked += items.length;
    this.#ackedThroughLine = items.at(-1)?.line ?? this.#ackedThroughLine;
  }
}
