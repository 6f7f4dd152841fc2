/**
 * The crawler's fetch slots (docs/design.md §5): a fixed number, or the adaptive controller's limit
 * (concurrency.ts) ticked with the process's signals and the most slots in use since the last tick. Workers above
 * the limit park here until it grows or the crawler stops.
 */
import type { Log } from '../ports.ts';
import type { CrawlerOptions } from './crawler-options.ts';

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

  constructor(fixed: number, adaptive: CrawlerOptions['adaptive'], now: () => number, log: Log) {
    this.#fixed = fixed;
    this.#adaptive = adaptive;
    this.#now = now;
    this.#log = log;
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

  /** Starts the controller's ticks (nothing when fixed). */
  start(): void {
    if (!this.#adaptive) return;
    this.#ticker = setInterval(() => this.#tick(), this.#adaptive.tickMs ?? 500);
    this.#ticker.unref();
  }

  /** No more ticks; every parked worker wakes (to see the crawler stopping). */
  stop(): void {
    this.#stopped = true;
    clearInterval(this.#ticker);
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
    const adaptive = this.#adaptive;
    if (!adaptive || this.#stopped) return;
    const signals = adaptive.signals();
    const step = adaptive.controller.tick(signals, this.#peakBusy);
    this.#peakBusy = this.#busy;
    if (step.limit > step.previous) for (const wake of [...this.#parked]) wake();
    const now = this.#now();
    if (step.reason.startsWith('over:') && now - this.#lastBackOffLog >= BACK_OFF_LOG_MS) {
      this.#lastBackOffLog = now;
      this.#log.info('fewer fetch slots: a budget is exceeded', { ...step, signals });
    }
  }
}
