/**
 * The crawler's fetch slots (docs/design.md §5): a fixed number, or the adaptive controller's limit
 * (lib/crawl/crawler/concurrency.ts) ticked with the process's signals and the most slots in use since the last tick. Workers above
 * the limit park here until it grows or the crawler stops. Every tick (fixed slots tick too) is also handed to
 * `observe`: the heartbeat's load report is made of them (lib/crawl/crawler/load-report.ts).
 */
import type { Log } from '../../ports.ts';
import type { SlotSample } from './load-report.ts';
import type { CrawlerOptions } from './options.ts';

/** Ticks of fixed slots, which only sample (ms). */
const FIXED_TICK_MS = 500;

/** The shortest time between two back-off log lines (ms). */
const BACK_OFF_LOG_MS = 10_000;

export class FetchSlots {
  readonly #fixed: number;
  readonly #adaptive: CrawlerOptions['adaptive'];
  readonly #now: () => number;
  readonly #log: Log;
  #ticker: NodeJS.Timeout | undefined;
  #stopped = false;
  /** Workers holding a request now, and the most at once since the last tick. */
  #busy = 0;
  #peakBusy = 0;
  /** Workers parked above the limit: woken when it grows or the crawler stops. */
  readonly #parked = new Set<() => void>();
  #lastBackOffLog = Number.NEGATIVE_INFINITY;
  readonly #observe: (sample: SlotSample) => void;

  constructor(
    fixed: number,
    adaptive: CrawlerOptions['adaptive'],
    now: () => number,
    log: Log,
    observe: (sample: SlotSample) => void = () => undefined,
  ) {
    this.#fixed = fixed;
    this.#adaptive = adaptive;
    this.#now = now;
    this.#log = log;
    this.#observe = observe;
  }

  /** Workers to start: the ceiling when adaptive, else the fixed number. */
  get workers(): number {
    return this.#adaptive ? this.#adaptive.controller.max : this.#fixed;
  }

  /** The slot limit now. */
  get limit(): number {
    return this.#adaptive?.controller.limit ?? this.#fixed;
  }

  /** Slots in use now. */
  get inUse(): number {
    return this.#busy;
  }

  /**
   * Starts the ticks: the controller's, or with fixed slots only the samples. While the controller ramps up (slow
   * start, lib/crawl/crawler/concurrency.ts) it ticks twice as often: its doubling is what a crawl's first seconds wait on.
   */
  start(): void {
    const tickMs = this.#adaptive?.tickMs ?? FIXED_TICK_MS;
    const next = () => {
      if (this.#stopped) return;
      this.#ticker = setTimeout(
        () => {
          this.#tick();
          next();
        },
        this.#adaptive?.controller.ramping ? tickMs / 2 : tickMs,
      );
      this.#ticker.unref();
    };
    next();
  }

  /** No more ticks; every parked worker wakes (to see the crawler stopping). */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#ticker);
    for (const wake of [...this.#parked]) wake();
  }

  /** A worker took a request. */
  taken(): void {
    this.#busy++;
    if (this.#busy > this.#peakBusy) this.#peakBusy = this.#busy;
  }

  /** A worker is done with its request. */
  returned(): void {
    this.#busy--;
  }

  /** Waits while worker `index` is above the limit (returns at once when it is not, or once stopped). */
  async park(index: number): Promise<void> {
    while (!this.#stopped && index >= this.limit) {
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.#parked.delete(wake);
          resolve();
        };
        this.#parked.add(wake);
      });
    }
  }

  #tick(): void {
    if (this.#stopped) return;
    const adaptive = this.#adaptive;
    if (!adaptive) {
      // Fixed slots measure no budget: all of them busy is their ceiling, and their load is the share in use.
      const full = this.#peakBusy >= this.#fixed;
      this.#observe({
        inUse: this.#busy,
        limit: this.#fixed,
        bound: full ? 'ceiling' : 'work',
        load: this.#peakBusy / this.#fixed,
      });
      this.#peakBusy = this.#busy;
      return;
    }
    const signals = adaptive.signals();
    const step = adaptive.controller.tick(signals, this.#peakBusy);
    this.#peakBusy = this.#busy;
    this.#observe({ inUse: this.#busy, limit: step.limit, bound: step.bound, load: step.load });
    if (step.limit > step.previous) for (const wake of [...this.#parked]) wake();
    const now = this.#now();
    if (step.reason.startsWith('over:') && now - this.#lastBackOffLog >= BACK_OFF_LOG_MS) {
      this.#lastBackOffLog = now;
      this.#log.info('fewer fetch slots: a budget is exceeded', { ...step, signals });
    }
  }
}
