/**
 * The restart logic of the local runtime's consumers (localstack/runtime/consumer-supervisor.ts) and the health it
 * feeds (consumer-health.ts), with a fake consumer: the supervisor is told of joins and crashes and calls
 * `replace`, which the test controls. Timers are faked; no Kafka.
 */
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import type { HealthProbes } from '../../lib/rest/context.ts';
import { consumersDown, withConsumerHealth } from '../../localstack/runtime/consumer-health.ts';
import {
  type ConsumerDownError,
  type ConsumerHealth,
  ConsumerSupervisor,
  crashDecision,
  DEFAULT_RESTART_POLICY,
  type RestartPolicy,
  restartBackoffMs,
} from '../../localstack/runtime/consumer-supervisor.ts';
import type { RuntimeLogLevel } from '../../localstack/runtime/log.ts';

describe('restartBackoffMs', () => {
  test('doubles from 1 s per failed attempt and stops at 10 s', () => {
    expect([0, 1, 2, 3, 4, 5, 20].map((a) => restartBackoffMs(a))).toEqual([
      1000, 2000, 4000, 8000, 10_000, 10_000, 10_000,
    ]);
  });

  test('follows a policy of its own, and an absurd attempt count still gives the cap, not Infinity', () => {
    const policy: RestartPolicy = { initialBackoffMs: 50, maxBackoffMs: 300, giveUpAfterMs: 1000 };
    expect([0, 1, 2, 3].map((a) => restartBackoffMs(a, policy))).toEqual([50, 100, 200, 300]);
    expect(restartBackoffMs(10_000, policy)).toBe(300);
    expect(restartBackoffMs(-1, policy)).toBe(50);
  });
});

describe('crashDecision', () => {
  test('kafkajs restarts what it calls retriable; the supervisor restarts the rest', () => {
    expect(crashDecision(true, 0)).toBe('kafkajs-restarts');
    expect(crashDecision(false, 0)).toBe('restart');
  });

  test('a consumer down for giveUpAfterMs is given up, whoever would restart it', () => {
    const limit = DEFAULT_RESTART_POLICY.giveUpAfterMs;
    expect(crashDecision(false, limit - 1)).toBe('restart');
    expect(crashDecision(false, limit)).toBe('give-up');
    expect(crashDecision(true, limit)).toBe('give-up');
  });
});

interface Harness {
  supervisor: ConsumerSupervisor;
  replace: ReturnType<typeof vi.fn<() => Promise<void>>>;
  gaveUp: ConsumerDownError[];
  lines: { level: RuntimeLogLevel; message: string; fields?: Record<string, unknown> }[];
}

function harness(policy: Partial<RestartPolicy> = {}, replace = vi.fn(async () => {})): Harness {
  const gaveUp: ConsumerDownError[] = [];
  const lines: Harness['lines'] = [];
  const supervisor = new ConsumerSupervisor({
    name: 'p.kafka-monitor',
    log: (level, message, fields) => lines.push({ level, message, fields }),
    replace,
    onGiveUp: (error) => gaveUp.push(error),
    policy,
  });
  return { supervisor, replace, gaveUp, lines };
}

