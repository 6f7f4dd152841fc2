import { describe, expect, it } from 'vitest';
import { isTopicAbsentError, PerAppSender, perAppSenderFor } from '../../lib/kafka/per-app.ts';
import type { MessageSink, OutMessage } from '../../lib/ports.ts';
import { RecordingLog } from '../helpers/fake-stores.ts';

/** A sink where sends to `missing` topics fail as kafkajs does, after `missingDelayMs` (its metadata retries). */
class SlowMissingSink implements MessageSink {
  readonly sent: string[] = [];
  sends = 0;
  readonly missing = new Set<string>();
  missingDelayMs = 0;
  async send(batch: { topic: string; messages: OutMessage[] }[]): Promise<void> {
    this.sends++;
    for (const { topic } of batch) {
      if (this.missing.has(topic)) {
        await new Promise((r) => setTimeout(r, this.missingDelayMs));
        throw Object.assign(new Error('This server does not host this topic-partition'), {
          name: 'KafkaJSNumberOfRetriesExceeded',
        });
      }
    }
    for (const { topic, messages } of batch) for (const _ of messages) this.sent.push(topic);
  }
}

const msg = (v: string): OutMessage => ({ key: 'k', value: v });

describe('PerAppSender', () => {
  it('asks the lookup once per topic and skips copies to a missing topic in microseconds afterwards', async () => {
    const sink = new SlowMissingSink();
    const asked: string[] = [];
    const sender = new PerAppSender({
      sink,
      lookup: async (topic) => {
        asked.push(topic);
        return topic !== 'p.outbound_gone';
      },
    });
    const started = performance.now();
    for (let i = 0; i < 1000; i++) await sender.send([{ topic: 'p.outbound_gone', messages: [msg(`${i}`)] }]);
    const elapsed = performance.now() - started;

    expect(asked).toEqual(['p.outbound_gone']);
    expect(sink.sends).toBe(0);
    expect(sender.skipped).toBe(1000);
    expect(elapsed).toBeLessThan(200);
  });

  it('sends to a topic the lookup found, each topic in its own produce call, and asks about it only once', async () => {
    const sink = new SlowMissingSink();
    let lookups = 0;
    const sender = new PerAppSender({
      sink,
      lookup: async (topic) => {
        lookups++;
        return topic === 'p.outbound_here';
      },
    });
    await sender.send([
      { topic: 'p.outbound_here', messages: [msg('a')] },
      { topic: 'p.outbound_gone', messages: [msg('b')] },
    ]);
    await sender.send([{ topic: 'p.outbound_here', messages: [msg('c')] }]);

    expect(sink.sent).toEqual(['p.outbound_here', 'p.outbound_here']);
    expect(lookups).toBe(2);
  });

  it('looks a missing topic up again once the memory lapses (60 s), then sends when it exists', async () => {
    let now = 1_000_000;
    let exists = false;
    const sink = new SlowMissingSink();
    const sender = new PerAppSender({ sink, lookup: async () => exists, now: () => now });
    await sender.send([{ topic: 't', messages: [msg('1')] }]);
    exists = true;
    now += 59_000;
    await sender.send([{ topic: 't', messages: [msg('2')] }]);
    expect(sink.sent).toEqual([]);
    now += 2000;
    await sender.send([{ topic: 't', messages: [msg('3')] }]);
    expect(sink.sent).toEqual(['t']);
    expect(sender.lookups).toBe(2);
  });

  it('shares one lookup among concurrent first copies to the same topic', async () => {
    let lookups = 0;
    const sender = new PerAppSender({
      sink: new SlowMissingSink(),
      lookup: async () => {
        lookups++;
        await new Promise((r) => setTimeout(r, 20));
        return false;
      },
    });
    await Promise.all(Array.from({ length: 50 }, () => sender.send([{ topic: 't', messages: [msg('x')] }])));
    expect(lookups).toBe(1);
  });

  it('gives up on a lookup that does not answer within its timeout and skips the topic for a short while', async () => {
    let now = 0;
    const log = new RecordingLog();
    const sender = new PerAppSender({
      sink: new SlowMissingSink(),
      lookup: () => new Promise<boolean>(() => {}),
      lookupTimeoutMs: 30,
      failedTtlMs: 5000,
      log,
      now: () => now,
    });
    const started = performance.now();
    await sender.send([{ topic: 't', messages: [msg('x')] }]);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(sender.skips('t')).toBe(true);
    now += 5001;
    expect(sender.skips('t')).toBe(false);
    expect(log.at('warn')[0]?.message).toContain('lookup failed');
  });

  it('without a lookup, remembers a topic whose send failed as missing and never sends to it again meanwhile', async () => {
    const sink = new SlowMissingSink();
    sink.missing.add('t');
    const sender = new PerAppSender({ sink });
    for (let i = 0; i < 20; i++) await sender.send([{ topic: 't', messages: [msg('x')] }]);
    expect(sink.sends).toBe(1);
    expect(sender.skipped).toBe(19);
  });

  it('stops waiting for a slow send after its timeout, and learns the topic is missing when that send fails', async () => {
    const sink = new SlowMissingSink();
    sink.missing.add('t');
    sink.missingDelayMs = 150;
    let now = 0;
    const sender = new PerAppSender({ sink, sendTimeoutMs: 20, failedTtlMs: 10, now: () => now });
    const started = performance.now();
    await sender.send([{ topic: 't', messages: [msg('x')] }]);
    expect(performance.now() - started).toBeLessThan(120);
    await new Promise((r) => setTimeout(r, 200));
    now += 1000;
    expect(sender.skips('t')).toBe(true);
  });

  it('never throws, whatever the sink does', async () => {
    const sender = new PerAppSender({
      sink: {
        send: async () => {
          throw new Error('boom');
        },
      },
    });
    await expect(sender.send([{ topic: 't', messages: [msg('x')] }])).resolves.toBeUndefined();
  });

  it('keeps at most maxTopics answers, forgetting the oldest first', async () => {
    const sender = new PerAppSender({ sink: new SlowMissingSink(), lookup: async () => false, maxTopics: 3 });
    for (const t of ['a', 'b', 'c', 'd']) await sender.send([{ topic: t, messages: [msg('x')] }]);
    expect(['a', 'b', 'c', 'd'].map((t) => sender.skips(t))).toEqual([false, true, true, true]);
  });

  it('is one sender per sink, shared by every caller', () => {
    const sink = new SlowMissingSink();
    expect(perAppSenderFor(sink)).toBe(perAppSenderFor(sink));
    expect(perAppSenderFor(sink)).not.toBe(perAppSenderFor(new SlowMissingSink()));
  });

  it('recognises kafkajs missing-topic errors, wrapped or not', () => {
    expect(isTopicAbsentError({ type: 'UNKNOWN_TOPIC_OR_PARTITION' })).toBe(true);
    expect(isTopicAbsentError({ name: 'X', originalError: { type: 'TOPIC_AUTHORIZATION_FAILED' } })).toBe(true);
    expect(isTopicAbsentError(new Error('This server does not host this topic-partition'))).toBe(true);
    expect(isTopicAbsentError(new Error('connect ECONNREFUSED'))).toBe(false);
  });
});
