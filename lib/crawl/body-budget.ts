/**
 * The memory budget for response bodies being read (issue 32): with many fetch slots, MAX_BODY_BYTES x slots can
 * exceed the task's memory, so a fetch is admitted only while the bytes being read by all fetches of the process are
 * under the budget; past it, new fetches wait (their slot held, nothing read) until bodies finish. The share of the
 * budget in use is also one of the adaptive concurrency's signals (concurrency.ts `bodyShare`). One per process.
 */

/** The share of the task's memory bodies being read may hold by default. */
export const BODY_BUDGET_SHARE = 0.25;

export class BodyBudget {
  readonly limitBytes: number;
  #used = 0;
  readonly #waiting = new Set<() => void>();
  /** Fetches that had to wait for room since start. */
  waits = 0;

  constructor(limitBytes: number) {
    if (!(limitBytes > 0)) throw new RangeError(`body budget must be > 0 bytes (got ${limitBytes})`);
    this.limitBytes = limitBytes;
  }

  /** Bytes being read now. */
  get used(): number {
    return this.#used;
  }

  /** Bytes being read as a share of the budget (1 = full). */
  get share(): number {
    return this.#used / this.limitBytes;
  }

  /** Resolves once the bytes being read are under the budget; rejects with the signal's reason when it aborts. */
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

  /** `bytes` more are being read. */
  take(bytes: number): void {
    this.#used += bytes;
  }

  /** `bytes` are no longer being read: waiting fetches are woken when there is room. */
  give(bytes: number): void {
    this.#used = Math.max(0, this.#used - bytes);
    if (this.#used < this.limitBytes) for (const wake of [...this.#waiting]) wake();
  }
}