describe('ConsumerSupervisor', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  test('a crash kafkajs will not restart gets a new consumer after the first backoff, and health says down until it joins', async () => {
    const h = harness();
    h.supervisor.joined();
    expect(h.supervisor.health()).toEqual({ name: 'p.kafka-monitor', state: 'consuming', restarts: 0 });

    h.supervisor.crashed(new Error('Failed to find group coordinator'), false);
    expect(h.supervisor.health()).toMatchObject({
      state: 'down',
      downSince: Date.now(),
      lastError: 'Failed to find group coordinator',
    });
    await vi.advanceTimersByTimeAsync(999);
    expect(h.replace).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(h.replace).toHaveBeenCalledTimes(1);
    expect(h.supervisor.health()).toMatchObject({ state: 'down', restarts: 1 });

    h.supervisor.joined();
    expect(h.supervisor.health()).toEqual({ name: 'p.kafka-monitor', state: 'consuming', restarts: 1 });
    expect(h.lines.map((l) => l.message)).toEqual([
      'consumer crashed',
      'restarting the consumer',
      'consumer is consuming again',
    ]);
    expect(h.lines[0]?.fields).toMatchObject({ restart: false, by: 'supervisor' });
  });

  test('restarts that fail (Kafka still away) are tried again with a doubling backoff, which starts over after a join', async () => {
    const replace = vi.fn<() => Promise<void>>();
    const h = harness({}, replace);
    h.supervisor.joined();
    h.supervisor.crashed(new Error('Failed to find group coordinator'), false);
    const at: number[] = [];
    replace.mockImplementation(async () => {
      at.push(Date.now());
      throw new Error('Connection refused');
    });
    const start = Date.now();
    await vi.advanceTimersByTimeAsync(1000 + 2000 + 4000 + 8000);
    expect(at.map((t) => t - start)).toEqual([1000, 3000, 7000, 15_000]);
    expect(h.supervisor.health()).toMatchObject({ state: 'down', restarts: 4, lastError: 'Connection refused' });

    replace.mockImplementation(async () => {
      at.push(Date.now());
    });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(at).toHaveLength(5);
    h.supervisor.joined();

    at.length = 0;
    const again = Date.now();
    h.supervisor.crashed(new Error('Failed to find group coordinator'), false);
    await vi.advanceTimersByTimeAsync(1000);
    expect(at.map((t) => t - again)).toEqual([1000]);
  });

  test('a crash kafkajs restarts itself is only recorded: no new consumer, back to consuming on the join', async () => {
    const h = harness();
    h.supervisor.joined();
    h.supervisor.crashed(new Error('Connection error: ECONNREFUSED'), true);
    expect(h.supervisor.health().state).toBe('down');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(h.replace).not.toHaveBeenCalled();
    h.supervisor.joined();
    expect(h.supervisor.health().state).toBe('consuming');
    expect(h.lines[0]?.fields).toMatchObject({ restart: true, by: 'kafkajs' });
  });

  test('a consumer down longer than giveUpAfterMs is given up once, even while kafkajs keeps restarting it', async () => {
    const h = harness({ giveUpAfterMs: 10_000 });
    h.supervisor.joined();
    h.supervisor.crashed(new Error('ECONNREFUSED'), true);
    await vi.advanceTimersByTimeAsync(5000);
    h.supervisor.crashed(new Error('ECONNREFUSED again'), true);
    expect(h.gaveUp).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(5000);
    expect(h.gaveUp).toHaveLength(1);
    expect(h.gaveUp[0]?.message).toBe(
      'consumer p.kafka-monitor has been down for 10 s (last error: ECONNREFUSED again); giving up',
    );
    expect(h.supervisor.health()).toMatchObject({ state: 'failed', lastError: 'ECONNREFUSED again' });
    // Nothing brings a given-up consumer back to health, and nothing restarts it.
    h.supervisor.crashed(new Error('late'), false);
    h.supervisor.joined();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(h.supervisor.health().state).toBe('failed');
    expect(h.replace).not.toHaveBeenCalled();
    expect(h.gaveUp).toHaveLength(1);
  });

  test('failed restarts stop at the bound too: the supervisor gives up instead of retrying forever', async () => {
    const replace = vi.fn(async (): Promise<void> => {
      throw new Error('Connection refused');
    });
    const h = harness({ giveUpAfterMs: 20_000 }, replace);
    h.supervisor.crashed(new Error('Failed to find group coordinator'), false);
    await vi.advanceTimersByTimeAsync(120_000);
    // 1, 3, 7, 15 s; the next (25 s) would be past the bound.
    expect(replace).toHaveBeenCalledTimes(4);
    expect(h.gaveUp).toHaveLength(1);
  });

  test('a crash while a restart is under way leads to one more restart after it, not two at once', async () => {
    let finish!: () => void;
    const replace = vi.fn(
      () =>
        new Promise<void>((resolve) => {
          finish = resolve;
        }),
    );
    const h = harness({}, replace);
    h.supervisor.crashed(new Error('first'), false);
    await vi.advanceTimersByTimeAsync(1000);
    expect(replace).toHaveBeenCalledTimes(1);
    // The new consumer crashes while joining, before replace() resolved.
    h.supervisor.crashed(new Error('Failed to find group coordinator'), false);
    h.supervisor.crashed(new Error('Failed to find group coordinator'), false);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(replace).toHaveBeenCalledTimes(1);
    finish();
    await vi.advanceTimersByTimeAsync(2000);
    expect(replace).toHaveBeenCalledTimes(2);
  });

  test('after stop() nothing is restarted and crashes are ignored', async () => {
    const h = harness();
    h.supervisor.crashed(new Error('x'), false);
    h.supervisor.stop();
    await vi.advanceTimersByTimeAsync(DEFAULT_RESTART_POLICY.giveUpAfterMs * 2);
    h.supervisor.crashed(new Error('y'), false);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(h.replace).not.toHaveBeenCalled();
    expect(h.gaveUp).toHaveLength(0);
    expect(h.supervisor.health().state).toBe('stopped');
  });
});

describe('health with the consumers', () => {
  const consuming: ConsumerHealth = { name: 'p.kafka-monitor', state: 'consuming', restarts: 0 };
  const down: ConsumerHealth = {
    name: 'p.redis-monitor',
    state: 'down',
    restarts: 2,
    downSince: 1,
    lastError: 'Failed to find group coordinator',
  };

  test('consumersDown lists the consumers that are down or given up, not those starting, consuming or stopped', () => {
    const failed: ConsumerHealth = { ...down, name: 'f', state: 'failed' };
    const others: ConsumerHealth[] = [
      consuming,
      { ...consuming, name: 's', state: 'starting' },
      { ...consuming, name: 't', state: 'stopped' },
    ];
    expect(consumersDown([...others, down, failed])).toEqual([down, failed]);
  });

  test('Kafka counts as disconnected while a consumer is down, naming it, and the broker is asked only when all read', async () => {
    const broker = vi.fn(async () => {});
    const probes: HealthProbes = { redis: async () => {}, kafka: broker };
    let consumers: ConsumerHealth[] = [consuming, down];
    const health = withConsumerHealth(probes, () => consumers);
    await expect(health.kafka()).rejects.toThrow(
      'Kafka consumer down: p.redis-monitor (down: Failed to find group coordinator)',
    );
    expect(broker).not.toHaveBeenCalled();
    await expect(health.redis()).resolves.toBeUndefined();

    consumers = [consuming, { ...down, state: 'consuming' }];
    await expect(health.kafka()).resolves.toBeUndefined();
    expect(broker).toHaveBeenCalledTimes(1);
  });
});
