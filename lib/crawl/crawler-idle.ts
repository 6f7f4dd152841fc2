/**
 * The crawler's idle workers (docs/design.md §5): a worker that finds nothing to lease sleeps here. One of them, the
 * poller, looks again on a timer (every `scoutPollMs`, or when the next request is due); the others sleep until they
 * are woken: by a worker that leased (it wakes {@link WAKE_ON_LEASE} more, each of which does the same when it leases
 * too, so a burst of new work fills the slots in doubling steps while a trickle wakes only the workers it can use),
 * by a domain dropping back under its in-flight cap, by the poller giving up its turn, or by stop. A long backstop
 * timer bounds a missed wake. 256 idle loops each polling on their own timer burned a tenth of a core in an idle
 * process and made one lease call each.
 */

/** Idle workers a worker wakes when it leases a request. */
export const WAKE_ON_LEASE = 2;

/** An idle worker that is not the poller looks again after this many `idlePollMs` even if nobody wakes it. */
export const IDLE_BACKSTOP_POLLS = 5;

export class IdleWorkers {
  /** Wake-up functions of the sleeping workers, longest asleep first. */
  readonly #sleeping = new Set<() => void>();
  #poller: number | undefined;
  readonly #backstopMs: number;

  constructor(idlePollMs: number) {
    this.#backstopMs = idlePollMs * IDLE_BACKSTOP_POLLS;
  }

  /** The worker polling now, if any (for tests). */
  get poller(): number | undefined {
    return this.#poller;
  }

  /** Workers asleep now. */
  get size(): number {
    return this.#sleeping.size;
  }

  /**
   * Worker `index` found nothing: it becomes the poller when there is none and sleeps `pollMs` (or until woken);
   * any other sleeps until woken or the backstop.
   */
  idle(index: number, pollMs: number): Promise<void> {
    if (this.#poller === undefined) this.#poller = index;
    return this.nap(this.#poller === index ? pollMs : this.#backstopMs);
  }

  /** Worker `index` leased a request: it is no longer the poller, and {@link WAKE_ON_LEASE} more wake. */
  leased(index: number): void {
    if (this.#poller === index) this.#poller = undefined;
    this.wake(WAKE_ON_LEASE);
  }

  /** Worker `index` stops looking (parked above the limit, or ending): another sleeping worker takes over polling. */
  resign(index: number): void {
    if (this.#poller !== index) return;
    this.#poller = undefined;
    this.wake(1);
  }

  /** True when worker `index` is the poller, or there is none (whose errors are worth a log line). */
  speaksFor(index: number): boolean {
    return this.#poller === undefined || this.#poller === index;
  }

  /** Sleeps up to `ms`, or until woken. */
  nap(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.#sleeping.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.#sleeping.add(wake);
    });
  }

  /** Wakes up to `n` sleeping workers, longest asleep first. */
  wake(n: number): void {
    for (const wake of this.#sleeping) {
      if (n-- <= 0) return;
      wake();
    }
  }

  /** Wakes every sleeping worker (stop, delivery working again). */
  wakeAll(): void {
    for (const wake of [...this.#sleeping]) wake();
  }
}
