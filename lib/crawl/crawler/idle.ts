/**
 * The crawler's idle workers (docs/design.md §5): a worker that finds nothing to lease sleeps here. One of them, the
 * poller, looks again on a timer (every `scoutPollMs`, or when the next request is due); the others sleep until they
 * are woken: by a worker that leased while more was due (it wakes {@link WAKE_ON_LEASE} more, each of which does the
 * same when it leases too, so a burst of new work fills the slots in doubling steps while a trickle wakes only the
 * workers it can use; a lease that took the last due request wakes nobody),
 * by a domain dropping back under its in-flight cap, by the poller giving up its turn, or by stop. A long backstop
 * timer bounds a missed wake when nobody polls; while a poller is there, a sleeper whose backstop fires sleeps on.
 * Idle workers each polling on their own timer would cost an idle process CPU and make a lease call each; sleepers
 * each looking again on their backstop would still make many lease calls a second through a crawl's tail (a dead
 * host's requests waiting out their retries), so only the poller looks.
 */

/**
 * The longest the poller pauses between looks that find nothing (ms): its pause starts at the scout interval after
 * any lease and doubles with each empty look. Work that becomes due at a known time (a throttle, a retry's backoff)
 * is asked for then; a domain back under its cap wakes a worker; so this bounds only how late new work from elsewhere
 * (a new crawl, another process's children) is found by an idle process, as lib/crawl/crawler/leasing.ts QUIET_MAX_MS does for
 * a spider type with no work at all.
 */
export const SCOUT_MAX_MS = 500;

/** Idle workers a worker wakes when it leases a request. */
export const WAKE_ON_LEASE = 2;

/** An idle worker that is not the poller looks again after this many `idlePollMs` if nobody woke it and nobody polls. */
export const IDLE_BACKSTOP_POLLS = 5;

export class IdleWorkers {
  /** Wake-up functions of the sleeping workers, longest asleep first. */
  readonly #sleeping = new Set<() => void>();
  #poller: number | undefined;
  readonly #backstopMs: number;
  readonly #scoutMs: number;
  /** The poller's next pause when it finds nothing: {@link SCOUT_MAX_MS} at most, back to `scoutMs` on a lease. */
  #pauseMs: number;

  constructor(idlePollMs: number, scoutMs = idlePollMs) {
    this.#backstopMs = idlePollMs * IDLE_BACKSTOP_POLLS;
    this.#scoutMs = scoutMs;
    this.#pauseMs = scoutMs;
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
   * any other sleeps until woken, or until its backstop fires while no worker polls.
   */
  async idle(index: number, pollMs: number): Promise<void> {
    if (this.#poller === undefined) this.#poller = index;
    if (this.#poller === index) {
      await this.nap(pollMs);
      return;
    }
    while (!(await this.nap(this.#backstopMs))) {
      if (this.#poller === undefined || this.#poller === index) return;
    }
  }

  /**
   * Worker `index` found nothing leasable; the next request may be due in `dueInMs` (undefined: no spider type has
   * any work; Infinity: work is ready only in domains at this process's in-flight cap, and nothing else is due at a
   * known time: one of their requests ending wakes a worker, crawler.ts). The poller looks again then or after its
   * pause, whichever is sooner, and its pause doubles (up to {@link SCOUT_MAX_MS}, or `scoutMs` when that is
   * longer); with no work anywhere it looks again after `scoutMs` (the lease pump then asks only the types whose own
   * quiet pause is over: lib/crawl/crawler/leasing.ts). Any other worker sleeps as in {@link idle}.
   */
  scout(index: number, dueInMs: number | undefined): Promise<void> {
    if (this.#poller === undefined) this.#poller = index;
    if (this.#poller !== index || dueInMs === undefined) return this.idle(index, this.#scoutMs);
    const pause = this.#pauseMs;
    this.#pauseMs = Math.min(pause * 2, Math.max(SCOUT_MAX_MS, this.#scoutMs));
    return this.idle(index, Math.max(5, Math.min(pause, dueInMs)));
  }

  /**
   * Worker `index` leased a request: it is no longer the poller, and the poller's pause is back to `scoutMs` (where
   * work was found, more may follow soon). When `more` is due now (the lease answer said so: lib/crawl/crawler/leasing.ts),
   * {@link WAKE_ON_LEASE} more wake; when it took the last due request, none does (they would only find nothing:
   * a lease call each).
   */
  leased(index: number, more: boolean): void {
    if (this.#poller === index) this.#poller = undefined;
    this.#pauseMs = this.#scoutMs;
    if (more) this.wake(WAKE_ON_LEASE);
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

  /** Sleeps up to `ms`, or until woken: true when woken, false when the time ran out. */
  nap(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const done = (woken: boolean) => {
        clearTimeout(timer);
        this.#sleeping.delete(wake);
        resolve(woken);
      };
      const wake = () => done(true);
      const timer = setTimeout(() => done(false), ms);
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
    this.#pauseMs = this.#scoutMs;
    for (const wake of [...this.#sleeping]) wake();
  }
}
