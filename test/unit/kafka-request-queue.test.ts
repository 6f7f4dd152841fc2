/**
 * kafkajs's RequestQueue with lib/kafka/request-queue.ts's fix, driven through kafkajs's own class: no timer while
 * nothing is pending (kafkajs 2.2.4 re-arms a 1 ms timer for ever), and requests held back by a client-side throttle
 * or the in-flight limit are still sent.
 */
import { createRequire } from 'node:module';
import { afterEach, describe, expect, it } from 'vitest';
import '../../lib/kafka/client.ts';
import { kafkajsUsesFixedRequestQueue } from '../../lib/kafka/request-queue.ts';

interface Queue {
  pending: unknown[];
  inflight: Map<number, unknown>;
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  push(request: { entry: Record<string, unknown>; expectResponse: boolean; sendRequest: () => void }): void;
  fulfillRequest(response: { correlationId: number; payload: Buffer | null; size: number }): void;
  checkPendingRequests(): void;
  destroy(): void;
}
type QueueClass = new (options: Record<string, unknown>) => Queue;

const require = createRequire(import.meta.url);
const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as QueueClass;
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

const queues: Queue[] = [];
function queue(maxInFlightRequests: number | null = null): Queue {
  const q = new RequestQueue({
    maxInFlightRequests,
    requestTimeout: 30_000,
    enforceRequestTimeout: false,
    clientId: 'test',
    broker: '127.0.0.1:9092',
    logger: quiet,
  });
  queues.push(q);
  return q;
}

/** A request that counts its sends (expects a response, so it stays in flight until fulfilled). */
function request(correlationId: number, sent: number[]) {
  return {
    entry: { correlationId, apiName: 'Produce', apiKey: 0, apiVersion: 7, resolve() {}, reject() {} },
    expectResponse: true,
    sendRequest: () => sent.push(correlationId),
  };
}

afterEach(() => {
  for (const q of queues.splice(0)) q.destroy();
});

describe('kafkajs RequestQueue (lib/kafka/request-queue.ts)', () => {
  it('is installed in a process that loads the Kafka client', () => {
    expect(kafkajsUsesFixedRequestQueue()).toBe(true);
  });

  it('arms no timer when an answered request leaves nothing pending (kafkajs 2.2.4 loops every 1 ms)', () => {
    const q = queue();
    const sent: number[] = [];
    q.push(request(1, sent));
    expect(sent).toEqual([1]);
    q.fulfillRequest({ correlationId: 1, payload: null, size: 0 });
    expect(q.throttleCheckTimeoutId).toBeNull();
    q.checkPendingRequests();
    expect(q.throttleCheckTimeoutId).toBeNull();
  });

  it('sends a request held back by a client-side throttle once the throttle ends', async () => {
    const q = queue();
    const sent: number[] = [];
    q.throttledUntil = Date.now() + 40;
    q.push(request(7, sent));
    expect(sent).toEqual([]);
    expect(q.pending).toHaveLength(1);
    expect(q.throttleCheckTimeoutId).not.toBeNull();
    const deadline = Date.now() + 2000;
    while (sent.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(sent).toEqual([7]);
    expect(q.pending).toHaveLength(0);
    // Sent and nothing else pending: no timer left.
    expect(q.throttleCheckTimeoutId).toBeNull();
  });

  it('sends requests held back by the in-flight limit as the ones in flight are answered', async () => {
    const q = queue(1);
    const sent: number[] = [];
    q.push(request(1, sent));
    q.push(request(2, sent));
    q.push(request(3, sent));
    expect(sent).toEqual([1]);
    q.fulfillRequest({ correlationId: 1, payload: null, size: 0 });
    expect(sent).toEqual([1, 2]);
    q.fulfillRequest({ correlationId: 2, payload: null, size: 0 });
    q.fulfillRequest({ correlationId: 3, payload: null, size: 0 });
    expect(sent).toEqual([1, 2, 3]);
    expect(q.pending).toHaveLength(0);
    // The check armed while 2 and 3 were pending fires once, finds nothing and arms no other.
    await new Promise((r) => setTimeout(r, 40));
    expect(q.throttleCheckTimeoutId).toBeNull();
  });
});
