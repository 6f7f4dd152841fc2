/**
 * `crawl-cluster feed -f`'s loop: reads requests one line at a time, validates each, skips the invalid ones (each is
 * reported with its line) and hands the valid ones to a {@link FeedBatcher}. The reader is any async iterable of
 * lines (readline over a file or stdin), pulled only as fast as the batcher accepts, so nothing holds the input.
 */
import type { RequestType } from '../lib/schemas/index.ts';
import type { FeedBatcher } from './feed-batcher.ts';
import { type FeedItem, type FeedRejection, isRejection, validateRequest } from './feed-validate.ts';

/** Counts of a feed as it runs, read by the progress line and the final report. */
export class FeedTally {
  /** Lines read, blank ones included. */
  lines = 0;
  /** Requests that passed validation (sent, in flight or waiting for their batch). */
  valid = 0;
  /** Lines skipped as invalid requests. */
  invalid = 0;
  readonly byType = new Map<RequestType, number>();
  readonly startedAt: number;

  constructor(now = Date.now()) {
    this.startedAt = now;
  }
}

/** What {@link streamFeed} reports as it goes. */
export interface FeedStreamHooks {
  /** A line that failed validation; it is skipped. */
  invalid(rejection: FeedRejection): void;
  /** A valid request, just before it is batched. */
  valid?(item: FeedItem): void;
  /**
   * Awaited once, before the first valid request is batched (connect to Kafka): input with no valid request never
   * needs the cluster.
   */
  ready?(): Promise<void>;
}

/**
 * Feeds every line of `lines` (blank ones are skipped), then waits until the broker acknowledged all.
 * @throws FeedSendError when a batch failed; the error says the last line up to which all is stored
 */
export async function streamFeed(
  lines: AsyncIterable<string>,
  batcher: FeedBatcher,
  tally: FeedTally,
  hooks: FeedStreamHooks,
): Promise<void> {
  for await (const text of lines) {
    const line = ++tally.lines;
    if (text.trim() === '') continue;
    const result = validateRequest(text, line);
    if (isRejection(result)) {
      tally.invalid++;
      hooks.invalid(result);
      continue;
    }
    if (tally.valid === 0) await hooks.ready?.();
    tally.valid++;
    tally.byType.set(result.type, (tally.byType.get(result.type) ?? 0) + 1);
    hooks.valid?.(result);
    await batcher.add(result);
  }
  await batcher.flush();
}
