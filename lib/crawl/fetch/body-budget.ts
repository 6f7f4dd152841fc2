/**
 * The memory budget for response bodies in flight (issue 32, issue 48 item 8): with many fetch slots, MAX_BODY_BYTES
 * x slots can exceed the task's memory, so every decoded byte counts in one budget per process from the moment it is
 * read until its page is done with it ({@link BodyHold}, released by the crawler once the page message is built, or
 * by the fetcher when the body is read for someone else).
 *
 * - A fetch is admitted only while the budget has room; past it, new fetches wait (their slot held, nothing sent).
 * - A body being read takes its bytes as they arrive; when the next chunk does not fit, the read pauses (the socket
 *   is not read, so TCP holds the sender back) until pages done with their bodies give room back.
 * - When every body in the budget is one being read and all of them wait (nothing else will ever give room back),
 *   the one holding the most is cut where it is: its page says `body_cut: "memory_budget"` instead of the process
 *   running out of memory.
 *
 * The share of the budget in use is also one of the adaptive concurrency's signals (lib/crawl/crawler/concurrency.ts `bodyShare`).
 */

/** The share of the task's memory (lib/crawl/crawler/load-signals.ts `taskLimits`) bodies in flight may hold by default. */
export const BODY_BUDGET_SHARE = 0.25;

/**
 * What one decoded byte costs in the budget: a page holds its body's bytes and their text (or base64) at once, so
 * each byte is counted twice.
 */
export const BODY_BYTE_COST = 2;

/** One body's bytes in the budget, from its first byte until {@link BodyBudget.release}. */
export class BodyHold {
  /** Bytes counted for this body. */
  bytes = 0;
  /** Still being read (its bytes may grow). */
  reading = true;
  /** Set while the read waits for room: called with true to try again, false to cut the body. */
  wake: ((retry: boolean) => void) | undefined;
  released = false;
}

export class BodyBudget {
  readonly limitBytes: number;
  #used = 0;
  /** Bytes of bodies still being read. */
  #readingBytes = 0;
  readonly #readers = new Set<BodyHold>();
  /** Readers waiting for room, in the order they started waiting. */
  readonly #blocked = new Set<BodyHold>();
  readonly #waiting = new Set<() => void>();
  /** Fetches that had to wait for room before they started, since start. */
  waits = 0;
  /** Reads that paused for room, since start. */
  pauses = 0;
  /** Bodies cut because the budget was full of bodies being read, since start. */
  cuts = 0;

  constructor(limitBytes: number) {
    if (!(limitBytes > 0)) throw new RangeError(`body budget must be > 0 bytes (got ${limitBytes})`);
    this.limitBytes = limitBytes;
  }

  /** Bytes counted now. */
  get used(): number {
    return this.#used;
  }

  /** Bytes counted as a share of the budget (1 = full). */
  get share(): number {
    return this.#used / this.limitBytes;
  }

  /** Resolves once the bytes counted are under the budget; rejects with the signal's reason when it aborts. */
  async admit(signal?: AbortSignal): Promise<void> {
    if (this.#used < this.limitBytes) return;
    this.waits++;
    while (this.#used >= this.limitBytes) {
      signal?.throwIfAborted();
      await new Promise<void>((resolve, reject) => {
        const wake = () => {
          this.#waiting.delete(wake);
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        const onAbort = () => {
          this.#waiting.delete(wake);
          reject(signal?.reason);
        };
        this.#waiting.add(wake);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    }
  }

  /** A body starts being read. */
  open(): BodyHold {
    const hold = new BodyHold();
    this.#readers.add(hold);
    return hold;
  }

  /**
   * Counts `bytes` more of `hold`'s body, waiting for room when they do not fit. Resolves true once counted, false
   * when the body must be cut here (the budget is full of bodies being read, all waiting); rejects with the signal's
   * reason when it aborts while waiting.
   */
  async take(hold: BodyHold, bytes: number, signal?: AbortSignal): Promise<boolean> {
    let paused = false;
    for (;;) {
      // An empty budget takes any chunk: a body must be able to start.
      if (this.#used + bytes <= this.limitBytes || this.#used === 0) {
        hold.bytes += bytes;
        this.#used += bytes;
        if (hold.reading) this.#readingBytes += bytes;
        return true;
      }
      signal?.throwIfAborted();
      if (!paused) this.pauses++;
      paused = true;
      const retry = await new Promise<boolean>((resolve, reject) => {
        const onAbort = () => {
          this.#unblock(hold);
          reject(signal?.reason);
        };
        hold.wake = (again) => {
          this.#unblock(hold);
          signal?.removeEventListener('abort', onAbort);
          resolve(again);
        };
        this.#blocked.add(hold);
        signal?.addEventListener('abort', onAbort, { once: true });
        this.#cutIfStuck();
      });
      if (!retry) return false;
    }
  }

  /** `hold`'s body is read whole (or cut): its bytes stay counted until {@link release}. */
  done(hold: BodyHold): void {
    if (!hold.reading) return;
    hold.reading = false;
    this.#readers.delete(hold);
    this.#readingBytes -= hold.bytes;
    // A reader that ended with nothing counted leaves the others alone with the budget.
    this.#cutIfStuck();
  }

  /** `hold`'s bytes are given back (idempotent): waiting reads and fetches are woken when there is room. */
  release(hold: BodyHold): void {
    if (hold.released) return;
    this.done(hold);
    hold.released = true;
    this.#used = Math.max(0, this.#used - hold.bytes);
    hold.bytes = 0;
    for (const blocked of [...this.#blocked]) blocked.wake?.(true);
    if (this.#used < this.limitBytes) for (const wake of [...this.#waiting]) wake();
  }

  #unblock(hold: BodyHold): void {
    this.#blocked.delete(hold);
    hold.wake = undefined;
  }

  /**
   * Every read is waiting and no finished body holds room that will be given back: nothing would ever free room, so
   * the waiting body holding the most is cut (its bytes are then given back once its page is done).
   */
  #cutIfStuck(): void {
    if (this.#blocked.size === 0 || this.#blocked.size < this.#readers.size) return;
    if (this.#used - this.#readingBytes > 0) return;
    let largest: BodyHold | undefined;
    for (const hold of this.#blocked) if (largest === undefined || hold.bytes > largest.bytes) largest = hold;
    this.cuts++;
    largest?.wake?.(false);
  }
}
