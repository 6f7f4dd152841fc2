/**
 * The REST API's own counters (`rest:total`, `rest:fail`, `rest:plugin:<type>`) and its heartbeat, kept off
 * the request path: a request adds to counts in memory and never waits on Redis. A flush writes every count
 * in one stats call (one script, one round trip) and the heartbeat beside it when due; at most one flush runs
 * at a time, so a slow Redis costs at most one pending write, never one per request.
 *
 * Counts are best effort: a write the store refused is added back and retried by the next flush; a write that
 * did not answer within the bound is dropped (it may still land, and adding it back could count it twice).
 * The counts held between flushes are bounded by {@link StatsTallyOptions.maxNames} distinct names.
 */
import { HEARTBEAT_TTL_MS } from '../monitor/stats-report.ts';
import type { Log, StatsStore } from '../ports.ts';
import type { StatsIncrement } from '../stats-model.ts';
import { rejectAfter } from '../timeout.ts';
import { causeOf } from './envelope.ts';

export interface StatsTallyOptions {
  /**
   * Least time between two flushes started by {@link StatsTally.flushIfDue}.
   * @default 1000
   */
  flushEveryMs?: number;
  /** Bound of one write; past it the write's counts are dropped and the next flush may start. */
  timeoutMs: number;
  /** Least time between two heartbeats (kind `rest`). */
  heartbeatEveryMs: number;
  /**
   * Most distinct counter names held between flushes; a count of a further name is dropped (and reported in
   * the next failure warning). The REST API counts a handful of names, from bounded sets.
   * @default 256
   */
  maxNames?: number;
}

/** What a tally needs from the REST context. */
export interface StatsTallyContext {
  stats: Pick<StatsStore, 'increment' | 'beat'>;
  log: Log;
  now(): number;
  nodeId: string;
}

/** Thrown inside a flush when the store did not answer in time; never leaves this module. */
class LateWriteError extends Error {}

/** Request counts held in memory and written in one call per flush, with the heartbeat (see the module doc). */
export class StatsTally {
  private counts = new Map<string, number>();
  private flushing: Promise<void> | undefined;
  private lastFlush = Number.NEGATIVE_INFINITY;
  private lastBeat = Number.NEGATIVE_INFINITY;
  /** Counts dropped since the last warning (over `maxNames`, or written late). */
  private dropped = 0;
  private readonly ctx: StatsTallyContext;
  private readonly options: StatsTallyOptions;
  private readonly flushEveryMs: number;
  private readonly maxNames: number;

  constructor(ctx: StatsTallyContext, options: StatsTallyOptions) {
    this.ctx = ctx;
    this.options = options;
    this.flushEveryMs = options.flushEveryMs ?? 1000;
    this.maxNames = options.maxNames ?? 256;
  }

  /** Adds one to each name (a name listed twice counts twice). Synchronous: no I/O. */
  add(names: readonly string[]): void {
    for (const name of names) this.addCount(name, 1);
  }

  /** Counts held and not yet written, by name (tests and diagnostics). */
  pending(): ReadonlyMap<string, number> {
    return this.counts;
  }

  /**
   * Starts a flush when none is running and the last one started at least `flushEveryMs` ago; never waits
   * for it. Call it after each request and from a timer: with requests it keeps the counts fresh, with the
   * timer the idle node still beats.
   */
  flushIfDue(): void {
    if (this.flushing !== undefined || this.ctx.now() - this.lastFlush < this.flushEveryMs) return;
    void this.start();
  }

  /** Writes what is held now, after a running flush ends. Never rejects (failures are logged). */
  async flush(): Promise<void> {
    while (this.flushing !== undefined) await this.flushing;
    await this.start();
  }

  private start(): Promise<void> {
    const flushing = this.write().finally(() => {
      this.flushing = undefined;
    });
    this.flushing = flushing;
    return flushing;
  }

  private async write(): Promise<void> {
    const now = this.ctx.now();
    this.lastFlush = now;
    const increments: StatsIncrement[] = [...this.counts].map(([name, by]) => ({ name, by }));
    this.counts = new Map();
    const beat = now - this.lastBeat >= this.options.heartbeatEveryMs;
    const [counted, beaten] = await Promise.allSettled([
      increments.length === 0
        ? Promise.resolve()
        : this.bounded(this.ctx.stats.increment(increments, now), 'Redis (stats)'),
      beat
        ? this.bounded(this.ctx.stats.beat('rest', this.ctx.nodeId, now, HEARTBEAT_TTL_MS), 'Redis (heartbeat)')
        : Promise.resolve(),
    ]);
    if (beaten.status === 'fulfilled' && beat) this.lastBeat = now;
    const failed = [counted, beaten].find((r) => r.status === 'rejected');
    if (counted.status === 'rejected') {
      if (counted.reason instanceof LateWriteError) {
        for (const { by = 1 } of increments) this.dropped += by;
      } else {
        for (const { name, by = 1 } of increments) this.addCount(name, by);
      }
    }
    if (failed !== undefined) {
      this.ctx.log.warn('rest: stats update failed', {
        error: causeOf(failed.reason),
        counts_dropped: this.dropped,
        counts_held: [...this.counts.values()].reduce((a, b) => a + b, 0),
      });
      this.dropped = 0;
    }
  }

  private bounded(work: Promise<void>, what: string): Promise<void> {
    const ms = this.options.timeoutMs;
    return rejectAfter(work, ms, () => new LateWriteError(`${what} did not answer within ${ms} ms`));
  }

  private addCount(name: string, by: number): void {
    const held = this.counts.get(name);
    if (held === undefined && this.counts.size >= this.maxNames) {
      this.dropped += by;
      return;
    }
    this.counts.set(name, (held ?? 0) + by);
  }
}
