/**
 * The local stand-in for an EventBridge schedule (docs/design.md §6): a timer that calls a periodic function's
 * handler with the scheduled event Scheduler would send.
 *
 * Unlike EventBridge, which would start a second concurrent invocation, a tick that comes while the previous
 * call is still running is skipped: on one machine an overlapping run only competes with itself.
 */
import type { ScheduledEvent } from 'aws-lambda';
import { settlesWithin } from '../../lib/timeout.ts';
import { errorFields, type RuntimeLog } from './log.ts';

/**
 * The scheduled event EventBridge Scheduler sends, which every tick hands to the handler: `ScheduledEvent` of
 * `@types/aws-lambda`, the type the periodic handlers take. `time` is to the second, as EventBridge has it.
 */
function scheduledEvent(now = new Date(), region = 'local'): ScheduledEvent<Record<string, never>> {
  return {
    version: '0',
    id: `local-${now.getTime()}`,
    'detail-type': 'Scheduled Event',
    source: 'aws.scheduler',
    account: '000000000000',
    time: now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region,
    resources: [],
    detail: {},
  };
}

/** Options of {@link startSchedule}. */
export interface ScheduleOptions {
  /** Names the schedule in log lines (e.g. the function it triggers). */
  name: string;
  /** Interval between ticks, in ms. */
  everyMs: number;
  /** Called with a fresh scheduled event on every tick that finds no call running; its result is ignored. */
  handler: (event: ScheduledEvent) => Promise<unknown>;
  /** Where handler errors and skipped ticks are reported. */
  log: RuntimeLog;
  /** Also call the handler at once instead of waiting for the first tick. @default false */
  runAtStart?: boolean;
  /** How long `stop()` waits for a running call, in ms. @default 30_000 */
  stopTimeoutMs?: number;
}

/** A running schedule. */
export interface Schedule {
  /**
   * Stops ticking and waits (up to `stopTimeoutMs`) for a running call to finish; no call starts after it
   * is called. Calling it again returns the same promise.
   */
  stop(): Promise<void>;
}

/** Starts calling `handler` every `everyMs`, never two calls at once; handler errors are logged, never thrown. */
export function startSchedule(options: ScheduleOptions): Schedule {
  const { name, everyMs, handler, log, runAtStart = false, stopTimeoutMs = 30_000 } = options;
  if (!Number.isFinite(everyMs) || everyMs < 1) throw new RangeError(`everyMs must be >= 1, got ${everyMs}`);

  let running: Promise<void> | undefined;
  let skipped = 0;
  let stopping = false;
  let stopped: Promise<void> | undefined;

  const tick = (): void => {
    if (stopping) return;
    if (running) {
      skipped += 1;
      return;
    }
    running = (async () => {
      const started = Date.now();
      try {
        await handler(scheduledEvent());
      } catch (error) {
        log('error', `schedule ${name}: handler failed`, { schedule: name, ...errorFields(error) });
      } finally {
        if (skipped > 0) {
          log('warn', `schedule ${name}: a run outlasted the interval; ticks skipped`, {
            schedule: name,
            skipped,
            durationMs: Date.now() - started,
            everyMs,
          });
          skipped = 0;
        }
        running = undefined;
      }
    })();
  };

  const timer = setInterval(tick, everyMs);
  if (runAtStart) tick();

  async function stopNow(): Promise<void> {
    stopping = true;
    clearInterval(timer);
    const current = running;
    if (!current) return;
    // The run never rejects (its handler's failures are logged inside it).
    if (!(await settlesWithin(current, stopTimeoutMs)))
      log('warn', `schedule ${name}: handler still running at stop`, { schedule: name, stopTimeoutMs });
  }

  return {
    stop() {
      stopped ??= stopNow();
      return stopped;
    },
  };
}
