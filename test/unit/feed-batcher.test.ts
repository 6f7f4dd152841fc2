/**
 * `feed -f`'s batching (cli/feed-batcher.ts) and line loop (cli/feed-stream.ts) with an in-memory send: bounded
 * batches, one in flight, and the line up to which everything is stored when a send fails or never answers.
 */
import { describe, expect, it } from 'vitest';
import { FeedBatcher, type FeedBatchSend, type FeedMessage, FeedSendError } from '../../cli/feed-batcher.ts';
import { FeedTally, streamFeed } from '../../cli/feed-stream.ts';
import type { FeedItem, FeedRejection } from '../../cli/feed-validate.ts';

function item(line: number, value = `{"n":${line}}`): FeedItem {
  return { line, type: 'crawl', appid: 'app', value };
}

function request(n: number): string {
  return JSON.stringify({ appid: 'app', crawlid: `c${n}`, url: `http://example.com/${n}` });
}

async function* linesOf(lines: string[]): AsyncIterable<string> {
  yield* lines;
}

/** A send that records each batch and resolves when told, to observe what is in flight. */
function heldSend(): { send: FeedBatchSend; batches: FeedMessage[][]; release(): void; pending(): number } {
  const batches: FeedMessage[][] = [];
  const waiting: (() => void)[] = [];
  return {
    batches,
    send: (messages) => {
      batches.push(messages);
      return new Promise<void>((resolve) => waiting.push(resolve));
    },
    release: () => {
      for (const resolve of waiting.splice(0)) resolve();
    },
    pending: () => waiting.length,
  };
}

