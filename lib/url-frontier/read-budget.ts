/**
 * A server-wide budget of request bytes read and not yet answered (PutURLs / PutDiscovered: items read from the
 * client and not yet acked because Redis has not stored them). Each stream takes a message's wire size when it reads
 * it and gives it back once the ack is written; while the budget is spent, every stream stops reading (HTTP/2 flow
 * control then holds the client), so what the server holds does not grow with clients, streams or Redis's speed.
 *
 * The bound: `limit` plus at most one message per stream that was reading when the budget ran out (a stream always
 * reads at least the message in hand), and what grpc-js decoded ahead per stream (at most 16 messages) — each
 * message at most the server's max receive message size.
 */
export class ReadBudget {
  /** Bytes held before the streams stop reading. */
  readonly limit: number;
  #used = 0;
  #peak = 0;
  #waiting: (() => void)[] = [];

  /** @param limit bytes held before the streams stop reading */
  constructor(limit: number) {
    this.limit = limit;
  }

  /** Bytes taken and not given back. */
  get used(): number {
    return this.#used;
  }

  /** The most bytes ever taken at once (tests, diagnostics). */
  get peak(): number {
    return this.#peak;
  }

  /** Streams waiting for the budget to read again. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** True while streams should not read. */
  get exhausted(): boolean {
    return this.#used >= this.limit;
  }

  take(bytes: number): void {
    this.#used += bytes;
    if (this.#used > this.#peak) this.#peak = this.#used;
  }

  /** Gives bytes back; once under the limit, every waiting stream is called (each checks again). */
  release(bytes: number): void {
    this.#used -= bytes;
    if (this.exhausted || this.#waiting.length === 0) return;
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const resume of waiting) resume();
  }

  /** Calls `resume` once the budget is under its limit again (at once when it is). */
  whenAvailable(resume: () => void): void {
    if (this.exhausted) this.#waiting.push(resume);
    else resume();
  }
}
