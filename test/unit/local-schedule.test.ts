/**
 * The local EventBridge stand-in, on fake timers: ticks, no overlap, errors logged, stop waits.
 */
import type { ScheduledEvent } from 'aws-lambda';
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import type { RuntimeLog } from '../../localstack/runtime/log.ts';
import { startSchedule } from '../../localstack/runtime/schedule.ts';

/** A handler whose calls stay running until released one by one. */
function gatedHandler() {
  const events: ScheduledEvent[] = [];
  const releases: (() => void)[] = [];
  let running = 0;
  let maxRunning = 0;
  const handler = async (event: ScheduledEvent) => {
    events.push(event);
    running += 1;
    maxRunning = Math.max(maxRunning, running);
    await new Promise<void>((resolve) => releases.push(resolve));
    running -= 1;
  };
  return {
    handler,
    events,
    releaseAll: () => {
      for (const r of releases.splice(0)) r();
    },
    get maxRunning() {
      return maxRunning;
    },
  };
}

describe('local schedule', () => {
  const lines: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  const log: RuntimeLog = (level, message, fields) => lines.push({ level, message, fields });

  beforeEach(() => {
    vi.useFakeTimers();
    lines.length = 0;
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  test('calls the handler once per interval with an EventBridge scheduled event', async () => {
    const events: ScheduledEvent[] = [];
    const schedule = startSchedule({ name: 'stats', everyMs: 1000, log, handler: async (e) => events.push(e) });
    await vi.advanceTimersByTimeAsync(999);
    expect(events).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(2001);
    expect(events).toHaveLength(3);
    expect(events[0]).toMatchObject({ 'detail-type': 'Scheduled Event', source: 'aws.scheduler', version: '0' });
    await schedule.stop();
  });

  test('runAtStart calls the handler at once, before the first interval has passed', async () => {
    const events: ScheduledEvent[] = [];
    const schedule = startSchedule({
      name: 'reclaim',
      everyMs: 60_000,
      runAtStart: true,
      log,
      handler: async (e) => events.push(e),
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(events).toHaveLength(1);
    await schedule.stop();
  });

  test('a tick that comes while the previous call runs is skipped, so calls never overlap, and the skip is logged', async () => {
    const gated = gatedHandler();
    const schedule = startSchedule({ name: 'slow', everyMs: 100, log, handler: gated.handler });
    await vi.advanceTimersByTimeAsync(550);
    expect(gated.events).toHaveLength(1);
    gated.releaseAll();
    await vi.advanceTimersByTimeAsync(100);
    expect(gated.events).toHaveLength(2);
    expect(gated.maxRunning).toBe(1);
    expect(lines.some((l) => l.level === 'warn' && l.fields?.skipped === 4)).toBe(true);
    gated.releaseAll();
    await schedule.stop();
  });

  test('a handler error is logged, not thrown, and the next tick calls the handler again', async () => {
    let calls = 0;
    const schedule = startSchedule({
      name: 'flaky',
      everyMs: 100,
      log,
      handler: async () => {
        calls += 1;
        if (calls === 1) throw new Error('redis is down');
      },
    });
    await vi.advanceTimersByTimeAsync(200);
    expect(calls).toBe(2);
    expect(lines).toContainEqual({
      level: 'error',
      message: 'schedule flaky: handler failed',
      fields: { schedule: 'flaky', error: 'redis is down', errorName: 'Error' },
    });
    await schedule.stop();
  });

  test('stop() waits for the running call to finish, and no call starts after it', async () => {
    const gated = gatedHandler();
    const schedule = startSchedule({ name: 'slow', everyMs: 100, log, handler: gated.handler });
    await vi.advanceTimersByTimeAsync(100);
    expect(gated.events).toHaveLength(1);

    let stopped = false;
    const stopping = schedule.stop().then(() => {
      stopped = true;
    });
    await vi.advanceTimersByTimeAsync(1000);
    expect(stopped).toBe(false);
    gated.releaseAll();
    await stopping;
    expect(stopped).toBe(true);
    await vi.advanceTimersByTimeAsync(1000);
    expect(gated.events).toHaveLength(1);
  });

  test('stop() gives up waiting after stopTimeoutMs and logs that the call is still running', async () => {
    const gated = gatedHandler();
    const schedule = startSchedule({ name: 'stuck', everyMs: 100, stopTimeoutMs: 500, log, handler: gated.handler });
    await vi.advanceTimersByTimeAsync(100);
    const stopping = schedule.stop();
    await vi.advanceTimersByTimeAsync(500);
    await stopping;
    expect(lines.some((l) => l.level === 'warn' && l.message.includes('still running'))).toBe(true);
    gated.releaseAll();
  });
});