describe('FeedBatcher', () => {
  it('sends batches of at most maxMessages, in order, and every item exactly once', async () => {
    const batches: FeedMessage[][] = [];
    const batcher = new FeedBatcher(
      async (m) => {
        batches.push(m);
      },
      { maxMessages: 3 },
    );
    for (let line = 1; line <= 8; line++) await batcher.add(item(line));
    await batcher.flush();
    expect(batches.map((b) => b.length)).toEqual([3, 3, 2]);
    expect(batches.flat().map((m) => m.value)).toEqual([1, 2, 3, 4, 5, 6, 7, 8].map((n) => `{"n":${n}}`));
    expect(batcher.acked).toBe(8);
    expect(batcher.ackedThroughLine).toBe(8);
  });

  it('cuts a batch at maxBytes of keys and values, and sends a larger request alone', async () => {
    const batches: FeedMessage[][] = [];
    const batcher = new FeedBatcher(
      async (m) => {
        batches.push(m);
      },
      { maxBytes: 100 },
    );
    // 'app' + 40 bytes = 43 per item: two fit in 100 bytes, three do not.
    for (let line = 1; line <= 3; line++) await batcher.add(item(line, 'x'.repeat(40)));
    await batcher.add(item(4, 'y'.repeat(500)));
    await batcher.add(item(5, 'x'.repeat(40)));
    await batcher.flush();
    expect(batches.map((b) => b.length)).toEqual([2, 1, 1, 1]);
  });

  it('keeps one batch in flight: the add that fills the next batch waits until the first is acknowledged', async () => {
    const held = heldSend();
    const batcher = new FeedBatcher(held.send, { maxMessages: 2 });
    await batcher.add(item(1));
    await batcher.add(item(2));
    await batcher.add(item(3)); // batch [1,2] goes out
    expect(held.batches).toHaveLength(1);
    expect(batcher.inFlight).toBe(2);
    await batcher.add(item(4));
    let added = false;
    const fifth = batcher.add(item(5)).then(() => {
      added = true;
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(added).toBe(false);
    expect(held.batches).toHaveLength(1);
    held.release();
    await fifth;
    expect(held.batches).toHaveLength(2);
    expect(batcher.acked).toBe(2);
    const flushed = batcher.flush();
    await new Promise((r) => setTimeout(r, 0));
    held.release();
    await new Promise((r) => setTimeout(r, 0));
    held.release();
    await flushed;
    expect(batcher.acked).toBe(5);
  });

  it('on a failed send says the last line up to which every request is stored, and sends nothing after', async () => {
    let calls = 0;
    const batcher = new FeedBatcher(
      async () => {
        calls++;
        if (calls === 2) throw new Error('broker went away');
      },
      { maxMessages: 2 },
    );
    const lines = [1, 2, 5, 6, 7, 9]; // 3, 4 and 8 held no request
    let error: unknown;
    try {
      for (const line of lines) await batcher.add(item(line));
      await batcher.flush();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(FeedSendError);
    const e = error as FeedSendError;
    expect(e.message).toBe('broker went away');
    expect(e.ackedRequests).toBe(2);
    expect(e.ackedThroughLine).toBe(4);
    expect(e.failedFromLine).toBe(5);
    expect(e.failedRequests).toBe(2);
    expect(calls).toBe(2);
  });

  it('gives up on a send that never answers after sendTimeoutMs', async () => {
    const batcher = new FeedBatcher(() => new Promise<void>(() => {}), { maxMessages: 1, sendTimeoutMs: 50 });
    const started = Date.now();
    await batcher.add(item(1));
    await batcher.add(item(2));
    const error = await batcher.flush().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FeedSendError);
    expect((error as FeedSendError).message).toBe('no answer within 0.05 s');
    expect((error as FeedSendError).ackedThroughLine).toBe(0);
    expect(Date.now() - started).toBeLessThan(1000);
  });
});

describe('streamFeed', () => {
  it('numbers lines from 1, skips blank lines, reports invalid ones and sends the valid ones once', async () => {
    const sent: FeedMessage[] = [];
    const invalid: FeedRejection[] = [];
    const tally = new FeedTally();
    const batcher = new FeedBatcher(
      async (m) => {
        sent.push(...m);
      },
      { maxMessages: 2 },
    );
    let readyCalls = 0;
    await streamFeed(linesOf([request(1), '', '{oops', request(4), '   ', request(6)]), batcher, tally, {
      invalid: (r) => invalid.push(r),
      ready: async () => {
        readyCalls++;
      },
    });
    expect(sent.map((m) => JSON.parse(m.value).crawlid)).toEqual(['c1', 'c4', 'c6']);
    expect(sent.every((m) => m.key === 'app')).toBe(true);
    expect(invalid.map((r) => [r.line, r.error])).toEqual([[3, 'invalid_json']]);
    expect({ lines: tally.lines, valid: tally.valid, invalid: tally.invalid }).toEqual({
      lines: 6,
      valid: 3,
      invalid: 1,
    });
    expect(tally.byType.get('crawl')).toBe(3);
    expect(readyCalls).toBe(1);
  });

  it('never gets ready (connects) for input without a valid request', async () => {
    let ready = false;
    const batcher = new FeedBatcher(async () => {});
    await streamFeed(linesOf(['{"appid":"x"}', '']), batcher, new FeedTally(), {
      invalid: () => {},
      ready: async () => {
        ready = true;
      },
    });
    expect(ready).toBe(false);
  });

  it('pulls lines only as fast as batches are acknowledged', async () => {
    const held = heldSend();
    let pulled = 0;
    async function* counted(): AsyncIterable<string> {
      for (let n = 1; n <= 100; n++) {
        pulled = n;
        yield request(n);
      }
    }
    const done = streamFeed(counted(), new FeedBatcher(held.send, { maxMessages: 10 }), new FeedTally(), {
      invalid: () => {},
    });
    await new Promise((r) => setTimeout(r, 20));
    // One batch in flight, one full batch waiting for it, and the line that did not fit.
    expect(pulled).toBe(21);
    while (held.pending() > 0 || pulled < 100) {
      held.release();
      await new Promise((r) => setTimeout(r, 1));
    }
    held.release();
    await done;
    expect(held.batches.flat()).toHaveLength(100);
  });
});
