/**
 * lib/kafka/batching-sink.ts over a small in-memory sink of our own: many callers' messages in one send, each
 * caller settled only when that send is, poison isolated message by message, infrastructure failing the batch.
 */
import { describe, expect, it } from 'vitest';
import { InfrastructureError } from '../../lib/errors.ts';
import { batchingSink } from '../../lib/kafka/batching-sink.ts';
import type { MessageSink, OutMessage } from '../../lib/ports.ts';

type Batch = { topic: string; messages: OutMessage[] }[];

/** Records every send; `fail` decides per send whether (and how) it throws; `gate` holds sends until opened. */
class RecordingSink implements MessageSink {
  readonly sends: Batch[] = [];
  fail: (batch: Batch) => Error | undefined = () => undefined;
  gate: Promise<void> = Promise.resolve();
  async send(batch: Batch): Promise<void> {
    this.sends.push(batch);
    await this.gate;
    const error = this.fail(batch);
    if (error) throw error;
  }
}

const values = (b: Batch) => b.flatMap((t) => t.messages.map((m) => `${t.topic}:${String(m.value)}`));

describe('batchingSink', () => {
  it('sends the messages of concurrent callers once the linger passes, grouped by topic, in arrival order', async () => {
    const inner = new RecordingSink();
    const sink = batchingSink(inner, { lingerMs: 20 });
    await Promise.all([
      sink.send([{ topic: 'pages', messages: [{ value: 'p1' }] }]),
      sink.send([{ topic: 'pages', messages: [{ value: 'p2' }] }]),
      sink.send([{ topic: 'notices', messages: [{ value: 'n1' }] }]),
      sink.send([{ topic: 'pages', messages: [{ value: 'p3' }] }]),
    ]);
    expect(inner.sends).toHaveLength(1);
    expect(inner.sends[0]?.map((t) => t.topic)).toEqual(['pages', 'notices']);
    expect(values(inner.sends[0] as Batch)).toEqual(['pages:p1', 'pages:p2', 'pages:p3', 'notices:n1']);
    expect(sink.sends).toBe(1);
  });

  it('settles a caller only when the send holding its message is stored', async () => {
    const inner = new RecordingSink();
    let open = () => {};
    inner.gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const sink = batchingSink(inner, { lingerMs: 1 });
    let stored = false;
    const sent = sink.send([{ topic: 'pages', messages: [{ value: 'p' }] }]).then(() => {
      stored = true;
    });
    await new Promise((r) => setTimeout(r, 30));
    expect(inner.sends).toHaveLength(1);
    expect(stored).toBe(false);
    open();
    await sent;
    expect(stored).toBe(true);
  });

  it('sends at once when a batch reaches maxMessages or maxBytes, and per call with lingerMs 0', async () => {
    const byCount = new RecordingSink();
    const a = batchingSink(byCount, { lingerMs: 60_000, maxMessages: 3 });
    await Promise.all([1, 2, 3].map((i) => a.send([{ topic: 't', messages: [{ value: `m${i}` }] }])));
    expect(byCount.sends).toHaveLength(1);

    const bySize = new RecordingSink();
    const b = batchingSink(bySize, { lingerMs: 60_000, maxBytes: 10 });
    await b.send([{ topic: 't', messages: [{ value: Buffer.alloc(11) }] }]);
    expect(bySize.sends).toHaveLength(1);

    const none = new RecordingSink();
    const c = batchingSink(none, { lingerMs: 0 });
    await Promise.all([1, 2].map((i) => c.send([{ topic: 't', messages: [{ value: `m${i}` }] }])));
    expect(none.sends).toHaveLength(2);
  });

  it('never lets a batch grow past maxBytes: pages that each fit the broker limit are not sent together beyond it', async () => {
    const inner = new RecordingSink();
    // Each message counts 50 bytes of value plus 64 of record overhead: two fit in 300, three do not.
    const sink = batchingSink(inner, { lingerMs: 20, maxBytes: 300 });
    await Promise.all(['a', 'b', 'c'].map((v) => sink.send([{ topic: 't', messages: [{ value: v.repeat(50) }] }])));
    expect(inner.sends.map((b) => values(b).map((x) => x.slice(0, 3)))).toEqual([['t:a', 't:b'], ['t:c']]);
  });

  it('retries a batch refused as poison message by message: only the bad message fails its caller', async () => {
    const inner = new RecordingSink();
    inner.fail = (batch) =>
      values(batch).includes('t:bad')
        ? new RangeError('The request included a message larger than allowed')
        : undefined;
    const sink = batchingSink(inner, { lingerMs: 5 });
    const results = await Promise.allSettled(
      ['ok1', 'bad', 'ok2'].map((v) => sink.send([{ topic: 't', messages: [{ value: v }] }])),
    );
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    // One batch, then one send per message.
    expect(inner.sends.map((b) => values(b))).toEqual([['t:ok1', 't:bad', 't:ok2'], ['t:ok1'], ['t:bad'], ['t:ok2']]);
  });

  it('fails every caller of a batch that failed on infrastructure, without retrying it', async () => {
    const inner = new RecordingSink();
    inner.fail = () => new InfrastructureError('Kafka is unreachable');
    const sink = batchingSink(inner, { lingerMs: 5 });
    const results = await Promise.allSettled(
      ['a', 'b'].map((v) => sink.send([{ topic: 't', messages: [{ value: v }] }])),
    );
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(inner.sends).toHaveLength(1);
  });

  it('flush sends what waits now, without waiting for the linger', async () => {
    const inner = new RecordingSink();
    const sink = batchingSink(inner, { lingerMs: 60_000 });
    const sent = sink.send([{ topic: 't', messages: [{ value: 'x' }] }]);
    await sink.flush();
    await sent;
    expect(inner.sends).toHaveLength(1);
  });
});
